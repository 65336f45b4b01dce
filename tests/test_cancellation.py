"""Stopping a run early: the cases a driver meets between effects (docs/async.md).

LangGraph parity for the stored thread is in tests/compat/test_cancellation.py and,
on SQLite and PostgreSQL, in tests/savers/test_cancellation.py. These tests pin what
only pausepoint's drivers can get wrong: a stop while a saver write is in flight,
while the sync driver runs a lone task in place, while a sync node blocks a worker
thread, and a stream dropped unread.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import operator
import threading
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest

from pausepoint import START, InMemorySaver, StateGraph
from pausepoint.config import get_stream_writer


class S(TypedDict):
    log: Annotated[list[str], operator.add]


def cfg() -> Any:
    return {"configurable": {"thread_id": "t"}}


def chain(runs: Counter[str], *names: str, fan: bool = False) -> StateGraph:
    """START -> names[0] -> names[1] ... (``fan``: all but the last from START, then it).

    The nodes are async: they finish at once, so the outcomes a test sees are fixed.
    """

    def node(name: str) -> Any:
        async def run(state: S) -> dict[str, Any]:
            runs[name] += 1
            return {"log": [name]}

        return run

    b = StateGraph(S)
    for name in names:
        b.add_node(name, node(name))
    if fan:
        for name in names[:-1]:
            b.add_edge(START, name)
        b.add_edge(list(names[:-1]), names[-1])
        return b
    b.add_edge(START, names[0])
    for first, then in itertools.pairwise(names):
        b.add_edge(first, then)
    return b


class StalledWrites(InMemorySaver):
    """Its first ``aput_writes`` of a node's output waits until cancelled; a second
    call is the driver's redo. (The input's writes, saved with the first step's
    checkpoint, pass: the cut must fall on a task of the step.)"""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.entered = asyncio.Event()

    async def aput_writes(self, config: Any, writes: Any, *args: Any, **kwargs: Any) -> None:
        if any(channel == "log" and value for channel, value in writes):
            self.calls += 1
            if self.calls == 1:
                self.entered.set()
                await asyncio.Event().wait()
        await super().aput_writes(config, writes, *args, **kwargs)


def test_a_write_cut_by_the_cancel_is_made_again():
    runs: Counter[str] = Counter()
    saver = StalledWrites()
    graph = chain(runs, "a", "b", "c", fan=True).compile(checkpointer=saver)

    async def main() -> None:
        run = asyncio.create_task(graph.ainvoke({"log": []}, cfg()))
        await saver.entered.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert saver.calls >= 2  # the cut write, made again while winding down
        tup = await saver.aget_tuple(cfg())  # the step of a and b, with both their writes
        assert tup.metadata["step"] == 0
        assert sorted(w.value for w in tup.pending_writes if w.channel == "log") == [
            ["a"],
            ["b"],
        ]
        assert saver.get_lease("t") is None
        assert await graph.ainvoke(None, cfg()) == {"log": ["a", "b", "c"]}

    asyncio.run(main())
    assert runs == {"a": 1, "b": 1, "c": 1}  # a and b kept: they did not run again


class SwallowingWrites(InMemorySaver):
    """Its first ``aput_writes`` of a node's output catches the cancel meant for the
    run and returns, written (as psycopg_pool's wait did on Python 3.11: it handed
    over a connection and dropped the cancel that came at the same moment)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.entered = asyncio.Event()

    async def aput_writes(self, config: Any, writes: Any, *args: Any, **kwargs: Any) -> None:
        if any(channel == "log" and value for channel, value in writes):
            self.calls += 1
            if self.calls == 1:
                self.entered.set()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.Event().wait()
        await super().aput_writes(config, writes, *args, **kwargs)


@pytest.mark.parametrize("durability", ["sync", "async"])  # "exit" writes at the end
def test_a_cancel_a_saver_swallowed_still_stops_the_run(durability: str):
    # Before, the run went on to the next step: a node there that waits was never
    # cancelled, and the cancelled ainvoke never returned. Now the run stops at the
    # write, and stores what a cancel the saver let through stores.
    async def stop(saver: StalledWrites | SwallowingWrites, runs: Counter[str]) -> Any:
        graph = chain(runs, "a", "b", "c").compile(checkpointer=saver)
        run = asyncio.create_task(graph.ainvoke({"log": []}, cfg(), durability=durability))
        await saver.entered.wait()
        assert run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert saver.calls == 2  # the write, made again while winding down
        assert saver.get_lease("t") is None
        tup = await saver.aget_tuple(cfg())
        assert await graph.ainvoke(None, cfg()) == {"log": ["a", "b", "c"]}
        return tup.metadata["step"], tup.checkpoint["channel_values"], tup.pending_writes

    swallowed: Counter[str] = Counter()
    let_through: Counter[str] = Counter()
    assert asyncio.run(stop(SwallowingWrites(), swallowed)) == asyncio.run(
        stop(StalledWrites(), let_through)
    )
    assert swallowed == let_through == {"a": 1, "b": 1, "c": 1}


