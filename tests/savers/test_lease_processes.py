"""Leases across real processes: one winner per race, and fencing keeps history linear.

Eight worker processes (spawned, each with its own connection) race on one thread,
on a SQLite file and on the PostgreSQL server.
"""

from __future__ import annotations

import itertools
import multiprocessing
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pausepoint.testing import make_checkpoint, make_metadata

from .lease_race import CONFIG, open_saver, race_acquire, race_writes

WORKERS = 8


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    if request.param == "sqlite":
        dsn = str(tmp_path / "race.db")
    else:
        pg_url: str = request.getfixturevalue("pg_url")
        schema: str = request.getfixturevalue("pg_schema")
        dsn = f"{pg_url}?options=-csearch_path%3D{schema}"
    saver: Any = open_saver(request.param, dsn)
    if request.param == "postgres":
        saver.setup()
    saver.conn.close()
    return request.param, dsn


def _run_workers(target: Any, *args: Any) -> list[Any]:
    """Run ``target(*args, n, ..., barrier, results)`` in WORKERS processes; their reports."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=target, args=(*args[:2], n, *args[2:], barrier, results))
        for n in range(WORKERS)
    ]
    for proc in procs:
        proc.start()
    reports: list[Any] = []
    try:
        for proc in procs:
            proc.join(timeout=300)
        assert [proc.exitcode for proc in procs] == [0] * WORKERS
        while not results.empty():
            reports.append(results.get(timeout=10))
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
    return reports


def test_racing_acquires_have_exactly_one_winner(backend: tuple[str, str]) -> None:
    rounds = 20
    reports = _run_workers(race_acquire, *backend, rounds)
    assert len(reports) == rounds * WORKERS
    for r in range(rounds):
        claims = [report for report in reports if report[0] == r]
        winners = [f"w{n}" for _, n, acquired, _, _ in claims if acquired]
        assert len(winners) == 1, f"round {r}: {winners}"
        assert {(holder, expires) for *_, holder, expires in claims} == {(winners[0], claims[0][4])}


def test_racing_fenced_writers_keep_one_linear_history(backend: tuple[str, str]) -> None:
    kind, dsn = backend
    saver: Any = open_saver(kind, dsn)
    try:
        _check_linear_history(saver, kind, dsn)
    finally:
        saver.conn.close()


def _check_linear_history(saver: Any, kind: str, dsn: str) -> None:
    root = saver.put(CONFIG, make_checkpoint({"n": 0, "by": None}), make_metadata(0), {})
    target = 24
    reports = _run_workers(race_writes, kind, dsn, target, 0.2)
    assert sum(wrote for _, wrote, _ in reports) == target
    assert sum(lost for *_, lost in reports) >= 1  # takeovers happened mid-write
    history = sorted(saver.list(CONFIG), key=lambda t: t.checkpoint["id"])
    assert [t.checkpoint["channel_values"]["n"] for t in history] == list(range(target + 1))
    # One child per checkpoint (no fork), and on each parent exactly the write of the
    # run that wrote its child: a refused fenced write stored nothing.
    assert history[0].config == root
    for parent, child in itertools.pairwise(history):
        assert child.parent_config == parent.config
        by = child.checkpoint["channel_values"]["by"]
        assert [(w.channel, w.value) for w in parent.pending_writes or []] == [("by", by)]
    writers = Counter(t.checkpoint["channel_values"]["by"] for t in history[1:])
    assert len(writers) >= 2
    assert saver.get_lease("contended") is None
