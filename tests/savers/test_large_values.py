"""Large values round-trip on every saver, exactly, and a bad one loses nothing (issue 18).

A node returns a value of a few megabytes; it is stored as the node's pending write
and, in the same call, in the checkpoint after the step, whose encoding reuses the
write's (``checkpoint/_reuse.py``). Each shape takes a different path: text and
plain JSON go through the C encoder, bytes through their own shortcut (kept as they
are in memory), and a value with tuples, sets, non-str keys or nan through the walk.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
import pytest_asyncio

from pausepoint import START, InMemorySaver, StateGraph
from pausepoint.checkpoint.compact import CompactingMemorySaver
from pausepoint.checkpoint.postgres import AsyncPostgresSaver
from pausepoint.checkpoint.sqlite import AsyncSqliteSaver, SqliteSaver
from pausepoint.errors import SerializationError
from pausepoint.serde import Serializer

MB = 1_000_000


class S(TypedDict, total=False):
    n: int
    payload: Any
    other: Any


def _text(size: int) -> str:
    # Non-ASCII (escaped as \uXXXX, an emoji as a surrogate pair), quotes,
    # backslashes and control characters, which JSON escapes.
    piece = 'Ünïcödé 🚀 "quoted" back\\slash tab\t nul\x00 line\n ascii text. '
    return (piece * (size // len(piece) + 1))[:size]


def _records(size: int) -> dict[str, Any]:
    rows = [
        {"id": i, "name": f"row {i} é", "score": i / 7, "ok": i % 2 == 0, "tags": ["a", None]}
        for i in range(size // 100)
    ]
    return {"source": "export", "rows": rows, "empty": {}, "none": []}


def _mixed(size: int) -> dict[Any, Any]:
    # Not plain JSON anywhere: the serializer's walk tags every part.
    rows = [(i, {i: "int key"}, {"__pp__": i}, float("inf")) for i in range(size // 80)]
    return {"rows": rows, "set": {1, 2, 3}, "bytes": b"\x00\xff" * 1000, 7: "seven"}


SHAPES = {  # above the 64 KB from which a write's encoding is reused; fast enough
    "str": lambda: _text(MB),
    "bytes": lambda: bytes(range(256)) * (MB // 256),
    "records": lambda: _records(MB),
    "mixed": lambda: _mixed(MB // 2),
}


def _same(got: Any, want: Any) -> bool:
    """Equal, with the same types all the way down (nan equals nan)."""
    if type(got) is not type(want):
        return False
    if isinstance(got, float):
        return got == want or (math.isnan(got) and math.isnan(want))
    if isinstance(got, dict):
        return got.keys() == want.keys() and all(_same(got[k], want[k]) for k in got)
    if isinstance(got, list | tuple):
        return len(got) == len(want) and all(map(_same, got, want))
    return bool(got == want)


@pytest.fixture(
    params=["memory", "compact", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
    elif request.param == "compact":
        yield CompactingMemorySaver()
    elif request.param == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as sqlite_saver:
            yield sqlite_saver
    else:
        import psycopg

        from pausepoint.checkpoint.postgres import PostgresSaver

        kwargs: dict[str, Any] = request.getfixturevalue("pg_kwargs")
        with psycopg.connect(request.getfixturevalue("pg_url"), **kwargs) as conn:
            pg_saver = PostgresSaver(conn)
            pg_saver.setup()
            yield pg_saver


def _graph(saver: Any, value: Any) -> Any:
    b = StateGraph(S)
    b.add_node("put", lambda s: {"payload": value})
    b.add_edge(START, "put")
    return b.compile(checkpointer=saver)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_large_value_reads_back_exactly(saver: Any, shape: str) -> None:
    value = SHAPES[shape]()
    graph = _graph(saver, value)
    cfg = {"configurable": {"thread_id": f"large-{shape}"}}
    assert _same(graph.invoke({"n": 1}, cfg)["payload"], value)
    assert _same(graph.get_state(cfg).values["payload"], value)
    history = list(graph.get_state_history(cfg))
    assert [("payload" in h.values) for h in history] == [True, False, False]
    # The step's checkpoint was stored from the write's encoding: it reads back
    # in a fresh saver too (same store), not only from what this one keeps.
    tuple_ = saver.get_tuple(cfg)
    assert _same(tuple_.checkpoint["channel_values"]["payload"], value)


def test_a_large_value_is_kept_as_it_was_when_written(saver: Any) -> None:
    value = _records(MB)
    graph = _graph(saver, value)
    cfg = {"configurable": {"thread_id": "snap"}}
    graph.invoke({"n": 1}, cfg)
    value["rows"].append({"added": "later"})
    read = graph.get_state(cfg).values["payload"]
    assert len(read["rows"]) == MB // 100
    read["rows"].clear()  # what a reader changes is its own copy
    assert len(graph.get_state(cfg).values["payload"]["rows"]) == MB // 100


def test_a_bad_value_beside_a_large_one_writes_nothing(saver: Any) -> None:
    big = _records(MB)
    b = StateGraph(S)
    b.add_node("put", lambda s: {"payload": big, "other": [object()]})
    b.add_edge(START, "put")
    graph = b.compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "bad"}}
    other = {"configurable": {"thread_id": "other"}}
    _graph(saver, "ok").invoke({"n": 0}, other)
    before = [t.config for t in saver.list(other)]
    with pytest.raises(SerializationError, match=r"'other'.*\[0\]"):
        graph.invoke({"n": 1}, cfg)
    assert [t.config for t in saver.list(other)] == before
    # The run stopped before the step's writes: none of them and no later checkpoint.
    stored = saver.get_tuple(cfg)
    assert stored.metadata["step"] == 0
    assert stored.pending_writes == []
    assert "payload" not in graph.get_state(cfg).values


def test_sqlite_stores_the_step_as_the_whole_value_would_encode(tmp_path: Path) -> None:
    # The value's row (pausepoint_blobs, schema version 7) reuses the write's encoding:
    # byte for byte what encoding the value gives; the checkpoint holds its version.
    path = str(tmp_path / "c.sqlite")
    value = _records(MB)
    with SqliteSaver.from_conn_string(path) as saver:
        _graph(saver, value).invoke({"n": 1}, {"configurable": {"thread_id": "t"}})
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT value FROM pausepoint_blobs").fetchall()
    checkpoints = conn.execute("SELECT checkpoint FROM pausepoint_checkpoints").fetchall()
    conn.close()
    ser = Serializer()
    spliced = [blob for (blob,) in rows if len(blob) > MB // 2]
    assert len(spliced) == 1
    assert ser.dumps(ser.loads(spliced[0])) == spliced[0]
    assert all(len(blob) < MB // 2 for (blob,) in checkpoints)


@pytest_asyncio.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def async_saver(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "sqlite":
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
            yield saver
    else:
        schema = request.getfixturevalue("pg_schema")
        url = f"{request.getfixturevalue('pg_url')}?options=-csearch_path%3D{schema}"
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            await saver.setup()
            yield saver


@pytest.mark.asyncio
@pytest.mark.parametrize("shape", ["bytes", "records"])
async def test_a_large_value_reads_back_exactly_async(async_saver: Any, shape: str) -> None:
    value = SHAPES[shape]()
    graph = _graph(async_saver, value)
    cfg = {"configurable": {"thread_id": f"async-{shape}"}}
    assert _same((await graph.ainvoke({"n": 1}, cfg))["payload"], value)
    assert _same((await graph.aget_state(cfg)).values["payload"], value)
