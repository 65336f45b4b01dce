"""The graph package's drawing modules import in one direction (issue 19).

`pausepoint.graph.drawing` holds the picture's types (`Graph`, `Node`, `Edge`) and
draws them; `pausepoint.graph.topology` finds a compiled graph's nodes and edges and
builds a picture from those types. The picture must not import what builds it, at
module level or inside a function, or the two modules import each other again.
"""

from __future__ import annotations

import ast
import pathlib

import pausepoint.graph

GRAPH = pathlib.Path(pausepoint.graph.__file__).parent


def _imports(module: str) -> set[str]:
    """Every pausepoint module ``module`` imports, ``TYPE_CHECKING`` blocks included."""
    tree = ast.parse((GRAPH / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.startswith("pausepoint")}


def test_the_picture_imports_nothing_that_builds_it():
    imported = _imports("drawing")
    assert not {m for m in imported if m.startswith("pausepoint.graph.")} - {
        "pausepoint.graph.mermaid",
        "pausepoint.graph.mermaid.draw",
        "pausepoint.graph.ascii_art",
        "pausepoint.graph.ascii_art.draw",
    }


def test_topology_builds_the_picture_and_get_graph_uses_it():
    from pausepoint import END, START, StateGraph
    from pausepoint.graph.drawing import Graph
    from pausepoint.graph.topology import graph_of

    assert "pausepoint.graph.drawing" in _imports("topology")
    b = StateGraph(dict)
    b.add_node("a", lambda s: s)
    b.add_edge(START, "a")
    b.add_edge("a", END)
    compiled = b.compile()
    picture = graph_of(compiled, False)
    assert isinstance(picture, Graph)
    assert picture.to_json() == compiled.get_graph().to_json()
    assert [(e.source, e.target) for e in picture.edges] == [(START, "a"), ("a", END)]
