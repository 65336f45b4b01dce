"""``Command(update=..., goto=...)`` as the first input of a thread, side by side.

Both libraries start the run: ``__start__`` takes the command, applies its update and
goto, and the graph goes on. LangGraph also stores the update as pending writes of the
input checkpoint and so applies it twice (a reducer key gets it twice); pausepoint
applies it once (documented in docs/differences.md). Everything else a user sees is
compared: streamed events, the result, the paused state and the history's shape.
"""

import asyncio
import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import LIBS, Lib, load_lib

pytestmark = pytest.mark.compat


class S(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    note: Any


def graph(lib: Lib) -> Any:
    b = lib.StateGraph(S)
    b.add_node("ask", lambda s: {"log": [f"ask:{lib.interrupt('ok?')}:{s.get('note')}"]})
    b.add_node("other", lambda s: {"log": ["other"]})
    b.add_edge(lib.START, "ask")
    return b.compile(checkpointer=lib.InMemorySaver())


def observe(lib: Lib, cmd: Any) -> dict[str, Any]:
    g = graph(lib)
    config = {"configurable": {"thread_id": "fresh"}}
    events = [
        (mode, sorted(chunk) if mode == "tasks" else chunk)
        for mode, chunk in g.stream(cmd, config, stream_mode=["values", "updates", "tasks"])
    ]
    for _, chunk in events:  # interrupt ids are each library's own hash
        if isinstance(chunk, dict) and "__interrupt__" in chunk:
            chunk["__interrupt__"] = [i.value for i in chunk["__interrupt__"]]
    snap = g.get_state(config)
    history = [
        (h.metadata["source"], h.metadata["step"], h.next) for h in g.get_state_history(config)
    ]
    done = g.invoke(lib.Command(resume="yes"), config)
    return {
        "events": events,
        "paused": (snap.values, snap.next, [i.value for i in snap.interrupts]),
        "history": history,
        "done": done,
    }


def once(value: Any) -> Any:
    """LangGraph's result with the doubled update taken out (the documented difference)."""
    if isinstance(value, dict) and value.get("log", [])[:2] == ["u", "u"]:
        return {**value, "log": value["log"][1:]}
    return value


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda lib: lib.Command(update={"note": "n"}), id="update"),
        pytest.param(
            lambda lib: lib.Command(update={"log": ["u"]}, goto="other"), id="update+goto"
        ),
        pytest.param(lambda lib: lib.Command(goto="other"), id="goto"),
    ],
)
def test_a_new_thread_starts_from_a_command(make: Any):
    lg, pp = (observe(load_lib(name), make(load_lib(name))) for name in LIBS)
    assert pp["history"] == lg["history"]
    assert pp["paused"][1:] == lg["paused"][1:]
    assert pp["paused"][0] == once(lg["paused"][0])
    assert pp["done"] == once(lg["done"])
    # Two tasks of one step ("ask" and "other") report in the order they end: compared
    # as a multiset (LangGraph's threads may end either way round).
    assert sorted(repr((m, once(c))) for m, c in lg["events"]) == sorted(map(repr, pp["events"]))


def test_the_update_is_applied_once():
    pp = observe(load_lib("pausepoint"), load_lib("pausepoint").Command(update={"log": ["u"]}))
    assert pp["done"] == {"log": ["u", "ask:yes:None"]}
    lg = observe(load_lib("langgraph"), load_lib("langgraph").Command(update={"log": ["u"]}))
    assert lg["done"] == {"log": ["u", "u", "ask:yes:None"]}  # LangGraph's, applied twice


def _branching(lib: Lib) -> Any:
    b = lib.StateGraph(S)
    b.add_node("a", lambda s: {"log": ["a"]})
    b.add_node("b", lambda s: {"log": ["b"]})
    b.add_conditional_edges(lib.START, lambda s: "b" if s.get("note") else "a", ["a", "b"])
    return b.compile(checkpointer=lib.InMemorySaver())


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_start_with_a_conditional_edge_routes_on_the_update(is_async: bool):
    """The start node then runs as a task (not in place): the same command, both drivers."""
    seen = {}
    for name in LIBS:
        lib = load_lib(name)
        g = _branching(lib)
        config = {"configurable": {"thread_id": "branch"}}
        cmd = lib.Command(update={"note": 1, "log": ["u"]})
        done = asyncio.run(g.ainvoke(cmd, config)) if is_async else g.invoke(cmd, config)
        history = [(h.metadata["step"], h.next) for h in g.get_state_history(config)]
        seen[name] = (once(done), history)
    assert seen["pausepoint"] == seen["langgraph"]
    assert seen["pausepoint"][0] == {"log": ["u", "b"], "note": 1}
