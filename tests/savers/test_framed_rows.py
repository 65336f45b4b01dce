"""Schema version 12: a large bytes value is stored once, in a framed value row (issue 35).

A node returning a file's bytes wrote them twice: its pending write (framed,
``ppjson+blobs/1``) and the checkpoint after the step, which held the value framed
inside its own row. Now the value is a row of ``pausepoint_blobs`` of type ``FRAMED``
(a full value, never a delta), the checkpoint references it, and the write is a
reference to it (``_write_refs``). On SQLite and PostgreSQL: the bytes are stored
once; state, history, pending writes and a resume read back as on ``InMemorySaver``,
through a saver holding nothing; a database of version 11 reads as before and goes
on; a damaged or missing row is a ``CheckpointDecodeError`` naming the thread; prune,
copy and rekey keep the row readable and delete it only when nothing references it.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any, TypedDict

import pytest
from tests.savers.blob_rows import dangling, orphans
from tests.savers.test_blobs import _observed  # pyright: ignore[reportPrivateUsage]
from tests.savers.test_write_refs import (
    _cell,  # pyright: ignore[reportPrivateUsage]
    _forget,  # pyright: ignore[reportPrivateUsage]
    _references,  # pyright: ignore[reportPrivateUsage]
    _writes,  # pyright: ignore[reportPrivateUsage]
)

from pausepoint import END, START, Command, InMemorySaver, StateGraph, interrupt
from pausepoint.checkpoint import _sql, _sql_values
from pausepoint.checkpoint._dialect import MIGRATIONS
from pausepoint.checkpoint._sql_prune import collect_unreferenced_flow
from pausepoint.checkpoint.postgres import PostgresSaver
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import CheckpointDecodeError
from pausepoint.serde import FORMAT, FRAMED, Serializer

from .blob_rows import execute
from .test_packing import saver

__all__ = ["saver"]  # the fixture: a SQLite file's or PostgreSQL's saver per test

FILE = random.Random(7).randbytes(200_000)
"""A file's bytes (random: nothing compresses them)."""
OTHER = random.Random(8).randbytes(150_000)
"""Another file, which replaces the first after the question."""


class Doc(TypedDict, total=False):
    name: str
    data: bytes
    answer: str


def _graph(saver: Any) -> Any:
    def attach(state: Doc) -> Doc:
        return {"data": FILE}

    def ask(state: Doc) -> Doc:
        return {"answer": interrupt("keep it?")}

    def swap(state: Doc) -> Doc:
        return {"data": OTHER}

    b = StateGraph(Doc)
    b.add_node("attach", attach)
    b.add_node("ask", ask)
    b.add_node("swap", swap)
    b.add_edge(START, "attach")
    b.add_edge("attach", "ask")
    b.add_edge("ask", "swap")
    b.add_edge("swap", END)
    return b.compile(checkpointer=saver)


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def _start(saver: Any, thread: str) -> Any:
    """The graph, run to its question."""
    graph = _graph(saver)
    graph.invoke({"name": "scan.bin"}, _config(thread))
    return graph


def _finish(graph: Any, thread: str) -> Any:
    return graph.invoke(Command(resume="yes"), _config(thread))


def _stored_bytes(saver: Any, thread: str) -> int:
    """Bytes of every cell the thread's rows hold (checkpoints, writes, value rows)."""
    total = 0
    for table, column in (
        ("pausepoint_checkpoints", "checkpoint"),
        ("pausepoint_writes", "value"),
        ("pausepoint_blobs", "value"),
    ):
        rows = execute(
            saver, f"SELECT sum(length({column})) FROM {table} WHERE thread_id = ?", (thread,)
        )
        total += int(rows[0][0] or 0)
    return total


def _framed_rows(saver: Any, thread: str) -> list[tuple[str, str]]:
    """The thread's framed value rows: (channel, version)."""
    rows = execute(
        saver,
        "SELECT channel, version FROM pausepoint_blobs WHERE thread_id = ? AND type = ?"
        " ORDER BY version",
        (thread, FRAMED),
    )
    return [(str(r[0]), str(r[1])) for r in rows]


def _fresh(saver: Any) -> Any:
    """Another saver object on the same database: nothing held of what was written."""
    return SqliteSaver(saver.conn) if isinstance(saver, SqliteSaver) else PostgresSaver(saver.conn)


def _everything(saver: Any, thread: str) -> Any:
    """What a reader sees of the thread: its history and every checkpoint's writes."""
    graph = _graph(saver)
    return _observed(graph, _config(thread)), _writes(saver, _config(thread))


