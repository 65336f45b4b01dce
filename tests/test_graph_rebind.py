"""`compiled_with`: a named graph compiled again with the saver a command opened."""

from __future__ import annotations

from typing import TypedDict

import pytest

from pausepoint import END, START, InMemorySaver, StateGraph
from pausepoint.func import entrypoint
from pausepoint.graph.rebind import compiled_with


class S(TypedDict, total=False):
    n: int


def _bump(state: S) -> S:
    return {"n": state.get("n", 0) + 1}


def _builder() -> StateGraph:
    b = StateGraph(S)
    b.add_node("a", _bump)
    b.add_node("b", _bump)
    b.add_edge(START, "a")
    b.add_edge("a", "b")
    b.add_edge("b", END)
    return b


def test_a_compiled_graph_keeps_what_it_was_compiled_with() -> None:
    first = _builder().compile(
        interrupt_before=["b"], name="named", lease_ttl=7.0, lease_wait=0.5, version="v3"
    )
    saver = InMemorySaver()
    again = compiled_with(first, saver)
    assert again.checkpointer is saver
    assert (list(again.interrupt_before_nodes), again.name) == (["b"], "named")
    assert (again.lease_ttl, again.lease_wait) == (7.0, 0.5)
    assert again.spec.shape is not None
    assert again.spec.shape.version == "v3"
    config = {"configurable": {"thread_id": "t"}}
    assert again.invoke({"n": 0}, config) == {"n": 1}  # paused before b, on the new saver
    assert saver.get_tuple(config) is not None


def test_a_builder_and_an_entrypoint() -> None:
    saver = InMemorySaver()
    assert compiled_with(_builder(), saver).checkpointer is saver

    @entrypoint()
    def double(x: int) -> int:
        return 2 * x

    again = compiled_with(double, saver)
    assert again.checkpointer is saver
    assert again.invoke(4, {"configurable": {"thread_id": "e"}}) == 8


def test_anything_else_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="not a StateGraph or a compiled graph"):
        compiled_with(object(), InMemorySaver())
