"""Stream parity: v2 parts from invoke, repeated writes, output schemas, failed tasks.

Each scenario compares every observable part (chunks, their order, the result or the
error) with LangGraph 1.1.6 on both drivers.
"""

import contextlib
import importlib
import operator
import threading
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import Scenarios, thread, unordered

scenario = Scenarios()


class Logged(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _paused(lib: Any) -> Any:
    """START -> prep -> ask (asks a question), with a saver."""
    b = lib.StateGraph(Logged)
    b.add_node("prep", lambda s: {"log": ["prep"]})
    b.add_node("ask", lambda s: {"log": [lib.interrupt("approve?")]})
    b.add_edge(lib.START, "prep")
    b.add_edge("prep", "ask")
    return b.compile(checkpointer=lib.InMemorySaver())


# --- invoke(..., version="v2", stream_mode=...) -------------------------------------------


@scenario
def invoke_v2_updates_returns_parts(lib, drive):
    return drive.invoke(_paused(lib), {"log": []}, thread(), version="v2", stream_mode="updates")


@scenario
def invoke_v2_several_modes_returns_parts(lib, drive):
    g = _paused(lib)
    modes = ["updates", "values", "tasks"]
    return drive.invoke(g, {"log": []}, thread(), version="v2", stream_mode=modes)


@scenario
def invoke_v2_values_returns_graph_output(lib, drive):
    g = _paused(lib)
    paused = drive.invoke(g, {"log": []}, thread(), version="v2", stream_mode="values")
    done = drive.invoke(g, lib.Command(resume="yes"), thread(), version="v2")
    return {"paused": paused, "done": done}


@scenario
def invoke_v1_updates_returns_chunks(lib, drive):
    return drive.invoke(_paused(lib), {"log": []}, thread(), stream_mode="updates")


# --- a node that writes one key several times ----------------------------------------------


class Text(TypedDict):
    foo: Annotated[str, operator.add]
    bar: str


def _repeated(lib: Any) -> Any:
    def two_commands(state: Text) -> Any:
        return [lib.Command(update={"foo": "a1"}), lib.Command(update={"foo": "a2", "bar": "x"})]

    def pairs(state: Text) -> Any:
        return lib.Command(update=[("foo", "b1"), ("bar", "y"), ("foo", "b2")])

    b = lib.StateGraph(Text)
    b.add_node("a", two_commands)
    b.add_node("b", pairs)
    b.add_node("c", lambda s: {"foo": "c"})
    b.add_edge(lib.START, "a")
    b.add_edge("a", "b")
    b.add_edge("b", "c")
    return b.compile(checkpointer=lib.InMemorySaver())


@scenario
def repeated_writes_in_updates_and_tasks(lib, drive):
    g = _repeated(lib)
    return drive.stream(g, {"foo": ""}, thread(), stream_mode=["updates", "tasks"])


@scenario
def repeated_writes_in_debug(lib, drive):
    return drive.stream(_repeated(lib), {"foo": ""}, thread(), stream_mode="debug")


@scenario
def repeated_writes_invoke(lib, drive):
    return drive.invoke(_repeated(lib), {"foo": ""}, thread())


@scenario
def repeated_writes_in_snapshot_task_results(lib, drive):
    """History's task results fold a key written several times into ``$writes`` too."""
    g = _repeated(lib)
    drive.invoke(g, {"foo": ""}, thread())
    return [[(t.name, t.result) for t in snap.tasks] for snap in drive.history(g, thread())]


# --- output schemas -------------------------------------------------------------------------


class Full(TypedDict, total=False):
    query: str
    answer: str


class Answer(TypedDict, total=False):
    answer: str


def _narrow(lib: Any, saver: bool = False) -> Any:
    b = lib.StateGraph(Full, output_schema=Answer)
    b.add_node("rewrite", lambda s: {"query": s["query"] + "!"})
    b.add_node("answer", lambda s: {"answer": "re: " + s["query"]})
    b.add_edge(lib.START, "rewrite")
    b.add_edge("rewrite", "answer")
    return b.compile(checkpointer=lib.InMemorySaver() if saver else None)


@scenario
def output_schema_does_not_filter_stream(lib, drive):
    g = _narrow(lib)
    modes = ["updates", "values", "tasks"]
    return {
        "invoke": drive.invoke(g, {"query": "q"}),
        "stream": drive.stream(g, {"query": "q"}, stream_mode=modes),
        "v2": drive.stream(g, {"query": "q"}, stream_mode="values", version="v2"),
    }


@scenario
def output_schema_with_checkpoint_events(lib, drive):
    g = _narrow(lib, saver=True)
    return drive.stream(g, {"query": "q"}, thread(), stream_mode=["checkpoints", "debug"])


@scenario
def output_schema_filters_invoke_streams(lib, drive):
    g = _narrow(lib, saver=True)
    out = {}
    for mode in ("updates", "checkpoints", "tasks"):
        out[mode] = drive.invoke(g, {"query": "q"}, thread(mode), stream_mode=mode)
    return out


@scenario
def output_keys_given_to_stream(lib, drive):
    g = _narrow(lib)
    modes = ["updates", "values"]
    return {
        "list": drive.stream(g, {"query": "q"}, stream_mode=modes, output_keys=["query"]),
        "one": drive.stream(g, {"query": "q"}, stream_mode=modes, output_keys="query"),
    }


# --- a task whose error ends the run --------------------------------------------------------


def _down(state: Logged) -> Logged:
    raise ConnectionResetError("b is down")


@scenario
def lone_failed_task_has_no_result_event(lib, drive):
    b = lib.StateGraph(Logged)
    b.add_node("prep", lambda s: {"log": ["prep"]})
    b.add_node("b", _down)
    b.add_edge(lib.START, "prep")
    b.add_edge("prep", "b")
    g = b.compile(checkpointer=lib.InMemorySaver())
    return drive.stream(g, {"log": []}, thread(), stream_mode=["tasks", "updates", "debug"])


@scenario
def lone_failed_task_streamed_live_reports_its_error(lib, drive):
    # Read live (custom chunks, subgraphs=True), LangGraph runs even a lone task in the
    # background, and reports its failure before raising it.
    b = lib.StateGraph(Logged)
    b.add_node("b", _down)
    b.add_edge(lib.START, "b")
    g = b.compile()
    return {
        "custom": drive.stream(g, {"log": []}, stream_mode=["tasks", "custom"]),
        "subgraphs": drive.stream(g, {"log": []}, stream_mode="tasks", subgraphs=True),
    }


@scenario
def parallel_failed_task_reports_its_error(lib, drive):
    done = threading.Event()

    def good(state: Logged) -> Logged:
        done.set()
        return {"log": ["good"]}

    def bad(state: Logged) -> Logged:
        done.wait(5)  # fails after its sibling finished: both report, in any order
        raise ValueError("bad")

    b = lib.StateGraph(Logged)
    b.add_node("bad", bad)
    b.add_node("good", good)
    b.add_edge(lib.START, "bad")
    b.add_edge(lib.START, "good")
    chunks = drive.stream(b.compile(), {"log": []}, stream_mode=["tasks", "updates"])
    return {"starts": chunks[:2], "ends": unordered(chunks[2:-1]), "last": chunks[-1]}


# --- @task calls are tasks of their own ---------------------------------------------------


def _calls(lib: Any) -> tuple[Any, Any]:
    func = importlib.import_module(f"{lib.name}.func")

    @func.task
    def double(x: int, k: int = 1) -> int:
        return 2 * x * k

    @func.task
    def ask(x: int) -> Any:
        return lib.interrupt(f"ok {x}?")

    @func.task
    def boom(x: int) -> int:
        raise ValueError("boom")

    @func.entrypoint(checkpointer=lib.InMemorySaver())
    def flow(n: int) -> int:
        a = double(n, k=2).result()
        with contextlib.suppress(ValueError):
            boom(a).result()
        return a + ask(a).result()

    @func.entrypoint()
    def failing(n: int) -> int:
        return boom(double(n).result()).result()

    return flow, failing


_CALL_MODES = ["tasks", "updates", "debug"]


@scenario
def task_calls_in_tasks_and_debug_streams(lib, drive):
    flow, _ = _calls(lib)
    paused = drive.stream(flow, 3, thread(), stream_mode=_CALL_MODES)
    resumed = drive.stream(flow, lib.Command(resume=5), thread(), stream_mode=_CALL_MODES)
    return {"paused": paused, "resumed": resumed}


@scenario
def task_call_failure_ends_the_run(lib, drive):
    _, failing = _calls(lib)
    return drive.stream(failing, 3, stream_mode=["tasks", "updates"])


@scenario
def task_calls_from_a_graph_node(lib, drive):
    func = importlib.import_module(f"{lib.name}.func")

    @func.task
    def double(x: int) -> int:
        return 2 * x

    class V(TypedDict):
        v: int

    def node(state: V) -> V:
        return {"v": double(state["v"]).result()}

    b = lib.StateGraph(V)
    b.add_node("node", node)
    b.add_edge(lib.START, "node")
    return drive.stream(b.compile(), {"v": 2}, stream_mode=["tasks", "updates"])


# --- custom chunks of a lone task arrive while it runs ---------------------------------------


def _consume(drive: Any, chunks: Any, on_chunk: Any) -> list[Any]:
    """Read a stream (sync or async), calling ``on_chunk`` on each chunk as it arrives."""
    seen: list[Any] = []

    async def collect() -> None:
        async for chunk in chunks:
            on_chunk(chunk)
            seen.append(chunk)

    if drive.is_async:
        drive._run(collect())
    else:
        for chunk in chunks:
            on_chunk(chunk)
            seen.append(chunk)
    return seen


def _handshake(lib: Any) -> tuple[Any, threading.Event]:
    """A lone node that writes a chunk, then waits until the caller has read it."""
    read = threading.Event()

    class X(TypedDict):
        x: str

    def waits(state: X) -> X:
        lib.get_stream_writer()("before")
        # Only a chunk that reached the caller while this node runs sets the event.
        return {"x": "read while running" if read.wait(10) else "held until the end"}

    b = lib.StateGraph(X)
    b.add_node("waits", waits)
    b.add_edge(lib.START, "waits")
    return b.compile(), read


@scenario
def custom_chunk_of_lone_task_arrives_live(lib, drive):
    g, read = _handshake(lib)
    stream = g.astream if drive.is_async else g.stream
    chunks = stream({"x": ""}, stream_mode=["custom", "values"])
    return _consume(drive, chunks, lambda c: c == ("custom", "before") and read.set())


test_stream_parts = scenario.test()
