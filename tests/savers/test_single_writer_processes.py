"""Single-writer threads across real processes, on SQLite and PostgreSQL (issue 15).

Racing processes resume one paused thread (tests/savers/race_process.py): on one question,
exactly one is accepted and the work after ``interrupt()`` runs once; on two
questions of one parallel step, both answers count and the join runs once. History
never forks. Two rounds each by default; ``PAUSEPOINT_RACE_ROUNDS`` sets how many.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

WORKER = str(Path(__file__).with_name("race_process.py"))
ROUNDS = int(os.environ.get("PAUSEPOINT_RACE_ROUNDS", "2"))
"""Rounds of each race; ``PAUSEPOINT_RACE_ROUNDS=20`` runs them longer on demand."""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "sqlite":
        yield "sqlite", str(tmp_path / "race.sqlite")
        return
    url: str = request.getfixturevalue("pg_url")
    import psycopg

    schema = f"pp_race_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    sep = "&" if "?" in url else "?"
    yield "postgres", f"{url}{sep}options=-csearch_path%3D{schema}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


def worker(
    target: tuple[str, str], thread: str, key: str, answer: str, log: Path, at: float
) -> Any:
    return subprocess.Popen(
        [sys.executable, WORKER, *target, thread, key, answer, str(log), str(at)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")},
    )


def finish(procs: list[Any]) -> list[dict[str, Any]]:
    out = []
    for p in procs:
        stdout, _ = p.communicate(timeout=120)
        assert p.returncode == 0, stdout
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def start_thread(target: tuple[str, str], thread: str, log: Path) -> dict[str, str]:
    (started,) = finish([worker(target, thread, "start", "-", log, 0)])
    return started["ids"]


def no_fork(target: tuple[str, str], thread: str) -> None:
    """Every checkpoint of the thread has at most one child."""
    sys.path.insert(0, str(Path(WORKER).parent))
    from race_process import open_saver

    with open_saver(*target) as saver:
        parents = Counter(
            (t.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            for t in saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
        )
    assert max(parents.values()) == 1, parents


@pytest.mark.parametrize("racers", [2, 4, 8])
def test_processes_racing_on_one_question_one_wins(target, tmp_path, racers):
    for n in range(ROUNDS):
        thread, log = f"one-{racers}-{n}", tmp_path / f"one-{racers}-{n}.log"
        ids = start_thread(target, thread, log)
        at = time.time() + 1.5  # all started and imported by then
        key = ids["review a"]
        results = finish([worker(target, thread, key, f"A{i}", log, at) for i in range(racers)])
        accepted = [r for r in results if r["outcome"] == "ok"]
        refused = Counter(r["outcome"] for r in results if r["outcome"] != "ok")
        assert len(accepted) == 1, results
        assert set(refused) <= {"ThreadBusyError", "AlreadyAnsweredError"}, results
        ran = [line.split()[0] for line in log.read_text().split("\n") if line.startswith("a=")]
        assert len(ran) == 1, ran  # the work after interrupt() ran once
        assert accepted[0]["log"] == [ran[0]]
        no_fork(target, thread)


def test_processes_answering_two_questions_of_one_step_both_count(target, tmp_path):
    for n in range(ROUNDS):
        thread, log = f"two-{n}", tmp_path / f"two-{n}.log"
        ids = start_thread(target, thread, log)
        at = time.time() + 1.5
        results = finish(
            [
                worker(target, thread, ids["review a"], "A", log, at),
                worker(target, thread, ids["review b"], "B", log, at),
            ]
        )
        assert [r["outcome"] for r in results] == ["ok", "ok"], results
        lines = [line.split()[0] for line in log.read_text().split("\n") if line]
        assert sorted(lines) == ["a=A", "b=B", "join"], lines  # each once, the join once
        assert any(sorted(r["log"]) == ["a=A", "b=B", "joined"] for r in results), results
        no_fork(target, thread)
