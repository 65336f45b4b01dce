"""``get_graph()`` on LangGraph 1.1.6 and pausepoint: the same nodes and edges.

Each shape is built with both libraries and the pictures are compared as data: node
ids with their names and metadata, and the set of ``(source, target, label,
conditional)`` edges. The drawn text is pausepoint's own (see docs/differences.md),
so ``draw_mermaid``/``draw_ascii`` are checked on pausepoint alone.
"""

import importlib
import operator
import shutil
from collections.abc import Callable
from typing import Annotated, Any, Literal

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import LIBS, Lib, load_lib

pytestmark = pytest.mark.compat


class S(TypedDict, total=False):
    n: int
    log: Annotated[list[str], operator.add]


def noop(state: S) -> dict[str, Any]:
    return {}


def structure(picture: Any) -> dict[str, Any]:
    nodes = {k: (n.name, n.metadata) for k, n in picture.nodes.items()}
    edges = {(e.source, e.target, e.data, e.conditional) for e in picture.edges}
    return {"nodes": nodes, "edges": edges}


def builder(lib: Lib, *names: str, **node_kw: Any) -> Any:
    b = lib.StateGraph(S)
    for name in names:
        b.add_node(name, noop, **node_kw.get(name, {}))
    return b


SHAPES: dict[str, Callable[[Lib], Any]] = {}


def shape(fn: Callable[[Lib], Any]) -> Callable[[Lib], Any]:
    SHAPES[fn.__name__] = fn
    return fn


@shape
def chain(lib: Lib) -> Any:
    return builder(lib, "a", "b").add_edge(lib.START, "a").add_edge("a", "b").compile()


@shape
def fan_out_and_join(lib: Lib) -> Any:
    b = builder(lib, "a", "b", "c", "d")
    b.add_edge(lib.START, "a").add_edge("a", "b").add_edge("a", "c")
    return b.add_edge(["b", "c"], "d").add_edge("d", lib.END).compile()


@shape
def branch_with_labelled_path_map(lib: Lib) -> Any:
    b = builder(lib, "a", "b", "c").add_edge(lib.START, "a")
    b.add_conditional_edges("a", lambda s: "x", {"x": "b", "y": "c", "stop": lib.END})
    return b.compile()


@shape
def branch_with_list_path_map(lib: Lib) -> Any:
    b = builder(lib, "a", "b", "c").add_edge(lib.START, "a")
    return b.add_conditional_edges("a", lambda s: "b", ["b", "c", lib.END]).compile()


def route(state: S) -> Literal["b", "c", "__end__"]:
    return "b"


@shape
def branch_with_literal_annotation(lib: Lib) -> Any:
    b = builder(lib, "a", "b", "c").add_edge(lib.START, "a")
    return b.add_conditional_edges("a", route).add_edge("b", lib.END).compile()


@shape
def branch_without_declared_targets(lib: Lib) -> Any:
    b = builder(lib, "a", "b", "c").add_edge(lib.START, "a")
    return b.add_conditional_edges("a", lambda s: "b").add_edge(["a", "b"], "c").compile()


@shape
def conditional_entry_and_loop(lib: Lib) -> Any:
    b = builder(lib, "a", "b")
    b.set_conditional_entry_point(lambda s: "a", ["a", "b"])
    b.add_edge("a", "b")
    return b.add_conditional_edges(
        "b", lambda s: lib.END, {"again": "a", "done": lib.END}
    ).compile()


@shape
def edge_to_end_and_onwards(lib: Lib) -> Any:
    b = builder(lib, "a", "b").add_edge(lib.START, "a")
    return b.add_edge("a", "b").add_edge("a", lib.END).compile()


@shape
def send_fan_out(lib: Lib) -> Any:
    b = builder(lib, "a", "worker").add_edge(lib.START, "a")
    b.add_conditional_edges("a", lambda s: [lib.Send("worker", s)], ["worker"])
    return b.add_edge("worker", lib.END).compile()


def commands(lib: Lib) -> Any:
    types = importlib.import_module(f"{lib.name}.types")

    def annotated(state: S) -> types.Command[Literal["b", "__end__"]]:
        return lib.Command(goto="b")

    def in_union(state: S) -> dict[str, Any] | types.Command[Literal["c"]]:
        return {}

    b = lib.StateGraph(S)
    b.add_node("a", annotated)
    b.add_node("b", in_union)
    b.add_node("c", noop, destinations=("d", lib.END))
    b.add_node("d", noop, destinations={"a": "again", "__end__": "stop"})
    return b.add_edge(lib.START, "a").compile()


SHAPES["commands"] = commands


@shape
def breakpoints_and_metadata(lib: Lib) -> Any:
    b = builder(lib, "a", "b", "c", a={"metadata": {"owner": "ops"}})
    b.add_edge(lib.START, "a").add_edge("a", "b").add_edge("b", "c")
    return b.compile(interrupt_before=["a", "b"], interrupt_after=["b", "c"])


@shape
def deferred_node(lib: Lib) -> Any:
    b = builder(lib, "start", "fast", "pre", "slow")
    b.add_node("join", noop, defer=True)
    b.add_edge(lib.START, "start").add_edge("start", "fast").add_edge("start", "pre")
    b.add_edge("pre", "slow").add_edge("fast", "join").add_edge("slow", "join")
    return b.compile()


@shape
def breakpoints_inside_a_subgraph(lib: Lib) -> Any:
    inner = builder(lib, "i1", "i2").add_edge(lib.START, "i1").add_edge("i1", "i2")
    outer = builder(lib, "a").add_node("sub", inner.compile(interrupt_before=["i2"]))
    outer.add_edge(lib.START, "a").add_edge("a", "sub")
    return outer.compile(interrupt_after=["sub"])


