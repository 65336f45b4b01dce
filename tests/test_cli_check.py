"""``pausepoint check``: the pre-deploy check, run as a real process on real databases.

The corpus of paused threads (tests/deploy_graphs.py) is paused once per pair (corpus
entry × edit), each thread with its pair as ``graph_id``; one ``pausepoint check``
with every edited graph named by its pair must list each destructive pair with its
reasons and no harmless one. The check only reads: the database is the same after it,
and a thread whose lease a worker holds is checked all the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import check_graphs
import deploy_graphs as corpus
from pausepoint import InMemorySaver
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.deploys import check_threads
from pausepoint.migrations import StoredThread, drop_channel, migration

HERE = Path(__file__).parent
PAIRS = check_graphs.pairs()


def _thread(name: str, edit: str) -> str:
    return f"{name}-{edit}"


def _pause_all(saver: Any) -> None:
    for name, edit, _ in PAIRS:
        thread = _thread(name, edit)
        config = {"configurable": {"thread_id": thread}, "metadata": {"graph_id": thread}}
        corpus.pause(name, saver, config)


def _named_graphs() -> list[str]:
    out: list[str] = []
    for name, edit, _ in PAIRS:
        out += [
            "--graph",
            f"{_thread(name, edit)}=check_graphs:{check_graphs.attribute(name, edit)}",
        ]
    return out


def check(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``pausepoint check --db DB ARGS`` in a new process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent / "src"), str(HERE)])}
    env.pop("PAUSEPOINT_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "pausepoint.cli", "check", "--db", db, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def corpus_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("check") / "corpus.db"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        _pause_all(saver)
    return db


def _sqlite_state(db: Path) -> tuple[str, list[Any]]:
    """The file's hash and every row of pausepoint's tables."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = [(t, sorted(map(repr, conn.execute(f"SELECT * FROM {t}")))) for t in sorted(tables)]
    finally:
        conn.close()
    return hashlib.sha256(db.read_bytes()).hexdigest(), rows


