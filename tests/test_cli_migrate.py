"""``pausepoint threads migrate`` in real processes, on SQLite and PostgreSQL (issue 31).

Threads of the corpus (tests/deploy_graphs.py) pause on the old graph; the command
moves them to the new graph with its declared migrations; they then resume with the
values the unedited graph gives. A thread a run holds is skipped and reported. A
process SIGKILLed at any commit leaves every thread moved or not (each checkpoint is
stored with its writes in one commit, subgraphs before the root), and running the
command again finishes the job.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import deploy_graphs as corpus
from pausepoint.checkpoint.sqlite import SqliteSaver
from test_migrations import _expected  # pyright: ignore[reportPrivateUsage]

HERE = pathlib.Path(__file__).parent
SRC = HERE.parent / "src"
CASES = [("one", "rename"), ("nested", "rename"), ("sends", "remove"), ("answered", "retype")]

KILLER = """
import os, signal, sys
from pausepoint.checkpoint import sqlite, postgres
at, when = int(os.environ["KILL_AT"]), os.environ["KILL_WHEN"]
made = {"n": 0}
for cls in (sqlite.SqliteSaver, postgres.PostgresSaver):
    orig = cls.commit
    def commit(self, step, orig=orig):
        made["n"] += 1
        if made["n"] == at and when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        out = orig(self, step)
        if made["n"] == at and when == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        return out
    cls.commit = commit
from pausepoint.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[str]:
    if request.param == "sqlite":
        path = str(tmp_path / "threads.db")
        with SqliteSaver.from_conn_string(path) as saver:
            saver.setup()
        yield path
        return
    url = os.environ.get("PAUSEPOINT_PG_URL")
    if not url:
        pytest.skip("PAUSEPOINT_PG_URL is not set (source /tmp/pgenv)")
    with _open(url) as saver:
        saver.setup()
        for tid in saver.thread_ids():
            saver.delete_thread(tid)
    yield url


def _open(db: str) -> Any:
    if db.startswith("postgres"):
        from pausepoint.checkpoint.postgres import PostgresSaver

        return PostgresSaver.from_conn_string(db)
    return SqliteSaver.from_conn_string(db)


def _graph_module(tmp_path: pathlib.Path, name: str, edit: str) -> str:
    (tmp_path / f"new_{name}.py").write_text(
        f"import deploy_graphs as corpus\ngraph = corpus.migrated({name!r}, {edit!r}, None)\n"
    )
    return f"new_{name}:graph"


def _cli(
    tmp_path: pathlib.Path, *args: str, kill: tuple[int, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE), str(tmp_path)])}
    if kill is None:
        cmd = [sys.executable, "-m", "pausepoint.cli", *args]
    else:
        env.update(KILL_AT=str(kill[0]), KILL_WHEN=kill[1])
        cmd = [sys.executable, "-c", KILLER, *args]
    return subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _pause(db: str, name: str, threads: list[str]) -> None:
    with _open(db) as saver:
        for tid in threads:
            corpus.pause(name, saver, {"configurable": {"thread_id": tid}})


def _resume_all(db: str, name: str, edit: str, threads: list[str]) -> None:
    with _open(db) as saver:
        new = corpus.migrated(name, edit, saver)
        for tid in threads:
            config = {"configurable": {"thread_id": tid}}
            corpus.RUNS.clear()
            new.invoke(corpus.answer_for(new, config), config)
            assert corpus.RUNS["prep"] == 0
            assert new.get_state(config).values == _expected(name, edit)


def _sources(db: str, tid: str) -> list[str]:
    with _open(db) as saver:
        config = {"configurable": {"thread_id": tid, "checkpoint_ns": ""}}
        return [str(t.metadata.get("source")) for t in saver.list(config)]


