"""Answering waiting questions, and expiring them when their deadline passes.

An application lists waiting questions with ``saver.list_pending(...)`` (each a
``PendingQuestion`` naming its thread and its ``question_id``) and answers one with
`answer` (or `aanswer`): the thread resumes with
``Command(resume={question.question_id: value})``, through the same checks and the
same single writer as any resume. What can go wrong, and what it means:

- [`InvalidAnswerError`][pausepoint.errors.InvalidAnswerError]: the answer does not
  match the question's ``response_schema`` (``.problems`` lists each); nothing was
  written, the question still waits (an HTTP API answers 422).
- [`ThreadBusyError`][pausepoint.errors.ThreadBusyError]: another run is advancing
  the thread right now; try again (409).
- The question is no longer pending (409): someone else answered it first
  ([`AlreadyAnsweredError`][pausepoint.errors.AlreadyAnsweredError], when their
  answer differs), or the thread moved on without it
  ([`UnknownInterruptIdError`][pausepoint.errors.UnknownInterruptIdError] or
  [`NothingToResumeError`][pausepoint.errors.NothingToResumeError]). `NOT_PENDING`
  is the tuple of these three, for one ``except`` clause. Sending the *same*
  answer as the one stored is not an error: it changes nothing.

`sweep` (and `asweep`; ``pausepoint sweep`` on the command line) expires the
questions whose deadline passed: see its docstring.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Protocol

from pausepoint._clock import use_clock, utc_now
from pausepoint._sweeping import SweepOutcome, SweptGraph, sweep_flow
from pausepoint.errors import AlreadyAnsweredError, NothingToResumeError, UnknownInterruptIdError
from pausepoint.types import Command

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import SaverProtocol
    from pausepoint.config import RunnableConfig

__all__ = [
    "NOT_PENDING",
    "Question",
    "SweepOutcome",
    "aanswer",
    "answer",
    "asweep",
    "sweep",
    "use_clock",
    "utc_now",
]

NOT_PENDING: tuple[type[Exception], ...] = (
    AlreadyAnsweredError,
    UnknownInterruptIdError,
    NothingToResumeError,
)
"""The errors that mean "this question is no longer pending": answered by someone
else, or left behind by the thread. ``except NOT_PENDING:``."""


class Question(Protocol):
    """What `answer` needs of a question: a ``PendingQuestion`` has it."""

    @property
    def thread_id(self) -> str:
        """The thread that waits."""
        ...

    @property
    def question_id(self) -> str:
        """``"<interrupt id>:<position>"``: the key the answer is sent with."""
        ...


def answer(
    graph: SweptGraph, question: Question, value: object, *, config: RunnableConfig | None = None
) -> Any:
    """Answer ``question`` with ``value`` and run its thread on: ``graph.invoke``'s result.

    Args:
        graph: The compiled graph the thread runs (with its checkpointer).
        question: A waiting question (``saver.list_pending(...).items[i]``).
        value: The answer, as sent (JSON-shaped when the question has a schema).
        config: More of the run's config (tags, ``recursion_limit``, configurable
            keys); its thread is the question's.

    Returns:
        What ``graph.invoke`` returns (the state, with ``"__interrupt__"`` when the
        thread waits again).

    Raises:
        InvalidAnswerError: The question's schema refuses ``value``; nothing written.
        ThreadBusyError: Another run is advancing the thread.
        AlreadyAnsweredError: Someone answered it differently first (`NOT_PENDING`).
    """
    return graph.invoke(*answer_call(question, value, config))


async def aanswer(
    graph: SweptGraph, question: Question, value: object, *, config: RunnableConfig | None = None
) -> Any:
    """`answer`, on the async driver (``graph.ainvoke``)."""
    return await graph.ainvoke(*answer_call(question, value, config))


def answer_call(
    question: Question, value: object, config: RunnableConfig | None
) -> tuple[Command[str], RunnableConfig]:
    """The input and config that answer ``question`` with ``value``."""
    base: RunnableConfig = config or {}
    configurable = {**base.get("configurable", {}), "thread_id": question.thread_id}
    run: RunnableConfig = {**base, "configurable": configurable}
    return Command(resume={question.question_id: value}), run


def sweep(
    graph: SweptGraph,
    *,
    now: datetime.datetime | None = None,
    limit: int = 100,
    graph_id: str | None = None,
) -> list[SweepOutcome]:
    """Expire the questions whose deadline passed: answer them, or fail them.

    Each due question with an ``on_timeout`` gets a `pausepoint.types.TimedOut`
    answer through the normal resume path (the thread's single writer): the node's
    ``interrupt()`` returns the `TimeoutAnswer`'s value, or raises
    `DeadlineExpiredError` for ``"fail"``. Questions with a deadline and no
    ``on_timeout`` are left alone. Idempotent: each action stores a new
    ``TimedOut``, so when two sweepers race, the second is refused
    (``AlreadyAnsweredError``) or finds the thread busy, writes nothing, and reports
    it (``status`` ``"gone"`` or ``"busy"``).

    Args:
        graph: The compiled graph the threads run, with its checkpointer.
        now: The time to expire against (aware); default: `utc_now`.
        limit: At most this many questions per call (call again for more).
        graph_id: Only threads whose checkpoint metadata's ``"graph_id"`` is this
            (when several graphs share the database).

    Returns:
        One `SweepOutcome` per due question acted on or skipped.
    """
    flow = sweep_flow(_saver(graph), now or utc_now(), limit, graph_id)
    reply: object = None
    try:
        while True:
            reply = flow.send(reply).run(graph)
    except StopIteration as done:
        outcomes: list[SweepOutcome] = done.value
        return outcomes


async def asweep(
    graph: SweptGraph,
    *,
    now: datetime.datetime | None = None,
    limit: int = 100,
    graph_id: str | None = None,
) -> list[SweepOutcome]:
    """`sweep`, on the async driver and the async saver methods."""
    flow = sweep_flow(_saver(graph), now or utc_now(), limit, graph_id)
    reply: object = None
    try:
        while True:
            reply = await flow.send(reply).arun(graph)
    except StopIteration as done:
        outcomes: list[SweepOutcome] = done.value
        return outcomes


def _saver(graph: SweptGraph) -> SaverProtocol:
    saver = getattr(graph, "checkpointer", None)
    if saver in (None, True, False):
        raise ValueError(
            "sweep() needs a graph compiled with a checkpointer (the saver whose "
            "threads it expires): graph.compile(checkpointer=SqliteSaver(...))"
        )
    return saver
