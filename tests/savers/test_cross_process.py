"""Durability proofs with real processes: pause in one, resume in another; SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pausepoint.checkpoint.base import BaseCheckpointSaver

SCRIPT = str(Path(__file__).with_name("graph_process.py"))
CONFIG: Any = {"configurable": {"thread_id": "cross-process"}}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "graph.db")
    pg_url: str = request.getfixturevalue("pg_url")
    schema: str = request.getfixturevalue("pg_schema")
    return "postgres", f"{pg_url}?options=-csearch_path%3D{schema}"


def run(backend: tuple[str, str], phase: str, log: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, SCRIPT, *backend, phase, str(log)],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def executions(log: Path) -> list[str]:
    return sorted(log.read_text().split())


def test_pause_in_one_process_resume_in_another(backend: tuple[str, str], tmp_path: Path) -> None:
    log = tmp_path / "side.log"
    log.with_suffix(".go").touch()  # the slow branch does not wait
    paused = run(backend, "start", log)
    assert paused["interrupts"] == 1
    resumed = run(backend, "resume", log)
    assert resumed["interrupts"] == 0
    assert sorted(resumed["log"]) == ["ask:yes", "fast", "first", "slow"]
    # ask ran twice (paused, then resumed); nothing else was re-run.
    assert executions(log) == ["ask", "ask", "fast", "first", "slow"]


def _open(backend: tuple[str, str]) -> BaseCheckpointSaver:
    kind, dsn = backend
    if kind == "sqlite":
        import sqlite3

        from pausepoint.checkpoint.sqlite import SqliteSaver

        return SqliteSaver(sqlite3.connect(dsn, check_same_thread=False, isolation_level=None))
    import psycopg

    from pausepoint.checkpoint.postgres import PostgresSaver

    return PostgresSaver(psycopg.connect(dsn, autocommit=True, prepare_threshold=None))


def _wait_for_saved_write(saver: BaseCheckpointSaver, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the graph process ended before it could be killed"
        try:
            tup = saver.get_tuple(CONFIG)
        except Exception:  # the schema may not exist yet
            tup = None
        # "fast"'s own write, by value: "first" writes the same channel a step before.
        if tup is not None and any(w.value == ["fast"] for w in tup.pending_writes or []):
            return
        time.sleep(0.05)
    raise AssertionError("the fast branch's write was never saved")


def test_sigkill_mid_step_loses_no_finished_branch(
    backend: tuple[str, str], tmp_path: Path
) -> None:
    log = tmp_path / "side.log"
    proc = subprocess.Popen([sys.executable, SCRIPT, *backend, "start", str(log)])
    saver = _open(backend)
    try:
        # "fast" finished and its write is saved; "slow" is still running: kill now.
        _wait_for_saved_write(saver, proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        conn: Any = getattr(saver, "conn")  # noqa: B009
        conn.close()
    assert executions(log) == ["fast", "first", "slow"]
    log.with_suffix(".go").touch()
    paused = run(backend, "continue", log)
    assert paused["interrupts"] == 1
    resumed = run(backend, "resume", log)
    assert sorted(resumed["log"]) == ["ask:yes", "fast", "first", "slow"]
    # After the crash only the unfinished branch ran again; "fast" never did.
    assert executions(log) == ["ask", "ask", "fast", "first", "slow", "slow"]
