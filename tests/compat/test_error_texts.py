"""Errors a user may catch or match, on LangGraph 1.1.6 and pausepoint side by side.

Where pausepoint raises LangGraph's exception type, its message starts with
LangGraph's text (code written for LangGraph may match on it) and then says what to
do. Schema errors are the schema's own (pydantic's ``ValidationError``). Refused
updates leave the stored thread as it was. Checkpoint metadata leaves secret-looking
configurable keys out (a documented difference).
"""

import dataclasses
import importlib
from typing import Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import LIBS, Lib, load_lib

pydantic = pytest.importorskip("pydantic")

pytestmark = pytest.mark.compat


@pytest.fixture(params=LIBS)
def lib(request: pytest.FixtureRequest) -> Lib:
    return load_lib(request.param)


class S(TypedDict, total=False):
    x: Any


def thread(tid: str = "t") -> Any:
    return {"configurable": {"thread_id": tid}}


def one_node(lib: Lib, node: Any, schema: Any = S, **kw: Any) -> Any:
    b = lib.StateGraph(schema, **kw)
    b.add_node("n", node)
    b.add_edge(lib.START, "n")
    return b.compile(checkpointer=lib.InMemorySaver())


class Answer(pydantic.BaseModel):
    query: str
    answer: str | None = None


class Ask(pydantic.BaseModel):
    query: str


@pytest.mark.parametrize("input_schema", [None, Ask])
def test_pydantic_input_raises_validation_error(lib: Lib, input_schema: Any):
    ran: list[str] = []
    g = one_node(lib, lambda s: ran.append("n") or {}, Answer, input_schema=input_schema)
    with pytest.raises(pydantic.ValidationError) as caught:
        g.invoke({"query": {}}, thread())
    assert caught.value.errors()[0]["msg"] == "Input should be a valid string"
    assert ran == []


def test_a_bad_update_to_a_pydantic_state_raises_validation_error(lib: Lib):
    b = lib.StateGraph(Answer)
    b.add_node("bad", lambda s: {"query": {}})
    b.add_node("next", lambda s: {})
    b.add_edge(lib.START, "bad")
    b.add_edge("bad", "next")
    with pytest.raises(pydantic.ValidationError):
        b.compile().invoke({"query": "q"})


@dataclasses.dataclass
class Pair:
    a: int
    b: int


def test_dataclass_state_missing_a_field_raises_type_error(lib: Lib):
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'b'"):
        one_node(lib, lambda s: {}, Pair).invoke({"a": 1}, thread())


@pytest.mark.parametrize("schema", [Answer, Pair])
def test_input_that_is_not_a_dict_is_refused(lib: Lib, schema: Any):
    with pytest.raises(lib.errors.InvalidUpdateError, match="Expected dict, got 5"):
        one_node(lib, lambda s: {}, schema).invoke(5, thread())


def _stored(g: Any) -> list[Any]:
    return [(t.config, t.checkpoint["channel_values"]) for t in g.checkpointer.list(thread())]


@pytest.mark.parametrize(
    ("steps", "kind", "text"),
    [
        ([], ValueError, "No supersteps provided"),
        ([[], []], ValueError, "No updates provided"),
        ([[("__end__", None), ("__copy__", None)]], "invalid", "Cannot apply multiple updates"),
        ([[("__copy__", None), ("n", {"x": 1})]], "invalid", "Cannot copy checkpoint with"),
        ([[("__input__", {"x": 1}), ("n", {})]], "invalid", "Cannot apply multiple updates when"),
        ([[("n", {"x": 1}), (None, {"x": 2})]], "invalid", "as_node is required when applying"),
        ([[("ghost", {"x": 1})]], "invalid", "Node ghost does not exist"),
    ],
)
def test_bulk_update_state_refusals(lib: Lib, steps: Any, kind: Any, text: str):
    StateUpdate = importlib.import_module(f"{lib.name}.types").StateUpdate
    g = one_node(lib, lambda s: {"x": "n"})
    g.invoke({"x": 0}, thread())
    before = _stored(g)
    error = lib.errors.InvalidUpdateError if kind == "invalid" else kind
    supersteps = [[StateUpdate(values, as_node) for as_node, values in step] for step in steps]
    with pytest.raises(error, match=text):
        g.bulk_update_state(thread(), supersteps)
    assert _stored(g) == before


