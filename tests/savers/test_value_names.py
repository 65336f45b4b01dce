"""Value rows named by xxh3-64 of their encoding (schema version 11).

A row of ``pausepoint_blobs`` is named ``"<channel version>:<digest>"``; the digest was
xxh3-128 (32 hex digits) up to schema version 10 and is xxh3-64 (16) from 11 on, which
shortens the row's key, its index entry, the checkpoint's reference and every write
stored as a reference (issue 32's bytes a turn). Rows named before keep their names and
read as before, chains mixing both read whole, and a row whose bytes do not match its
name, either form, is a ``CheckpointDecodeError`` naming the thread.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from xxhash import xxh3_64_hexdigest, xxh3_128_hexdigest

from pausepoint import Command, InMemorySaver
from pausepoint.checkpoint import _sql_values
from pausepoint.checkpoint._dialect import MIGRATIONS
from pausepoint.checkpoint._packing import unpack
from pausepoint.checkpoint.postgres import PostgresSaver
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import CheckpointDecodeError

from .test_blobs import _chat, _execute, _observed, _run  # pyright: ignore[reportPrivateUsage]

NEW = re.compile(r"^\d+:[0-9a-f]{16}$")
OLD = re.compile(r"^\d+:[0-9a-f]{32}$")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A function opening a new saver (nothing held) on one database, each call."""
    opened: list[Any] = []
    if request.param == "sqlite":
        path = str(tmp_path / "names.db")

        def open_sqlite() -> Any:
            saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
            saver.setup()
            opened.append(saver.conn)
            return saver

        yield open_sqlite
    else:
        import psycopg

        url: str = request.getfixturevalue("pg_url")
        kwargs: dict[str, Any] = request.getfixturevalue("pg_kwargs")

        def open_postgres() -> Any:
            conn = psycopg.connect(url, **kwargs)
            opened.append(conn)
            saver = PostgresSaver(conn)
            saver.setup()
            return saver

        yield open_postgres
    for conn in opened:
        conn.close()


def _versions(saver: Any) -> list[str]:
    return [str(r[0]) for r in _execute(saver, "SELECT version FROM pausepoint_blobs")]


def _forget_migrations_from(saver: Any, version: int) -> None:
    _execute(saver, "DELETE FROM pausepoint_migrations WHERE v >= ?", (version,))


def _reference(turns: int, then: int = 0) -> list[Any]:
    graph, config = _run(InMemorySaver(), "chat", turns)
    for turn in range(then):
        graph.invoke(Command(resume=f"after {turn}"), config)
    return _observed(graph, config)


def test_new_rows_are_named_by_xxh3_64_and_read_back_cold(reopen: Any) -> None:
    saver = reopen()
    graph, config = _run(saver, "chat", 5)
    names = _versions(saver)
    assert names
    assert all(NEW.match(n) for n in names), names
    assert _observed(_chat(reopen()), config) == _reference(5)  # a new saver checks each
    full = _execute(
        saver, "SELECT version, value FROM pausepoint_blobs WHERE channel = 'notes'"
    )  # `notes` never changes: one full row, stored as it is (under 64 KiB: maybe deflated)
    (name, cell) = full[0]
    encoding = unpack(bytes(cell), "notes")
    assert name.rpartition(":")[2] == xxh3_64_hexdigest(encoding)
    del graph


def test_a_database_of_version_10_reads_as_before_and_goes_on(
    reopen: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:  # rows named as version 10 named them
        patch.setattr(_sql_values, "xxh3_64_hexdigest", xxh3_128_hexdigest)
        old = reopen()
        _run(old, "chat", 4)
        assert all(OLD.match(n) for n in _versions(old))
        _forget_migrations_from(old, 11)
    saver = reopen()  # migrates to the newest version: no table changes
    applied = _execute(saver, "SELECT max(v) FROM pausepoint_migrations")
    assert applied == [(len(MIGRATIONS),)]
    assert len(MIGRATIONS) >= 11
    graph = _chat(saver)
    config = {"configurable": {"thread_id": "chat"}, "recursion_limit": 10_000}
    assert _observed(graph, config) == _reference(4)
    for turn in range(3):
        graph.invoke(Command(resume=f"after {turn}"), config)
    names = _versions(saver)
    assert any(OLD.match(n) for n in names)
    assert any(NEW.match(n) for n in names)
    # A new delta extends a row named the old way: the chain mixes both forms.
    mixed = _execute(
        saver,
        "SELECT count(*) FROM pausepoint_blobs WHERE type = 'delta' AND length(version) < 30 "
        "AND length(base) > 30",
    )
    assert mixed[0][0] >= 1
    assert _observed(_chat(reopen()), config) == _reference(4, then=3)


@pytest.mark.parametrize("named", ["xxh3-64", "xxh3-128"])
def test_a_row_whose_bytes_do_not_match_its_name_is_a_decode_error(
    reopen: Any, monkeypatch: pytest.MonkeyPatch, named: str
) -> None:
    with monkeypatch.context() as patch:
        if named == "xxh3-128":
            patch.setattr(_sql_values, "xxh3_64_hexdigest", xxh3_128_hexdigest)
        saver = reopen()
        graph, config = _run(saver, "victim", 4)
        _run(saver, "bystander", 2)
    # One delta's letters changed, its length kept: the joined text still decodes.
    where = "thread_id = 'victim' AND channel = 'messages' AND type = 'delta'"
    (name, cell) = _execute(saver, f"SELECT version, value FROM pausepoint_blobs WHERE {where}")[0]
    damaged = bytes(cell).replace(b"a", b"b")
    assert damaged != bytes(cell)
    _execute(saver, "UPDATE pausepoint_blobs SET value = ? WHERE version = ?", (damaged, name))
    reader = _chat(reopen())
    with pytest.raises(CheckpointDecodeError, match=r"thread .victim.*does not match its digest"):
        list(reader.get_state_history(config))
    bystander = {"configurable": {"thread_id": "bystander"}}
    assert len(reader.get_state(bystander).values["messages"]) == 4
    del graph


def test_a_name_is_checked_by_its_length() -> None:
    blob = b'[{"role":"user","content":"hello"}]'
    named_by = _sql_values._named_by  # pyright: ignore[reportPrivateUsage]
    assert named_by(blob, xxh3_64_hexdigest(blob))
    assert named_by(blob, xxh3_128_hexdigest(blob))
    assert not named_by(blob, xxh3_64_hexdigest(blob + b" "))
    assert not named_by(blob, xxh3_128_hexdigest(blob + b" "))
    for other in ("", "0" * 8, xxh3_64_hexdigest(blob)[:15], xxh3_128_hexdigest(blob) + "0"):
        assert not named_by(blob, other)
