"""Retention (issue 32): ``prune``/``aprune``, ``copy_thread`` and ``delete_thread``.

Real savers only: the in-memory ones, SQLite and PostgreSQL. The state machine runs the
same operations on a thread it prunes and on one it never prunes, and holds every
snapshot, the kept history and the nodes' side effects to be the same.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from tests.savers.prune_graphs import RUNS, build, config

from pausepoint import Command, InMemorySaver
from pausepoint.checkpoint.base import BaseCheckpointSaver
from pausepoint.checkpoint.compact import CompactingMemorySaver
from pausepoint.checkpoint.sqlite import SqliteSaver

HERE = Path(__file__).parent
KINDS = ["memory", "compact", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=KINDS)
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    kind = request.param
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "compact":
        yield CompactingMemorySaver()
    elif kind == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp_path / "p.db")) as s:
            yield s
    else:
        import psycopg

        from pausepoint.checkpoint.postgres import PostgresSaver

        kwargs = request.getfixturevalue("pg_kwargs")
        with psycopg.connect(request.getfixturevalue("pg_url"), **kwargs) as conn:
            s = PostgresSaver(conn)
            s.setup()
            yield s


def _history(graph: Any, thread: str) -> list[tuple[Any, ...]]:
    return [_shape(s) for s in graph.get_state_history(config(thread))]


def _shape(snap: Any) -> tuple[Any, ...]:
    """What a snapshot shows, ids aside (two threads' new ids differ)."""
    tasks = tuple(sorted((t.name, tuple(i.value for i in t.interrupts)) for t in snap.tasks))
    return (
        snap.values,
        snap.next,
        tuple(i.value for i in snap.interrupts),
        tasks,
        snap.metadata.get("step") if snap.metadata else None,
        snap.metadata.get("source") if snap.metadata else None,
    )


def _runs(thread: str) -> dict[str, int]:
    return {node: n for (t, node), n in RUNS.items() if t == thread}


def _run_turns(graph: Any, thread: str, turns: int, *, end_waiting: bool = False) -> None:
    c = config(thread)
    for n in range(turns):
        graph.invoke({"log": [f"t{n}"]}, c)
        graph.invoke(Command(resume="yes"), c)
        graph.invoke(Command(resume="in"), c)
    if end_waiting:
        graph.invoke({"log": ["last"]}, c)


# --- the rules, on every saver -------------------------------------------------------------


def test_keep_last_keeps_the_head_its_writes_and_what_the_thread_shows(saver: Any) -> None:
    graph = build(saver)
    _run_turns(graph, "p", 3)
    _run_turns(graph, "p", 0, end_waiting=True)
    graph.invoke(Command(resume="yes"), config("p"))  # now the subgraph waits
    before = graph.get_state(config("p"))
    history = list(graph.get_state_history(config("p")))
    report = saver.prune(["p"], keep_last=2, include_waiting=True)
    assert [(t.action, t.checkpoints > 0) for t in report.threads] == [("truncated", True)]
    assert graph.get_state(config("p")) == before
    assert list(graph.get_state_history(config("p"))) == history[:2]
    runs = _runs("p")
    graph.invoke(Command(resume="in"), config("p"))
    assert _runs("p") == {**runs, "inner": runs["inner"] + 1}  # only the waiting node ran
    again = saver.prune(["p"], keep_last=2, include_waiting=True)  # idempotent
    assert again.threads[0].action in ("kept", "truncated")


def test_waiting_answered_and_leased_threads_are_never_pruned_by_default(saver: Any) -> None:
    graph = build(saver)
    _run_turns(graph, "waits", 2, end_waiting=True)
    _run_turns(graph, "answered", 2, end_waiting=True)
    saver.put_writes(  # an answer stored, its run not started: answered, run pending
        graph.get_state(config("answered")).config,
        [("__resume__", ["yes"])],
        graph.get_state(config("answered")).tasks[0].id,
    )
    _run_turns(graph, "leased", 2)
    assert saver.acquire_lease("leased", "worker", 600).acquired
    counts = {t: len(list(saver.list(config(t)))) for t in ("waits", "answered", "leased")}
    report = saver.prune(older_than=datetime.timedelta(0))
    assert {t.thread_id: t.action for t in report.threads} == dict.fromkeys(counts, "skipped")
    assert {t: len(list(saver.list(config(t)))) for t in counts} == counts
    forced = saver.prune(["waits", "leased"], keep_last=1, include_waiting=True)
    assert [t.action for t in forced.threads] == ["truncated", "skipped"]  # a lease: always
    assert graph.get_state(config("waits")).interrupts


def test_older_than_deletes_idle_threads_and_keep_last_keeps_some(saver: Any) -> None:
    graph = build(saver)
    _run_turns(graph, "idle", 2)
    _run_turns(graph, "kept", 2)
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=31)
    dry = saver.prune(older_than=datetime.timedelta(days=30), now=later, dry_run=True)
    assert {t.action for t in dry.threads} == {"deleted"}
    assert dry.dry_run
    assert len(list(saver.list(config("idle")))) > 1  # a dry run deletes nothing
    saver.prune(["kept"], older_than=datetime.timedelta(days=30), keep_last=3, now=later)
    assert len([t for t in saver.list(config("kept")) if not _ns(t)]) == 3
    report = saver.prune(["idle"], older_than=datetime.timedelta(days=30), now=later)
    assert report.threads[0].action == "deleted"
    assert list(saver.list(config("idle"))) == []
    recent = saver.prune(["kept"], older_than=datetime.timedelta(days=30))
    assert recent.threads[0].action == "kept"


