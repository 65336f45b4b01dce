"""Reading a checkpoint's pending writes: which tasks finished, failed or paused.

Also parses ``Command(resume=...)`` into an explicit `ResumeMap` at the
start of a run, checking it against what is really pending (DESIGN §4.4).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from xxhash import xxh3_128_hexdigest

from pausepoint.checkpoint.base import PendingWrite
from pausepoint.constants import (
    ASKED,
    ASKED_SPAN,
    ERROR,
    INTERRUPT,
    NULL_TASK_ID,
    RESUME,
    SCHEDULED,
)
from pausepoint.errors import (
    AmbiguousResumeError,
    NothingToResumeError,
    UnknownInterruptIdError,
)
from pausepoint.types import Interrupt

if TYPE_CHECKING:
    from pausepoint.loop.tasks import Task

__all__ = [
    "as_stored",
    "nested_resume",
    "with_ids",
    "ResumeMap",
    "TaskRecord",
    "interrupt_owners",
    "match_records",
    "parse_resume",
    "read_records",
]

_KEY = re.compile(r"^[0-9a-f]{32}(?::[0-9]+)?$")
"""A resume map key: an interrupt id, or a question id (``"<id>:<position>"``)."""

AMBIGUOUS_MESSAGE = (
    "When there are multiple pending interrupts, you must specify the interrupt id when "
    "resuming. Docs: https://docs.langchain.com/oss/python/langgraph/"
    "add-human-in-the-loop#resume-multiple-interrupts-with-one-invocation."
)


class TaskRecord:
    """What a checkpoint's pending writes say about one task.

    Fields not found in the writes read their class defaults (no ``__slots__``, no
    ``__init__`` call per record): a resume rebuilds one record per task of the
    step, and a paused task's record costs a quarter less this way than with slots
    filled by ``__init__`` (benchmarks/README.md, "Figures behind the comments").
    """

    writes: Sequence[tuple[str, object]] = ()
    interrupts: tuple[Interrupt, ...] = ()
    resume: list[object] | None = None
    """The task's answers, one per ``interrupt()`` call, in the order they were asked."""
    asked: int | None = None
    """Position of the task's own question in ``interrupts`` (None: not its own, or a
    record saved before positions were stored, read as ``len(resume)``)."""
    error: Any = None
    done: bool = False
    asked_span: str | None = None
    """The ``traceparent`` of the span that asked (``ASKED_SPAN``; written while traced)."""

    def __init__(
        self,
        writes: Sequence[tuple[str, object]] = (),
        interrupts: tuple[Interrupt, ...] = (),
        resume: list[object] | None = None,
        error: Any = None,
        done: bool = False,
        asked: int | None = None,
    ) -> None:
        if writes:
            self.writes = writes
        if interrupts:
            self.interrupts = interrupts
        if resume is not None:
            self.resume = resume
        if error is not None:
            self.error = error
        if done:
            self.done = done
        if asked is not None:
            self.asked = asked

    def __repr__(self) -> str:
        return (
            f"TaskRecord(writes={self.writes!r}, interrupts={self.interrupts!r}, "
            f"resume={self.resume!r}, asked={self.asked!r}, error={self.error!r}, "
            f"done={self.done!r})"
        )

    @property
    def position(self) -> int:
        """Which ``interrupt()`` call of the task asked the question in ``interrupts``."""
        asked = self.asked
        if asked is not None:
            return asked
        return len(self.resume) if self.resume else 0

    @property
    def answered(self) -> bool:
        """Its question has a stored answer that the task has not got past yet."""
        return (
            bool(self.interrupts)
            and not self.done
            and self.resume is not None
            and len(self.resume) > self.position
        )

    @property
    def waiting(self) -> bool:
        """Its question waits for an answer (asked, none stored)."""
        return bool(self.interrupts) and not self.done and not self.answered

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
) -> tuple[dict[str, TaskRecord], list[tuple[str, object]]]:
    """Group pending writes by task; return ``(records, null_task_writes)``.

    Every resume reads all of its checkpoint's writes (a fan-out of K paused tasks
    has ~2K), so the loop unpacks each write once rather than reading fields by name.
    """
    records: dict[str, TaskRecord] = {}
    null_writes: list[tuple[str, object]] = []
    get = records.get
    for task_id, channel, value in pending:
        if task_id == NULL_TASK_ID:
            if channel != RESUME:
                null_writes.append((channel, value))
            continue
        rec = get(task_id)
        if rec is None:
            rec = records[task_id] = _blank(TaskRecord)
        if channel == INTERRUPT:
            rec.interrupts = tuple(value or ())
        elif channel == RESUME:
            rec.resume = list(value) if isinstance(value, (list, tuple)) else [value]  # pyright: ignore[reportUnknownArgumentType]
        elif channel == ERROR:
            rec.error = value
        elif channel == ASKED:
            rec.asked = value
        elif channel == ASKED_SPAN:
            rec.asked_span = value
        elif channel != SCHEDULED:
            if rec.done:
                made_here: Any = rec.writes  # the list made below
                made_here.append((channel, value))
            else:
                rec.writes = [(channel, value)]
                rec.done = True
    _place_questions(records)
    return records, null_writes


