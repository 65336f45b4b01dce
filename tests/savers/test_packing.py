"""Small encodings stored deflated behind a marker (schema version 9, ``_packing``).

The chat of ``test_blobs`` is run on SQLite and PostgreSQL: its checkpoint rows, pending
writes and delta rows are stored deflated, and its history reads back as on the
reference saver. Rows stored as they were before version 9 read as before (a database
of version 8 is migrated); damaged deflated bytes read as ``CheckpointDecodeError``
naming the thread; a saver that encrypts stores nothing deflated but reads what was.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pausepoint import Command, InMemorySaver
from pausepoint.checkpoint._dialect import MIGRATIONS
from pausepoint.checkpoint._packing import PACK_BELOW, PACKED, pack, unpack
from pausepoint.checkpoint.postgres import PostgresSaver
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import CheckpointDecodeError
from pausepoint.serde import Serializer

from .test_blobs import TEXT, _chat, _execute, _observed, _run


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp_path / "c.db")) as opened:
            yield opened
        return
    import psycopg

    kwargs = request.getfixturevalue("pg_kwargs")
    with psycopg.connect(request.getfixturevalue("pg_url"), **kwargs) as conn:
        opened = PostgresSaver(conn)
        opened.setup()
        yield opened


_CELLS = (
    ("pausepoint_checkpoints", "checkpoint"),
    ("pausepoint_writes", "value"),
    ("pausepoint_blobs", "value"),
)


def _packed_counts(saver: Any) -> dict[str, tuple[int, int]]:
    """Per table: (rows stored deflated, rows)."""
    out: dict[str, tuple[int, int]] = {}
    for table, column in _CELLS:
        rows = _execute(saver, f"SELECT {column} FROM {table}")
        packed = sum(1 for (cell,) in rows if bytes(cell)[:4] == PACKED)
        out[table] = (packed, len(rows))
    return out


def _unpack_all(saver: Any) -> None:
    """Store every deflated cell as it was before version 9 (the encoding itself)."""
    keys = {
        "pausepoint_checkpoints": "thread_id, checkpoint_ns, checkpoint_id",
        "pausepoint_writes": "seq",
        "pausepoint_blobs": "thread_id, checkpoint_ns, channel, version",
    }
    for table, column in _CELLS:
        names = keys[table].split(", ")
        rows = _execute(saver, f"SELECT {keys[table]}, {column} FROM {table}")
        for *key, cell in rows:
            where = " AND ".join(f"{n} = ?" for n in names)
            plain = unpack(bytes(cell), "a cell")
            _execute(saver, f"UPDATE {table} SET {column} = ? WHERE {where}", (plain, *key))


def test_small_rows_are_stored_deflated_and_read_back(saver: Any) -> None:
    graph, config = _run(saver, "chat", 8)
    ref_graph, ref_config = _run(InMemorySaver(), "chat", 8)
    counts = _packed_counts(saver)
    for table, (packed, rows) in counts.items():
        assert rows, table
        assert packed, (table, counts)
    assert _observed(graph, config) == _observed(ref_graph, ref_config)
    # As another process reads them (the saver holds the encodings it wrote last).
    fresh = _chat(type(saver)(saver.conn))
    assert _observed(fresh, config) == _observed(ref_graph, ref_config)


def test_rows_stored_before_version_9_read_as_before(saver: Any) -> None:
    graph, config = _run(saver, "chat", 6)
    expected = _observed(graph, config)
    _unpack_all(saver)
    assert all(packed == 0 for packed, _ in _packed_counts(saver).values())
    fresh = _chat(type(saver)(saver.conn))
    assert _observed(fresh, config) == expected
    # The thread goes on from the plain rows: its new deltas extend the plain ones.
    graph.invoke(_resume("on"), config)
    assert _observed(_chat(type(saver)(saver.conn)), config)[0][0]["messages"][-2] == {
        "role": "user",
        "content": "on",
    }


def _resume(text: str) -> Any:
    return Command(resume=text)


def test_a_database_of_version_8_is_migrated(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    with SqliteSaver.from_conn_string(path) as saver:
        graph, config = _run(saver, "chat", 3)
        expected = _observed(graph, config)
        _unpack_all(saver)  # as version 8 stored them
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM pausepoint_migrations WHERE v >= 9")
    conn.commit()
    conn.close()
    with SqliteSaver.from_conn_string(path) as saver:
        rows = saver.conn.execute("SELECT max(v) FROM pausepoint_migrations").fetchall()
        assert rows == [(len(MIGRATIONS),)]
        assert len(MIGRATIONS) >= 9
        graph = _chat(saver)
        assert _observed(graph, config) == expected
        graph.invoke(_resume("after the upgrade"), config)
        assert len(graph.get_state(config).values["messages"]) == 8
        assert _packed_counts(saver)["pausepoint_checkpoints"][0] > 0


@pytest.mark.parametrize(("table", "column"), _CELLS, ids=["checkpoint", "write", "value row"])
@pytest.mark.parametrize("damage", ["truncated", "flipped", "too long"])
def test_damaged_deflated_rows_are_decode_errors_naming_the_thread(
    saver: Any, table: str, column: str, damage: str
) -> None:
    graph, config = _run(saver, "victim", 5)
    _run(saver, "bystander", 2)
    bomb = zlib.compressobj(6, zlib.DEFLATED, -15)
    long = PACKED + bomb.compress(b"[" + b"0," * PACK_BELOW + b"0]") + bomb.flush()
    for (cell,) in _execute(saver, f"SELECT {column} FROM {table} WHERE thread_id = 'victim'"):
        data = bytes(cell)
        if data[:4] != PACKED:
            continue
        if damage == "truncated":
            bad = data[: len(data) // 2]
        elif damage == "flipped":
            bad = data[:4] + bytes([data[4] ^ 0xFF]) + data[5:]
        else:
            bad = long
        where = f"thread_id = 'victim' AND {column} = ?"
        _execute(saver, f"UPDATE {table} SET {column} = ? WHERE {where}", (bad, data))
    saver._codec.chains = type(saver._codec.chains)()  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(CheckpointDecodeError, match="thread 'victim'"):
        list(graph.get_state_history(config))
    bystander = {"configurable": {"thread_id": "bystander"}}
    assert len(graph.get_state(bystander).values["messages"]) == 4


def test_a_sealing_saver_deflates_nothing_and_reads_deflated_rows(tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    from pausepoint.crypto import KeyRing, new_key

    path = str(tmp_path / "c.db")
    with SqliteSaver.from_conn_string(path) as plain:
        graph, config = _run(plain, "chat", 4)
        expected = _observed(graph, config)
    keys = KeyRing({"k1": new_key()}, allow_plaintext=True)
    with SqliteSaver.from_conn_string(path, encryption=keys) as sealed:
        assert _observed(_chat(sealed), config) == expected  # deflated, read by it
        _run(sealed, "secret", 3)
        for table, column in _CELLS:
            rows = _execute(sealed, f"SELECT {column} FROM {table} WHERE thread_id = 'secret'")
            assert rows, table
            assert all(bytes(cell)[:4] != PACKED for (cell,) in rows), table


def test_an_unchanged_value_is_deflated_once(saver: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from pausepoint.checkpoint import _sql_codec

    deflated: list[bytes] = []

    def counted(data: bytes) -> bytes:
        deflated.append(data)
        return pack(data)

    monkeypatch.setattr(_sql_codec, "pack", counted)
    graph, config = _run(saver, "chat", 1)
    notes = Serializer().dumps(TEXT * 8)  # a 4.8 KB value no step changes
    first = deflated.count(notes)  # its value row (and the input's write of it)
    for turn in range(4):
        graph.invoke(_resume(f"turn {turn}"), config)
    assert deflated.count(notes) == first
    stored = _execute(saver, "SELECT value FROM pausepoint_blobs WHERE channel = 'notes'")
    assert len(stored) == 1
    assert bytes(stored[0][0])[:4] == PACKED


@given(st.recursive(st.text() | st.integers(), lambda inner: st.lists(inner, max_size=8)))
def test_pack_round_trips_pausepoint_encodings(value: object) -> None:
    data = Serializer().dumps(value)
    stored = pack(data)
    assert unpack(stored, "a value") == data
    assert stored == data or (stored[:4] == PACKED and len(stored) < len(data))


def test_pack_leaves_large_framed_and_tiny_encodings_alone() -> None:
    large = b'"' + b"a" * PACK_BELOW + b'"'
    framed = Serializer().dumps(bytes(100_000))
    for data in (large, framed, b'"tiny"', PACKED + b"x" * 200):
        assert pack(data) == data
    assert pack(b'"' + b"a" * 500 + b'"')[:4] == PACKED
