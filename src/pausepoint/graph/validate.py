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
    problems = list(graph.problems)
    nodes = set(graph.nodes)
    for src, dst in graph.edges:
        if src != START and src not in nodes:
            problems.append(f"edge {src!r} -> {dst!r}: unknown source node {src!r}")
        if dst != END and dst not in nodes:
            problems.append(f"edge {src!r} -> {dst!r}: unknown target node {dst!r}")
    for srcs, dst in graph.waiting_edges:
        for src in srcs:
            if src not in nodes:
                problems.append(f"edge {list(srcs)!r} -> {dst!r}: unknown source node {src!r}")
        if dst != END and dst not in nodes:
            problems.append(f"edge {list(srcs)!r} -> {dst!r}: unknown target node {dst!r}")
    for branch in graph.branches:
        if branch.source != START and branch.source not in nodes:
            problems.append(f"conditional edge from unknown node {branch.source!r}")
        for target in (branch.path_map or {}).values():
            if target != END and target not in nodes:
                problems.append(
                    f"conditional edge from {branch.source!r}: path_map names unknown node "
                    f"{target!r}"
                )
    if not any(src == START for src, _ in graph.edges) and not any(
        b.source == START for b in graph.branches
    ):
        problems.append(
            "the graph has no entry point: add an edge from START, e.g. "
            "builder.add_edge(START, 'first_node')"
        )
    for name in interrupt_nodes:
        if name not in nodes:
            problems.append(f"interrupt_before/after names unknown node {name!r}")
    try:
        graph.schema_info()
    except TypeError as exc:
        problems.append(str(exc))
    if problems:
        raise GraphValidationError(problems)