def match_records(
    tasks: list[Task],
    records: Mapping[str, TaskRecord],
    resuming: bool,
    answered: Collection[str],
) -> tuple[list[Task], list[Task]]:
    """Split a step's tasks into those to run and those that stay paused (DESIGN §4.6).

    A finished task gets its saved writes and runs no more. On a resume, a paused
    task stays paused unless this resume answers it (``answered``) or an earlier
    run stored an answer that it never got past (§4.1: the worker died, say).
    ``invoke(None)`` (not ``resuming``) runs every task that has not finished.
    """
    to_run: list[Task] = []
    paused: list[Task] = []
    for task in tasks:
        rec = records.get(task.id)
        if rec is None:
            to_run.append(task)
        elif rec.done:
            task.writes = rec.writes
        elif (
            resuming
            and rec.interrupts
            and not rec.error
            and task.id not in answered
            and not rec.answered
        ):
            paused.append(task)
        else:
            to_run.append(task)
    return to_run, paused


def _place_questions(records: Mapping[str, TaskRecord]) -> None:
    """Give each task's own question its position (for ``Interrupt.question_id``)."""
    for rec in records.values():
        if rec.asked is not None and rec.interrupts:
            rec.interrupts[0].position = rec.asked


def as_stored(interrupts: tuple[Interrupt, ...], asked: int | None) -> tuple[Interrupt, ...]:
    """A task's interrupts as its ``__interrupt__`` write stores them.

    The task's own question (``asked`` given: its position, stored in the ``__asked__``
    write) without its position, in LangGraph's form; a question from below (a
    subgraph's, held by its parent's task) with it, so the parent's snapshot and
    ``list_pending`` give it the question id its asking task gives it.
    """
    if asked is None or not interrupts or interrupts[0].position is None:
        return interrupts
    own = copy.copy(interrupts[0])
    own.position = None
    return (own, *interrupts[1:])


_blank: Callable[[type[TaskRecord]], TaskRecord] = object.__new__
"""A record with every field at its default, without an ``__init__`` call."""


def interrupt_owners(records: Mapping[str, TaskRecord]) -> dict[str, list[str]]:
    """Interrupt id → the tasks whose records hold it, for every answerable interrupt.

    Usually one task; two when a ``@task`` call paused (its record, and its caller's,
    which reports the call's interrupt as its own). Made once per resume, so that
    checking and binding an answer costs the answer, not the number of paused tasks.
    """
    owners: dict[str, list[str]] = {}
    for task_id, rec in records.items():
        if rec.interrupts and not rec.done:
            for i in rec.interrupts:
                found = owners.get(i.id)
                if found is None:
                    owners[i.id] = [task_id]
                elif found[-1] != task_id:
                    found.append(task_id)
    return owners


def is_own_interrupt(interrupt: Interrupt, task_ns: str) -> bool:
    """Whether the task with namespace ``task_ns`` raised ``interrupt`` itself."""
    return interrupt.id == xxh3_128_hexdigest(task_ns.encode())


@dataclasses.dataclass(frozen=True, slots=True)
class ResumeMap:
    """Resume values by interrupt id: the only form of resume the loop handles.

    ``positions``: for the answers sent by question id, which question of the task
    each answers (its position); the others answer whichever question waits.
    """

    values: Mapping[str, object]
    positions: Mapping[str, int] = dataclasses.field(default_factory=dict[str, int])
    plain: bool = False
    """Sent as a plain value (not by id): it answers whichever single question waits."""


