"""A drawable picture of a graph: what ``get_graph()`` returns.

The picture is plain data — ``nodes`` (by id) and ``edges`` — with the same shape
as the one LangGraph's ``get_graph()`` returns (``Node(id, name, data, metadata)``,
``Edge(source, target, data, conditional)``), so code that reads it ports by
changing imports. It draws itself as Mermaid text (`pausepoint.graph.mermaid`)
or ASCII art (`pausepoint.graph.ascii_art`) with no dependency; a PNG needs the
Mermaid command-line renderer (``mmdc``) installed.

Which nodes and edges a compiled graph's picture has is worked out by
`pausepoint.graph.topology`, which builds it from these types (this module knows
nothing of compiled graphs).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["Edge", "Graph", "Node"]


class Node(NamedTuple):
    """A node of the picture: ``id`` is unique (``"sub:inner"`` inside a subgraph)."""

    id: str
    name: str
    data: Any = None
    metadata: dict[str, Any] | None = None

    def copy(self, *, id: str | None = None, name: str | None = None) -> Node:
        """A copy with another id or name."""
        return Node(id if id is not None else self.id, name or self.name, self.data, self.metadata)


class Edge(NamedTuple):
    """An edge; ``conditional`` for a branch or a ``Command`` route, ``data`` its label."""

    source: str
    target: str
    data: str | None = None
    conditional: bool = False

    def copy(self, *, source: str | None = None, target: str | None = None) -> Edge:
        """A copy with another source or target."""
        return Edge(source or self.source, target or self.target, self.data, self.conditional)


class Graph:
    """Nodes and edges, drawable with [`draw_mermaid`][] and [`draw_ascii`][]."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.edges: list[Edge] = []

    def __repr__(self) -> str:
        return f"Graph(nodes={list(self.nodes)!r}, edges={len(self.edges)})"

    def add_node(self, id: str, data: Any = None, metadata: dict[str, Any] | None = None) -> Node:
        """Add (or replace) the node ``id``."""
        node = Node(id, id, data, metadata)
        self.nodes[id] = node
        return node

    def add_edge(
        self, source: str, target: str, data: str | None = None, conditional: bool = False
    ) -> None:
        """Add an edge between two nodes of the graph, unless one joins them already."""
        if any(e.source == source and e.target == target for e in self.edges):
            return
        for end in (source, target):
            if end not in self.nodes:
                raise ValueError(f"edge {source!r} -> {target!r}: no node {end!r} in the graph")
        self.edges.append(Edge(source, target, data, conditional))

    def first_node(self, exclude: Sequence[str] = ()) -> Node | None:
        """The one node no edge leads to (ignoring ``exclude``), if there is exactly one."""
        targets = {e.target for e in self.edges if e.source not in exclude}
        found = [n for n in self.nodes.values() if n.id not in exclude and n.id not in targets]
        return found[0] if len(found) == 1 else None

    def last_node(self, exclude: Sequence[str] = ()) -> Node | None:
        """The one node no edge leaves (ignoring ``exclude``), if there is exactly one."""
        sources = {e.source for e in self.edges if e.target not in exclude}
        found = [n for n in self.nodes.values() if n.id not in exclude and n.id not in sources]
        return found[0] if len(found) == 1 else None

    def trim_first_node(self) -> None:
        """Drop the first node if it has one edge out and another node would be first."""
        first = self.first_node()
        if first and self.first_node([first.id]) and self._degree(first.id, out=True) == 1:
            self._remove(first.id)

    def trim_last_node(self) -> None:
        """Drop the last node if it has one edge in and another node would be last."""
        last = self.last_node()
        if last and self.last_node([last.id]) and self._degree(last.id, out=False) == 1:
            self._remove(last.id)

    def extend(self, other: Graph, *, prefix: str) -> tuple[Node | None, Node | None]:
        """Add ``other``'s nodes and edges with ids ``prefix:id``; return its first and last."""

        def named(id: str) -> str:
            return f"{prefix}:{id}"

        for id, node in other.nodes.items():
            self.nodes[named(id)] = node.copy(id=named(id))
        self.edges.extend(
            e.copy(source=named(e.source), target=named(e.target)) for e in other.edges
        )
        first, last = other.first_node(), other.last_node()
        return (
            first.copy(id=named(first.id)) if first else None,
            last.copy(id=named(last.id)) if last else None,
        )

    def to_json(self) -> dict[str, list[dict[str, Any]]]:
        """The picture as JSON-ready data: ``{"nodes": [...], "edges": [...]}``."""
        nodes = [{"id": n.id, "name": n.name, "metadata": n.metadata} for n in self.nodes.values()]
        edges = [e._asdict() for e in self.edges]
        return {"nodes": nodes, "edges": edges}

    def draw_mermaid(
        self,
        *,
        with_styles: bool = True,
        curve_style: str = "linear",
        wrap_label_n_words: int = 9,
        frontmatter_config: dict[str, Any] | None = None,
    ) -> str:
        """Mermaid flowchart text (paste it into any Mermaid renderer, or Markdown).

        Args:
            with_styles: Add the class definitions that shade start and end.
            curve_style: Mermaid's edge curve (``"linear"``, ``"basis"``, ...).
            wrap_label_n_words: Break edge labels longer than this many words.
            frontmatter_config: Mermaid config put in the front matter (a dict).
        """
        from pausepoint.graph.mermaid import draw

        return draw(
            self,
            with_styles=with_styles,
            curve_style=str(getattr(curve_style, "value", curve_style)),
            wrap_words=wrap_label_n_words,
            config=frontmatter_config,
        )

    def draw_ascii(self) -> str:
        """The graph as ASCII art: one row of boxes per rank, the edges between rows."""
        from pausepoint.graph.ascii_art import draw

        return draw(self)

    def print_ascii(self) -> None:
        """Print [`draw_ascii`][]."""
        print(self.draw_ascii())

    def draw_mermaid_png(self, *, output_file_path: str | None = None, **kwargs: Any) -> bytes:
        """A PNG of [`draw_mermaid`][], rendered by the Mermaid CLI (``mmdc``) if installed.

        pausepoint sends nothing over the network (LangGraph's default posts the
        graph to mermaid.ink); install ``@mermaid-js/mermaid-cli`` to render locally.

        Raises:
            RuntimeError: ``mmdc`` is not installed, or it failed.
        """
        mmdc = shutil.which("mmdc")
        if mmdc is None:
            raise RuntimeError(
                "draw_mermaid_png() needs the Mermaid CLI to render locally, and `mmdc` is "
                "not on PATH: install it (npm install -g @mermaid-js/mermaid-cli), or paste "
                "draw_mermaid()'s text into a Mermaid renderer (https://mermaid.live)"
            )
        text = self.draw_mermaid(**kwargs)
        return _render_png(mmdc, text, output_file_path)

    def _degree(self, id: str, *, out: bool) -> int:
        return len({e for e in self.edges if (e.source if out else e.target) == id})

    def _remove(self, id: str) -> None:
        self.nodes.pop(id)
        self.edges = [e for e in self.edges if id not in (e.source, e.target)]


def _render_png(mmdc: str, text: str, output_file_path: str | None) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        source, target = os.path.join(tmp, "graph.mmd"), os.path.join(tmp, "graph.png")
        with open(source, "w", encoding="utf-8") as f:
            f.write(text)
        done = subprocess.run(  # mmdc found on PATH; the arguments are ours
            [mmdc, "-i", source, "-o", target], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"mmdc failed to render the graph: {done.stderr.strip()}")
        with open(target, "rb") as f:
            png = f.read()
    if output_file_path is not None:
        with open(output_file_path, "wb") as f:
            f.write(png)
    return png
