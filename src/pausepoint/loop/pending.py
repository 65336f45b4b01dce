"""Reading a checkpoint's pending writes: which tasks finished, failed or paused.

Also parses ``Command(resume=...)`` into an explicit :class:`ResumeMap` at the
start of a run, checking it against what is really pending (DESIGN §4.4).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from xxhash import xxh3_128_hexdigest

from pausepoint.checkpoint.base import PendingWrite
from pausepoint.constants import ERROR, INTERRUPT, NULL_TASK_ID, RESUME, SCHEDULED
from pausepoint.errors import (
    AmbiguousResumeError,
    NothingToResumeError,
    UnknownInterruptIdError,
)
from pausepoint.types import Interrupt

__all__ = ["ResumeMap", "TaskRecord", "parse_resume", "read_records"]

_HEX32 = re.compile(r"^[0-9a-f]{32}$")

AMBIGUOUS_MESSAGE = (
    "When there are multiple pending interrupts, you must specify the interrupt id when "
    "resuming. Docs: https://docs.langchain.com/oss/python/langgraph/"
    "add-human-in-the-loop#resume-multiple-interrupts-with-one-invocation."
)


class TaskRecord:
    """What a checkpoint's pending writes say about one task.

    A plain class (not a dataclass with a default factory): a checkpoint's records
    are rebuilt on every load, one per task, and this is half the cost to make.
    """

    __slots__ = ("done", "error", "interrupts", "resume", "writes")

    def __init__(
        self,
        writes: list[tuple[str, Any]] | None = None,
        interrupts: tuple[Interrupt, ...] = (),
        resume: list[Any] | None = None,
        error: Any = None,
        done: bool = False,
    ) -> None:
        self.writes: list[tuple[str, Any]] = writes if writes is not None else []
        self.interrupts = interrupts
        self.resume = resume
        self.error = error
        self.done = done

    def __repr__(self) -> str:
        return (
            f"TaskRecord(writes={self.writes!r}, interrupts={self.interrupts!r}, "
            f"resume={self.resume!r}, error={self.error!r}, done={self.done!r})"
        )

    @property
    def paused(self) -> bool:
        """Interrupted, and neither finished nor failed since."""
        return bool(self.interrupts) and not self.done and not self.error

    @property
    def resumable(self) -> bool:
        """Can take an answer: paused, or failed after an interrupt (it re-runs either way)."""
        return bool(self.interrupts) and not self.done


def read_records(
    pending: Iterable[PendingWrite],
) -> tuple[dict[str, TaskRecord], list[tuple[str, Any]]]:
    """Group pending writes by task; return ``(records, null_task_writes)``."""
    records: dict[str, TaskRecord] = {}
    null_writes: list[tuple[str, Any]] = []
    for w in pending:
        if w.task_id == NULL_TASK_ID:
            if w.channel != RESUME:
                null_writes.append((w.channel, w.value))
            continue
        rec = records.get(w.task_id)
        if rec is None:
            rec = records[w.task_id] = TaskRecord()
        if w.channel == INTERRUPT:
            found: Any = w.value or ()
            rec.interrupts = tuple(found)
        elif w.channel == RESUME:
            stored: Any = w.value
            rec.resume = list(stored) if isinstance(stored, (list, tuple)) else [stored]  # pyright: ignore[reportUnknownArgumentType]  # pyright: ignore[reportUnknownArgumentType]
        elif w.channel == ERROR:
            rec.error = w.value
        elif w.channel != SCHEDULED:
            rec.writes.append((w.channel, w.value))
            rec.done = True
    return records, null_writes


def pending_interrupts(records: Mapping[str, TaskRecord]) -> list[Interrupt]:
    """Every interrupt that an answer can go to, in task order."""
    return [i for rec in records.values() if rec.resumable for i in rec.interrupts]


def is_own_interrupt(interrupt: Interrupt, task_ns: str) -> bool:
    """Whether the task with namespace ``task_ns`` raised ``interrupt`` itself."""
    return interrupt.id == xxh3_128_hexdigest(task_ns.encode())


@dataclasses.dataclass(frozen=True, slots=True)
class ResumeMap:
    """Resume values by interrupt id: the only form of resume the loop handles."""

    values: Mapping[str, Any]


def is_resume_map(resume: Any) -> bool:
    """A dict whose keys are all 32-hex interrupt ids (otherwise it is a plain value)."""
    return isinstance(resume, dict) and all(
        isinstance(k, str) and _HEX32.match(k)
        for k in resume  # pyright: ignore[reportUnknownVariableType]
    )


def parse_resume(
    resume: Any, pending: list[Interrupt], also: list[Interrupt] | None = None
) -> ResumeMap:
    """Turn ``Command(resume=...)`` into a map checked against the pending interrupts.

    ``pending`` are the interrupts the run reported (a plain value must meet exactly
    one); ``also`` are further ones an id map may answer (those of ``@task`` calls
    that paused beside the one their caller reported).

    Raises:
        NothingToResumeError: Nothing is pending.
        AmbiguousResumeError: A plain value while several interrupts are pending.
        UnknownInterruptIdError: A map names ids that are not pending.
    """
    ids = [i.id for i in pending]
    if not pending:
        raise NothingToResumeError(
            "Command(resume=...) was sent but no interrupt is pending in this thread: "
            "the run has finished or was never paused. Check graph.get_state(config)."
            "interrupts before resuming; nothing was changed."
        )
    if is_resume_map(resume):
        if not resume:
            raise UnknownInterruptIdError(
                f"Command(resume={{}}) answers no interrupt; pending ids: {ids!r}"
            )
        known = {*ids, *(i.id for i in also or ())}
        unknown = [k for k in resume if k not in known]
        if unknown:
            raise UnknownInterruptIdError(
                f"Command(resume=...) names interrupt ids that are not pending: {unknown!r}. "
                f"Pending: {_describe(pending)}. Nothing was changed."
            )
        return ResumeMap(dict(resume))
    distinct = list(dict.fromkeys(ids))
    if len(distinct) > 1:
        raise AmbiguousResumeError(AMBIGUOUS_MESSAGE)
    return ResumeMap({distinct[0]: resume})


def _describe(pending: list[Interrupt]) -> str:
    return ", ".join(f"{i.id!r} (value={i.value!r})" for i in pending)
