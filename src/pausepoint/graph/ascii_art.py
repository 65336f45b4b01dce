"""ASCII art for a `Graph`, with no layout library.

Nodes are ranked by their longest path from the first node (edges that loop back
are left out of the ranking), one row of boxes per rank. Between two rows, a lone
plain edge from the one box above to the one box below is an arrow; otherwise the
edges leaving the row are written out (``a --> b``, ``a -.label.-> c`` for a
conditional one), loops back included. LangGraph needs ``grandalf`` for this.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pausepoint.graph.drawing import Edge, Graph

__all__ = ["draw"]


def draw(graph: Graph) -> str:
    """The ASCII art of ``graph`` (see `Graph.draw_ascii`)."""
    if not graph.nodes:
        return ""
    rank = _ranks(graph)
    rows: defaultdict[int, list[str]] = defaultdict(list)
    for id in graph.nodes:
        rows[rank[id]].append(id)
    ordered = [rows[r] for r in sorted(rows)]
    blocks = [_boxes(row) for row in ordered]
    width = max(len(line) for block in blocks for line in block)
    out: list[str] = []
    for i, row in enumerate(ordered):
        out += [line.center(width).rstrip() for line in blocks[i]]
        below = ordered[i + 1] if i + 1 < len(ordered) else []
        links = _links(graph, row, below, max(width, 72))
        out += [line.center(width).rstrip() for line in links]
    return "\n".join(out) + "\n"


def _ranks(graph: Graph) -> dict[str, int]:
    """Longest-path rank of each node over the edges that do not loop back."""
    succ: defaultdict[str, list[str]] = defaultdict(list)
    for e in graph.edges:
        succ[e.source].append(e.target)
    forward = _forward_edges(graph, succ)
    rank = dict.fromkeys(graph.nodes, 0)
    for _ in range(len(graph.nodes)):  # relax: at most one pass per node
        changed = False
        for src, dst in forward:
            if rank[dst] < rank[src] + 1:
                rank[dst] = rank[src] + 1
                changed = True
        if not changed:
            break
    return rank


def _forward_edges(graph: Graph, succ: dict[str, list[str]]) -> list[tuple[str, str]]:
    """The edges a depth-first walk from each root does not find looping back."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    forward: list[tuple[str, str]] = []
    targets = {e.target for e in graph.edges}
    roots = [n for n in graph.nodes if n not in targets] + list(graph.nodes)
    for root in roots:
        if root in state:
            continue
        stack = [(root, iter(succ.get(root, ())))]
        state[root] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state.get(child) != 1:  # not a loop back to the current path
                forward.append((node, child))
                if child not in state:
                    state[child] = 1
                    stack.append((child, iter(succ.get(child, ()))))
    return forward


def _boxes(row: list[str]) -> list[str]:
    tops = ["+" + "-" * (len(id) + 2) + "+" for id in row]
    mids = [f"| {id} |" for id in row]
    return ["   ".join(tops), "   ".join(mids), "   ".join(tops)]


def _links(graph: Graph, row: list[str], below: list[str], width: int) -> list[str]:
    leaving = [e for e in graph.edges if e.source in row]
    if not leaving:
        return []
    if (
        len(leaving) == 1
        and len(row) == 1
        and below == [leaving[0].target]
        and leaving[0].data is None
    ):
        return [":" if leaving[0].conditional else "|", "v"]
    words = [_edge_text(e) for e in leaving]
    lines: list[str] = []
    current = ""
    for word in words:
        if current and len(current) + 3 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current}   {word}" if current else word
    return [*lines, current]


def _edge_text(edge: Edge) -> str:
    label = "" if edge.data is None else str(edge.data)
    arrow = f"-.{label}.->" if edge.conditional else f"--{label}-->"
    if not label:
        arrow = "-.->" if edge.conditional else "-->"
    return f"{edge.source} {arrow} {edge.target}"