def is_resume_map(resume: object) -> TypeGuard[dict[str, object]]:
    """A dict whose keys are all 32-hex interrupt ids (otherwise it is a plain value)."""
    return isinstance(resume, dict) and all(
        isinstance(k, str) and _KEY.match(k)
        for k in resume  # pyright: ignore[reportUnknownVariableType]
    )


def parse_resume(
    resume: object,
    pending: list[Interrupt],
    answered: Collection[str] = (),
    owners: Mapping[str, list[str]] | None = None,
) -> ResumeMap:
    """Turn ``Command(resume=...)`` into a map checked against the pending interrupts.

    ``pending`` are the interrupts the run reported; a plain value goes to the one
    still waiting (those in ``answered`` have a stored answer), or, when none waits,
    to the one answered (a resend: binding it checks it is the same answer). An id
    map may answer any id in ``owners`` (`interrupt_owners`: those reported,
    and those of ``@task`` calls that paused beside the one their caller reported),
    or only those reported when it is not given.

    Raises:
        NothingToResumeError: Nothing is pending.
        AmbiguousResumeError: A plain value while several interrupts are pending.
        UnknownInterruptIdError: A map names ids that are not pending.
    """
    if not pending:
        raise NothingToResumeError(
            "Command(resume=...) was sent but no interrupt is pending in this thread: "
            "the run has finished or was never paused. Check graph.get_state(config)."
            "interrupts before resuming; nothing was changed."
        )
    if is_resume_map(resume):
        if not resume:
            raise UnknownInterruptIdError(
                f"Command(resume={{}}) answers no interrupt; pending ids: {_ids(pending)!r}"
            )
        known = owners if owners is not None else set(_ids(pending))
        values: dict[str, object] = {}
        positions: dict[str, int] = {}
        for key, value in resume.items():  # pyright: ignore[reportUnknownVariableType]
            iid, _, at = str(key).partition(":")  # pyright: ignore[reportUnknownArgumentType]
            if iid in values:
                raise UnknownInterruptIdError(
                    f"Command(resume=...) answers interrupt {iid!r} twice; an interrupt id "
                    "and a question id of one task name the same paused task. Nothing was "
                    "changed."
                )
            values[iid] = value
            if at:
                positions[iid] = int(at)
        unknown = [k for k in resume if str(k).partition(":")[0] not in known]  # pyright: ignore[reportUnknownArgumentType]
        if unknown:
            raise UnknownInterruptIdError(
                f"Command(resume=...) names interrupt ids that are not pending: {unknown!r}. "
                f"Pending: {_describe(pending)}. Nothing was changed."
            )
        return ResumeMap(values, positions)
    ids = _ids(pending)
    waiting = [i for i in ids if i not in answered] if answered else ids
    distinct = list(dict.fromkeys(waiting or ids))
    if len(distinct) > 1:
        raise AmbiguousResumeError(AMBIGUOUS_MESSAGE)
    return ResumeMap({distinct[0]: resume}, plain=True)


def _ids(pending: list[Interrupt]) -> list[str]:
    return [i.id for i in pending]


def _describe(pending: list[Interrupt]) -> str:
    return ", ".join(f"{i.id!r} (value={i.value!r})" for i in pending)


def with_ids(found: tuple[Interrupt, ...], ns: str) -> tuple[Interrupt, ...]:
    """Give id-less interrupts (the deprecated ``NodeInterrupt``) their task's id."""
    if all(i.id for i in found):
        return found
    return tuple(i if i.id else Interrupt.from_ns(i.value, ns) for i in found)


def nested_resume(nest_map: ResumeMap, records: Mapping[str, TaskRecord]) -> ResumeMap:
    """A subgraph's share of its parent's resume, matched to its own questions.

    A plain value the parent bound to the subgraph task's question answers the
    subgraph's one waiting question even when that question's id changed since the
    parent saw it (an ``update_state`` on the subgraph renames what it carries).
    """
    if not nest_map.plain or len(nest_map.values) != 1:
        return nest_map
    ids = {i.id for rec in records.values() for i in rec.interrupts}
    if set(nest_map.values) & ids:
        return nest_map
    waiting = {i.id for rec in records.values() if not rec.done for i in rec.interrupts}
    if len(waiting) != 1:
        return nest_map
    (value,) = nest_map.values.values()
    return ResumeMap({next(iter(waiting)): value}, plain=True)
