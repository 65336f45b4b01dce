"""Checking a resume against the thread before its run is recorded.

pausepoint's answer model is stricter than LangGraph's: an answer to a question
already answered differently (``AlreadyAnsweredError``), an unknown question id
(``UnknownInterruptIdError``), a resume with nothing waiting (``NothingToResumeError``)
are refused before the run writes anything. The server refuses them at once, so the
HTTP answer carries the typed error (409/422) instead of a run that fails later.

The check runs the graph's own resume handling on a saver that reads the real
database and refuses every write (`ReadOnlySaver`): the run loads the thread, binds
the answers (raising the typed errors), then reaches its first write, where it is
stopped (`Checked`). Nothing runs before that write: the check's graph is compiled
without thread leases and saves with durability ``"sync"``, so the answers are
stored (here: refused) before any node re-runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, StepCommit

if TYPE_CHECKING:
    from pausepoint.config import RunnableConfig
    from pausepoint.graph.compiled import CompiledStateGraph

__all__ = ["Checked", "ReadOnlySaver", "check_resume", "checking_graph"]


class Checked(Exception):
    """The check's run reached its first write: the resume was accepted."""


class ReadOnlySaver(BaseCheckpointSaver):
    """Reads through to ``saver``; every write raises `Checked`."""

    batches = True

    def __init__(self, saver: BaseCheckpointSaver) -> None:
        self.saver = saver
        self.serde: object = getattr(saver, "serde", None)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The real saver's."""
        return self.saver.get_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The real saver's."""
        return self.saver.list(config, filter=filter, before=before, limit=limit)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The real saver's."""
        return await self.saver.aget_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """The real saver's."""
        async for item in self.saver.alist(config, filter=filter, before=before, limit=limit):
            yield item

    def commit(self, step: StepCommit[Any]) -> Any:
        """Refused: the check ends here."""
        raise Checked

    async def acommit(self, step: StepCommit[Any]) -> Any:
        """Refused: the check ends here."""
        raise Checked

    def delete_thread(self, thread_id: str) -> None:
        """Refused: the check ends here."""
        raise Checked


def checking_graph(
    graph: CompiledStateGraph, saver: BaseCheckpointSaver
) -> CompiledStateGraph | None:
    """``graph`` compiled again on a `ReadOnlySaver` of ``saver``, without leases.

    None for an ``@entrypoint``, which has no builder: its resumes are not checked.
    """
    if graph.builder is None:
        return None
    return graph.builder.compile(
        checkpointer=ReadOnlySaver(saver),
        interrupt_before=graph.interrupt_before_nodes or None,
        interrupt_after=graph.interrupt_after_nodes or None,
        name=graph.name,
        lease_ttl=None,
        version=graph.spec.shape.version if graph.spec.shape is not None else None,
        migrations=graph.spec.migrations,
    )


async def check_resume(checking: CompiledStateGraph, thread_id: str, command: object) -> None:
    """Raise the typed error a run of ``command`` on the thread would raise first.

    Raises:
        ResumeError: and its subclasses (``AlreadyAnsweredError``,
            ``UnknownInterruptIdError``, ``NothingToResumeError``, ...).
    """
    config: Any = {"configurable": {"thread_id": thread_id}}
    try:
        await checking.ainvoke(command, config, durability="sync")
    except Checked:
        return
    except BaseException as exc:
        if _caused_by_check(exc):
            return
        raise


def _caused_by_check(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, Checked):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
