"""A run stopped early on real savers: a cancelled ``ainvoke``, a stream closed early.

On SQLite files and PostgreSQL, sync and async, at each durability: the thread's
stored state afterwards is what the durability promises (the shape LangGraph
saves: tests/compat/test_cancellation.py compares the two libraries), the
thread's lease is let go at once, and the next run continues the thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from pausepoint import START, StateGraph
from pausepoint.checkpoint.sqlite import AsyncSqliteSaver, SqliteSaver

DURABILITIES = ("sync", "async", "exit")


class S(TypedDict):
    log: Annotated[list[str], operator.add]


def thread() -> Any:
    return {"configurable": {"thread_id": "t"}}


def fork(slow: Any, quick: Any = None) -> StateGraph:
    """START -> a -> (quick, slow) -> z: stopped while ``slow`` runs, after ``quick``."""
    b = StateGraph(S)
    b.add_node("a", lambda s: {"log": ["a"]})
    b.add_node("quick", quick or (lambda s: {"log": ["quick"]}))
    b.add_node("slow", slow)
    b.add_node("z", lambda s: {"log": ["z"]})
    b.add_edge(START, "a")
    b.add_edge("a", "quick")
    b.add_edge("a", "slow")
    b.add_edge(["quick", "slow"], "z")
    return b


def expected(durability: str, slow_error: str | None) -> dict[str, Any]:
    """The stored shape: the step's checkpoint, quick's writes and slow's cancellation."""
    pending = {("log", "['quick']"), ("join:quick+slow:z", "'quick'")}
    if slow_error is not None and durability != "exit":
        pending.add(("__error__", repr(slow_error)))
    return {
        "steps": [1] if durability == "exit" else [1, 0, -1],
        "values": {"log": ["a"]},
        "next": ("quick", "slow"),
        "pending": pending,
        "lease": None,
    }


def stored(tup: Any, history: list[Any], lease: Any) -> dict[str, Any]:
    return {
        "steps": [h.metadata["step"] for h in history],
        "values": history[0].values,
        "next": history[0].next,
        "pending": {(w[1], repr(w[2])) for w in tup.pending_writes},
        "lease": lease,
    }


# --- async: a cancelled ainvoke ----------------------------------------------------------


@contextlib.asynccontextmanager
async def async_saver(kind: str, request: pytest.FixtureRequest, tmp: Path) -> AsyncIterator[Any]:
    if kind == "sqlite":
        async with AsyncSqliteSaver.from_conn_string(str(tmp / "c.sqlite")) as saver:
            yield saver
        return
    import psycopg

    from pausepoint.checkpoint.postgres import AsyncPostgresSaver

    url: str = request.getfixturevalue("pg_url")
    kwargs: dict[str, Any] = request.getfixturevalue("pg_kwargs")
    async with await psycopg.AsyncConnection.connect(url, **kwargs) as conn:
        saver = AsyncPostgresSaver(conn)
        await saver.setup()
        yield saver


@pytest.mark.parametrize("durability", DURABILITIES)
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_cancelled_ainvoke_saves_what_its_durability_promises(
    kind: str, durability: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    runs: list[str] = []
    quick_done = threading.Event()

    def quick(state: S) -> dict[str, Any]:
        quick_done.set()
        return {"log": ["quick"]}

    async def slow(state: S) -> dict[str, Any]:
        if not runs:
            # The run is to be cancelled after quick (a sync node, in a worker thread)
            # has finished: wait for it, then let the driver take its result. Under a
            # loaded CI machine, cancelling as soon as slow started sometimes caught
            # quick still running (its writes then, rightly, not saved).
            while not quick_done.is_set():
                await asyncio.sleep(0.001)
            await asyncio.sleep(0.05)
        runs.append("slow")
        if len(runs) == 1:  # the first run is cancelled here
            await asyncio.Event().wait()
        return {"log": ["slow"]}

    async def main() -> None:
        async with async_saver(kind, request, tmp_path) as saver:
            graph = fork(slow, quick).compile(checkpointer=saver, lease_wait=0)
            run = asyncio.create_task(graph.ainvoke({"log": []}, thread(), durability=durability))
            while not runs:
                await asyncio.sleep(0.01)
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            history = [h async for h in graph.aget_state_history(thread())]
            tup = await saver.aget_tuple(thread())
            got = stored(tup, history, await saver.aget_lease("t"))
            assert got == expected(durability, "CancelledError()")
            # The lease is gone, so the next run takes the thread at once (lease_wait=0
            # would make a held lease raise ThreadBusyError): only slow and z run.
            assert await graph.ainvoke(None, thread()) == {"log": ["a", "quick", "slow", "z"]}
            assert runs == ["slow", "slow"]
            assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []

    asyncio.run(main())


# --- sync: a stream closed early -----------------------------------------------------------


@contextlib.contextmanager
def sync_saver(kind: str, request: pytest.FixtureRequest, tmp: Path) -> Iterator[Any]:
    if kind == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp / "c.sqlite")) as saver:
            yield saver
        return
    import psycopg

    from pausepoint.checkpoint.postgres import PostgresSaver

    url: str = request.getfixturevalue("pg_url")
    kwargs: dict[str, Any] = request.getfixturevalue("pg_kwargs")
    with psycopg.connect(url, **kwargs) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        yield saver


