"""The async driver on a saver whose async methods are its sync ones in a thread (issue 33).

With `SqliteSaver`, saver calls and a step's lone sync task are carried out in one
worker thread, a stretch at a time (`pausepoint.drivers.stretch`). These tests pin
what that must not change: what a run streams and when, what a stop keeps (a sync
node cut mid-run is not waited for; a write cut is made again), that a subclass with
async methods of its own still has them called; and that it is fewer hops.
"""

from __future__ import annotations

import asyncio
import itertools
import operator
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from pausepoint import START, Command, StateGraph, interrupt
from pausepoint.checkpoint.sqlite import AsyncSqliteSaver, SqliteSaver
from pausepoint.drivers.stretch import in_threads


class S(TypedDict):
    log: Annotated[list[str], operator.add]


def cfg() -> Any:
    return {"configurable": {"thread_id": "t"}}


def chain(*names: str, runs: Counter[str] | None = None) -> StateGraph:
    """START -> names[0] -> ... : sync nodes, each adding its name to ``log``."""
    b = StateGraph(S)
    for name in names:
        b.add_node(name, _node(name, runs))
    b.add_edge(START, names[0])
    for first, then in itertools.pairwise(names):
        b.add_edge(first, then)
    return b


def _node(name: str, runs: Counter[str] | None) -> Callable[[S], dict[str, Any]]:
    def run(state: S) -> dict[str, Any]:
        if runs is not None:
            runs[name] += 1
        return {"log": [name]}

    return run


def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of what ``asyncio.to_thread`` is given from now on."""
    seen: list[str] = []
    real = asyncio.to_thread

    async def counted(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        seen.append(getattr(fn, "__name__", repr(fn)))
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", counted)
    return seen


def test_an_ainvoke_on_sqlite_is_one_hop_and_a_stream_one_per_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    runs: Counter[str] = Counter()

    async def main() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
            graph = chain("a", "b", "c", runs=runs).compile(checkpointer=saver)
            seen = hops(monkeypatch)
            assert await graph.ainvoke({"log": []}, cfg()) == {"log": ["a", "b", "c"]}
            # the claim, the reads and writes, three sync nodes: before, 1 + 3 + 4 hops
            assert seen == ["_carry"]
            seen.clear()
            other = {"configurable": {"thread_id": "u"}}
            chunks = [c async for c in graph.astream({"log": []}, other)]
            assert chunks == [{"a": {"log": ["a"]}}, {"b": {"log": ["b"]}}, {"c": {"log": ["c"]}}]
            assert len(seen) == 4  # up to each update chunk, then to the end
            assert (await saver.aget_lease("u")) is None

    asyncio.run(main())
    assert runs == {"a": 2, "b": 2, "c": 2}


def test_a_pause_and_a_resume_keep_their_answers(tmp_path: Path):
    def ask(state: S) -> dict[str, Any]:
        return {"log": [interrupt("ok?")]}

    b = StateGraph(S)
    b.add_node("ask", ask)
    b.add_node("done", lambda s: {"log": ["done"]})
    b.add_edge(START, "ask")
    b.add_edge("ask", "done")

    async def main() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
            graph = b.compile(checkpointer=saver)
            paused = await graph.ainvoke({"log": []}, cfg())
            assert [i.value for i in paused["__interrupt__"]] == ["ok?"]
            assert (await graph.aget_state(cfg())).next == ("ask",)
            chunks = [c async for c in graph.astream(Command(resume="yes"), cfg())]
            assert chunks == [{"ask": {"log": ["yes"]}}, {"done": {"log": ["done"]}}]
            assert (await graph.aget_state(cfg())).values == {"log": ["yes", "done"]}
            assert (await saver.aget_lease("t")) is None

    asyncio.run(main())


def test_a_sync_node_cut_by_a_cancel_is_not_waited_for(tmp_path: Path):
    release = threading.Event()
    runs: Counter[str] = Counter()

    def blocking(state: S) -> dict[str, Any]:
        runs["blocking"] += 1
        if runs["blocking"] == 1:
            release.wait(10)
        return {"log": ["blocking"]}

    b = StateGraph(S)
    b.add_node("first", lambda s: {"log": ["first"]})
    b.add_node("blocking", blocking)
    b.add_edge(START, "first")
    b.add_edge("first", "blocking")

    async def main() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
            graph = b.compile(checkpointer=saver)
            run = asyncio.create_task(graph.ainvoke({"log": []}, cfg()))
            while not runs:
                await asyncio.sleep(0.01)
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            assert not release.is_set()  # the CancelledError came while the node still ran
            state = await graph.aget_state(cfg())
            assert state.values == {"log": ["first"]}
            (task,) = state.tasks
            assert str(task.error) == "CancelledError()"
            assert (await saver.aget_lease("t")) is None
            release.set()
            assert await graph.ainvoke(None, cfg()) == {"log": ["first", "blocking"]}

    asyncio.run(main())
    assert runs["blocking"] == 2  # its first result was dropped with the cancel


class StalledCommit(AsyncSqliteSaver):
    """Its first commit of ``b``'s output waits (in its worker thread) until told."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls = 0
        self.entered = threading.Event()
        self.go = threading.Event()
        self.over = threading.Event()

    def commit(self, step: Any) -> Any:
        if any(v == ["b"] for t in step.writes for _, v in t.writes):
            self.calls += 1
            if self.calls == 1:
                self.entered.set()
                self.go.wait(10)
                try:
                    return super().commit(step)
                finally:
                    self.over.set()
        return super().commit(step)


