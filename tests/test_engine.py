"""The engine: building, running, streaming and checkpointing graphs (both drivers)."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest

from pausepoint import END, START, Command, InMemorySaver, RetryPolicy, Send, StateGraph
from pausepoint.config import get_config, get_stream_writer
from pausepoint.errors import GraphRecursionError, GraphValidationError, InvalidUpdateError
from pausepoint.types import Overwrite


class S(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def _step(name: str) -> Any:
    def fn(state: S) -> dict[str, Any]:
        return {"x": state["x"] + 1, "log": [name]}

    fn.__name__ = name
    return fn


def chain(n: int, checkpointer: Any = None) -> Any:
    g = StateGraph(S)
    names = [f"n{i}" for i in range(n)]
    g.add_sequence([_step(name) for name in names])
    g.add_edge(START, names[0])
    g.add_edge(names[-1], END)
    return g.compile(checkpointer=checkpointer)


def test_chain_runs_in_order(drive):
    out = drive.invoke(chain(5), {"x": 0, "log": []})
    assert out == {"x": 5, "log": ["n0", "n1", "n2", "n3", "n4"]}


def test_fan_out_and_join(drive):
    g = StateGraph(S)
    g.add_node("a", _step("a"))
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_node("c", lambda s: {"log": ["c"]})
    g.add_node("d", lambda s: {"log": ["d"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("a", "c")
    g.add_edge(["b", "c"], "d")
    out = drive.invoke(g.compile(), {"x": 0, "log": []})
    # b and c run in one step; their writes apply in task order, not finish order
    assert out["log"] == ["a", "b", "c", "d"]


def test_two_writers_of_a_last_value_key_fail(drive):
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": 1})
    g.add_node("b", lambda s: {"x": 2})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    with pytest.raises(InvalidUpdateError, match="Can receive only one value per step"):
        drive.invoke(g.compile(), {"x": 0, "log": []})


def test_a_step_that_fails_to_apply_keeps_every_tasks_writes(drive):
    # The last task's writes go with the step's checkpoint, in one commit; when
    # applying the step fails there is no checkpoint, and they are saved on their own.
    saver = InMemorySaver()
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": 1})
    g.add_node("b", lambda s: {"x": 2})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    graph = g.compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "apply-fails"}}
    with pytest.raises(InvalidUpdateError, match="Can receive only one value per step"):
        drive.invoke(graph, {"x": 0, "log": []}, cfg)
    saved = saver.get_tuple(cfg)
    assert saved is not None
    assert saved.metadata["step"] == 0
    writes = sorted((w.channel, w.value) for w in saved.pending_writes or [])
    assert writes == [("x", 1), ("x", 2)]


def test_overwrite_bypasses_reducer(drive):
    g = StateGraph(S)
    g.add_node("a", lambda s: {"log": Overwrite(["fresh"])})
    g.add_edge(START, "a")
    assert drive.invoke(g.compile(), {"x": 0, "log": ["old"]})["log"] == ["fresh"]


def test_conditional_edges_with_path_map_and_end(drive):
    g = StateGraph(S)
    g.add_node("inc", _step("inc"))
    g.add_edge(START, "inc")
    g.add_conditional_edges(
        "inc", lambda s: "again" if s["x"] < 3 else "stop", {"again": "inc", "stop": END}
    )
    assert drive.invoke(g.compile(), {"x": 0, "log": []})["x"] == 3


def test_send_map_reduce(drive):
    class M(TypedDict):
        items: list[int]
        out: Annotated[list[int], operator.add]

    g = StateGraph(M)
    g.add_node("square", lambda s: {"out": [s["n"] * s["n"]]})
    g.add_conditional_edges(START, lambda s: [Send("square", {"n": n}) for n in s["items"]])
    out = drive.invoke(g.compile(), {"items": [1, 2, 3], "out": []})
    assert out["out"] == [1, 4, 9]
    # Writes apply in Send order, by index as a number: the 11th after the 10th.
    out = drive.invoke(g.compile(), {"items": list(range(12)), "out": []})
    assert out["out"] == [n * n for n in range(12)]


def test_command_goto_and_update(drive):
    g = StateGraph(S)
    g.add_node("a", lambda s: Command(update={"log": ["a"]}, goto="c"))
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_node("c", lambda s: {"log": ["c"]})
    g.add_edge(START, "a")
    assert drive.invoke(g.compile(), {"x": 0, "log": []})["log"] == ["a", "c"]


def test_recursion_limit(drive):
    g = StateGraph(S)
    g.add_node("loop", _step("loop"))
    g.add_edge(START, "loop")
    g.add_edge("loop", "loop")
    with pytest.raises(GraphRecursionError, match="Recursion limit of 5"):
        drive.invoke(g.compile(), {"x": 0, "log": []}, {"recursion_limit": 5})


def test_validation_lists_every_problem():
    g = StateGraph(S)
    g.add_node("a", _step("a"))
    g.add_node("a", _step("a"))
    g.add_edge("a", "missing")
    g.add_node("__end__", _step("x"))
    with pytest.raises(GraphValidationError) as info:
        g.compile()
    problems = info.value.problems
    assert any("more than once" in p for p in problems)
    assert any("unknown target node 'missing'" in p for p in problems)
    assert any("no entry point" in p for p in problems)
    assert any("reserved" in p for p in problems)


def test_dataclass_state_and_async_nodes(drive):
    @dataclass
    class D:
        n: int = 0

    async def bump(state: D) -> dict[str, int]:
        return {"n": state.n + 1}

    g = StateGraph(D)
    g.add_node("bump", bump)
    g.add_edge(START, "bump")
    assert drive.invoke(g.compile(), {"n": 41}) == {"n": 42}


def test_config_and_custom_stream(drive):
    def node(state: S, config: Any) -> dict[str, Any]:
        get_stream_writer()({"seen": config["configurable"]["user"]})
        assert get_config()["metadata"]["langgraph_node"] == "node"
        return {"x": 1}

    g = StateGraph(S)
    g.add_node("node", node)
    g.add_edge(START, "node")
    chunks = drive.stream(
        g.compile(),
        {"x": 0, "log": []},
        {"configurable": {"user": "ann"}},
        stream_mode=["custom", "updates"],
    )
    assert ("custom", {"seen": "ann"}) in chunks
    assert ("updates", {"node": {"x": 1}}) in chunks


def test_stream_values_and_v2(drive):
    graph = chain(2)
    values = drive.stream(graph, {"x": 0, "log": []}, stream_mode="values")
    assert values == [
        {"x": 0, "log": []},
        {"x": 1, "log": ["n0"]},
        {"x": 2, "log": ["n0", "n1"]},
    ]
    parts = drive.stream(graph, {"x": 0, "log": []}, stream_mode="updates", version="v2")
    assert parts[0] == {"type": "updates", "ns": (), "data": {"n0": {"x": 1, "log": ["n0"]}}}


def test_retry_policy(drive, monkeypatch):
    import asyncio
    import time

    slept: list[float] = []

    async def no_wait(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(time, "sleep", slept.append)
    monkeypatch.setattr(asyncio, "sleep", no_wait)
    calls = {"n": 0}

    def flaky(state: S) -> dict[str, int]:
        calls["n"] += 1
        if calls["n"] < 3:
            raise ConnectionError("try again")
        return {"x": 7}

    g = StateGraph(S)
    g.add_node("flaky", flaky, retry_policy=RetryPolicy(initial_interval=0, jitter=False))
    g.add_edge(START, "flaky")
    assert drive.invoke(g.compile(), {"x": 0, "log": []})["x"] == 7
    assert calls["n"] == 3
    assert slept == [0.0, 0.0]  # initial_interval 0, no jitter, backoff 2.0


def test_checkpoints_history_and_update_state(drive):
    graph = chain(2, InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    drive.invoke(graph, {"x": 0, "log": []}, cfg)
    history = drive.history(graph, cfg)
    assert [h.metadata["step"] for h in history] == [2, 1, 0, -1]
    assert [h.metadata["source"] for h in history] == ["loop", "loop", "loop", "input"]
    assert [h.next for h in history] == [(), ("n1",), ("n0",), ("__start__",)]
    new = drive.update_state(graph, cfg, {"x": 100}, as_node="n1")
    state = drive.get_state(graph, new)
    assert state.values["x"] == 100
    assert state.metadata["source"] == "update"
    assert state.parent_config == history[0].config


def test_history_keeps_each_checkpoints_seen_versions(drive):
    # InMemorySaver shares versions_seen entries between checkpoints (the engine
    # replaces entries, never edits them): every old checkpoint must still read as
    # it was written, which the SQLite saver (it encodes everything) shows.
    from pausepoint.checkpoint.sqlite import SqliteSaver

    def build(saver: Any) -> Any:
        g = StateGraph(S)
        g.add_node("a", _step("a"))
        g.add_node("b", lambda s: {"log": ["b"]})
        g.add_node("c", lambda s: {"log": ["c"]})
        g.add_node("d", _step("d"))
        g.add_edge(START, "a")
        g.add_edge("a", "b")
        g.add_edge("a", "c")
        g.add_edge(["b", "c"], "d")
        g.add_edge("d", END)
        return g.compile(checkpointer=saver)

    cfg = {"configurable": {"thread_id": "t"}}
    seen: list[list[Any]] = []
    with SqliteSaver.from_conn_string(":memory:") as sqlite:
        for saver in (InMemorySaver(), sqlite):
            graph = build(saver)
            drive.invoke(graph, {"x": 0, "log": []}, cfg)
            drive.invoke(graph, {"x": 10, "log": []}, cfg)  # a second run on the thread
            seen.append([t.checkpoint["versions_seen"] for t in saver.list(cfg)])
    memory, durable = seen
    assert memory == durable
    assert len(memory) == 10  # (input + 4 steps) x 2 runs
    assert memory[-1] == {"__input__": {}}  # as LangGraph names the input
    assert set(memory[-2]) == {"__input__", "__start__"}
    assert memory[0]["a"] != memory[4]["a"]  # the second run's "a" saw newer versions


def test_thread_id_required_with_checkpointer(drive):
    with pytest.raises(ValueError, match="thread_id"):
        drive.invoke(chain(1, InMemorySaver()), {"x": 0, "log": []})


def test_subgraph_as_node(drive):
    inner = StateGraph(S)
    inner.add_node("i", _step("i"))
    inner.add_edge(START, "i")
    g = StateGraph(S)
    g.add_node("sub", inner.compile())
    g.add_node("after", _step("after"))
    g.add_edge(START, "sub")
    g.add_edge("sub", "after")
    out = drive.invoke(
        g.compile(checkpointer=InMemorySaver()),
        {"x": 0, "log": []},
        {"configurable": {"thread_id": "s"}},
    )
    assert out["x"] == 2
    assert out["log"] == ["i", "after"]


def test_stream_output_keys(drive):
    graph = chain(2)
    only_x = drive.stream(graph, {"x": 0, "log": []}, stream_mode="values", output_keys=["x"])
    assert only_x == [{"x": 0}, {"x": 1}, {"x": 2}]
    bare = drive.stream(graph, {"x": 0, "log": []}, stream_mode="values", output_keys="x")
    assert bare == [0, 1, 2]
    updates = drive.stream(graph, {"x": 0, "log": []}, stream_mode="updates", output_keys=["log"])
    assert updates == [{"n0": {"log": ["n0"]}}, {"n1": {"log": ["n1"]}}]


def test_default_recursion_limit_from_environment(drive, monkeypatch):
    g = StateGraph(S)
    g.add_node("loop", _step("loop"))
    g.add_edge(START, "loop")
    g.add_edge("loop", "loop")
    monkeypatch.setenv("LANGGRAPH_DEFAULT_RECURSION_LIMIT", "7")
    with pytest.raises(GraphRecursionError, match="Recursion limit of 7"):
        drive.invoke(g.compile(), {"x": 0, "log": []})


def test_retry_delays_follow_the_policy(monkeypatch):
    import random

    from pausepoint.drivers.retry import retry_delay

    policy = RetryPolicy(
        initial_interval=1.0,
        backoff_factor=3.0,
        max_interval=5.0,
        jitter=False,
        max_attempts=4,
        retry_on=(KeyError,),
    )
    err = KeyError("x")
    assert [retry_delay([policy], n, err) for n in (1, 2, 3, 4)] == [1.0, 3.0, 5.0, None]
    assert retry_delay([policy], 1, ValueError("not retried")) is None
    monkeypatch.setattr(random, "uniform", lambda a, b: 0.25)
    jittery = policy._replace(jitter=True)
    assert retry_delay([jittery], 1, err) == 1.25
    by_predicate = RetryPolicy(retry_on=lambda e: "flaky" in str(e), jitter=False)
    assert retry_delay([by_predicate], 1, RuntimeError("flaky db")) == 0.5
    assert retry_delay([by_predicate], 1, RuntimeError("broken")) is None
    from pausepoint.types import default_retry_on

    assert default_retry_on(ConnectionError())
    assert not default_retry_on(ValueError())
    assert default_retry_on(Exception("anything else"))
