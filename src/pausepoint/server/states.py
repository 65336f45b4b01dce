"""A thread's state through its graph: which graph, which config, its head snapshot.

The server's thread records hold no state: values, questions and history are read
from the checkpoints with the graph the thread ran (``metadata.graph_id``, stamped
when a run is created; the only graph served, for a thread that has not run yet).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from pausepoint.server.errors import InvalidRequestError

if TYPE_CHECKING:
    from pausepoint.config import RunnableConfig
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.server.records import ThreadRecord
    from pausepoint.server.service import RunService
    from pausepoint.types import StateSnapshot

__all__ = ["checkpoint_config", "graph_of", "head_of", "require_graph", "thread_config"]

_CHECKPOINT_KEYS = ("checkpoint_ns", "checkpoint_id", "checkpoint_map")


def thread_config(thread_id: str, checkpoint: Mapping[str, Any] | None = None) -> RunnableConfig:
    """The config that reads (or writes) ``thread_id``, at ``checkpoint`` when given.

    ``checkpoint`` is the API's ``Checkpoint`` object (its ``thread_id`` is ignored:
    the path's thread is the one read).
    """
    conf: dict[str, Any] = {"thread_id": thread_id}
    for key in _CHECKPOINT_KEYS:
        if checkpoint is not None and checkpoint.get(key) is not None:
            conf[key] = checkpoint[key]
    return cast("RunnableConfig", {"configurable": conf})


def checkpoint_config(
    thread_id: str, checkpoint: object, checkpoint_id: object = None
) -> RunnableConfig:
    """The config of a request's ``checkpoint`` (an object) or ``checkpoint_id`` (a string).

    Raises:
        InvalidRequestError: ``checkpoint`` is not an object, or ``checkpoint_id`` not a
            string.
    """
    if checkpoint is not None and not isinstance(checkpoint, dict):
        raise InvalidRequestError("'checkpoint' must be a JSON object (a Checkpoint)")
    if checkpoint_id is not None and not isinstance(checkpoint_id, str):
        raise InvalidRequestError("'checkpoint_id' must be a string")
    found: dict[str, Any] = dict(cast("dict[str, Any]", checkpoint or {}))
    if checkpoint_id is not None:
        found["checkpoint_id"] = checkpoint_id
    return thread_config(thread_id, found)


def graph_of(service: RunService, thread: ThreadRecord) -> CompiledStateGraph | None:
    """The graph of ``thread``: by its ``metadata.graph_id``, else the only one served."""
    graph = service.graph_of_thread(thread)
    if graph is None and len(service.graphs) == 1:
        graph = next(iter(service.graphs.values()))
    return graph


def require_graph(service: RunService, thread: ThreadRecord) -> CompiledStateGraph:
    """`graph_of`, or a 422 explaining that the thread has not run a graph yet."""
    graph = graph_of(service, thread)
    if graph is None:
        raise InvalidRequestError(
            f"thread {thread.thread_id!r} has no graph yet (no run, no metadata.graph_id): "
            f"run it with an assistant first, or set metadata.graph_id to one of "
            f"{sorted(service.graphs)}"
        )
    return graph


async def head_of(service: RunService, thread: ThreadRecord) -> StateSnapshot | None:
    """The thread's newest state, or None when it has no graph."""
    graph = graph_of(service, thread)
    if graph is None:
        return None
    return await graph.aget_state(thread_config(thread.thread_id))