def test_a_large_bytes_value_is_stored_once_and_reads_back(saver: Any) -> None:
    graph = _start(saver, "doc")
    reference = _start(InMemorySaver(), "doc")
    assert _stored_bytes(saver, "doc") < 1.1 * len(FILE)  # once, not twice
    assert [c for c, _ in _framed_rows(saver, "doc")] == ["data"]
    (ref,) = [r for r in _references(saver, "doc") if r[3] == "data"]
    whole = len(Serializer().dumps(FILE))
    assert _cell(ref[4]).split(" ")[1:4] == [str(whole), "0", "-"]  # the whole encoding
    kinds = execute(saver, "SELECT DISTINCT type FROM pausepoint_checkpoints")
    assert kinds == [(FORMAT,)]  # no checkpoint framed: each references the value
    expected = _everything(reference.checkpointer, "doc")
    assert _everything(saver, "doc") == expected
    _forget(saver)
    assert _everything(saver, "doc") == expected
    assert _everything(_fresh(saver), "doc") == expected
    assert _finish(graph, "doc") == _finish(reference, "doc")
    assert _stored_bytes(saver, "doc") < 1.1 * (len(FILE) + len(OTHER))
    assert [c for c, _ in _framed_rows(saver, "doc")] == ["data", "data"]
    expected = _everything(reference.checkpointer, "doc")
    assert _everything(saver, "doc") == expected
    assert _everything(_fresh(saver), "doc") == expected
    assert orphans(saver, "doc") == set()
    assert dangling(saver, "doc") == set()


def test_a_database_of_version_11_reads_as_before_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "old.db")
    movable = _sql_values._movable  # pyright: ignore[reportPrivateUsage]

    def kept_in_checkpoint(channel: str, value: object) -> bool:
        return not isinstance(value, bytes) and movable(channel, value)

    with monkeypatch.context() as patch:  # bytes kept in the checkpoint, as version 11 did
        patch.setattr(_sql_values, "_movable", kept_in_checkpoint)
        with SqliteSaver.from_conn_string(path) as saver:
            _start(saver, "doc")
            kinds = execute(saver, "SELECT type FROM pausepoint_checkpoints")
            assert (FRAMED,) in kinds  # the file inside a checkpoint row
            assert _framed_rows(saver, "doc") == []
            old = _everything(saver, "doc")
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM pausepoint_migrations WHERE v >= 12")
    conn.commit()
    conn.close()
    reference = _start(InMemorySaver(), "doc")
    with SqliteSaver.from_conn_string(path) as saver:
        applied = saver.conn.execute("SELECT max(v) FROM pausepoint_migrations").fetchall()
        assert applied == [(len(MIGRATIONS),)]
        assert len(MIGRATIONS) >= 12
        assert _everything(saver, "doc") == old
        assert old == _everything(reference.checkpointer, "doc")
        assert _finish(_graph(saver), "doc") == _finish(reference, "doc")
        assert len(_framed_rows(saver, "doc")) == 2  # the kept file's row, and the new one
        _forget(saver)
        assert _everything(saver, "doc") == _everything(reference.checkpointer, "doc")


@pytest.mark.parametrize("damage", ["missing", "digest", "type"])
def test_a_damaged_framed_row_is_a_decode_error_naming_the_thread(saver: Any, damage: str) -> None:
    _start(saver, "victim")
    _start(saver, "bystander")
    expected = _everything(saver, "bystander")
    ((channel, version),) = _framed_rows(saver, "victim")
    where = "thread_id = 'victim' AND channel = ? AND version = ?"
    if damage == "missing":
        execute(saver, f"DELETE FROM pausepoint_blobs WHERE {where}", (channel, version))
    elif damage == "digest":
        ((cell,),) = execute(
            saver, f"SELECT value FROM pausepoint_blobs WHERE {where}", (channel, version)
        )
        flipped = bytes(cell)[:-1] + bytes([bytes(cell)[-1] ^ 1])
        execute(
            saver,
            f"UPDATE pausepoint_blobs SET value = ? WHERE {where}",
            (flipped, channel, version),
        )
    else:
        execute(
            saver, f"UPDATE pausepoint_blobs SET type = ? WHERE {where}", (FORMAT, channel, version)
        )
    for reader in (saver, _fresh(saver)):
        _forget(reader)
        with pytest.raises(CheckpointDecodeError, match="thread 'victim'"):
            _graph(reader).get_state(_config("victim"))
        with pytest.raises(CheckpointDecodeError, match="thread 'victim'"):
            _writes(reader, _config("victim"))
        assert _everything(reader, "bystander") == expected


def _collect(saver: Any, thread: str) -> int:
    dialect = _sql.SQLITE if isinstance(saver, SqliteSaver) else _sql.POSTGRES
    codec = saver._codec  # pyright: ignore[reportPrivateUsage]
    return saver._run(collect_unreferenced_flow(dialect, codec, thread), write=True)  # pyright: ignore[reportPrivateUsage]