def _assert_every_pair(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    listed = {c["thread_id"]: c for c in report["cannot_resume"]}
    for name, edit, destructive in PAIRS:
        thread = _thread(name, edit)
        if not destructive:
            assert thread not in listed, f"harmless pair {thread} flagged: {listed.get(thread)}"
            continue
        assert thread in listed, f"destructive pair {thread} not listed"
        found = listed[thread]
        assert found["problems"], thread
        assert found["graph"] == thread
        assert found["status"] == "cannot_resume"
        assert (
            found["stored_fingerprint"]
            == check_graphs.__dict__[check_graphs.attribute(name, None)].spec.fingerprint
        )
    assert report["unreadable"] == []
    assert report["unmatched"] == []
    assert report["checked"] == len(PAIRS)
    assert report["ok"] is False
    return listed


def _reason(listed: dict[str, Any], thread: str) -> str:
    return " | ".join(p["detail"] for p in listed[thread]["problems"])


def test_every_destructive_pair_is_listed_with_its_reason(corpus_db: Path) -> None:
    before = _sqlite_state(corpus_db)
    done = check(str(corpus_db), "--json", *_named_graphs())
    listed = _assert_every_pair(done)
    # the reasons are the ones GraphMismatchError gives
    assert "the graph has no node 'ask'" in _reason(listed, "one-rename")
    assert "question 0" in _reason(listed, "one-rename")
    assert "answered, its run pending" in _reason(listed, "answered-rename")
    assert "a pending Send to node 'ask'" in _reason(listed, "sends-remove")
    assert "no channel in this graph" in _reason(listed, "one-drop_key")
    assert "is not a " in _reason(listed, "one-retype")
    assert "was folded with" in _reason(listed, "sends-reducer")
    assert "no node 'review'" in _reason(listed, "breakpoint-rename")
    assert "in subgraph node 'outer'" in _reason(listed, "nested-rename")
    assert "no node 'outer'" in _reason(listed, "nested-rename_subgraph")
    assert "no node of this graph runs it" in _reason(listed, "functional-rename")
    assert {p["kind"] for p in listed["one-rename"]["problems"]} == {"node"}
    assert _sqlite_state(corpus_db) == before  # it only reads


def test_the_text_report_names_thread_checkpoint_stamp_and_reasons(corpus_db: Path) -> None:
    done = check(str(corpus_db), "--graph", "one-rename=check_graphs:one__rename")
    assert done.returncode == 1, done.stderr
    out = done.stdout
    old = check_graphs.one__old.spec.fingerprint  # type: ignore[attr-defined]
    assert "thread 'one-rename'" in out
    assert f"fingerprint {old}" in out
    assert "cannot be resumed" in out
    assert "the graph has no node 'ask'" in out
    assert "1 thread(s) with work left checked" in out
    assert "whose graph_id names no --graph" in out  # the other pairs' threads


def test_a_harmless_deploy_exits_0(tmp_path: Path) -> None:
    db = tmp_path / "one.db"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        corpus.pause("one", saver, {"configurable": {"thread_id": "t"}})
        corpus.pause("one", saver, {"configurable": {"thread_id": "u"}})
        done_cfg = {"configurable": {"thread_id": "done"}}
        graph = corpus.pause("one", saver, done_cfg)
        graph.invoke(corpus.answer_for(graph, done_cfg), done_cfg)  # finished
    for attr, same in (("one__old", 2), ("one__body", 2), ("one__new_key", 0)):
        done = check(str(db), "--graph", f"check_graphs:{attr}", "--json")
        assert done.returncode == 0, (attr, done.stdout, done.stderr)
        report = json.loads(done.stdout)
        assert report["ok"] is True
        assert report["cannot_resume"] == []
        assert (report["checked"], report["same_fingerprint"], report["finished"]) == (2, same, 1)
    text = check(str(db), "--graph", "check_graphs:one__body")
    assert "ok: every one can be resumed" in text.stdout


def test_usage_errors_exit_2(tmp_path: Path, corpus_db: Path) -> None:
    missing = tmp_path / "missing.db"
    done = check(str(missing), "--graph", "check_graphs:one__old")
    assert done.returncode == 2
    assert "does not exist" in done.stderr
    assert not missing.exists()
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    done = check(str(junk), "--graph", "check_graphs:one__old")
    assert done.returncode == 2
    assert "cannot read" in done.stderr
    for graph, said in (
        ("no_such_module:graph", "cannot import module"),
        ("check_graphs:nothing_here", "has no attribute"),
        ("check_graphs", "MODULE:ATTRIBUTE"),
        ("check_graphs:corpus", "not a graph"),
        ("check_graphs:attribute", "needs arguments"),
    ):
        done = check(str(corpus_db), "--graph", graph)
        assert done.returncode == 2, (graph, done.stdout)
        assert said in done.stderr, (graph, done.stderr)
    done = check(
        str(corpus_db), "--graph", "a=check_graphs:one__old", "--graph", "a=check_graphs:one__body"
    )
    assert done.returncode == 2
    assert "two --graph options are named 'a'" in done.stderr
    done = check("postgresql://nobody@127.0.0.1:1/none", "--graph", "check_graphs:one__old")
    assert done.returncode == 2
    assert "cannot connect" in done.stderr


def test_an_unreadable_thread_is_reported_and_the_others_checked(tmp_path: Path) -> None:
    db = tmp_path / "bad.db"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        corpus.pause("one", saver, {"configurable": {"thread_id": "good"}})
        corpus.pause("one", saver, {"configurable": {"thread_id": "bad"}})
    conn = sqlite3.connect(db)
    conn.execute(
        "UPDATE pausepoint_checkpoints SET checkpoint = X'7B2262726F6B656E' WHERE thread_id = 'bad'"
    )
    conn.commit()
    conn.close()
    done = check(str(db), "--graph", "check_graphs:one__rename", "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert [c["thread_id"] for c in report["unreadable"]] == ["bad"]
    assert report["unreadable"][0]["status"] == "unreadable"
    assert "'bad'" in report["unreadable"][0]["error"]
    assert [c["thread_id"] for c in report["cannot_resume"]] == ["good"]
    text = check(str(db), "--graph", "check_graphs:one__body")
    assert text.returncode == 1
    assert "thread 'bad'" in text.stdout
    assert "cannot be read" in text.stdout


def test_a_leased_thread_is_checked_and_its_lease_untouched(tmp_path: Path) -> None:
    db = tmp_path / "leased.db"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        corpus.pause("one", saver, {"configurable": {"thread_id": "busy"}})
        assert saver.acquire_lease("busy", "worker-1", 600.0) is not None
        lease = saver.get_lease("busy")
        before = _sqlite_state(db)
        done = check(str(db), "--graph", "check_graphs:one__rename", "--json")
        assert done.returncode == 1, done.stderr
        assert [c["thread_id"] for c in json.loads(done.stdout)["cannot_resume"]] == ["busy"]
        assert saver.get_lease("busy") == lease
    assert _sqlite_state(db)[1] == before[1]


def test_the_library_agrees_on_every_saver(tmp_path: Path) -> None:
    """`check_threads` on the in-memory saver (read thread by thread) and on SQLite
    (heads in batches, here of 3) find the same threads."""
    graphs = {
        _thread(n, e): check_graphs.__dict__[check_graphs.attribute(n, e)] for n, e, _ in PAIRS
    }
    memory = InMemorySaver()
    _pause_all(memory)
    found = []
    with SqliteSaver.from_conn_string(str(tmp_path / "lib.db")) as sqlite_saver:
        _pause_all(sqlite_saver)
        for saver in (memory, sqlite_saver):
            report = check_threads(saver, graphs, batch=3)
            assert report.checked == len(PAIRS)
            found.append(
                sorted((c.thread_id, [p.kind for p in c.problems]) for c in report.cannot_resume)
            )
    assert found[0] == found[1]
    assert {t for t, _ in found[0]} == {_thread(n, e) for n, e, d in PAIRS if d}


def test_postgres() -> None:
    url = os.environ.get("PAUSEPOINT_PG_URL")
    if not url:
        pytest.skip("PAUSEPOINT_PG_URL is not set (source /tmp/pgenv)")
    from pausepoint.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        for thread in saver.thread_ids():
            saver.delete_thread(thread)
        _pause_all(saver)
        saver.acquire_lease("one-rename", "worker-1", 600.0)
        dump = "SELECT * FROM {} ORDER BY 1, 2, 3"
        tables = (
            "pausepoint_checkpoints",
            "pausepoint_writes",
            "pausepoint_leases",
            "pausepoint_pending",
        )
        before = [saver.conn.execute(dump.format(t)).fetchall() for t in tables]  # type: ignore[union-attr]
        listed = _assert_every_pair(check(url, "--json", *_named_graphs()))
        assert "the graph has no node 'ask'" in _reason(listed, "one-rename")
        after = [saver.conn.execute(dump.format(t)).fetchall() for t in tables]  # type: ignore[union-attr]
        assert after == before
        same = check(url, "--graph", "one-body=check_graphs:one__body")
        assert same.returncode == 0, same.stdout + same.stderr


def test_a_thread_its_declared_migrations_move_is_not_listed(tmp_path: Path) -> None:
    """With the migrations that move each destructive pair declared, the check lists none
    of them (they can resume); a migration that raises, or one that leaves a problem, is
    listed. The check writes nothing either way."""
    db = tmp_path / "migrations.db"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        _pause_all(saver)
        before = _sqlite_state(db)[1]  # the rows: the open saver's WAL moves the file's bytes
        graphs = {
            _thread(n, e): corpus.migrated(n, e, None) if d else corpus.CORPUS[n][0](e, None)
            for n, e, d in PAIRS
        }
        report = check_threads(saver, graphs)
        assert report.checked == len(PAIRS)
        assert report.cannot_resume == [], [(c.thread_id, c.problems) for c in report.cannot_resume]

        def broken(thread: StoredThread) -> None:
            raise ValueError("no such column")

        name, edit = "one", "rename"
        raising = corpus.CORPUS[name][0](edit, None)
        raising = raising.builder.compile(migrations=[migration("fix it", broken)])
        partial = corpus.CORPUS[name][0](edit, None)
        partial = partial.builder.compile(migrations=[drop_channel("not_there")])
        for graph, kind in ((raising, "migration"), (partial, "node")):
            found = check_threads(saver, {_thread(name, edit): graph}).cannot_resume
            assert [(c.thread_id, [p.kind for p in c.problems]) for c in found] == [
                (_thread(name, edit), [kind])
            ]
        assert _sqlite_state(db)[1] == before
