"""The index of waiting questions in the SQL savers: never out of date.

Checked against the truth (``get_state(config).interrupts`` of every thread) and
against the scan every saver inherits (``BaseCheckpointSaver``'s ``list_pending``):
after random sequences of asking, answering, ``update_state``, forking and
``delete_thread``; after a process is SIGKILLed at every saver write of a resume;
after a database saved before the index existed is migrated; with corrupt rows.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pausepoint import Command, InMemorySaver
from pausepoint.checkpoint._pending import newest_roots, page_of_heads
from pausepoint.checkpoint.compact import CompactingMemorySaver
from pausepoint.checkpoint.questions import PendingQuery, PendingQuestion
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import CheckpointDecodeError

sys.path.insert(0, str(Path(__file__).parent))
from pending_worker import build

WORKER = Path(__file__).with_name("pending_worker.py")
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``(where, schema)``: a SQLite file, or a PostgreSQL URL and a fresh schema."""
    if request.param == "sqlite":
        yield str(tmp_path / "p.db"), ""
    else:
        yield request.getfixturevalue("pg_url"), request.getfixturevalue("pg_schema")


def open_saver(where: str, schema: str) -> Any:
    if not schema:
        return SqliteSaver(sqlite3.connect(where, check_same_thread=False))
    import psycopg

    from pausepoint.checkpoint.postgres import PostgresSaver

    conn = psycopg.connect(where, autocommit=True, options=f"-c search_path={schema}")
    saver = PostgresSaver(conn)
    saver.setup()
    return saver


def close(saver: Any) -> None:
    saver.conn.close()


def cfg(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}, "metadata": {"graph_id": "fan"}}


def every(saver: Any, limit: int = 3) -> list[PendingQuestion]:
    """All pages of ``list_pending``, checking each page is free of errors."""
    out: list[PendingQuestion] = []
    cursor = None
    while True:
        page = saver.list_pending(limit=limit, cursor=cursor)
        assert page.errors == []
        out.extend(page.items)
        if (cursor := page.next_cursor) is None:
            return out


def scanned(saver: Any) -> list[PendingQuestion]:
    """What the scan-based default lists (the reference for every saver)."""
    page = page_of_heads(PendingQuery.of(limit=10_000), newest_roots(saver.list(None)))
    assert page.errors == []
    return page.items


def truth(saver: Any, threads: list[str]) -> set[tuple[str, str]]:
    graph = build(saver)
    return {(t, i.question_id) for t in threads for i in graph.get_state(cfg(t)).interrupts}


def keys(items: list[PendingQuestion]) -> set[tuple[str, str]]:
    return {(q.thread_id, q.question_id) for q in items}