@pytest.mark.parametrize(("name", "edit"), CASES)
def test_migrate_moves_every_thread_and_they_resume(
    db: str, tmp_path: pathlib.Path, name: str, edit: str
) -> None:
    threads = [f"{name}-{n}" for n in range(3)]
    _pause(db, name, threads)
    graph = _graph_module(tmp_path, name, edit)
    dry = _cli(tmp_path, "threads", "migrate", "--db", db, "--graph", graph, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert {m["outcome"] for m in json.loads(dry.stdout)} == {"would migrate"}
    assert all("migrate" not in _sources(db, t) for t in threads)  # a dry run writes nothing
    done = _cli(
        tmp_path, "threads", "migrate", "--db", db, "--graph", graph, "--json", "--batch", "2"
    )
    assert done.returncode == 0, done.stderr
    moved = json.loads(done.stdout)
    assert sorted(m["thread_id"] for m in moved) == sorted(threads)
    assert {m["outcome"] for m in moved} == {"migrated"}
    assert all(m["migrations"] for m in moved)
    again = _cli(tmp_path, "threads", "migrate", "--db", db, "--graph", graph, "--json")
    assert again.returncode == 0
    assert {m["outcome"] for m in json.loads(again.stdout)} == {"current"}  # idempotent
    assert all(_sources(db, t)[0] == "migrate" for t in threads)
    _resume_all(db, name, edit, threads)


def test_a_thread_a_run_holds_is_skipped_and_reported(db: str, tmp_path: pathlib.Path) -> None:
    threads = ["held", "free"]
    _pause(db, "one", threads)
    graph = _graph_module(tmp_path, "one", "rename")
    with _open(db) as saver:
        assert saver.acquire_lease("held", "elsewhere/1/run", 60).acquired
        try:
            busy = _cli(tmp_path, "threads", "migrate", "--db", db, "--graph", graph, "--json")
        finally:
            saver.release_lease("held", "elsewhere/1/run")
    assert busy.returncode == 1, busy.stderr
    outcomes = {m["thread_id"]: m["outcome"] for m in json.loads(busy.stdout)}
    assert outcomes == {"held": "busy", "free": "migrated"}
    assert "migrate" not in _sources(db, "held")
    rerun = _cli(tmp_path, "threads", "migrate", "--db", db, "--graph", graph, "--json")
    assert rerun.returncode == 0
    assert {m["thread_id"]: m["outcome"] for m in json.loads(rerun.stdout)} == {
        "held": "migrated",
        "free": "current",
    }


def test_what_cannot_be_migrated_exits_1_and_usage_exits_2(db: str, tmp_path: pathlib.Path) -> None:
    _pause(db, "one", ["stuck"])
    (tmp_path / "bare.py").write_text(
        "import deploy_graphs as corpus\ngraph = corpus._chain('rename').compile()\n"
    )
    stuck = _cli(tmp_path, "threads", "migrate", "--db", db, "--graph", "bare:graph")
    assert stuck.returncode == 1
    assert "failed" in stuck.stdout
    assert "'ask'" in stuck.stdout
    bad = _cli(tmp_path, "threads", "migrate", "--db", db, "--graph", "nowhere:graph")
    assert bad.returncode == 2
    assert "nowhere" in bad.stderr


@pytest.mark.parametrize(
    ("at", "when"),
    [(1, "before"), (1, "after"), (2, "after"), (4, "before"), (5, "after"), (7, "after")],
)
def test_kill_9_during_migrate_leaves_threads_moved_or_not(
    db: str, tmp_path: pathlib.Path, at: int, when: str
) -> None:
    # Nested threads: each move is three commits (two subgraph levels, then the root).
    threads = [f"deep-{n}" for n in range(3)]
    _pause(db, "nested", threads)
    graph = _graph_module(tmp_path, "nested", "rename")
    killed = _cli(tmp_path, "threads", "migrate", "--db", db, "--graph", graph, kill=(at, when))
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with _open(db) as saver:
        new = corpus.migrated("nested", "rename", saver)
        for tid in threads:  # each is moved, or not: either way it shows its question
            config = {"configurable": {"thread_id": tid}}
            snap = new.get_state(config)
            assert [i.value for i in snap.interrupts] == ["question 0"], tid
    rerun = _cli(tmp_path, "threads", "migrate", "--db", db, "--graph", graph, "--json")
    assert rerun.returncode == 0, rerun.stderr
    assert {m["outcome"] for m in json.loads(rerun.stdout)} <= {"migrated", "current"}
    for tid in threads:
        assert _sources(db, tid).count("migrate") == 1
    _resume_all(db, "nested", "rename", threads)