@shape
def boolean_path_map_in_a_loop(lib: Lib) -> Any:
    b = builder(lib, "a", "b", "c", "d").add_edge(lib.START, "a")
    b.add_conditional_edges("a", lambda s: True, {True: "b", False: "c"})
    b.add_edge("b", "d").add_edge("c", "d")
    return b.add_conditional_edges("d", lambda s: lib.END, ["a", lib.END]).compile()


@shape
def deferred_join(lib: Lib) -> Any:
    b = builder(lib, "a", "b", "c").add_edge(lib.START, "a").add_edge(lib.START, "b")
    b.add_edge(["a", "b"], "c").add_node("d", noop, defer=True)
    return b.add_edge(["c", "a"], "d").compile()


def nested(lib: Lib) -> Any:
    inner = builder(lib, "i1", "i2").add_edge(lib.START, "i1").add_edge("i1", "i2").compile()
    mid = lib.StateGraph(S).add_node("pre", noop).add_node("inner", inner)
    mid = mid.add_edge(lib.START, "pre").add_edge("pre", "inner").compile()
    outer = builder(lib, "a", "z").add_node("mid", mid)
    return outer.add_edge(lib.START, "a").add_edge("a", "mid").add_edge("mid", "z").compile()


SHAPES["nested"] = nested


def called_inside_a_node(lib: Lib) -> Any:
    sub = builder(lib, "s1", "s2").add_edge(lib.START, "s1").add_edge("s1", "s2").compile()

    def call(state: S) -> Any:
        return sub.invoke(state)

    b = lib.StateGraph(S).add_node("call", call).add_node("after", noop)
    return b.add_edge(lib.START, "call").add_edge("call", "after").compile()


SHAPES["called_inside_a_node"] = called_inside_a_node


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("xray", [False, True, 1])
def test_same_nodes_and_edges_as_langgraph(name: str, xray: bool | int):
    lg, pp = (structure(SHAPES[name](load_lib(n)).get_graph(xray=xray)) for n in LIBS)
    assert pp == lg


def test_entrypoint_picture():
    pictures = []
    for name in ("langgraph", "pausepoint"):
        func = importlib.import_module(f"{name}.func")

        @func.entrypoint()
        def workflow(x: int) -> int:
            return x

        pictures.append(structure(workflow.get_graph()))
    assert pictures[1] == pictures[0]


def test_async_get_graph_is_the_same_picture():
    import asyncio

    g = nested(load_lib("pausepoint"))
    assert structure(asyncio.run(g.aget_graph(xray=True))) == structure(g.get_graph(xray=True))


# --- pausepoint's drawings ---------------------------------------------------------------


def pp() -> Lib:
    return load_lib("pausepoint")


def test_mermaid_text():
    text = SHAPES["branch_with_labelled_path_map"](pp()).get_graph().draw_mermaid()
    assert text.startswith("---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n")
    for line in ('__start__(["__start__"]):::first', "__start__ --> a;", 'a -. "x" .-> b;'):
        assert f"\t{line}\n" in text
    assert 'a -. "stop" .-> __end__;' in text


def test_mermaid_marks_breakpoints_and_groups_subgraphs():
    marked = SHAPES["breakpoints_and_metadata"](pp()).get_graph().draw_mermaid()
    assert "__interrupt = before,after" in marked
    assert "owner = ops" in marked
    text = nested(pp()).get_graph(xray=True).draw_mermaid(with_styles=False)
    assert '\tsubgraph mid["mid"]\n' in text
    assert '\t\tsubgraph mid_3a_inner["inner"]\n' in text
    assert "\ta --> mid_3a_pre;\n" in text
    assert "classDef" not in text


def test_mermaid_frontmatter_config():
    text = chain(pp()).get_graph().draw_mermaid(frontmatter_config={"config": {"theme": "neutral"}})
    assert text.startswith("---\nconfig:\n  flowchart:\n    curve: linear\n  theme: neutral\n---\n")


def test_ascii_art():
    art = SHAPES["branch_with_labelled_path_map"](pp()).get_graph().draw_ascii()
    assert "| __start__ |" in art
    assert "a -.x.-> b" in art
    assert art.index("| a |") < art.index("| b |") < art.index("| __end__ |")


def test_ascii_art_of_a_loop_lists_the_edge_back():
    art = SHAPES["conditional_entry_and_loop"](pp()).get_graph().draw_ascii()
    assert "b -.again.-> a" in art


def test_star_breakpoints_mark_every_node():
    # LangGraph checks `name in "*"`, so interrupt_before="*" marks no node at all.
    b = builder(pp(), "a").add_edge(pp().START, "a")
    picture = b.compile(interrupt_before="*").get_graph()
    assert picture.nodes["a"].metadata == {"__interrupt": "before"}
    assert picture.nodes["__start__"].metadata is None


@pytest.mark.skipif(shutil.which("mmdc") is not None, reason="the Mermaid CLI is installed")
def test_png_without_a_renderer_is_a_clear_error():
    with pytest.raises(RuntimeError, match="needs the Mermaid CLI"):
        chain(pp()).get_graph().draw_mermaid_png()


def test_to_json():
    data = chain(pp()).get_graph().to_json()
    assert [n["id"] for n in data["nodes"]] == ["__start__", "a", "b", "__end__"]
    assert {"source": "a", "target": "b", "data": None, "conditional": False} in data["edges"]
