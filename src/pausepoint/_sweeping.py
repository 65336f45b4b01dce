"""The sweeper's logic: find the questions whose deadline passed and expire them.

One generator (`sweep_flow`) for both drivers, as the loop is: it yields effects
(list due questions, read a thread, resume one) whose ``run``/``arun`` do the
I/O, and receives their results. `pausepoint.questions.sweep` and ``asweep`` only
drive it.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Generator, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict, cast

from pausepoint._clock import as_utc
from pausepoint.errors import (
    AlreadyAnsweredError,
    DeadlineExpiredError,
    NothingToResumeError,
    ThreadBusyError,
    UnknownInterruptIdError,
)
from pausepoint.types import Command, Interrupt, TimedOut, TimeoutAnswer

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import SaverProtocol
    from pausepoint.checkpoint.questions import PendingPage
    from pausepoint.config import RunnableConfig
    from pausepoint.types import StateSnapshot

__all__ = ["SweepOutcome", "sweep_flow"]

Status = Literal["answered", "failed", "busy", "gone", "error"]


@dataclasses.dataclass(frozen=True, slots=True)
class SweepOutcome:
    """What the sweeper did with one expired question.

    Attributes:
        thread_id: The question's thread.
        question_id: The question (``"<interrupt id>:<position>"``).
        deadline: Its deadline (UTC).
        status: ``"answered"`` (its ``TimeoutAnswer`` was stored and the thread ran
            on), ``"failed"`` (``on_timeout="fail"`` was stored: ``interrupt()``
            raised ``DeadlineExpiredError``), ``"busy"`` (another run held the
            thread: nothing written, the next sweep tries again), ``"gone"`` (no
            longer pending: answered first by a person or another sweeper; nothing
            written), or ``"error"`` (the thread ran on and failed otherwise; see
            ``detail``).
        detail: The error's message, for ``"busy"``, ``"gone"`` and ``"error"``.
    """

    thread_id: str
    question_id: str
    deadline: datetime.datetime
    status: Status
    detail: str = ""


class Due(Protocol):
    """A due question, as ``list_pending`` or the fallback scan gives it."""

    @property
    def thread_id(self) -> str: ...
    @property
    def question_id(self) -> str: ...
    @property
    def deadline(self) -> datetime.datetime | None: ...
    @property
    def on_timeout(self) -> Literal["fail"] | TimeoutAnswer | None: ...


class SweptGraph(Protocol):
    """What the sweeper needs of a compiled graph: read a thread, resume it."""

    def get_state(self, config: RunnableConfig) -> StateSnapshot: ...
    async def aget_state(self, config: RunnableConfig) -> StateSnapshot: ...
    def invoke(self, input: Command[str], config: RunnableConfig) -> object: ...
    async def ainvoke(self, input: Command[str], config: RunnableConfig) -> object: ...


class _PageArgs(TypedDict):
    due_by: datetime.datetime
    limit: int
    graph: str | None
    cursor: str | None


class PendingSource(Protocol):
    """A saver that lists waiting questions (every `BaseCheckpointSaver` does)."""

    def list_pending(
        self, *, due_by: datetime.datetime | None, limit: int, graph: str | None, cursor: str | None
    ) -> PendingPage: ...
    async def alist_pending(
        self, *, due_by: datetime.datetime | None, limit: int, graph: str | None, cursor: str | None
    ) -> PendingPage: ...


@dataclasses.dataclass(frozen=True, slots=True)
class _Scanned:
    """A due question found by the fallback scan (a saver without ``list_pending``)."""

    thread_id: str
    question_id: str
    deadline: datetime.datetime | None
    on_timeout: Literal["fail"] | TimeoutAnswer | None


# --- effects: each does its I/O on either driver -----------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class ListDue:
    """One page of due questions from ``saver.list_pending(due_by=...)``."""

    saver: PendingSource
    now: datetime.datetime
    limit: int
    graph_id: str | None
    cursor: str | None

    def _args(self) -> _PageArgs:
        return {
            "due_by": self.now,
            "limit": self.limit,
            "graph": self.graph_id,
            "cursor": self.cursor,
        }

    def run(self, graph: SweptGraph) -> PendingPage:
        """The page (``items``, ``next_cursor``)."""
        return self.saver.list_pending(**self._args())

    async def arun(self, graph: SweptGraph) -> PendingPage:
        """The page, from ``alist_pending``."""
        return await self.saver.alist_pending(**self._args())


@dataclasses.dataclass(frozen=True, slots=True)
class ListThreads:
    """Every thread's id, for a saver without ``list_pending`` (the slow fallback)."""

    saver: SaverProtocol

    def run(self, graph: SweptGraph) -> list[str]:
        """The thread ids, in first-seen order."""
        return _ids(t.config for t in self.saver.list(None))

    async def arun(self, graph: SweptGraph) -> list[str]:
        """The thread ids, from ``alist``."""
        return _ids([t.config async for t in self.saver.alist(None)])