@pytest.mark.parametrize("durability", DURABILITIES)
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_sync_stream_closed_early_keeps_the_step_its_nodes_finish(
    kind: str, durability: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    # A thread cannot be stopped: close() waits for slow, and its writes are kept too.
    release = threading.Event()
    runs: list[str] = []

    def slow(state: S) -> dict[str, Any]:
        runs.append("slow")
        release.wait(10)
        return {"log": ["slow"]}

    with sync_saver(kind, request, tmp_path) as saver:
        graph = fork(slow).compile(checkpointer=saver, lease_wait=0)
        stream = graph.stream({"log": []}, thread(), durability=durability)
        assert next(stream) == {"a": {"log": ["a"]}}
        assert next(stream) == {"quick": {"log": ["quick"]}}
        release.set()
        stream.close()
        history = list(graph.get_state_history(thread()))
        got = stored(saver.get_tuple(thread()), history, saver.get_lease("t"))
        want = expected(durability, None)
        want["pending"] |= {("log", "['slow']"), ("join:quick+slow:z", "'slow'")}
        assert got == want
        assert graph.invoke(None, thread()) == {"log": ["a", "quick", "slow", "z"]}
        assert runs == ["slow"]  # kept: it does not run again


# --- a cancel racing PostgreSQL's pool ----------------------------------------------------


def chain3() -> StateGraph:
    """START -> a -> b -> c, async nodes that finish at once."""

    def node(name: str) -> Any:
        async def run(state: S) -> dict[str, Any]:
            return {"log": [name]}

        return run

    b = StateGraph(S)
    for name in "abc":
        b.add_node(name, node(name))
    b.add_edge(START, "a")
    b.add_edge("a", "b")
    b.add_edge("b", "c")
    return b


async def cancel_at_every_point(pg_url: str, pg_kwargs: dict[str, Any], trials: int) -> None:
    """Cancel runs after 0, 1, 2... event-loop turns, on a one-connection pool others
    keep busy: the cancel often lands as the pool hands the saver its connection.

    psycopg_pool waits for a connection with ``asyncio.wait_for``, which on Python
    3.11 returns what it waited for and drops a cancel that came at the same moment:
    the run went on (it ended normally here; a node that waits hung it forever).
    """
    from psycopg_pool import AsyncConnectionPool

    from pausepoint.checkpoint.postgres import AsyncPostgresSaver

    async with AsyncConnectionPool(
        pg_url, min_size=1, max_size=1, kwargs=pg_kwargs, open=False
    ) as pool:
        saver = AsyncPostgresSaver(pool)
        await saver.setup()
        graph = chain3().compile(checkpointer=saver)
        busy = True

        async def other_user() -> None:
            while busy:
                async with pool.connection() as conn:
                    await conn.execute("SELECT 1")

        others = [asyncio.create_task(other_user()) for _ in range(2)]
        try:
            for i in range(trials):
                config = {"configurable": {"thread_id": f"t{i}"}}
                durability = DURABILITIES[i % 3]
                run = asyncio.create_task(graph.ainvoke({"log": []}, config, durability=durability))
                for _ in range(i % 40):
                    await asyncio.sleep(0)
                if run.cancel():
                    with pytest.raises(asyncio.CancelledError):
                        await run
                else:  # it had ended
                    assert run.result() == {"log": ["a", "b", "c"]}
                assert await saver.aget_lease(f"t{i}") is None
        finally:
            busy = False
            await asyncio.gather(*others)


def test_a_cancel_as_the_pool_hands_over_a_connection_stops_the_run(
    pg_url: str, pg_kwargs: dict[str, Any]
) -> None:
    asyncio.run(cancel_at_every_point(pg_url, pg_kwargs, trials=120))


@pytest.mark.stress
def test_a_cancel_as_the_pool_hands_over_a_connection_stops_the_run_repeated(
    pg_url: str, pg_kwargs: dict[str, Any]
) -> None:
    asyncio.run(cancel_at_every_point(pg_url, pg_kwargs, trials=2000))