def worker(
    where: str, schema: str, *args: str, pythonpath: Path = SRC
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "PENDING_SCHEMA": schema}
    cmd = [sys.executable, str(WORKER), where, *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_sigkill_at_every_write_of_a_resume(target: tuple[str, str]) -> None:
    where, schema = target
    assert worker(where, schema, "ask", "probe").returncode == 0
    probe = worker(where, schema, "count", "probe")
    assert probe.returncode == 0, probe.stderr
    writes = int(probe.stdout)
    assert writes >= 2
    threads = ["probe"]
    for n in range(1, writes + 1):
        thread = f"killed-{n}"
        threads.append(thread)
        assert worker(where, schema, "ask", thread).returncode == 0
        done = worker(where, schema, "answer", thread, str(n))
        assert done.returncode == -signal.SIGKILL, done.stderr
    saver = open_saver(where, schema)
    try:
        listed = every(saver)
        assert keys(listed) == truth(saver, threads)
        assert keys(listed) == keys(scanned(saver))
    finally:
        close(saver)


def _downgrade(saver: Any, schema: str) -> None:
    """Take the database back to schema version 3: as the code before the index left it."""
    names = ("pausepoint_pending_asked", "pausepoint_pending_moved", "pausepoint_pending_dropped")
    if schema:
        for name, table in zip(
            names, ("pausepoint_writes", "pausepoint_checkpoints", "pausepoint_writes"), strict=True
        ):
            saver.conn.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")  # type: ignore[arg-type]
            saver.conn.execute(f"DROP FUNCTION IF EXISTS {name}()")  # type: ignore[arg-type]
    else:  # (schema version 8 dropped some of them)
        for name in names:
            saver.conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    saver.conn.execute("DROP TABLE pausepoint_pending")
    saver.conn.execute("DELETE FROM pausepoint_migrations WHERE v >= 4")
    if not schema:
        saver.conn.commit()


def test_migration_backfills_threads_saved_before_the_index(target: tuple[str, str]) -> None:
    where, schema = target
    saver = open_saver(where, schema)
    graph = build(saver)
    threads = ["waiting", "half", "done", "gone"]
    for t in threads:
        graph.invoke({"x": 2}, cfg(t))
    for t, rounds in (("half", 1), ("done", 4)):
        for _ in range(rounds):
            (first, *_) = graph.get_state(cfg(t)).interrupts
            graph.invoke(Command(resume={first.question_id: 1}), cfg(t))
    saver.delete_thread("gone")
    expected = truth(saver, threads)
    assert len(expected) == 4  # waiting: 2; half: 2 (one at its second question); done: 0
    _downgrade(saver, schema)
    close(saver)
    migrated = open_saver(where, schema)
    try:
        assert keys(every(migrated)) == expected == keys(scanned(migrated))
    finally:
        close(migrated)


def test_a_database_written_by_the_code_before_the_index(tmp_path: Path) -> None:
    """A SQLite file written by pausepoint without the index (main's source, if here)."""
    old = Path("/work/main/src")
    if not (old / "pausepoint" / "checkpoint" / "_dialect.py").exists():
        pytest.skip("no checkout of the code before the index")
    if "PENDING_MIGRATION" in (old / "pausepoint" / "checkpoint" / "_dialect.py").read_text():
        pytest.skip("the checkout already has the index")
    where = str(tmp_path / "old.db")
    for t in ("a", "b"):
        made = worker(where, "", "ask", t, pythonpath=old)
        assert made.returncode == 0, made.stderr
    assert worker(where, "", "answer", "b", pythonpath=old).returncode == 0
    saver = open_saver(where, "")
    try:
        assert len(every(saver)) == 4
        assert keys(every(saver)) == truth(saver, ["a", "b"]) == keys(scanned(saver))
    finally:
        close(saver)


@pytest.fixture(params=["memory", "compact", "sqlite", "postgres"])
def any_saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
        return
    if request.param == "compact":
        yield CompactingMemorySaver()
        return
    where, schema = (
        (str(tmp_path / "p.db"), "")
        if request.param == "sqlite"
        else (request.getfixturevalue("pg_url"), request.getfixturevalue("pg_schema"))
    )
    saver = open_saver(where, schema)
    yield saver
    close(saver)


def _step(rng: random.Random, graph: Any, saver: Any, threads: list[str]) -> None:
    """One random operation on the threads: what an application or a person does."""
    op = rng.choice(["ask", "answer", "answer", "update", "fork", "delete", "continue"])
    if op == "ask" or not threads:
        threads.append(f"t{len(threads)}-{rng.randrange(1000)}")
        graph.invoke({"x": rng.randint(0, 3)}, cfg(threads[-1]))
        return
    thread = rng.choice(threads)
    waiting = graph.get_state(cfg(thread)).interrupts
    if op == "answer" and waiting:
        graph.invoke(Command(resume={rng.choice(waiting).question_id: 1}), cfg(thread))
    elif op == "update":
        graph.update_state(cfg(thread), {"got": [7]})
    elif op == "fork":
        history = list(graph.get_state_history(cfg(thread)))
        old = rng.choice(history)
        graph.update_state(old.config, {"got": [8]})
    elif op == "delete":
        saver.delete_thread(thread)
        threads.remove(thread)
    elif op == "continue" and not waiting:
        graph.invoke(None, cfg(thread))


@pytest.mark.parametrize("seed", range(3))
def test_random_sequences_match_the_scan_and_get_state(any_saver: Any, seed: int) -> None:
    rng = random.Random(seed)
    graph = build(any_saver)
    threads: list[str] = []
    for _ in range(25):
        _step(rng, graph, any_saver, threads)
        listed = every(any_saver, limit=rng.randint(1, 4))
        reference = scanned(any_saver)
        assert keys(listed) == keys(reference) == truth(any_saver, threads)
        assert [q.sort_key for q in listed] == sorted(q.sort_key for q in reference)
        assert listed == reference


def test_a_corrupt_row_is_reported_and_the_others_listed(tmp_path: Path) -> None:
    saver = open_saver(str(tmp_path / "p.db"), "")
    graph = build(saver)
    for t in ("good", "bad", "fine"):
        graph.invoke({"x": 1}, cfg(t))
    saver.conn.execute(
        "UPDATE pausepoint_writes SET value = X'00ff' WHERE thread_id = 'bad' AND idx = -3"
    )
    saver.conn.commit()
    page = saver.list_pending()
    assert {q.thread_id for q in page.items} == {"good", "fine"}
    (error,) = page.errors
    assert isinstance(error, CheckpointDecodeError)
    assert "'bad'" in str(error)
    close(saver)


def test_corrupt_rows_across_batches_are_each_reported_once(tmp_path: Path) -> None:
    saver = open_saver(str(tmp_path / "p.db"), "")
    graph = build(saver)
    for n in range(6):
        graph.invoke({"x": 1}, cfg(f"t{n}"))
    saver.conn.execute(
        "UPDATE pausepoint_writes SET value = X'00ff' WHERE thread_id IN ('t0', 't1', 't2')"
        " AND idx = -3"
    )
    saver.conn.commit()
    page = saver.list_pending(limit=1)
    assert [q.thread_id for q in page.items] == ["t3"]
    assert sorted(e.thread_id for e in page.errors) == ["t0", "t1", "t2"]
    rest = saver.list_pending(limit=5, cursor=page.next_cursor)
    assert [q.thread_id for q in rest.items] == ["t4", "t5"]
    assert rest.errors == []
    close(saver)


def _triggers(saver: Any, schema: str) -> set[str]:
    if schema:
        rows = saver.conn.execute(
            "SELECT tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s"
            " AND NOT t.tgisinternal",
            (schema,),
        ).fetchall()
    else:
        rows = saver.conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    return {str(r[0]) for r in rows}


def test_a_database_of_schema_7_keeps_its_index_when_migrated(
    target: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Schema 8 drops the index's per-row triggers: the saver keeps it from then on.

    Threads saved under schema 7 (the database keeping the index with triggers) are
    listed as before the migration, and asking and answering goes on right after it.
    """
    from pausepoint.checkpoint import _dialect

    where, schema = target
    full = _dialect.MIGRATIONS
    monkeypatch.setattr(_dialect, "MIGRATIONS", full[:7])
    old = open_saver(where, schema)
    assert len(_triggers(old, schema)) == 3
    graph = build(old)
    threads = ["waiting", "half", "done"]
    for t in threads:
        graph.invoke({"x": 2}, cfg(t))
    for t, rounds in (("half", 1), ("done", 4)):
        for _ in range(rounds):
            (first, *_) = graph.get_state(cfg(t)).interrupts
            graph.invoke(Command(resume={first.question_id: 1}), cfg(t))
    before = keys(every(old))
    assert before == truth(old, threads)
    assert len(before) == 4
    close(old)
    monkeypatch.setattr(_dialect, "MIGRATIONS", full)
    saver = open_saver(where, schema)
    try:
        assert _triggers(saver, schema) == (set() if schema else {"pausepoint_pending_moved"})
        assert keys(every(saver)) == before
        graph = build(saver)
        threads.append("new")
        graph.invoke({"x": 1}, cfg("new"))
        for t in ("waiting", "half"):
            (first, *_) = graph.get_state(cfg(t)).interrupts
            graph.invoke(Command(resume={first.question_id: 1}), cfg(t))
        assert keys(every(saver)) == truth(saver, threads) == keys(scanned(saver))
    finally:
        close(saver)


def test_copy_thread_and_prune_keep_the_index(target: tuple[str, str]) -> None:
    where, schema = target
    saver = open_saver(where, schema)
    try:
        graph = build(saver)
        graph.invoke({"x": 2}, cfg("src"))
        saver.copy_thread("src", "dst")
        assert keys(every(saver)) == truth(saver, ["src", "dst"]) == keys(scanned(saver))
        assert len(truth(saver, ["dst"])) == 2
        for _ in range(2):
            (first, *_) = graph.get_state(cfg("dst")).interrupts
            graph.invoke(Command(resume={first.question_id: 1}), cfg("dst"))
        saver.prune(["src", "dst"], keep_last=1, include_waiting=True)
        assert keys(every(saver)) == truth(saver, ["src", "dst"]) == keys(scanned(saver))
        rows = saver.conn.execute(
            "SELECT count(*) FROM pausepoint_pending p WHERE NOT EXISTS (SELECT 1"
            " FROM pausepoint_checkpoints c WHERE c.thread_id = p.thread_id"
            " AND c.checkpoint_ns = '' AND c.checkpoint_id = p.checkpoint_id)"
        ).fetchall()
        assert rows == [(0,)]  # no row outlives its checkpoint
    finally:
        close(saver)
