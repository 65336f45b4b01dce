"""``pausepoint prune`` (issue 32): what it frees, what it leaves, its exit status."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from tests.savers.prune_graphs import build, config

from pausepoint import Command
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.cli import main


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "app.db")
    with SqliteSaver.from_conn_string(path) as saver:
        graph = build(saver)
        for thread in ("done", "waiting"):
            for n in range(2):
                graph.invoke({"log": [str(n)]}, config(thread))
                graph.invoke(Command(resume="y"), config(thread))
                graph.invoke(Command(resume="z"), config(thread))
        graph.invoke({"log": ["open"]}, config("waiting"))
    return path


def _count(db: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM pausepoint_checkpoints").fetchone()[0])


def test_dry_run_says_what_it_would_free_and_frees_nothing(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _count(db)
    assert main(["prune", "--db", db, "--keep-last", "1", "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dry_run"]
    assert out["checkpoints"] > 0
    assert out["bytes"] > 0
    assert {t["thread_id"]: t["action"] for t in out["threads"]} == {
        "done": "truncated",
        "waiting": "skipped",
    }
    assert _count(db) == before


def test_older_than_deletes_idle_threads_but_not_a_waiting_one(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prune", "--db", db, "--older-than", "0s"]) == 0
    out = capsys.readouterr().out
    assert "freed" in out
    assert "1 deleted" in out
    assert "1 skipped" in out
    assert main(["threads", "show", "waiting", "--db", db]) == 0
    shown = capsys.readouterr().out
    assert "ok " in shown
    assert "stored:" in shown
    assert main(["threads", "show", "done", "--db", db]) == 2


def test_bad_arguments_exit_2(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prune", "--db", db]) == 2
    assert main(["prune", "--db", db, "--older-than", "soon"]) == 2
    assert main(["prune", "--db", db, "--keep-last", "0"]) == 2
    err = capsys.readouterr().err
    assert "--older-than" in err
    assert "keep_last" in err


def test_an_unreadable_thread_exits_1_and_the_others_are_pruned(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE pausepoint_checkpoints SET checkpoint = x'00' WHERE thread_id = 'waiting'"
        )
    assert main(["prune", "--db", db, "--keep-last", "1", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert {t["thread_id"]: t["action"] for t in out["threads"]} == {
        "done": "truncated",
        "waiting": "error",
    }