def test_prune_keeps_a_framed_row_while_something_references_it(saver: Any) -> None:
    _finish(_start(saver, "doc"), "doc")
    first, second = _framed_rows(saver, "doc")
    (ref,) = [
        r
        for r in _references(saver, "doc")
        if r[3] == "data" and _cell(r[4]).startswith(first[1] + " ")
    ]
    cid = ref[0]  # the checkpoint holding the node's write of the first file
    at = {"configurable": {"thread_id": "doc", "checkpoint_ns": "", "checkpoint_id": cid}}
    expected = [(w.channel, w.value) for w in saver.get_tuple(at).pending_writes]
    assert ("data", FILE) in expected
    # Every checkpoint holding the first file goes: only the write references its row.
    execute(
        saver,
        "DELETE FROM pausepoint_checkpoints WHERE thread_id = 'doc'"
        " AND checkpoint_id > ? AND checkpoint_id < (SELECT max(checkpoint_id)"
        " FROM pausepoint_checkpoints WHERE thread_id = 'doc')",
        (cid,),
    )
    assert _collect(saver, "doc") == 0
    assert _framed_rows(saver, "doc") == [first, second]
    _forget(saver)
    assert [(w.channel, w.value) for w in saver.get_tuple(at).pending_writes] == expected
    # The write's checkpoint goes too: nothing references the first file's row.
    execute(
        saver,
        "DELETE FROM pausepoint_writes WHERE thread_id = 'doc' AND checkpoint_id = ?",
        (cid,),
    )
    execute(
        saver,
        "DELETE FROM pausepoint_checkpoints WHERE thread_id = 'doc' AND checkpoint_id = ?",
        (cid,),
    )
    assert _collect(saver, "doc") == 1
    assert _framed_rows(saver, "doc") == [second]
    assert orphans(saver, "doc") == set()
    assert dangling(saver, "doc") == set()
    _forget(saver)
    assert _graph(saver).get_state(_config("doc")).values["data"] == OTHER


def test_copy_and_delete_keep_the_framed_rows_readable(saver: Any) -> None:
    _finish(_start(saver, "src"), "src")
    expected = _everything(saver, "src")
    saver.copy_thread("src", "dst")
    saver.delete_thread("src")
    assert execute(saver, "SELECT count(*) FROM pausepoint_blobs WHERE thread_id = 'src'") == [(0,)]
    assert len(_framed_rows(saver, "dst")) == 2
    _forget(saver)
    assert _everything(saver, "dst") == expected
    assert orphans(saver, "dst") == set()
    assert dangling(saver, "dst") == set()


def test_sealed_framed_rows_copy_and_rekey(tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    from tests.crypto.conftest import KEY1, KEY2

    from pausepoint.crypto import KeyRing

    path = str(tmp_path / "s.db")
    reference = _start(InMemorySaver(), "doc")
    _finish(reference, "doc")
    expected = _everything(reference.checkpointer, "doc")
    with SqliteSaver.from_conn_string(path, encryption=KeyRing({"k1": KEY1})) as saver:
        _finish(_start(saver, "doc"), "doc")
        assert _stored_bytes(saver, "doc") < 1.1 * (len(FILE) + len(OTHER))
        cells = execute(saver, "SELECT value FROM pausepoint_blobs WHERE type = ?", (FRAMED,))
        assert len(cells) == 2
        assert all(bytes(c[0])[:4] == b"\x00pp\xe5" for c in cells)  # sealed
        assert all(FILE[:64] not in bytes(c[0]) for c in cells)
        saver.copy_thread("doc", "copy")
        _forget(saver)
        assert _everything(saver, "doc") == expected
        assert _everything(saver, "copy") == expected
    rotated_ring = KeyRing({"k2": KEY2, "k1": KEY1})
    with SqliteSaver.from_conn_string(path, encryption=rotated_ring) as rotated:
        report = rotated.rekey()
        assert report.errors == []
        assert report.resealed > 0
    with SqliteSaver.from_conn_string(path, encryption=KeyRing({"k2": KEY2})) as only_new:
        assert _everything(only_new, "doc") == expected
        assert _everything(only_new, "copy") == expected


@pytest.mark.parametrize("dialect", [_sql.SQLITE, _sql.POSTGRES], ids=["sqlite", "postgres"])
def test_a_framed_value_is_never_a_delta_nor_the_base_of_one(dialect: Any) -> None:
    """Whatever its bytes: a framed row is decoded whole, by its type (no join)."""
    codec = _sql.SqlCodec(None)
    key = ("t", "", "data")
    small = b"\x00pp\x01" + b"x" * 5000 + b"]"  # bytes that "extend", unlike real frames
    grown = small[:-1] + b"y" * 100 + small[-1:]
    json_grown = b"[" + b"1," * 3000 + b"2]"
    for first, second, kinds in (
        (small, grown, (FRAMED, FRAMED)),
        (b"[" + b"1," * 2900 + b"2]", grown, (FORMAT, FRAMED)),
        (small, json_grown, (FRAMED, FORMAT)),
    ):
        codec.chains = _sql_values.Chains()
        for n, (blob, kind) in enumerate(zip((first, second), kinds, strict=True)):
            made, at = _sql_values._store(codec, dialect, key, f"{n}:{n}", blob, kind)  # pyright: ignore[reportPrivateUsage]
            assert at is None  # a full row each time
            (statement,) = made
            assert not isinstance(statement, _sql_values.Unless)
            assert statement.params[4] == kind
