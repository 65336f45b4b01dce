"""What an encrypting saver leaves on disk, and what it refuses to read.

Real SQLite files and a real PostgreSQL database (``pg_dump``): the canary written as
state, a message, a question, an answer and a ``configurable`` secret never appears;
a ciphertext moved to another row fails to open, naming the thread, and the failed
reads change nothing; rows stored in clear are refused unless allowed.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.crypto import rows
from tests.crypto.conftest import KEY1
from tests.crypto.graphs import CANARY, config, pause, run

from pausepoint.checkpoint.memory import InMemorySaver
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.crypto import KeyRing
from pausepoint.errors import CheckpointDecodeError


def _stored(path: Path, ring: KeyRing | None) -> None:
    with SqliteSaver.from_conn_string(str(path), encryption=ring) as saver:
        run(saver, "t1")
        pause(saver, "t2")


def _read_everything(path: Path, ring: KeyRing | None) -> list[Exception]:
    """Every checkpoint of the file read by a fresh saver; the errors raised."""
    errors: list[Exception] = []
    with SqliteSaver.from_conn_string(str(path), encryption=ring) as saver:
        for thread, ns, cid in rows.checkpoint_keys(path):
            conf: Any = {
                "configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": cid}
            }
            try:
                saver.get_tuple(conf)
            except Exception as exc:
                errors.append(exc)
        try:
            list(saver.list(None))
        except Exception as exc:
            errors.append(exc)
    return errors


def test_the_canary_is_nowhere_in_the_sqlite_file(tmp_path: Path, ring: KeyRing) -> None:
    path = tmp_path / "c.db"
    with SqliteSaver.from_conn_string(str(path), encryption=ring) as saver:
        graph = run(saver, "t1")
        pause(saver, "t2")
        state = graph.get_state(config("t1"))
        assert state.values["text"] == f"{CANARY}-answered-{CANARY}-answer"
        assert state.metadata["user"] == f"{CANARY}-u"  # read back through the seal
        assert "api_key" not in state.metadata  # never stored, encrypted or not
        [question] = saver.list_pending().items
        assert question.value == {"question": f"approve {CANARY}-question?"}
        assert rows.database_bytes(path).count(CANARY.encode()) == 0
    assert rows.database_bytes(path).count(CANARY.encode()) == 0  # after the checkpoint of the WAL


def test_without_encryption_the_canary_is_there(tmp_path: Path) -> None:
    """The control: the same run without keys stores it in clear (but not the secret)."""
    path = tmp_path / "plain.db"
    _stored(path, None)
    data = rows.database_bytes(path)
    assert data.count(CANARY.encode()) > 0
    assert data.count(f"{CANARY}-secret".encode()) == 0


def test_only_the_queried_metadata_is_in_clear(tmp_path: Path, ring: KeyRing) -> None:
    path = tmp_path / "c.db"
    _stored(path, ring)
    import json

    for key in rows.keys(path, "pausepoint_checkpoints"):
        meta = json.loads(rows.read(path, "pausepoint_checkpoints", "metadata", key))
        assert set(meta) <= {"source", "step", "parents", "graph_id", "__pausepoint_sealed__"}
        assert "__pausepoint_sealed__" in meta
    with SqliteSaver.from_conn_string(str(path), encryption=ring) as saver:
        found = list(saver.list(None, filter={"user": f"{CANARY}-u", "source": "loop"}))
        assert found
        assert all(t.metadata["user"] == f"{CANARY}-u" for t in found)
        page = saver.list_pending(metadata={"user": f"{CANARY}-u"}, graph="approvals")
        assert [q.thread_id for q in page.items] == ["t2"]
        assert saver.list_pending(metadata={"user": "nobody"}).items == []


def _swaps(
    path: Path,
) -> list[tuple[tuple[str, str, tuple[Any, ...]], tuple[str, str, tuple[Any, ...]]]]:
    """Pairs of sealed cells to swap: within each column, and across tables and threads."""
    cells: list[tuple[str, str, tuple[Any, ...]]] = []
    for table, columns in rows.SEALED_COLUMNS.items():
        for column in columns:
            keys = rows.keys(path, table)
            by_thread = {k[0]: k for k in keys}  # one row of each thread
            same_thread = [k for k in keys if k[0] == "t1"][:2]
            picked = {*by_thread.values(), *same_thread}
            cells += [(table, column, k) for k in sorted(picked, key=repr)]
    pairs = []
    for a, b in itertools.combinations(cells, 2):
        if (a[1] == "metadata") != (b[1] == "metadata"):
            continue  # metadata is JSON text, the rest bytes: types differ
        pairs.append((a, b))
    return pairs


def test_a_ciphertext_moved_to_another_row_fails_and_changes_nothing(
    tmp_path: Path, ring: KeyRing
) -> None:
    original = tmp_path / "c.db"
    _stored(original, ring)
    pairs = _swaps(original)
    assert len(pairs) > 40
    tables = {p[0][0] for p in pairs} | {p[1][0] for p in pairs}
    assert tables == set(rows.SEALED_COLUMNS)
    for n, (a, b) in enumerate(pairs):
        path = tmp_path / f"swap{n}.db"
        shutil.copy(original, path)
        va, vb = rows.read(path, *a), rows.read(path, *b)
        if va == vb:
            continue
        rows.write(path, *a, vb)
        rows.write(path, *b, va)
        before = rows.snapshot(path)
        errors = _read_everything(path, ring)
        assert errors, f"swapping {a} and {b} went unnoticed"
        for exc in errors:
            assert isinstance(exc, CheckpointDecodeError), (a, b, exc)
            assert "thread 't1'" in str(exc) or "thread 't2'" in str(exc), str(exc)
        assert rows.snapshot(path) == before
        path.unlink()


def test_the_original_file_reads_back_whole(tmp_path: Path, ring: KeyRing) -> None:
    path = tmp_path / "c.db"
    _stored(path, ring)
    assert _read_everything(path, ring) == []


def test_a_ring_without_the_key_cannot_read(
    tmp_path: Path, ring: KeyRing, other_ring: KeyRing
) -> None:
    path = tmp_path / "c.db"
    _stored(path, ring)
    errors = _read_everything(path, other_ring)
    assert errors
    assert all(isinstance(e, CheckpointDecodeError) for e in errors)
    renamed = KeyRing({"k9": os.urandom(32)})
    errors = _read_everything(path, renamed)
    assert any("'k1', which is not in the ring" in str(e) for e in errors)


def test_a_saver_without_keys_says_the_rows_are_encrypted(tmp_path: Path, ring: KeyRing) -> None:
    path = tmp_path / "c.db"
    _stored(path, ring)
    before = rows.snapshot(path)
    errors = _read_everything(path, None)
    assert errors
    assert all(isinstance(e, CheckpointDecodeError) for e in errors)
    assert all("encrypted and this saver has no keys" in str(e) for e in errors)
    assert rows.snapshot(path) == before


def test_plaintext_rows_are_refused_unless_allowed(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"
    _stored(path, None)
    before = rows.snapshot(path)
    strict = KeyRing({"k1": bytes(32)})
    errors = _read_everything(path, strict)
    assert errors
    assert all(isinstance(e, CheckpointDecodeError) for e in errors)
    assert all("stored unencrypted" in str(e) for e in errors)
    assert any("thread 't1'" in str(e) for e in errors)
    assert rows.snapshot(path) == before
    migrating = KeyRing({"k1": bytes(32)}, allow_plaintext=True)
    assert _read_everything(path, migrating) == []
    with SqliteSaver.from_conn_string(str(path), encryption=migrating) as saver:
        graph = pause(saver, "t3")  # new rows are sealed, old ones still read
        assert graph.get_state(config("t1")).values["text"].startswith(CANARY)
    new = [k for k in rows.keys(path, "pausepoint_writes") if k[0] == "t3"]
    assert new
    assert all(
        bytes(rows.read(path, "pausepoint_writes", "value", k)).startswith(b"\x00pp\xe5")
        for k in new
    )


def test_the_memory_saver_binds_values_to_their_slots(ring: KeyRing) -> None:
    saver = InMemorySaver(encryption=ring)
    run(saver, "t1")
    threads: Any = saver._threads  # pyright: ignore[reportPrivateUsage]
    stored = threads["t1"][""]
    first, second = sorted(stored)[:2]
    a, b = stored[first], stored[second]
    stored[first], stored[second] = (
        type(a)(a.checkpoint, b.values, a.metadata, a.parent_id, a.writes),
        type(b)(b.checkpoint, a.values, b.metadata, b.parent_id, b.writes),
    )
    with pytest.raises(CheckpointDecodeError, match="thread 't1'"):
        saver.get_tuple(
            {"configurable": {"thread_id": "t1", "checkpoint_ns": "", "checkpoint_id": first}}
        )


def _pg_dump() -> str | None:
    found = shutil.which("pg_dump")
    if found:
        return found
    dumps = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_dump"))
    return dumps[-1] if dumps else None


@pytest.mark.postgres
def test_the_canary_is_nowhere_in_a_pg_dump(
    pg_url: str, pg_schema: str, pg_kwargs: dict[str, Any], ring: KeyRing
) -> None:
    import psycopg

    from pausepoint.checkpoint.postgres import PostgresSaver

    pg_dump = _pg_dump()
    assert pg_dump, "pg_dump not found (it comes with the server scripts/postgres.sh installs)"
    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn, encryption=ring)
        saver.setup()
        run(saver, "t1")
        pause(saver, "t2")
        assert saver.list_pending().items[0].value == {"question": f"approve {CANARY}-question?"}
        count = conn.execute("SELECT count(*) FROM pausepoint_blobs").fetchone()
        assert count is not None
        assert count[0] > 0
    dump = subprocess.run(
        [pg_dump, "--schema", pg_schema, "--data-only", pg_url],
        check=True,
        capture_output=True,
    ).stdout
    assert b"pausepoint_checkpoints" in dump
    assert dump.count(CANARY.encode()) == 0


@pytest.mark.postgres
def test_swapped_and_plaintext_rows_on_postgres(
    pg_url: str, pg_kwargs: dict[str, Any], ring: KeyRing
) -> None:
    import psycopg

    from pausepoint.checkpoint.postgres import PostgresSaver

    def dump(conn: Any) -> list[Any]:
        return [
            conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2, 3, 4").fetchall()
            for t in rows.SEALED_COLUMNS
        ]

    def read_all(saver: PostgresSaver) -> list[Exception]:
        errors: list[Exception] = []
        for thread in ("t1", "t2"):
            try:
                list(saver.list({"configurable": {"thread_id": thread}}))
            except Exception as exc:
                errors.append(exc)
        return errors

    swaps = [  # (table, column, key condition of a, of b)
        ("pausepoint_checkpoints", "checkpoint", "thread_id = 't1'", "thread_id = 't2'"),
        ("pausepoint_checkpoints", "metadata", "thread_id = 't1'", "thread_id = 't2'"),
        ("pausepoint_writes", "value", "thread_id = 't1' AND idx = -4", "thread_id = 't2'"),
        ("pausepoint_blobs", "value", "thread_id = 't1'", "thread_id = 't2'"),
    ]
    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn, encryption=ring)
        saver.setup()
        run(saver, "t1")
        pause(saver, "t2")
        assert read_all(saver) == []
        for table, column, a, b in swaps:
            cell = f"{column}::text" if column == "metadata" else column
            mark = "%s::jsonb" if column == "metadata" else "%s"
            keys = ", ".join(rows.KEYS[table])
            where = " AND ".join(f"{k} = %s" for k in rows.KEYS[table])
            pick = f"SELECT {keys}, {cell} FROM {table} WHERE {{}} LIMIT 1"
            ra = conn.execute(pick.format(a)).fetchone()
            rb = conn.execute(pick.format(b)).fetchone()
            assert ra is not None
            assert rb is not None
            update = f"UPDATE {table} SET {column} = {mark} WHERE {where}"

            def put(row: Any, value: Any, sql: str = update) -> None:
                conn.execute(sql, (value, *row[:-1]))

            with conn.transaction():
                put(ra, rb[-1])
                put(rb, ra[-1])
            before = dump(conn)
            errors = read_all(PostgresSaver(conn, encryption=ring))
            assert errors, f"swapping {table}.{column} went unnoticed"
            assert all(isinstance(e, CheckpointDecodeError) for e in errors)
            assert all("thread 't" in str(e) for e in errors)
            assert dump(conn) == before
            with conn.transaction():  # put them back
                put(ra, ra[-1])
                put(rb, rb[-1])
            assert read_all(saver) == []
        plain = PostgresSaver(conn)
        run(plain, "p1")
        with pytest.raises(CheckpointDecodeError, match="stored unencrypted"):
            saver.get_tuple({"configurable": {"thread_id": "p1"}})
        migrating = PostgresSaver(conn, encryption=KeyRing({"k1": KEY1}, allow_plaintext=True))
        tup = migrating.get_tuple({"configurable": {"thread_id": "p1"}})
        assert tup is not None
        with pytest.raises(CheckpointDecodeError, match="encrypted and this saver has no keys"):
            plain.get_tuple({"configurable": {"thread_id": "t1"}})
