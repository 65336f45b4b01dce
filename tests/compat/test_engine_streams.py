"""Engine scenarios: stream modes (singly, combined, v2 parts, subgraphs), retries."""

import asyncio
import operator
import time
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import Scenarios, thread, unordered

scenario = Scenarios()


class Logged(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def _chain(lib: Any, checkpointer: bool = False) -> Any:
    """START -> one -> two, writing x and log; ``two`` also writes custom stream data."""

    def one(state: Logged) -> dict[str, Any]:
        return {"x": state["x"] + 1, "log": ["one"]}

    def two(state: Logged) -> dict[str, Any]:
        lib.get_stream_writer()({"progress": state["x"]})
        return {"log": ["two"]}

    b = lib.StateGraph(Logged)
    b.add_node("one", one)
    b.add_node("two", two)
    b.add_edge(lib.START, "one")
    b.add_edge("one", "two")
    return b.compile(checkpointer=lib.InMemorySaver() if checkpointer else None)


@scenario
def stream_values(lib, drive):
    return drive.stream(_chain(lib), {"x": 1, "log": []}, stream_mode="values")


@scenario
def stream_updates_is_default(lib, drive):
    return drive.stream(_chain(lib), {"x": 1, "log": []})


@scenario
def stream_custom_from_writer(lib, drive):
    return drive.stream(_chain(lib), {"x": 1, "log": []}, stream_mode="custom")


@scenario
def stream_debug_with_checkpointer(lib, drive):
    g = _chain(lib, checkpointer=True)
    return drive.stream(g, {"x": 1, "log": []}, thread(), stream_mode="debug")


@scenario
def stream_tasks(lib, drive):
    return drive.stream(_chain(lib), {"x": 1, "log": []}, stream_mode="tasks")


@scenario
def stream_checkpoints(lib, drive):
    g = _chain(lib, checkpointer=True)
    return drive.stream(g, {"x": 1, "log": []}, thread(), stream_mode="checkpoints")


@scenario
def stream_several_modes_as_tuples(lib, drive):
    modes = ["updates", "values", "custom"]
    return drive.stream(_chain(lib), {"x": 1, "log": []}, stream_mode=modes)


@scenario
def stream_version_v2_parts(lib, drive):
    modes = ["values", "updates", "custom", "tasks"]
    return drive.stream(_chain(lib), {"x": 1, "log": []}, stream_mode=modes, version="v2")


@scenario
def stream_values_without_checkpointer_or_input_keys(lib, drive):
    out = drive.stream(_chain(lib), {"x": 5}, stream_mode="values")
    inv = drive.invoke(_chain(lib), {"x": 5}, output_keys=["log"])
    return {"stream": out, "invoke_output_keys": inv}


@scenario
def stream_updates_parallel_branches(lib, drive):
    b = lib.StateGraph(Logged)
    for tag in ("l", "r"):
        b.add_node(tag, lambda s, tag=tag: {"log": [tag]})
    b.add_node("end", lambda s: {"x": len(s["log"])})
    b.add_edge(lib.START, "l")
    b.add_edge(lib.START, "r")
    b.add_edge(["l", "r"], "end")
    chunks = drive.stream(b.compile(), {"x": 0, "log": []}, stream_mode="updates")
    return {"first_step": unordered(chunks[:2]), "rest": chunks[2:]}


@scenario
def stream_updates_of_send_tasks(lib, drive):
    b = lib.StateGraph(Logged)
    b.add_node("go", lambda s: {"x": 3})
    b.add_node("work", lambda arg: {"log": [f"w{arg}"]})
    b.add_edge(lib.START, "go")
    b.add_conditional_edges("go", lambda s: [lib.Send("work", i) for i in range(s["x"])])
    chunks = drive.stream(b.compile(), {"x": 0, "log": []})
    return {"first": chunks[0], "sends": unordered(chunks[1:])}


def _nested(lib: Any, checkpointer: bool = False) -> Any:
    class Inner(TypedDict):
        x: int
        log: Annotated[list[str], operator.add]

    def deep(state: Inner) -> dict[str, Any]:
        lib.get_stream_writer()("from deep")
        return {"log": ["deep"], "x": state["x"] * 2}

    ib = lib.StateGraph(Inner)
    ib.add_node("deep", deep)
    ib.add_edge(lib.START, "deep")
    b = lib.StateGraph(Logged)
    b.add_node("pre", lambda s: {"log": ["pre"]})
    b.add_node("child", ib.compile())
    b.add_edge(lib.START, "pre")
    b.add_edge("pre", "child")
    return b.compile(checkpointer=lib.InMemorySaver() if checkpointer else None)


@scenario
def stream_subgraphs_namespaces_updates(lib, drive):
    return drive.stream(_nested(lib), {"x": 2, "log": []}, subgraphs=True)


@scenario
def stream_subgraphs_several_modes(lib, drive):
    modes = ["values", "custom"]
    return drive.stream(_nested(lib), {"x": 2, "log": []}, stream_mode=modes, subgraphs=True)


@scenario
def stream_subgraphs_v2_parts_with_checkpointer(lib, drive):
    g = _nested(lib, checkpointer=True)
    return drive.stream(
        g,
        {"x": 2, "log": []},
        thread(),
        stream_mode=["updates", "custom"],
        subgraphs=True,
        version="v2",
    )


@scenario
def invoke_version_v2_returns_graph_output(lib, drive):
    return drive.invoke(_chain(lib), {"x": 1, "log": []}, version="v2")


# --- retries -----------------------------------------------------------------------------


class _Sleeps:
    """Record retry back-offs instead of sleeping (both drivers' sleep functions)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.intervals: list[float] = []
        real_async_sleep = asyncio.sleep

        async def fake_async_sleep(delay: float, result: Any = None) -> Any:
            if delay:
                self.intervals.append(round(delay, 6))
            return await real_async_sleep(0, result)

        monkeypatch.setattr(time, "sleep", lambda d: self.intervals.append(round(d, 6)))
        monkeypatch.setattr(asyncio, "sleep", fake_async_sleep)


def _flaky(lib: Any, fail_times: int, exc: type[Exception], policy: Any) -> tuple[Any, Counter]:
    runs: Counter[str] = Counter()

    def flaky(state: Logged) -> dict[str, Any]:
        runs["flaky"] += 1
        if runs["flaky"] <= fail_times:
            raise exc(f"failure {runs['flaky']}")
        return {"log": [f"ok after {runs['flaky']}"]}

    b = lib.StateGraph(Logged)
    b.add_node("flaky", flaky, retry_policy=policy)
    b.add_edge(lib.START, "flaky")
    return b.compile(checkpointer=lib.InMemorySaver()), runs


def _retry_record(lib: Any, drive: Any, fail_times: int, exc: type[Exception], **kw: Any) -> Any:
    policy = lib.RetryPolicy(jitter=False, **kw)
    with pytest.MonkeyPatch.context() as mp:
        sleeps = _Sleeps(mp)
        g, runs = _flaky(lib, fail_times, exc, policy)
        chunks = drive.stream(g, {"x": 0, "log": []}, thread(), stream_mode="updates")
    state = drive.get_state(g, thread())
    tasks = [(t.name, t.error) for t in state.tasks]
    return {"chunks": chunks, "runs": dict(runs), "sleeps": sleeps.intervals, "tasks": tasks}


@scenario
def retry_policy_backoff_then_success(lib, drive):
    return _retry_record(lib, drive, 3, ConnectionError, initial_interval=0.5, max_attempts=5)


@scenario
def retry_policy_max_interval_and_exhaustion(lib, drive):
    return _retry_record(
        lib,
        drive,
        9,
        ConnectionError,
        initial_interval=1.0,
        backoff_factor=3.0,
        max_interval=5.0,
        max_attempts=4,
    )


@scenario
def retry_policy_default_retry_on_skips_value_error(lib, drive):
    return _retry_record(lib, drive, 1, ValueError, max_attempts=3)


@scenario
def retry_policy_retry_on_exception_class(lib, drive):
    return _retry_record(lib, drive, 2, KeyError, retry_on=KeyError, initial_interval=0.25)


test_engine_streams = scenario.test()
