"""``RunService``: the one interface the HTTP layer calls (assistants, threads, runs)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from pausepoint.server.records import (
    Assistant,
    CancelAction,
    RunEvent,
    RunRecord,
    RunRequest,
    RunStatus,
    ThreadRecord,
    ThreadStatus,
)

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import BaseCheckpointSaver
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.graph.state import StateGraph

__all__ = ["RunService"]

SortOrder = Literal["asc", "desc"]


class RunService:
    """Assistants, threads and runs over one database, with the workers that run them."""

    graphs: Mapping[str, CompiledStateGraph]
    saver: BaseCheckpointSaver

    @classmethod
    async def open(
        cls,
        db_url: str,
        graphs: Mapping[str, CompiledStateGraph | StateGraph],
        *,
        workers: int = 4,
    ) -> RunService:
        """Open the saver and the server's tables (created if missing); no worker runs yet."""
        raise NotImplementedError

    async def start(self) -> None:
        """Requeue the runs a dead process left ``running``, then start the workers."""
        raise NotImplementedError

    async def close(self) -> None:
        """Stop the workers (runs in flight are left to be requeued) and the database."""
        raise NotImplementedError

    # --- assistants ---------------------------------------------------------------------

    async def create_assistant(
        self,
        graph_id: str,
        *,
        assistant_id: str | None = None,
        config: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        name: str | None = None,
        description: str | None = None,
        if_exists: Literal["raise", "do_nothing"] = "raise",
    ) -> Assistant:
        """Store an assistant of graph ``graph_id``; ``if_exists`` decides about an existing id.

        Raises:
            NotFoundError: No graph ``graph_id`` is served.
            ConflictError: ``assistant_id`` exists and ``if_exists="raise"``.
        """
        raise NotImplementedError

    async def get_assistant(self, assistant_id_or_graph_id: str) -> Assistant:
        """The assistant with this id, or the default assistant of the graph of this name."""
        raise NotImplementedError

    async def search_assistants(
        self,
        *,
        graph_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        name: str | None = None,
        limit: int = 10,
        offset: int = 0,
        sort_by: str = "created_at",
        sort_order: SortOrder = "desc",
    ) -> tuple[list[Assistant], int]:
        """A page of assistants matching every filter given, and how many match in all."""
        raise NotImplementedError

    def graph_for(self, assistant: Assistant) -> CompiledStateGraph:
        """The compiled graph an assistant runs."""
        raise NotImplementedError

    # --- threads ------------------------------------------------------------------------

    async def create_thread(
        self,
        *,
        thread_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        if_exists: Literal["raise", "do_nothing"] = "raise",
    ) -> ThreadRecord:
        """Store a new thread (a fresh uuid4 id unless ``thread_id``).

        Raises:
            ConflictError: ``thread_id`` exists and ``if_exists="raise"``.
        """
        raise NotImplementedError

    async def get_thread(self, thread_id: str) -> ThreadRecord:
        """The thread's record.

        Raises:
            NotFoundError: No such thread.
        """
        raise NotImplementedError

    async def patch_thread(self, thread_id: str, *, metadata: dict[str, Any]) -> ThreadRecord:
        """Merge ``metadata`` into the thread's metadata."""
        raise NotImplementedError

    async def delete_thread(self, thread_id: str) -> None:
        """Cancel the thread's runs, then delete its runs, checkpoints and record."""
        raise NotImplementedError

    async def search_threads(
        self,
        *,
        ids: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        values: dict[str, Any] | None = None,
        status: ThreadStatus | None = None,
        limit: int = 10,
        offset: int = 0,
        sort_by: str = "created_at",
        sort_order: SortOrder = "desc",
    ) -> tuple[list[ThreadRecord], int]:
        """A page of threads matching every filter given, and how many match in all."""
        raise NotImplementedError

    async def count_threads(
        self,
        *,
        metadata: dict[str, Any] | None = None,
        values: dict[str, Any] | None = None,
        status: ThreadStatus | None = None,
    ) -> int:
        """How many threads match every filter given."""
        raise NotImplementedError

    def graph_of_thread(self, thread: ThreadRecord) -> CompiledStateGraph | None:
        """The graph named by the thread's ``metadata.graph_id``, if it is served."""
        raise NotImplementedError

    # --- runs ---------------------------------------------------------------------------

    async def create_run(self, thread_id: str, request: RunRequest) -> RunRecord:
        """Record a run ``pending`` for the workers, after checking it against the graph.

        Applies ``if_not_exists`` (an unknown thread) and ``multitask_strategy`` (a
        busy thread). Raises ``NotFoundError``, ``ConflictError`` or
        ``InvalidRequestError``; nothing is written then.
        """
        raise NotImplementedError

    async def get_run(self, thread_id: str, run_id: str) -> RunRecord:
        """The run's record (``NotFoundError`` if it is not a run of this thread)."""
        raise NotImplementedError

    async def list_runs(
        self,
        thread_id: str,
        *,
        limit: int = 10,
        offset: int = 0,
        status: RunStatus | None = None,
    ) -> list[RunRecord]:
        """The thread's runs, newest first."""
        raise NotImplementedError

    async def cancel_run(
        self,
        thread_id: str,
        run_id: str,
        *,
        action: CancelAction = "interrupt",
        wait: bool = False,
    ) -> None:
        """Cancel a pending or running run; ``wait`` until it has stopped."""
        raise NotImplementedError

    async def delete_run(self, thread_id: str, run_id: str) -> None:
        """Delete a run that is not running (``ConflictError`` if it is)."""
        raise NotImplementedError

    async def join_run(self, thread_id: str, run_id: str) -> dict[str, Any]:
        """Wait for the run to end; the wait/join body.

        The final values (plus ``"__interrupt__": [{"value", "id"}]`` when it stopped
        at questions), or ``{"__error__": {"error": type name, "message": str}}``.
        """
        raise NotImplementedError

    def stream_run(
        self, thread_id: str, run_id: str, *, last_event_id: str | None = None
    ) -> AsyncIterator[RunEvent]:
        """The run's events after ``last_event_id``, then the live ones.

        All stored events when ``last_event_id`` is ``None``; ends when the run ends.
        """
        raise NotImplementedError