def test_a_sync_stream_closed_by_its_lone_tasks_chunk_keeps_that_task():
    # The sync driver runs a lone task in place and passes on its chunks before its
    # outcome: a close at such a chunk still hands the outcome to the loop.
    runs: Counter[str] = Counter()

    def one(state: S) -> dict[str, Any]:
        runs["one"] += 1
        get_stream_writer()("working")
        return {"log": ["one"]}

    b = StateGraph(S)
    b.add_node("one", one)
    b.add_node("two", lambda s: {"log": ["two"]})
    b.add_edge(START, "one")
    b.add_edge("one", "two")
    saver = InMemorySaver()
    graph = b.compile(checkpointer=saver)
    stream = graph.stream({"log": []}, cfg(), stream_mode="custom")
    assert next(stream) == "working"
    stream.close()
    tup = saver.get_tuple(cfg())
    assert [w.channel for w in tup.pending_writes] == ["log", "branch:to:two"]  # one's
    assert saver.get_lease("t") is None
    assert graph.invoke(None, cfg()) == {"log": ["one", "two"]}
    assert runs["one"] == 1


def test_a_sync_node_in_a_worker_thread_is_not_waited_for():
    release = threading.Event()
    runs: Counter[str] = Counter()

    def blocking(state: S) -> dict[str, Any]:
        runs["blocking"] += 1
        if runs["blocking"] == 1:
            release.wait(10)
        return {"log": ["blocking"]}

    b = StateGraph(S)
    b.add_node("blocking", blocking)
    b.add_edge(START, "blocking")
    saver = InMemorySaver()
    graph = b.compile(checkpointer=saver)

    async def main() -> None:
        run = asyncio.create_task(graph.ainvoke({"log": []}, cfg()))
        while not runs:
            await asyncio.sleep(0.01)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert not release.is_set()  # the CancelledError came while the node still ran
        (task,) = (await graph.aget_state(cfg())).tasks
        assert str(task.error) == "CancelledError()"
        release.set()
        assert await graph.ainvoke(None, cfg()) == {"log": ["blocking"]}

    asyncio.run(main())
    assert runs["blocking"] == 2  # its first result was dropped with the cancel


def test_an_astream_dropped_unread_lets_the_thread_go():
    runs: Counter[str] = Counter()
    saver = InMemorySaver()
    graph = chain(runs, "a", "b").compile(checkpointer=saver)

    async def main() -> None:
        stream = graph.astream({"log": []}, cfg(), stream_mode="updates")
        assert await anext(stream) == {"a": {"log": ["a"]}}
        assert saver.get_lease("t") is not None
        del stream  # never closed: asyncio's finalizer closes it
        gc.collect()
        for _ in range(5):
            await asyncio.sleep(0)
        assert saver.get_lease("t") is None
        assert await graph.ainvoke(None, cfg()) == {"log": ["a", "b"]}
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []

    asyncio.run(main())
    assert runs == {"a": 1, "b": 1}


def test_a_cancelled_entrypoint_cancels_its_running_task_calls():
    from pausepoint.func import entrypoint, task

    seen: list[str] = []

    @task
    async def wait_forever(i: int) -> int:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append(f"call {i} cancelled")
            raise
        return i

    @entrypoint(checkpointer=InMemorySaver())
    async def flow(n: int) -> list[int]:
        calls = [wait_forever(i) for i in range(n)]
        await asyncio.Event().wait()  # cancelled here, while not awaiting the calls
        return [await c for c in calls]

    async def main() -> None:
        run = asyncio.create_task(flow.ainvoke(2, cfg()))
        for _ in range(10):
            await asyncio.sleep(0)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        # Both calls ended before the CancelledError reached the caller.
        assert sorted(seen) == ["call 0 cancelled", "call 1 cancelled"]
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []

    asyncio.run(main())


def test_asyncio_timeout_around_ainvoke_raises_timeout_error_and_keeps_the_step():
    runs: Counter[str] = Counter()
    saver = InMemorySaver()

    async def slow(state: S) -> dict[str, Any]:
        runs["slow"] += 1
        if runs["slow"] == 1:
            await asyncio.sleep(60)
        return {"log": ["slow"]}

    b = chain(runs, "quick", "after", fan=True)
    b.add_node("slow", slow)
    b.add_edge(START, "slow")
    graph = b.compile(checkpointer=saver)

    async def main() -> None:
        # The cancel asyncio.timeout() makes is its own: it turns into TimeoutError.
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await graph.ainvoke({"log": []}, cfg())
        assert saver.get_lease("t") is None
        assert await graph.ainvoke(None, cfg()) == {"log": ["quick", "slow", "after"]}

    asyncio.run(main())
    assert runs == {"quick": 1, "slow": 2, "after": 1}