def test_messages_start_with_langgraphs_text(lib: Lib):
    g = one_node(lib, lambda s: "not a dict")
    config = importlib.import_module(f"{lib.name}.config")
    func = importlib.import_module(f"{lib.name}.func")
    outside = "Called get_config outside of a runnable context"
    with pytest.raises(RuntimeError, match=outside):
        lib.interrupt("x")
    with pytest.raises(RuntimeError, match=outside):
        config.get_config()
    with pytest.raises(RuntimeError, match=outside):
        func.task(lambda: None)()
    with pytest.raises(lib.errors.EmptyInputError, match="Received no input for __start__"):
        g.invoke(None, thread("new"))
    with pytest.raises(lib.errors.InvalidUpdateError, match="Expected dict, got not a dict"):
        g.invoke({"x": 0}, thread())
    with pytest.raises(lib.errors.InvalidUpdateError, match="Expected dict, got 5"):
        one_node(lib, lambda s: {}).invoke(5, thread("five"))


def test_metadata_keeps_plain_configurable_values(lib: Lib):
    g = one_node(lib, lambda s: {})
    conf = {"thread_id": "t", "user_id": "u1", "api_token": "secret", "user_key": "k"}
    g.invoke({"x": 1}, {"configurable": conf, "metadata": {"kept": "as is"}})
    meta = g.get_state(thread()).metadata
    assert (meta["user_id"], meta["kept"]) == ("u1", "as is")
    if lib.name == "langgraph":
        assert (meta["api_token"], meta["user_key"]) == ("secret", "k")
    else:  # deliberate: secret-looking keys are not written to the saver
        assert "api_token" not in meta
        assert "user_key" not in meta


def _routed(lib: Lib, route: Any, path_map: Any = None) -> Any:
    b = lib.StateGraph(S)
    b.add_node("a", lambda s: {"x": "a"})
    b.add_node("b", lambda s: {"x": "b"})
    b.add_edge(lib.START, "a")
    b.add_conditional_edges("a", route, path_map)
    return b.compile(checkpointer=lib.InMemorySaver())


def test_a_path_map_miss_is_a_key_error_on_both(lib: Lib):
    g = _routed(lib, lambda s: "maybe", {"yes": "b"})
    with pytest.raises(KeyError) as caught:
        g.invoke({}, thread())
    if lib.name == "pausepoint":
        snap = g.get_state(thread())
        assert snap.values == {}
        assert snap.next == ("a",)
        from pausepoint.errors import InvalidUpdateError, UnknownBranchError

        assert isinstance(caught.value, UnknownBranchError | InvalidUpdateError)
        assert str(caught.value) == (
            "conditional edge returned 'maybe', which is not in its path_map ['yes']"
        )
    else:
        assert caught.value.args == ("maybe",)


def _goto_ghost(lib: Lib) -> Any:
    b = lib.StateGraph(S)
    b.add_node("a", lambda s: lib.Command(goto="ghost", update={"x": "a"}))
    b.add_edge(lib.START, "a")
    return b.compile(checkpointer=lib.InMemorySaver())


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda lib: _routed(lib, lambda s: "ghost"), id="branch"),
        pytest.param(_goto_ghost, id="goto"),
        pytest.param(lambda lib: _routed(lib, lambda s: [lib.Send("ghost", s)]), id="send"),
    ],
)
def test_a_route_to_an_unknown_node(lib: Lib, build: Any):
    """A documented difference: LangGraph drops the route (a log line); pausepoint raises."""
    g = build(lib)
    if lib.name == "pausepoint":
        from pausepoint.errors import InvalidUpdateError

        with pytest.raises(InvalidUpdateError, match="ghost"):
            g.invoke({}, thread())
        snap = g.get_state(thread())
        assert snap.values == {}
        assert snap.next == ("a",)
    else:
        assert g.invoke({}, thread()) == {"x": "a"}
        assert g.get_state(thread()).next == ()
