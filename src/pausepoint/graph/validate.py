"""Graph validation: collect every problem of a definition, then raise once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pausepoint.constants import END, START
from pausepoint.errors import GraphValidationError

if TYPE_CHECKING:
    from pausepoint.graph.state import StateGraph

__all__ = ["collect_problems"]


def collect_problems(graph: StateGraph, interrupt_nodes: Sequence[str]) -> None:
    """Raise :class:`GraphValidationError` listing every problem found, if any."""
    problems = [
        *graph.problems,
        *_edge_problems(graph),
        *_branch_problems(graph),
        *_entry_problems(graph),
        *(
            f"interrupt_before/after names unknown node {n!r}"
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