def test_langgraph_strategies(saver: Any) -> None:
    graph = build(saver)
    _run_turns(graph, "a", 2)
    _run_turns(graph, "b", 1)
    saver.prune(["a"], strategy="keep_latest")
    assert len([t for t in saver.list(config("a")) if not _ns(t)]) == 1
    saver.prune(["b"], strategy="delete")
    assert list(saver.list(config("b"))) == []
    with pytest.raises(ValueError, match="name them"):
        saver.prune(strategy="delete")
    with pytest.raises(ValueError, match="keep_last"):
        saver.prune(["a"], keep_last=0)
    with pytest.raises(ValueError, match="needs keep_last"):
        saver.prune(["a"])


def test_copy_thread_copies_history_and_questions(saver: Any) -> None:
    graph = build(saver)
    _run_turns(graph, "src", 1, end_waiting=True)
    saver.copy_thread("src", "dst")
    assert _history(graph, "dst") == _history(graph, "src")
    with pytest.raises(ValueError, match="already has checkpoints"):
        saver.copy_thread("src", "dst")
    graph.invoke(Command(resume="yes"), config("dst"))
    assert graph.get_state(config("src")).interrupts[0].value.startswith("ok")
    assert graph.get_state(config("dst")).interrupts[0].value == "inner?"


def _ns(tup: Any) -> str:
    return str(tup.config["configurable"].get("checkpoint_ns", ""))


# --- SQL specifics ------------------------------------------------------------------------


def test_sqlite_delete_thread_leaves_no_row_in_any_table(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "d.db")) as saver:
        graph = build(saver, pad=2000)  # its log stored apart too (pausepoint_blobs)
        _run_turns(graph, "gone", 1, end_waiting=True)
        assert saver.conn.execute("SELECT count(*) FROM pausepoint_blobs").fetchone()[0] > 0
        saver.acquire_lease("gone", "w", 60)
        saver.release_lease("gone", "w")
        saver.delete_thread("gone")
        tables = [
            r[0]
            for r in saver.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if str(r[0]).startswith("pausepoint_") and r[0] != "pausepoint_migrations"
        ]
        assert len(tables) == 5
        for table in tables:
            n = saver.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            assert n == 0, table


def test_a_corrupt_thread_is_reported_and_the_others_pruned(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        graph = build(saver)
        for t in ("a", "bad", "c"):
            _run_turns(graph, t, 2)
        head = saver.get_tuple(config("bad"))
        assert head is not None
        saver.conn.execute(
            "UPDATE pausepoint_checkpoints SET checkpoint = x'00ff' WHERE checkpoint_id = ?",
            (head.checkpoint["id"],),
        )
        report = saver.prune(keep_last=1)
        assert {t.thread_id: t.action for t in report.threads} == {
            "a": "truncated",
            "bad": "error",
            "c": "truncated",
        }
        assert "bad" in report.errors[0].reason


def test_sqlite_thread_size_counts_the_rows(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "s.db")) as saver:
        _run_turns(build(saver), "t", 2)
        size = saver.thread_size("t")
        assert size.checkpoints == len(list(saver.list(config("t"))))
        assert size.bytes > 0
        assert size.writes > 0
        dry = saver.prune(["t"], keep_last=1, dry_run=True)
        saver.prune(["t"], keep_last=1)
        assert saver.thread_size("t").bytes == size.bytes - (dry.threads[0].bytes or 0)


def test_a_saver_without_single_deletes_says_what_to_implement() -> None:
    class ThirdParty(InMemorySaver):
        _prune_request = BaseCheckpointSaver._prune_request  # pyright: ignore[reportAssignmentType]
        _aprune_request = BaseCheckpointSaver._aprune_request  # pyright: ignore[reportAssignmentType]

    saver = ThirdParty()
    graph = build(saver)
    _run_turns(graph, "t", 2)
    assert saver.prune(["t"], keep_last=1, dry_run=True).threads[0].action == "truncated"
    with pytest.raises(NotImplementedError, match="_prune_request"):
        saver.prune(["t"], keep_last=1)
    assert asyncio.run(saver.aprune(["t"], strategy="delete")).threads[0].action == "deleted"
    assert list(saver.list(config("t"))) == []


