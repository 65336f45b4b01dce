"""Graph validation: collect every problem of a definition, then raise once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint.base import BaseCheckpointSaver
from pausepoint.constants import END, START
from pausepoint.errors import GraphValidationError

if TYPE_CHECKING:
    from pausepoint.graph.state import StateGraph

__all__ = ["check_checkpointer", "check_store", "collect_problems"]


def check_checkpointer(checkpointer: Any) -> None:
    """Refuse, at compile time, a ``checkpointer`` that is not a saver.

    Accepted: ``None``, ``True``, ``False``, a `BaseCheckpointSaver`, or any
    object with the saver methods (of `SaverProtocol`).
    """
    if checkpointer is None or isinstance(checkpointer, bool):
        return
    module = type(checkpointer).__module__
    if module.split(".")[0] in ("langgraph", "langchain"):
        raise TypeError(
            f"Invalid checkpointer provided: {type(checkpointer).__name__} is LangGraph's "
            "saver, which pausepoint cannot use (another storage format). Use "
            "pausepoint's: pausepoint.checkpoint.memory.InMemorySaver, "
            "pausepoint.checkpoint.sqlite.SqliteSaver or "
            "pausepoint.checkpoint.postgres.PostgresSaver."
        )
    if isinstance(checkpointer, BaseCheckpointSaver) or _looks_like_saver(checkpointer):
        return
    raise TypeError(
        "Invalid checkpointer provided. Expected an instance of `BaseCheckpointSaver`, "
        f"`True`, `False`, or `None`. Received {type(checkpointer).__name__}. Pass a "
        "proper saver (e.g., InMemorySaver, SqliteSaver, PostgresSaver)."
    )


def _looks_like_saver(obj: Any) -> bool:
    """Whether ``obj`` has the saver methods, found without calling ``__getattr__``.

    A proxy that forwards attributes through ``__getattr__`` cannot be told apart
    before use, so it is let through (looking would run its forwarding).
    """
    kind: type[Any] = type(obj)  # pyright: ignore[reportUnknownVariableType]
    if hasattr(kind, "__getattr__"):
        return True
    return all(
        callable(getattr(kind, name, None)) for name in ("get_tuple", "list", "put", "put_writes")
    )


def check_store(store: Any) -> None:
    """Refuse a long-term memory ``store``: pausepoint has none yet (docs/differences.md)."""
    if store is not None:
        raise NotImplementedError(
            f"store= is not supported: pausepoint has no long-term memory store yet (got "
            f"{type(store).__name__}). Keep data across threads in your own database, or "
            "in the graph's state for one thread; see 'Not supported' in docs/differences.md."
        )


def check_cache(where: str, value: Any) -> None:
    """Refuse node caching (``cache=``, ``cache_policy=``): pausepoint has no cache yet.

    Accepting and ignoring it would silently re-run a node its author meant to cache
    (a paid model call, a slow query).
    """
    if value is not None:
        raise NotImplementedError(
            f"{where} is not supported: pausepoint does not cache node or task results "
            f"yet (got {type(value).__name__}). Remove it (each run then executes the "
            "node), or cache inside the function (functools.lru_cache); see "
            "'Not supported' in docs/differences.md."
        )


def collect_problems(graph: StateGraph, interrupt_nodes: Sequence[str]) -> None:
    """Raise `GraphValidationError` listing every problem found, if any."""
    problems = [
        *graph.problems,
        *_edge_problems(graph),
        *_branch_problems(graph),
        *_entry_problems(graph),
        # LangGraph's text first (code written for it may match on it), then ours.
        *(
            f"Interrupt node `{n}` not found: interrupt_before/after names a node "
            "the graph does not have"
            for n in interrupt_nodes
            if n not in graph.nodes
        ),
    ]
    try:
        graph.schema_info()
    except TypeError as exc:
        problems.append(str(exc))
    if problems:
        raise GraphValidationError(problems)


def _edge_problems(graph: StateGraph) -> list[str]:
    nodes = graph.nodes
    out: list[str] = []
    edges = [((src,), dst) for src, dst in graph.edges] + list(graph.waiting_edges)
    for srcs, dst in edges:
        label = f"{srcs[0]!r}" if len(srcs) == 1 else f"{list(srcs)!r}"
        out.extend(
            f"edge {label} -> {dst!r}: unknown source node {src!r}"
            for src in srcs
            if src != START and src not in nodes
        )
        if dst != END and dst not in nodes:
            out.append(f"edge {label} -> {dst!r}: unknown target node {dst!r}")
    return out


def _branch_problems(graph: StateGraph) -> list[str]:
    out: list[str] = []
    for branch in graph.branches:
        if branch.source != START and branch.source not in graph.nodes:
            out.append(f"conditional edge from unknown node {branch.source!r}")
        out.extend(
            f"conditional edge from {branch.source!r}: path_map names unknown node {t!r}"
            for t in (branch.path_map or {}).values()
            if t != END and t not in graph.nodes
        )
    return out


def _entry_problems(graph: StateGraph) -> list[str]:
    if any(src == START for src, _ in graph.edges) or any(
        b.source == START for b in graph.branches
    ):
        return []
    return [
        "the graph has no entry point: add an edge from START, e.g. "
        "builder.add_edge(START, 'first_node')"
    ]
