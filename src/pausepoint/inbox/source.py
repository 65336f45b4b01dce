"""The inbox's view of one compiled graph: its waiting questions, threads and answers.

Every method is a coroutine, whatever the graph's saver: a saver that only runs on an
async connection (``AsyncPostgresSaver``) is awaited directly, any other is called in
a worker thread so a slow query or a long resumed run never blocks the event loop. What
is decided from the results (which question a snapshot holds) is shared by both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict, TypeVar, cast

from starlette.concurrency import run_in_threadpool

from pausepoint.checkpoint import PendingPage, PendingQuestion
from pausepoint.checkpoint._async_only import AsyncOnlySaver
from pausepoint.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from pausepoint.checkpoint.questions import questions_of_head
from pausepoint.config import RunnableConfig
from pausepoint.questions import aanswer, answer
from pausepoint.types import StateSnapshot

if TYPE_CHECKING:
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.serde.plain import Json

__all__ = ["Listing", "PendingArguments", "Questions", "question_in"]

T = TypeVar("T")

_VERSIONS_KEPT = 4096
"""Checkpoints whose version label the list remembers (`Questions.graph_versions`)."""


def _no_metadata() -> dict[str, Json]:
    return {}


class PendingArguments(TypedDict):
    """The keyword arguments of ``list_pending`` that a `Listing` gives."""

    graph: str | None
    metadata: dict[str, Json] | None
    cursor: str | None
    limit: int


@dataclasses.dataclass(frozen=True, slots=True)
class Listing:
    """What the list shows: which graph, which metadata, from where, how many."""

    graph: str | None = None
    metadata: Mapping[str, Json] = dataclasses.field(default_factory=_no_metadata)
    cursor: str | None = None
    limit: int = 50

    def arguments(self) -> PendingArguments:
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

    def __init__(self, graph: CompiledStateGraph) -> None:
        saver = getattr(graph, "checkpointer", None)
        if saver is None or isinstance(saver, bool):
            raise ValueError(
                "the inbox needs a graph compiled with a checkpointer (a SqliteSaver, "
                "PostgresSaver, ...): the questions it lists are stored there"
            )
        self.graph = graph
        self.saver: BaseCheckpointSaver = saver
        self._async = isinstance(saver, AsyncOnlySaver)
        self._versions: dict[tuple[str, str], str | None] = {}

    async def page(self, listing: Listing) -> PendingPage:
        """One page of waiting questions (`list_pending`'s order and cursor)."""
        if self._async:
            return await self.saver.alist_pending(**listing.arguments())
        return await _in_thread(lambda: self.saver.list_pending(**listing.arguments()))

    async def get(self, thread_id: str, question_id: str) -> PendingQuestion | None:
        """The question if it still waits at the thread's head; else None."""
        config = _config(thread_id)
        if self._async:
            head = await self.saver.aget_tuple(config)
        else:
            head = await _in_thread(lambda: self.saver.get_tuple(config))
        return question_in(head, question_id)

    async def waiting(self, thread_id: str) -> list[PendingQuestion]:
        """Every question that waits at the thread's head (none when nothing waits)."""
        config = _config(thread_id)
        if self._async:
            head = await self.saver.aget_tuple(config)
        else:
            head = await _in_thread(lambda: self.saver.get_tuple(config))
        return questions_of_head(head) if head is not None else []

    async def graph_version(self, thread_id: str, checkpoint_id: str | None = None) -> str | None:
        """The ``compile(version=...)`` label of the graph that wrote a thread's checkpoint.

        The thread's head, or the checkpoint ``checkpoint_id`` of it; None when the
        checkpoint has no label (compiled without ``version=``) or is gone.
        """
        config = _config(thread_id, checkpoint_id)
        if self._async:
            head = await self.saver.aget_tuple(config)
        else:
            head = await _in_thread(lambda: self.saver.get_tuple(config))
        stamp: object = head.checkpoint.get("graph") if head is not None else None
        label = cast("dict[str, object]", stamp).get("version") if isinstance(stamp, dict) else None
        return label if isinstance(label, str) else None

    async def graph_versions(self, questions: Sequence[PendingQuestion]) -> dict[str, str]:
        """`graph_version` of each listed question's thread that has a label.

        Read from the checkpoint each question waits at, once: a checkpoint's stamp
        never changes, so the list's polls read only the checkpoints they have not
        seen (the newest `_VERSIONS_KEPT` are remembered).
        """
        found: dict[str, str] = {}
        for q in questions:
            key = (q.thread_id, q.checkpoint_id)
            if key not in self._versions:
                self._versions[key] = await self.graph_version(*key)
                while len(self._versions) > _VERSIONS_KEPT:
                    del self._versions[next(iter(self._versions))]
            label = self._versions[key]
            if label is not None:
                found[q.thread_id] = label
        return found

    async def history(self, thread_id: str, limit: int = 10) -> list[StateSnapshot]:
        """The thread's newest checkpoints, newest first."""
        config = _config(thread_id)
        if self._async:
            return [s async for s in self.graph.aget_state_history(config, limit=limit)]
        return await _in_thread(lambda: list(self.graph.get_state_history(config, limit=limit)))

    async def answer(self, question: PendingQuestion, value: object) -> object:
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


def _config(thread_id: str, checkpoint_id: str | None = None) -> RunnableConfig:
    configurable: dict[str, object] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def question_in(head: CheckpointTuple | None, question_id: str) -> PendingQuestion | None:
    """The waiting question ``question_id`` at a thread's head checkpoint, or None.

    Read by the same rules as ``list_pending`` (`questions_of_head`), so a question
    the list shows is found here until it is answered.
    """
    if head is None:
        return None
    return next((q for q in questions_of_head(head) if q.question_id == question_id), None)
