"""The whole flow — pause in a subgraph, get_state, history, resume — with keys on every saver.

Each run is compared with the same run on an ``InMemorySaver`` without keys: encryption
changes what is stored, never what a graph does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Driver
from tests.crypto.graphs import answer, build, config, first_input

from pausepoint.checkpoint.compact import CompactingMemorySaver
from pausepoint.checkpoint.memory import InMemorySaver
from pausepoint.checkpoint.sqlite import AsyncSqliteSaver, SqliteSaver
from pausepoint.crypto import KeyRing


def _plain(values: Any) -> Any:
    """State values without the random ids ``add_messages`` gives messages."""
    if not isinstance(values, dict):
        return values
    out = dict(values)  # pyright: ignore[reportUnknownArgumentType]
    if "messages" in out:
        out["messages"] = [
            m["content"] if isinstance(m, dict) else m.content for m in out["messages"]
        ]
    return out


KINDS = ["memory", "compact", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def _summary(drive: Driver, saver: Any, thread: str) -> list[Any]:
    graph = build(saver)
    conf = config(thread)
    paused = drive.invoke(graph, first_input(), conf)
    state = drive.get_state(graph, conf, subgraphs=True)
    [task] = state.tasks
    inner = task.state
    history = drive.history(graph, conf)
    done = drive.invoke(graph, answer(), conf)
    after = drive.get_state(graph, conf)
    assert [i.id for i in paused["__interrupt__"]] == [i.id for i in state.interrupts]
    return [
        [i.value for i in paused["__interrupt__"]],
        _plain(state.values),
        state.next,
        [i.value for i in state.interrupts],
        _plain(inner.values) if inner is not None else None,
        inner.next if inner is not None else None,
        [(h.metadata["source"], h.metadata["step"], h.metadata.get("user")) for h in history],
        _plain(done),
        _plain(after.values),
        after.next,
        len(drive.history(graph, conf)),
    ]


@pytest.fixture(params=KINDS)
def sealed_saver(request: pytest.FixtureRequest, tmp_path: Path, ring: KeyRing) -> Iterator[Any]:
    kind = request.param
    if kind == "memory":
        yield InMemorySaver(encryption=ring)
    elif kind == "compact":
        yield CompactingMemorySaver(encryption=ring)
    elif kind == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp_path / "s.db"), encryption=ring) as saver:
            yield saver
    else:
        import psycopg

        from pausepoint.checkpoint.postgres import PostgresSaver

        pg_url = request.getfixturevalue("pg_url")
        kwargs = request.getfixturevalue("pg_kwargs")
        with psycopg.connect(pg_url, **kwargs) as conn:
            saver = PostgresSaver(conn, encryption=ring)
            saver.setup()
            yield saver


def test_the_flow_is_unchanged(drive: Driver, sealed_saver: Any) -> None:
    expected = _summary(drive, InMemorySaver(), "t1")
    assert _summary(drive, sealed_saver, "t1") == expected


async def _async_summary(saver: Any, thread: str) -> list[Any]:
    graph = build(saver)
    conf = config(thread)
    paused = await graph.ainvoke(first_input(), conf)
    state = await graph.aget_state(conf, subgraphs=True)
    history = [h async for h in graph.aget_state_history(conf)]
    done = await graph.ainvoke(answer(), conf)
    return [
        [i.value for i in paused["__interrupt__"]],
        _plain(state.values),
        _plain(state.tasks[0].state.values),
        [(h.metadata["source"], h.metadata["step"]) for h in history],
        _plain(done),
    ]


def test_the_async_sqlite_saver(tmp_path: Path, ring: KeyRing) -> None:
    async def both() -> tuple[list[Any], list[Any]]:
        async with AsyncSqliteSaver.from_conn_string(
            str(tmp_path / "a.db"), encryption=ring
        ) as saver:
            return await _async_summary(saver, "t1"), await _async_summary(InMemorySaver(), "t1")

    sealed, plain = asyncio.run(both())
    assert sealed == plain


@pytest.mark.postgres
def test_the_async_postgres_saver(pg_url: str, pg_kwargs: dict[str, Any], ring: KeyRing) -> None:
    import psycopg

    from pausepoint.checkpoint.postgres import AsyncPostgresSaver

    async def both() -> tuple[list[Any], list[Any]]:
        async with await psycopg.AsyncConnection.connect(pg_url, **pg_kwargs) as conn:
            saver = AsyncPostgresSaver(conn, encryption=ring)
            await saver.setup()
            sealed = await _async_summary(saver, "t1")
            page = await saver.alist_pending()
            assert page.items == []
            return sealed, await _async_summary(InMemorySaver(), "t1")

    sealed, plain = asyncio.run(both())
    assert sealed == plain