def test_a_write_cut_by_a_cancel_is_made_again(tmp_path: Path):
    import sqlite3

    conn = sqlite3.connect(str(tmp_path / "c.db"), check_same_thread=False, isolation_level=None)
    saver = StalledCommit(conn)
    assert in_threads(saver)  # a sync method overridden: still the sync ones in a thread
    graph = chain("a", "b", "c").compile(checkpointer=saver)

    async def main() -> None:
        run = asyncio.create_task(graph.ainvoke({"log": []}, cfg(), durability="async"))
        while not saver.entered.is_set():
            await asyncio.sleep(0.01)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert saver.calls == 2  # the cut write, made again while winding down
        assert (await saver.aget_lease("t")) is None
        assert (await graph.aget_state(cfg())).values == {"log": ["a", "b"]}
        saver.go.set()  # the cut write goes through late: the same write, nothing more
        assert await asyncio.to_thread(saver.over.wait, 10)
        assert (await graph.aget_state(cfg())).values == {"log": ["a", "b"]}
        assert await graph.ainvoke(None, cfg()) == {"log": ["a", "b", "c"]}

    try:
        asyncio.run(main())
    finally:
        saver.go.set()
        conn.close()


class OwnAsyncCommit(SqliteSaver):
    """An async ``acommit`` of its own: the driver must call it, not ``commit``."""

    acommits = 0

    async def acommit(self, step: Any) -> Any:
        type(self).acommits += 1
        return await super().acommit(step)


def test_a_subclass_with_its_own_async_method_has_it_called(tmp_path: Path):
    async def main() -> None:
        async with OwnAsyncCommit.from_conn_string(str(tmp_path / "c.db")) as saver:
            assert not in_threads(saver)
            graph = chain("a", "b").compile(checkpointer=saver)
            assert await graph.ainvoke({"log": []}, cfg()) == {"log": ["a", "b"]}

    asyncio.run(main())
    assert OwnAsyncCommit.acommits >= 2


def test_a_proxy_forwarding_to_a_sqlite_saver_is_not_taken_for_one(tmp_path: Path):
    class Proxy:
        def __init__(self, saver: SqliteSaver) -> None:
            self.saver = saver

        def __getattr__(self, name: str) -> Any:
            return getattr(self.saver, name)

    with SqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        assert in_threads(saver)
        assert not in_threads(Proxy(saver))