@dataclasses.dataclass(frozen=True, slots=True)
class ReadState:
    """A thread's head snapshot (the fallback scan)."""

    thread_id: str

    def run(self, graph: SweptGraph) -> StateSnapshot:
        """``graph.get_state`` of the thread."""
        return graph.get_state(_config(self.thread_id))

    async def arun(self, graph: SweptGraph) -> StateSnapshot:
        """``graph.aget_state`` of the thread."""
        return await graph.aget_state(_config(self.thread_id))


@dataclasses.dataclass(frozen=True, slots=True)
class Expire:
    """Resume one thread with a timed-out answer; the error it raised, or None."""

    thread_id: str
    command: Command[str]

    def run(self, graph: SweptGraph) -> Exception | None:
        """Run ``graph.invoke``; an exception is returned, not raised."""
        try:
            graph.invoke(self.command, _config(self.thread_id))
        except Exception as exc:  # every outcome is reported, the sweep goes on
            return exc
        return None

    async def arun(self, graph: SweptGraph) -> Exception | None:
        """Run ``graph.ainvoke``; an exception is returned, not raised."""
        try:
            await graph.ainvoke(self.command, _config(self.thread_id))
        except Exception as exc:  # every outcome is reported, the sweep goes on
            return exc
        return None


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def _ids(configs: Iterable[Any]) -> list[str]:
    seen: dict[str, None] = {}
    for config in configs:
        conf = config["configurable"]
        if not conf.get("checkpoint_ns"):
            seen.setdefault(str(conf["thread_id"]), None)
    return list(seen)


# --- the flow -----------------------------------------------------------------------------

Effect = ListDue | ListThreads | ReadState | Expire


def sweep_flow(
    saver: SaverProtocol, now: datetime.datetime, limit: int, graph_id: str | None
) -> Generator[Effect, Any, list[SweepOutcome]]:
    """Find up to ``limit`` expired questions with an ``on_timeout`` and expire each."""
    now = as_utc(now, "sweep(now=...)")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"sweep(limit=...) must be a positive int, not {limit!r}")
    if hasattr(saver, "list_pending"):  # every BaseCheckpointSaver; a third party's may not
        due = yield from _listed(cast("PendingSource", saver), now, limit, graph_id)
    else:
        due = yield from _scanned(saver, now, limit, graph_id)
    outcomes: list[SweepOutcome] = []
    for question in due:
        outcomes.append((yield from _expire(question, now)))
    return outcomes


def _acts(question: Due, now: datetime.datetime) -> bool:
    """Due, and told what to do on expiry (no ``on_timeout``: a deadline to show only)."""
    deadline = question.deadline
    return deadline is not None and deadline <= now and question.on_timeout is not None


def _listed(
    saver: PendingSource, now: datetime.datetime, limit: int, graph_id: str | None
) -> Generator[Effect, Any, list[Due]]:
    due: list[Due] = []
    cursor: str | None = None
    while len(due) < limit:
        page: PendingPage = yield ListDue(saver, now, limit, graph_id, cursor)
        due.extend(q for q in page.items if _acts(q, now))
        cursor = page.next_cursor
        if cursor is None:
            break
    return due[:limit]


def _scanned(
    saver: SaverProtocol, now: datetime.datetime, limit: int, graph_id: str | None
) -> Generator[Effect, Any, list[Due]]:
    due: list[Due] = []
    threads: list[str] = yield ListThreads(saver)
    for thread_id in threads:
        snapshot: StateSnapshot = yield ReadState(thread_id)
        meta: Mapping[str, object] = snapshot.metadata or {}
        if graph_id is not None and meta.get("graph_id") != graph_id:
            continue
        found = (_scan_item(thread_id, i) for i in snapshot.interrupts)
        due.extend(q for q in found if _acts(q, now))
        if len(due) >= limit:
            break
    return due[:limit]


def _scan_item(thread_id: str, question: Interrupt) -> _Scanned:
    return _Scanned(thread_id, question.question_id, question.deadline, question.on_timeout)


def _expire(question: Due, now: datetime.datetime) -> Generator[Effect, Any, SweepOutcome]:
    on_timeout = question.on_timeout
    assert question.deadline is not None  # _acts checked it
    assert on_timeout is not None  # and this
    stored = TimedOut(question.deadline, on_timeout, now, uuid.uuid4().hex)
    error = yield Expire(question.thread_id, Command(resume={question.question_id: stored}))
    status, detail = _status(on_timeout, error)
    return SweepOutcome(question.thread_id, question.question_id, question.deadline, status, detail)


def _status(
    on_timeout: Literal["fail"] | TimeoutAnswer, error: Exception | None
) -> tuple[Status, str]:
    acted: Status = "answered" if isinstance(on_timeout, TimeoutAnswer) else "failed"
    match error:
        case None:
            return acted, ""
        case DeadlineExpiredError():
            return "failed", ""
        case ThreadBusyError():
            return "busy", str(error)
        case AlreadyAnsweredError() | UnknownInterruptIdError() | NothingToResumeError():
            return "gone", str(error)
        case _:
            return "error", f"{type(error).__name__}: {error}"
