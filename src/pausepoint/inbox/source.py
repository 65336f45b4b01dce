"""The inbox's view of one compiled graph: its waiting questions, threads and answers.

Every method is a coroutine, whatever the graph's saver: a saver that only runs on an
async connection (``AsyncPostgresSaver``) is awaited directly, any other is called in
a worker thread so a slow query or a long resumed run never blocks the event loop. What
is decided from the results (which question a snapshot holds) is shared by both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool

from pausepoint.checkpoint import PendingPage, PendingQuestion
from pausepoint.checkpoint._async_only import AsyncOnlySaver
from pausepoint.config import RunnableConfig
from pausepoint.questions import aanswer, answer
from pausepoint.types import Interrupt, StateSnapshot

__all__ = ["Listing", "Questions", "question_in"]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class Listing:
    """What the list shows: which graph, which metadata, from where, how many."""

    graph: str | None = None
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict[str, Any])
    cursor: str | None = None
    limit: int = 50

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``list_pending`` for this listing."""
        return {
            "graph": self.graph,
            "metadata": dict(self.metadata) or None,
            "cursor": self.cursor,
            "limit": self.limit,
        }


class Questions:
    """A compiled graph (with its saver) as the inbox reads and answers it.

    Args:
        graph: A compiled graph with a checkpointer: the graph whose threads wait.
    """

    def __init__(self, graph: Any) -> None:
        saver = getattr(graph, "checkpointer", None)
        if saver is None or isinstance(saver, bool):
            raise ValueError(
                "the inbox needs a graph compiled with a checkpointer (a SqliteSaver, "
                "PostgresSaver, ...): the questions it lists are stored there"
            )
        self.graph = graph
        self.saver: Any = saver
        self._async = isinstance(saver, AsyncOnlySaver)

    @property
    def name(self) -> str | None:
        """The graph's name, as its questions are listed under."""
        name = getattr(self.graph, "name", None)
        return name if isinstance(name, str) else None

    async def page(self, listing: Listing) -> PendingPage:
        """One page of waiting questions (`list_pending`'s order and cursor)."""
        if self._async:
            return await self.saver.alist_pending(**listing.arguments())
        return await _in_thread(lambda: self.saver.list_pending(**listing.arguments()))

    async def get(self, thread_id: str, question_id: str) -> PendingQuestion | None:
        """The question if it still waits at the thread's head; else None."""
        config = _config(thread_id)
        if self._async:
            snapshot = await self.graph.aget_state(config)
        else:
            snapshot = await _in_thread(lambda: self.graph.get_state(config))
        return question_in(snapshot, thread_id, question_id, self.name)

    async def history(self, thread_id: str, limit: int = 10) -> list[StateSnapshot]:
        """The thread's newest checkpoints, newest first."""
        config = _config(thread_id)
        if self._async:
            return [s async for s in self.graph.aget_state_history(config, limit=limit)]
        return await _in_thread(lambda: list(self.graph.get_state_history(config, limit=limit)))

    async def answer(self, question: PendingQuestion, value: Any) -> Any:
        """Resume the question's thread with ``value`` (see `pausepoint.questions.answer`).

        Raises:
            InvalidAnswerError: ``value`` does not fit the question's schema.
            ResumeError: The question no longer waits (answered meanwhile).
            ThreadBusyError: Another run is advancing the thread.
        """
        if self._async:
            return await aanswer(self.graph, question, value)
        return await _in_thread(lambda: answer(self.graph, question, value))


async def _in_thread(call: Callable[[], T]) -> T:
    return await run_in_threadpool(call)


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def question_in(
    snapshot: StateSnapshot, thread_id: str, question_id: str, graph_name: str | None
) -> PendingQuestion | None:
    """The waiting question ``question_id`` of a thread's head snapshot, or None."""
    for intr in snapshot.interrupts:
        if intr.question_id != question_id:
            continue
        task = next((t for t in snapshot.tasks if intr in t.interrupts), None)
        conf: Mapping[str, Any] = snapshot.config.get("configurable") or {}
        return PendingQuestion(
            thread_id=thread_id,
            checkpoint_ns="",
            checkpoint_id=str(conf.get("checkpoint_id") or ""),
            task_id=task.id if task else "",
            task_name=task.name if task else "",
            interrupt_id=intr.id,
            position=intr.position or 0,
            value=intr.value,
            response_schema=_attr(intr, "response_schema"),
            asked_at=_parse_time(snapshot.created_at),
            deadline=_attr(intr, "deadline"),
            on_timeout=_attr(intr, "on_timeout"),
            graph=graph_name,
            metadata=dict(snapshot.metadata or {}),
        )
    return None


def _attr(intr: Interrupt, name: str) -> Any:
    return getattr(intr, name, None)


def _parse_time(text: str | None) -> datetime:
    if not text:
        return datetime.now(UTC)
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