@pytest.mark.postgres
def test_async_postgres_prunes_and_refuses_the_sync_form(pg_url: str, pg_schema: str) -> None:
    from pausepoint.checkpoint.postgres import AsyncPostgresSaver

    async def main() -> None:
        url = f"{pg_url}{'&' if '?' in pg_url else '?'}options=-csearch_path%3D{pg_schema}"
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            await saver.setup()
            graph = build(saver)
            c = config("t")
            for n in range(2):
                await graph.ainvoke({"log": [str(n)]}, c)
                await graph.ainvoke(Command(resume="y"), c)
                await graph.ainvoke(Command(resume="z"), c)
            head = await graph.aget_state(c)
            report = await saver.aprune(["t"], keep_last=1)
            assert report.threads[0].action == "truncated"
            assert await graph.aget_state(c) == head
            await saver.acopy_thread("t", "u")
            assert (await graph.aget_state(config("u"))).values == head.values
            with pytest.raises(TypeError, match="aprune"):
                saver.prune(["t"], keep_last=1)

    asyncio.run(main())


# --- the state machine ----------------------------------------------------------------------


class PruneMachine(RuleBasedStateMachine):
    """The same operations on thread "t" (pruned) and "r" (never): they must agree."""

    make_saver: Any = InMemorySaver
    pad = 0  # characters added to each log entry (test_blob_retention: large values)

    def __init__(self) -> None:
        super().__init__()
        self.saver = type(self).make_saver()
        self.graph = build(self.saver, stateful_sub=False, pad=self.pad)
        self.kept: int | None = None  # history length left by the last prune
        RUNS.clear()

    def both(self, given: Any, pick: int | None = None) -> None:
        for thread in ("t", "r"):
            c = config(thread)
            if pick is not None:
                c = list(self.graph.get_state_history(c))[pick].config
            self.graph.invoke(given, c)

    def waiting(self) -> bool:
        return bool(self.graph.get_state(config("t")).interrupts)

    @precondition(lambda self: not self.waiting())
    @rule(n=st.integers(0, 9))
    def start(self, n: int) -> None:
        self.both({"log": [f"in{n}"]})

    @precondition(lambda self: self.waiting())
    @rule(answer=st.sampled_from(["yes", "no"]))
    def answer(self, answer: str) -> None:
        self.both(Command(resume=answer))

    @rule(back=st.integers(1, 3), value=st.sampled_from(["f", "g"]))
    def fork(self, back: int, value: str) -> None:
        history = list(self.graph.get_state_history(config("t")))
        # Not from a step -1 checkpoint: update_state(as_node=...) there fails without any
        # prune (a join barrier's missing value; reported in issue 32's report).
        if back >= len(history) or history[back].metadata["step"] < 0:
            return
        for thread in ("t", "r"):
            old = list(self.graph.get_state_history(config(thread)))[back].config
            self.graph.update_state(old, {"log": [value]}, as_node="sub")

    @rule(back=st.integers(1, 3))
    def resume_old(self, back: int) -> None:
        history = list(self.graph.get_state_history(config("t")))
        if back >= len(history) or not history[back].interrupts:
            return
        self.both(Command(resume="again"), pick=back)

    @rule(keep=st.integers(1, 4), waiting=st.booleans())
    def prune(self, keep: int, waiting: bool) -> None:
        report = self.saver.prune(["t"], keep_last=keep, include_waiting=waiting)
        if report.threads[0].action == "truncated":
            self.kept = keep

    @invariant()
    def agree(self) -> None:
        t, r = _history(self.graph, "t"), _history(self.graph, "r")
        assert t == r[: len(t)]
        assert _shape(self.graph.get_state(config("t"))) == _shape(
            self.graph.get_state(config("r"))
        )
        assert _runs("t") == _runs("r")


class SqlitePruneMachine(PruneMachine):
    @staticmethod
    def make_saver() -> Any:
        import sqlite3

        return SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))


class CompactPruneMachine(PruneMachine):
    make_saver = CompactingMemorySaver


_MACHINE = settings(
    max_examples=15,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestPruneMemory = PruneMachine.TestCase
TestPruneCompact = CompactPruneMachine.TestCase
TestPruneSqlite = SqlitePruneMachine.TestCase
for _case in (TestPruneMemory, TestPruneCompact, TestPruneSqlite):
    _case.settings = _MACHINE


# --- kill -9 --------------------------------------------------------------------------------

SCRIPT = HERE / "prune_process.py"


def _db_url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return str(tmp_path / "k.db")
    url: str = request.getfixturevalue("pg_url")
    schema: str = request.getfixturevalue("pg_schema")
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_kill_9_during_prune_then_rerun(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    db = _db_url(kind, tmp_path, request)
    root = HERE.parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    subprocess.run([sys.executable, str(SCRIPT), "make", db, "24"], check=True, env=env)
    for delay in (0.3, 0.6, 0.9, 1.2):  # imports take ~0.3 s; a prune ~1-2 s
        proc = subprocess.Popen([sys.executable, str(SCRIPT), "prune", db], env=env)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "check", db],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all 24 threads resumed" in done.stdout
