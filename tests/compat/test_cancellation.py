"""A run stopped early, on LangGraph 1.1.6 and pausepoint: cancelled, closed, abandoned.

Cancelling the asyncio task of ``ainvoke``, closing an ``astream`` early (or dropping
it unread) cancels the nodes still running and raises ``CancelledError`` (closing
raises nothing); the thread then holds what the durability promises — the same
checkpoints and pending writes in both libraries — and the next run continues it.
A sync ``stream`` closed early waits for its running nodes (a thread cannot be
stopped); with durability ``"exit"`` pausepoint keeps their writes too, where
LangGraph keeps only those of nodes that finished before the close.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import inspect
import operator
import threading
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import LIBS, load_lib, thread

DURABILITIES = ("sync", "async", "exit")


class S(TypedDict):
    log: Annotated[list[str], operator.add]


def fork(name: str, log: list[str], slow: Any) -> Any:
    """START -> a -> (quick, slow) -> z, on ``name``'s InMemorySaver (quick async if slow is)."""
    lib = load_lib(name)
    memory = importlib.import_module(f"{name}.checkpoint.memory")

    def quick(state: S) -> dict[str, Any]:
        log.append("quick")
        return {"log": ["quick"]}

    async def aquick(state: S) -> dict[str, Any]:
        return quick(state)

    b = lib.StateGraph(S)
    b.add_node("a", lambda s: {"log": ["a"]})
    b.add_node("quick", aquick if inspect.iscoroutinefunction(slow) else quick)
    b.add_node("slow", slow)
    b.add_node("z", lambda s: {"log": ["z"]})
    b.add_edge(lib.START, "a")
    b.add_edge("a", "quick")
    b.add_edge("a", "slow")
    b.add_edge(["quick", "slow"], "z")
    return b.compile(checkpointer=memory.InMemorySaver())


async def thread_record(graph: Any) -> dict[str, Any]:
    """What the thread holds: checkpoints, the head's pending writes, task errors."""
    history = [h async for h in graph.aget_state_history(thread())]
    head = await graph.checkpointer.aget_tuple(thread())
    state = await graph.aget_state(thread())
    return {
        "checkpoints": [(h.metadata["step"], h.values, h.next) for h in history],
        "pending": sorted((w[1], repr(w[2])) for w in head.pending_writes),
        "errors": [(t.name, None if t.error is None else str(t.error)) for t in state.tasks],
    }


async def stopped(name: str, durability: str, how: str) -> dict[str, Any]:
    log: list[str] = []
    started = asyncio.Event()

    async def slow(state: S) -> dict[str, Any]:
        if log.count("slow") == 0:  # the first run is stopped here
            log.append("slow")
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                log.append("slow cancelled")
                raise
        log.append("slow")
        return {"log": ["slow"]}

    graph = fork(name, log, slow)
    record: dict[str, Any] = {}
    if how == "cancel":
        run = asyncio.create_task(graph.ainvoke({"log": []}, thread(), durability=durability))
        await started.wait()
        await asyncio.sleep(0.01)  # quick finishes
        run.cancel()
        try:
            await run
        except BaseException as exc:
            record["caller"] = type(exc).__name__
    else:
        stream = graph.astream({"log": []}, thread(), durability=durability)
        async for chunk in stream:
            if "quick" in chunk:
                break
        if how == "aclose":
            await stream.aclose()
        else:  # dropped unread: collected, and closed by asyncio's finalizer
            del stream
            gc.collect()
            for _ in range(5):
                await asyncio.sleep(0.01)
    record["when stopped"] = list(log)
    record.update(await thread_record(graph))
    record["next run"] = await graph.ainvoke(None, thread())
    record["log"] = log
    record["tasks left"] = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    return record


@pytest.mark.parametrize("how", ["cancel", "aclose", "dropped"])
@pytest.mark.parametrize("durability", DURABILITIES)
def test_a_stopped_async_run_leaves_the_thread_as_langgraph_does(durability: str, how: str):
    records = {name: asyncio.run(stopped(name, durability, how)) for name in LIBS}
    assert records["pausepoint"] == records["langgraph"]
    got = records["pausepoint"]
    assert got["when stopped"] == ["quick", "slow", "slow cancelled"]
    assert got["next run"] == {"log": ["a", "quick", "slow", "z"]}
    assert got["tasks left"] == []
    if how == "cancel":
        assert got["caller"] == "CancelledError"


def sync_closed(name: str, durability: str) -> dict[str, Any]:
    release = threading.Event()
    log: list[str] = []

    def slow(state: S) -> dict[str, Any]:
        log.append("slow")
        release.wait(10)
        return {"log": ["slow"]}

    graph = fork(name, log, slow)
    stream = graph.stream({"log": []}, thread(), durability=durability)
    for chunk in stream:
        if "quick" in chunk:
            break
    threading.Timer(0.05, release.set).start()  # slow finishes while close() waits
    stream.close()
    record = {"when closed": list(log)}
    record.update(asyncio.run(thread_record(graph)))
    record["next run"] = graph.invoke(None, thread())
    record["log"] = log
    return record


@pytest.mark.parametrize("durability", DURABILITIES)
def test_a_sync_stream_closed_early_waits_for_its_running_nodes(durability: str):
    records = {name: sync_closed(name, durability) for name in LIBS}
    got, oracle = records["pausepoint"], records["langgraph"]
    assert got["when closed"] == ["quick", "slow"]
    assert got["next run"] == {"log": ["a", "quick", "slow", "z"]}
    if durability != "exit":
        assert got == oracle
        return
    # Deliberate difference: what slow finished while close() waited is kept.
    slow_writes = [("join:quick+slow:z", "'slow'"), ("log", "['slow']")]
    assert got["pending"] == sorted(oracle["pending"] + slow_writes)
    assert (got["log"], oracle["log"]) == (["quick", "slow"], ["quick", "slow", "slow"])
