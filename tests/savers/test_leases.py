"""Lease specifics beyond the conformance suite: clocks, migration, SQL shape, flags."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pausepoint.checkpoint import _sql, _sql_leases
from pausepoint.checkpoint.base import BaseCheckpointSaver, TaskWrites
from pausepoint.checkpoint.memory import InMemorySaver
from pausepoint.checkpoint.postgres import AsyncPostgresSaver, PostgresSaver
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import LeaseLostError, PausepointError, StaleCheckpointError
from pausepoint.testing import (
    FaultySaver,
    InjectedFault,
    SaverConformance,
    make_checkpoint,
    make_metadata,
)

CONFIG: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


class TestSqliteWithoutReturning(SaverConformance):
    """SQLite before 3.35 has no RETURNING: the flows use a second statement instead."""

    @pytest.fixture
    def saver(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SqliteSaver]:
        monkeypatch.setattr(_sql, "SQLITE", dataclasses.replace(_sql.SQLITE, returning=False))
        with SqliteSaver.from_conn_string(str(tmp_path / "old.db")) as saver:
            yield saver


def test_which_savers_support_leases() -> None:
    assert InMemorySaver.supports_leases
    assert SqliteSaver.supports_leases
    assert PostgresSaver.supports_leases
    assert AsyncPostgresSaver.supports_leases
    assert not BaseCheckpointSaver.supports_leases
    assert issubclass(LeaseLostError, PausepointError)
    assert issubclass(StaleCheckpointError, PausepointError)


def test_faulty_saver_passes_leases_on_and_fails_them_on_demand() -> None:
    saver = FaultySaver(InMemorySaver(), fail_on="renew_lease")
    assert saver.supports_leases
    assert saver.acquire_lease("t", "A", 60).acquired
    config = saver.put(CONFIG, make_checkpoint(), make_metadata(0), {}, lease="A")
    with pytest.raises(LeaseLostError):
        saver.put_writes(config, [("a", 1)], "task-1", lease="B")
    with pytest.raises(InjectedFault, match="renew_lease"):
        saver.renew_lease("t", "A")
    assert saver.inner.get_lease("t") == saver.get_lease("t")
    assert not FaultySaver(_sql_free_saver()).supports_leases


def _sql_free_saver() -> BaseCheckpointSaver:
    class Plain(BaseCheckpointSaver):
        pass

    return Plain()


def test_sqlite_clock_is_a_constructor_keyword(tmp_path: Path) -> None:
    conn = sqlite3.connect(str(tmp_path / "c.db"), isolation_level=None)
    try:
        saver = SqliteSaver(conn, clock=lambda: 1000.0)
        claim = saver.acquire_lease("t", "A", 30)
        assert claim.holder.expires_at == 1030.0
        assert saver.get_lease("t") == claim.holder  # long gone by the system clock
        saver.lease_clock = lambda: 1030.0
        assert saver.get_lease("t") is None
        assert saver.acquire_lease("t", "B", 30).acquired
    finally:
        conn.close()


def test_a_schema_1_sqlite_file_is_migrated_and_keeps_its_checkpoints(tmp_path: Path) -> None:
    path = str(tmp_path / "v1.db")
    with SqliteSaver.from_conn_string(path) as saver:
        saver.put(CONFIG, make_checkpoint({"a": 1}), make_metadata(0), {})
        saver.conn.execute("DROP TABLE pausepoint_leases")  # as pausepoint's schema 1 left it
        saver.conn.execute("DELETE FROM pausepoint_migrations WHERE v >= 2")
    with SqliteSaver.from_conn_string(path) as saver:
        rows = saver.conn.execute("SELECT v FROM pausepoint_migrations ORDER BY v").fetchall()
        assert rows == [(1,), (2,), (3,), (4,)]
        got = saver.get_tuple(CONFIG)
        assert got is not None
        assert got.checkpoint["channel_values"] == {"a": 1}
        assert saver.acquire_lease("t", "A", 60).acquired


def test_a_schema_2_sqlite_file_keeps_its_held_leases(tmp_path: Path) -> None:
    path = str(tmp_path / "v2.db")
    with SqliteSaver.from_conn_string(path) as saver:
        held = saver.acquire_lease("t", "A", 600).holder
        saver.conn.execute("ALTER TABLE pausepoint_leases DROP COLUMN seq")  # as schema 2 had it
        saver.conn.execute("DELETE FROM pausepoint_migrations WHERE v >= 3")
    with SqliteSaver.from_conn_string(path) as saver:
        assert saver.get_lease("t") == held
        assert not saver.acquire_lease("t", "B", 60).acquired
        saver.put(CONFIG, make_checkpoint({"a": 1}), make_metadata(0), {}, lease="A")
        assert saver.release_lease("t", "A") is False
        assert saver.acquire_lease("t", "B", 60).acquired


@pytest.mark.postgres
def test_a_schema_2_postgres_database_keeps_its_held_leases(
    pg_url: str, pg_kwargs: dict[str, Any]
) -> None:
    import psycopg

    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        held = saver.acquire_lease("t", "A", 600).holder
        conn.execute("ALTER TABLE pausepoint_leases DROP COLUMN seq")
        conn.execute("DELETE FROM pausepoint_migrations WHERE v >= 3")
        saver.setup()
        assert saver.get_lease("t") == held
        claim = saver.acquire_lease("t", "B", 60, read=CONFIG)
        assert (claim.acquired, claim.read) == (False, False)
        saver.put(CONFIG, make_checkpoint({"a": 1}), make_metadata(0), {}, lease="A", release=True)
        claim = saver.acquire_lease("t", "B", 60, read=CONFIG)
        assert claim.checkpoint == saver.get_tuple(CONFIG) is not None


@pytest.mark.postgres
def test_postgres_leases_use_the_database_clock(pg_url: str, pg_kwargs: dict[str, Any]) -> None:
    import psycopg

    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        saver.lease_clock = lambda: 0.0  # not used: the database's clock rules

        def db_now() -> float:
            row = conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()
            assert row is not None
            return float(row[0])

        before = db_now()
        claim = saver.acquire_lease("t", "A", 30)
        after = db_now()
        assert before + 30 <= claim.holder.expires_at <= after + 30
        assert saver.get_lease("t") == claim.holder


@pytest.mark.postgres
def test_a_schema_1_postgres_database_is_migrated(pg_url: str, pg_kwargs: dict[str, Any]) -> None:
    import psycopg

    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        saver.put(CONFIG, make_checkpoint({"a": 1}), make_metadata(0), {})
        conn.execute("DROP TABLE pausepoint_leases")
        conn.execute("DELETE FROM pausepoint_migrations WHERE v >= 2")
        saver.setup()
        assert conn.execute("SELECT v FROM pausepoint_migrations ORDER BY v").fetchall() == [
            (1,),
            (2,),
            (3,),
            (4,),
        ]
        assert saver.get_tuple(CONFIG) is not None
        assert saver.acquire_lease("t", "A", 60).acquired


@pytest.mark.postgres
def test_guarded_writes_are_one_statement_on_postgres(
    pg_url: str, pg_kwargs: dict[str, Any]
) -> None:
    """A fenced (or head-conditional) write costs no extra round trip over an unguarded one."""
    import psycopg

    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        root = saver.put(CONFIG, make_checkpoint(), make_metadata(0), {})
        saver.acquire_lease("t", "A", 60)
        codec = _sql.SqlCodec(None)
        executed: list[str] = []

        def execute(stmt: _sql.Statement) -> _sql.Rows:
            executed.append(stmt.sql)
            cur = conn.execute(stmt.sql, stmt.params)  # type: ignore[arg-type]
            return cur.fetchall() if stmt.fetch else []

        def count(flow: Any) -> int:
            del executed[:]
            _sql.drive(flow, execute)
            return len(executed)

        pg, steps = _sql.POSTGRES, [TaskWrites("task-1", [("a", 1), ("b", 2)])]
        for guard in (None, _sql_leases.guard_of(root, "A", False, None)):
            assert (
                count(_sql.put_flow(pg, codec, root, make_checkpoint(), make_metadata(1), guard))
                == 1
            )
            writes = _sql.put_writes_flow(
                pg, codec, root, [("c", 3)], task_id="t2", task_path="", guard=guard
            )
            assert count(writes) == 1
            after = _sql.put_after_writes_flow(
                pg, codec, root, steps, make_checkpoint(), make_metadata(1), guard=guard
            )
            assert count(after) == 1
        head = saver.put(root, make_checkpoint(), make_metadata(2), {})
        both = _sql_leases.guard_of(head, "A", True, None)
        answer = _sql.put_writes_flow(
            pg, codec, head, [("d", 4)], task_id="t3", task_path="", guard=both
        )
        assert count(answer) == 1
        got = saver.get_tuple(head)
        assert got is not None
        assert [w.value for w in got.pending_writes or []] == [4]
