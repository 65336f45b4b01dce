"""Retention with large values stored apart (issue 32): prune, copy and delete threads.

The SQL savers store a large value once per version in ``pausepoint_blobs``, its appends
as deltas (``_sql_values``), shared by the checkpoints that reference it. Pruning,
copying or deleting a thread must keep every kept checkpoint exactly as it read, leave
no value row that no checkpoint needs (`blob_rows.orphans`, read with plain SQL) and
none missing (`blob_rows.dangling`): on real SQLite and PostgreSQL, in a Hypothesis
state machine, and with the pruning process killed (SIGKILL) mid-way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import invariant
from tests.savers.blob_rows import dangling, execute, orphans, stored
from tests.savers.test_blobs import _chat, _observed, _run  # pyright: ignore[reportPrivateUsage]
from tests.savers.test_prune import PruneMachine, SqlitePruneMachine

from pausepoint import Command
from pausepoint.checkpoint.postgres import PostgresSaver
from pausepoint.checkpoint.sqlite import SqliteSaver

HERE = Path(__file__).parent


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp_path / "r.db")) as opened:
            yield opened
        return
    import psycopg

    kwargs = request.getfixturevalue("pg_kwargs")
    with psycopg.connect(request.getfixturevalue("pg_url"), **kwargs) as conn:
        opened = PostgresSaver(conn)
        opened.setup()
        yield opened


def _clean(saver: Any, thread: str) -> None:
    assert orphans(saver, thread) == set()
    assert dangling(saver, thread) == set()


@pytest.mark.parametrize("batch_size", [1, 500])
def test_prune_keeps_what_kept_checkpoints_read_and_no_other_value_row(
    saver: Any, batch_size: int
) -> None:
    graph, config = _run(saver, "chat", 20)
    _run(saver, "other", 3)
    history = _observed(graph, config)
    rows, others = stored(saver, "chat"), stored(saver, "other")
    report = saver.prune(["chat"], keep_last=5, include_waiting=True, batch_size=batch_size)
    assert report.threads[0].action == "truncated"
    assert _observed(graph, config) == history[:5]
    _clean(saver, "chat")
    assert len(stored(saver, "chat")) < len(rows)
    assert stored(saver, "other") == others  # another thread's rows are not touched
    again = saver.prune(["chat"], keep_last=5, include_waiting=True)
    assert again.threads[0].action == "kept"  # idempotent
    graph.invoke(Command(resume="after the prune"), config)
    messages = graph.get_state(config).values["messages"]
    assert messages[-2]["content"] == "after the prune"
    assert len(messages) == 42
    _clean(saver, "chat")
    saver.prune(["chat"], keep_last=1, include_waiting=True)
    assert _observed(graph, config) == _observed(graph, config)[:1]
    _clean(saver, "chat")
    assert len(graph.get_state(config).values["messages"]) == 42


def test_prune_keeps_the_chains_of_forks(saver: Any) -> None:
    graph, config = _run(saver, "chat", 10)
    history = list(graph.get_state_history(config))
    old = history[6].config  # a fork from an old checkpoint: a second chain of deltas
    forked = graph.update_state(old, {"messages": [{"role": "user", "content": "fork " * 300}]})
    graph.invoke(None, forked)  # on to the fork's question
    graph.invoke(Command(resume="on the fork"), config)
    before = _observed(graph, config)
    saver.prune(["chat"], keep_last=3, include_waiting=True)
    assert _observed(graph, config) == before[:3]
    _clean(saver, "chat")


def test_copy_thread_copies_the_value_rows(saver: Any) -> None:
    graph, config = _run(saver, "src", 8)
    target = {**config, "configurable": {"thread_id": "dst"}}
    history = _observed(graph, config)
    saver.copy_thread("src", "dst")
    assert stored(saver, "dst") == stored(saver, "src")
    _clean(saver, "dst")
    saver.delete_thread("src")
    assert stored(saver, "src") == {}
    assert _observed(graph, target) == history  # nothing referenced the source's rows
    graph.invoke(Command(resume="on the copy"), target)
    assert graph.get_state(target).values["messages"][-2]["content"] == "on the copy"
    saver.prune(["dst"], keep_last=2, include_waiting=True)
    _clean(saver, "dst")


def test_delete_thread_removes_every_row_of_the_thread(saver: Any) -> None:
    _run(saver, "gone", 4)
    _run(saver, "stays", 2)
    assert stored(saver, "gone")
    saver.delete_thread("gone")
    if isinstance(saver, SqliteSaver):
        sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
    else:
        sql = (
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
    tables = [
        str(r[0])
        for r in execute(saver, sql)
        if str(r[0]).startswith("pausepoint_") and r[0] != "pausepoint_migrations"
    ]
    assert "pausepoint_blobs" in tables
    for table in tables:
        gone = execute(saver, f"SELECT count(*) FROM {table} WHERE thread_id = ?", ("gone",))
        assert gone == [(0,)], table
    _clean(saver, "stays")
    stays = _chat(saver).get_state({"configurable": {"thread_id": "stays"}})
    assert len(stays.values["messages"]) == 4


def test_an_undecodable_checkpoint_keeps_every_value_row(saver: Any) -> None:
    graph, config = _run(saver, "chat", 8)
    history = list(graph.get_state_history(config))
    kept = history[2].config["configurable"]["checkpoint_id"]  # kept by keep_last=4
    execute(
        saver,
        "UPDATE pausepoint_checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
        (b'{"refs": [', kept),
    )
    rows = stored(saver, "chat")
    report = saver.prune(["chat"], keep_last=4, include_waiting=True)
    assert report.threads[0].action == "truncated"
    assert stored(saver, "chat") == rows  # what the damaged one needs is unknown: all stay
    assert len(graph.get_state(config).values["messages"]) == 16


def test_thread_size_counts_the_value_rows(saver: Any) -> None:
    _run(saver, "t", 6)
    values = execute(saver, "SELECT count(*) FROM pausepoint_blobs WHERE thread_id = 't'")
    assert values[0][0] > 0
    size = saver.thread_size("t")
    blobs = execute(
        saver,
        "SELECT sum(length(value)) FROM pausepoint_blobs WHERE thread_id = 't'"
        if isinstance(saver, SqliteSaver)
        else "SELECT sum(pg_column_size(value)) FROM pausepoint_blobs WHERE thread_id = 't'",
    )
    assert size.bytes > int(blobs[0][0])


# --- the state machine, with large values ---------------------------------------------------


class _NoOrphans(PruneMachine):
    pad = 2500  # two log entries pass 4 KiB: the log is stored apart, appends as deltas

    @invariant()
    def value_rows_are_exactly_those_needed(self) -> None:
        for thread in ("t", "r"):
            assert orphans(self.saver, thread) == set()
            assert dangling(self.saver, thread) == set()


class SqliteBlobPruneMachine(_NoOrphans, SqlitePruneMachine):
    pass


class PostgresBlobPruneMachine(_NoOrphans):
    """The same on PostgreSQL: a schema of its own per example."""

    @staticmethod
    def make_saver() -> Any:
        import psycopg

        schema = f"pp_machine_{uuid.uuid4().hex[:12]}"
        url = os.environ["PAUSEPOINT_PG_URL"]
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
        conn = psycopg.connect(url, autocommit=True, options=f"-c search_path={schema}")
        saver = PostgresSaver(conn)
        saver.setup()
        return saver

    def teardown(self) -> None:
        conn: Any = self.saver.conn
        schema = conn.execute("SELECT current_schema()").fetchone()[0]
        conn.close()
        import psycopg

        with psycopg.connect(os.environ["PAUSEPOINT_PG_URL"], autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


TestBlobPruneSqlite = SqliteBlobPruneMachine.TestCase
TestBlobPruneSqlite.settings = settings(
    max_examples=10,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestBlobPrunePostgres = pytest.mark.postgres(PostgresBlobPruneMachine.TestCase)
TestBlobPrunePostgres.settings = settings(
    max_examples=6,
    stateful_step_count=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# --- kill -9 --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_kill_9_during_a_prune_of_large_values_then_rerun(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if kind == "sqlite":
        db = str(tmp_path / "k.db")
    else:
        url: str = request.getfixturevalue("pg_url")
        schema: str = request.getfixturevalue("pg_schema")
        db = f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"
    script = str(HERE / "prune_process.py")
    root = HERE.parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    subprocess.run([sys.executable, script, "make", db, "24", "1500"], check=True, env=env)
    for delay in (0.3, 0.6, 0.9, 1.2):
        proc = subprocess.Popen([sys.executable, script, "prune", db], env=env)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    done = subprocess.run(
        [sys.executable, script, "check", db], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all 24 threads resumed" in done.stdout
