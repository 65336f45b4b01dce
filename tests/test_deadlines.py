"""Deadlines and the sweeper (issue 20): ``interrupt(..., deadline=, on_timeout=)``.

A ``timedelta`` deadline is resolved against the clock (`use_clock`, no sleeps) when
the question is first asked and kept when it is asked again. ``sweep`` answers or
fails expired questions through the normal resume path; two sweepers at once act
once — with real threads and real processes on SQLite, and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import operator
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from tests import deadline_graph
from tests.test_typed_answers import saver  # noqa: F401  (the saver fixture)

from pausepoint import END, START, Command, InMemorySaver, StateGraph, interrupt
from pausepoint._sweeping import Expire, sweep_flow
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import DeadlineExpiredError, InvalidAnswerError
from pausepoint.questions import SweepOutcome, asweep, sweep, use_clock
from pausepoint.types import TimedOut, TimeoutAnswer

ROOT = Path(__file__).resolve().parent.parent
T0 = datetime.datetime(2030, 1, 1, 9, tzinfo=datetime.UTC)
HOUR = datetime.timedelta(hours=1)
LATER = T0 + 2 * HOUR


class State(TypedDict, total=False):
    out: Any
    log: Annotated[list[Any], operator.add]


def one_question(checkpointer: Any, **terms: Any) -> Any:
    def ask(state: State) -> State:
        return {"out": interrupt("approve?", **terms)}

    b = StateGraph(State)
    b.add_node("ask", ask)
    b.add_edge(START, "ask")
    b.add_edge("ask", END)
    return b.compile(checkpointer=checkpointer)


def thread() -> Any:
    return {"configurable": {"thread_id": uuid.uuid4().hex}}


def start(graph: Any, cfg: Any, at: datetime.datetime = T0) -> Any:
    with use_clock(at):
        return graph.invoke({"out": None}, cfg)["__interrupt__"][0]


# --- terms ---------------------------------------------------------------------------------


def test_a_timedelta_is_resolved_against_the_clock_when_first_asked(saver: Any) -> None:  # noqa: F811
    graph, cfg = one_question(saver, deadline=HOUR, on_timeout="fail"), thread()
    asked = start(graph, cfg)
    assert asked.deadline == T0 + HOUR
    assert asked.on_timeout == "fail"
    assert graph.get_state(cfg).interrupts[0].deadline == T0 + HOUR


def test_an_aware_datetime_is_stored_in_utc(saver: Any) -> None:  # noqa: F811
    tokyo = datetime.timezone(datetime.timedelta(hours=9), "JST")
    when = datetime.datetime(2030, 1, 2, 18, tzinfo=tokyo)
    graph, cfg = one_question(saver, deadline=when, on_timeout=TimeoutAnswer("no")), thread()
    start(graph, cfg)
    stored = graph.get_state(cfg).interrupts[0]
    assert stored.deadline == when
    assert stored.deadline.tzinfo == datetime.UTC
    assert stored.on_timeout == TimeoutAnswer("no")


@pytest.mark.parametrize(
    ("terms", "error", "words"),
    [
        ({"deadline": datetime.datetime(2030, 1, 1)}, ValueError, "naive"),
        ({"deadline": "tomorrow"}, TypeError, "timedelta or an aware datetime"),
        ({"on_timeout": "fail"}, ValueError, "no deadline"),
        ({"deadline": HOUR, "on_timeout": "skip"}, ValueError, "neither 'fail'"),
        (
            {
                "deadline": HOUR,
                "on_timeout": TimeoutAnswer(5),
                "response_schema": {"type": "string"},
            },
            ValueError,
            "expected a string",
        ),
    ],
)
def test_bad_terms_fail_the_node_when_it_asks(terms: Any, error: type, words: str) -> None:
    graph, cfg = one_question(InMemorySaver(), **terms), thread()
    with pytest.raises(error, match=words):
        graph.invoke({"out": None}, cfg)


def test_a_clock_returning_naive_times_is_refused() -> None:
    graph, cfg = one_question(InMemorySaver(), deadline=HOUR), thread()
    with use_clock(lambda: datetime.datetime(2030, 1, 1)), pytest.raises(ValueError, match="naive"):
        graph.invoke({"out": None}, cfg)


def test_asking_again_keeps_the_first_deadline() -> None:
    """A subgraph that saves nothing re-runs its nodes: the waiting one asks again."""
    runs: list[str] = []

    def node(name: str) -> Callable[[State], State]:
        def run(state: State) -> State:
            runs.append(name)
            return {"log": [interrupt(f"{name}?", deadline=HOUR, on_timeout="fail")]}

        return run

    inner = StateGraph(State)
    inner.add_node("a", node("a"))
    inner.add_node("b", node("b"))
    inner.add_edge(START, "a")
    inner.add_edge(START, "b")
    outer = StateGraph(State)
    outer.add_node("inner", inner.compile(checkpointer=False))
    outer.add_edge(START, "inner")
    graph, cfg = outer.compile(checkpointer=InMemorySaver()), thread()
    with use_clock(T0):
        asked = {i.value: i for i in graph.invoke({"log": []}, cfg)["__interrupt__"]}
    with use_clock(T0 + HOUR / 2):
        again = graph.invoke(Command(resume={asked["a?"].id: 1}), cfg)["__interrupt__"]
    assert sorted(runs) == ["a", "a", "b", "b"]  # "b?" was asked again
    assert [(i.value, i.deadline) for i in again] == [("b?", T0 + HOUR)]
    assert graph.get_state(cfg).interrupts[0].deadline == T0 + HOUR
    with use_clock(LATER):
        (outcome,) = sweep(graph)
    assert outcome.status == "failed"


# --- the sweeper ---------------------------------------------------------------------------


def test_sweep_answers_a_due_question_with_its_default(saver: Any) -> None:  # noqa: F811
    schema = {"type": "string"}
    graph = one_question(
        saver, response_schema=schema, deadline=HOUR, on_timeout=TimeoutAnswer("no")
    )
    cfg = thread()
    asked = start(graph, cfg)
    assert sweep(graph, now=T0 + HOUR / 2) == []  # not due yet
    (outcome,) = sweep(graph, now=LATER)
    assert outcome == SweepOutcome(
        cfg["configurable"]["thread_id"], asked.question_id, T0 + HOUR, "answered"
    )
    state = graph.get_state(cfg)
    assert state.values["out"] == "no"
    assert state.interrupts == ()
    assert sweep(graph, now=LATER) == []  # nothing left: a second sweep does nothing


def test_sweep_fails_a_due_question(saver: Any) -> None:  # noqa: F811
    graph, cfg = one_question(saver, deadline=HOUR, on_timeout="fail"), thread()
    start(graph, cfg)
    (outcome,) = sweep(graph, now=LATER)
    assert outcome.status == "failed"
    (task,) = graph.get_state(cfg).tasks
    assert task.status == "failed"
    assert "DeadlineExpiredError" in str(task.error)
    (stored,) = task.answered
    assert isinstance(stored.value, TimedOut)
    assert (stored.value.deadline, stored.value.swept_at) == (T0 + HOUR, LATER)
    assert sweep(graph, now=LATER) == []  # failed, not waiting: nothing to expire
    with pytest.raises(DeadlineExpiredError) as err:  # a retry fails the same way
        graph.invoke(None, cfg)
    assert err.value.deadline == T0 + HOUR


def test_a_node_can_catch_the_expiry(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as db_saver:
        graph, cfg, log = (
            deadline_graph.builder.compile(checkpointer=db_saver),
            thread(),
            tmp_path / "log",
        )
        with use_clock(T0):
            graph.invoke({"policy": "fail", "log": str(log)}, cfg)
        (outcome,) = sweep(graph, now=LATER)
        assert outcome.status == "failed"
        assert graph.get_state(cfg).values["out"] == "escalated"
        assert log.read_text() == "expired\n"


def test_a_question_without_on_timeout_is_left_alone(saver: Any) -> None:  # noqa: F811
    graph, cfg = one_question(saver, deadline=HOUR), thread()
    start(graph, cfg)
    assert sweep(graph, now=LATER) == []
    assert graph.get_state(cfg).interrupts[0].deadline == T0 + HOUR


def test_a_person_can_still_answer_before_the_sweep(saver: Any) -> None:  # noqa: F811
    graph = one_question(
        saver, response_schema={"type": "string"}, deadline=HOUR, on_timeout="fail"
    )
    cfg = thread()
    start(graph, cfg)
    with pytest.raises(InvalidAnswerError):
        graph.invoke(Command(resume=3), cfg)
    assert graph.invoke(Command(resume="yes"), cfg)["out"] == "yes"
    assert sweep(graph, now=LATER) == []


def test_asweep_is_sweep_on_the_async_driver(saver: Any) -> None:  # noqa: F811
    graph = one_question(saver, deadline=HOUR, on_timeout=TimeoutAnswer({"ok": False}))
    cfg = thread()
    start(graph, cfg)
    assert asyncio.run(asweep(graph, now=T0)) == []
    (outcome,) = asyncio.run(asweep(graph, now=LATER))
    assert outcome.status == "answered"
    assert graph.get_state(cfg).values["out"] == {"ok": False}
    assert asyncio.run(asweep(graph, now=LATER)) == []


def test_sweep_takes_now_from_the_clock_and_a_limit(saver: Any) -> None:  # noqa: F811
    graph = one_question(saver, deadline=HOUR, on_timeout=TimeoutAnswer(1))
    configs = [thread() for _ in range(3)]
    for cfg in configs:
        start(graph, cfg)
    with use_clock(T0):
        assert sweep(graph) == []
    with use_clock(LATER):
        first = sweep(graph, limit=2)
        rest = sweep(graph)
    assert len(first) == 2
    assert len(rest) == 1
    assert {o.thread_id for o in first + rest} == {c["configurable"]["thread_id"] for c in configs}
    with pytest.raises(ValueError, match="naive"):
        sweep(graph, now=datetime.datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="limit"):
        sweep(graph, limit=0)


def test_a_stale_sweeper_writes_nothing_and_reports_gone(saver: Any) -> None:  # noqa: F811
    """Two sweepers listed the same question; the second acts after the first: refused."""
    graph, cfg = one_question(saver, deadline=HOUR, on_timeout=TimeoutAnswer("late")), thread()
    start(graph, cfg)
    stale = sweep_flow(saver, LATER, 10, None)
    effect = next(stale)
    while not isinstance(effect, Expire):
        effect = stale.send(effect.run(graph))
    (first,) = sweep(graph, now=LATER)  # the other sweeper acts first
    assert first.status == "answered"
    before = list(graph.get_state_history(cfg))
    try:
        stale.send(effect.run(graph))
    except StopIteration as done:
        (second,) = done.value
    assert second.status == "gone"
    assert "already has the answer" in second.detail or "no interrupt is pending" in second.detail
    assert list(graph.get_state_history(cfg)) == before


def test_a_busy_thread_is_skipped_and_reported(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "b.sqlite")) as db_saver:
        graph = one_question(db_saver, deadline=HOUR, on_timeout="fail")
        graph = graph.builder.compile(checkpointer=db_saver, lease_wait=0)
        cfg = thread()
        start(graph, cfg)
        assert db_saver.acquire_lease(cfg["configurable"]["thread_id"], "another-run", 60.0)
        (outcome,) = sweep(graph, now=LATER)
        assert outcome.status == "busy"
        assert "busy" in outcome.detail
        assert graph.get_state(cfg).interrupts  # still waiting: the next sweep tries again


# --- two sweepers at once act once ---------------------------------------------------------


def _log_lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def _acted(outcomes: list[SweepOutcome]) -> int:
    return sum(o.status in ("answered", "failed") for o in outcomes)


def _race_threads(open_saver: Callable[[], Any], log: Path, policy: str, n: int = 4) -> None:
    """Start a thread per sweeper, each with its own connection, released together."""
    with open_saver() as db_saver:
        graph = deadline_graph.builder.compile(checkpointer=db_saver)
        with use_clock(T0):
            graph.invoke({"policy": policy, "log": str(log)}, thread())
    barrier = threading.Barrier(n)
    results: list[list[SweepOutcome]] = []
    errors: list[BaseException] = []

    def sweeper() -> None:
        try:
            with open_saver() as own:
                g = deadline_graph.builder.compile(checkpointer=own)
                barrier.wait()
                results.append(sweep(g, now=LATER))
        except BaseException as exc:  # reported below
            errors.append(exc)

    workers = [threading.Thread(target=sweeper) for _ in range(n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert errors == []
    assert sum(_acted(r) for r in results) == 1
    assert all(o.status in ("answered", "failed", "busy", "gone") for r in results for o in r)
    assert len(_log_lines(log)) == 1


@pytest.mark.parametrize("policy", ["answer", "fail"])
def test_sweepers_in_threads_act_once_on_sqlite(tmp_path: Path, policy: str) -> None:
    db = str(tmp_path / "race.sqlite")
    for attempt in range(3):
        log = tmp_path / f"log{attempt}"
        _race_threads(lambda: SqliteSaver.from_conn_string(db), log, policy)
        expected = "answered timed out" if policy == "answer" else "expired"
        assert _log_lines(log) == [expected]


@pytest.mark.postgres
def test_sweepers_in_threads_act_once_on_postgres(tmp_path: Path) -> None:
    url = os.environ.get("PAUSEPOINT_PG_URL")
    if not url:
        pytest.skip("PAUSEPOINT_PG_URL is not set")
    import psycopg

    from pausepoint.checkpoint.postgres import PostgresSaver

    schema = f"pp_t20_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    opts = f"-c search_path={schema}"

    class Opened:
        def __enter__(self) -> Any:
            self.conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, options=opts)
            s = PostgresSaver(self.conn)
            s.setup()
            return s

        def __exit__(self, *exc: object) -> None:
            self.conn.close()

    try:
        for attempt in range(2):
            _race_threads(Opened, tmp_path / f"log{attempt}", "answer")
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


def _cli(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    cmd = [sys.executable, "-m", "pausepoint.cli", "sweep", *args]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _db_with_due_question(db: Path, log: Path, policy: str = "answer") -> None:
    with SqliteSaver.from_conn_string(str(db)) as db_saver:
        graph = deadline_graph.builder.compile(checkpointer=db_saver)
        with use_clock(T0):
            graph.invoke({"policy": policy, "log": str(log)}, thread())


def test_sweepers_in_processes_act_once(tmp_path: Path) -> None:
    db, log = tmp_path / "p.sqlite", tmp_path / "log"
    _db_with_due_question(db, log)
    args = (
        "--db",
        str(db),
        "--graph",
        "tests.deadline_graph:builder",
        "--now",
        LATER.isoformat(),
        "--json",
    )
    procs = [_cli(*args) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in outs]
    outcomes = [o for out, _ in outs for o in json.loads(out)]
    assert sum(o["status"] == "answered" for o in outcomes) == 1
    assert _log_lines(log) == ["answered timed out"]


def test_the_cli_prints_a_table_and_exits_2_on_bad_input(tmp_path: Path) -> None:
    db, log = tmp_path / "c.sqlite", tmp_path / "log"
    _db_with_due_question(db, log, policy="fail")
    graph = ("--db", str(db), "--graph", "tests.deadline_graph:builder")
    early = _cli(*graph, "--now", T0.isoformat())
    assert early.communicate(timeout=60)[0].strip() == "no question is due"
    assert early.returncode == 0
    for bad in ("yesterday", "2030-01-01T09:00:00"):
        proc = _cli(*graph, "--now", bad)
        err = proc.communicate(timeout=60)[1]
        assert proc.returncode == 2
        assert "--now" in err
    missing = _cli("--db", str(tmp_path / "none.sqlite"), "--graph", "tests.deadline_graph:builder")
    assert "does not exist" in missing.communicate(timeout=60)[1]
    assert missing.returncode == 2
    late = _cli(*graph, "--now", LATER.isoformat())
    out = late.communicate(timeout=60)[0]
    assert late.returncode == 0
    assert "failed" in out
    assert _log_lines(log) == ["expired"]


class _NoIndex:
    """A saver seen without ``list_pending`` (a duck-typed third-party saver)."""

    def __init__(self, inner: Any) -> None:
        self.list = inner.list


def test_the_fallback_scan_finds_what_list_pending_finds(saver: Any) -> None:  # noqa: F811
    graph = one_question(saver, deadline=HOUR, on_timeout=TimeoutAnswer("x"))
    early, late = thread(), thread()
    start(graph, early)
    start(graph, late, at=T0 + 3 * HOUR)
    flow = sweep_flow(_NoIndex(saver), LATER, 10, None)
    effect = next(flow)
    try:
        while True:
            effect = flow.send(effect.run(graph))
    except StopIteration as done:
        (outcome,) = done.value
    assert outcome.thread_id == early["configurable"]["thread_id"]
    assert outcome.status == "answered"
    assert graph.get_state(early).values["out"] == "x"
    assert graph.get_state(late).interrupts


@pytest.mark.postgres
def test_sweepers_in_processes_act_once_on_postgres(tmp_path: Path) -> None:
    url = os.environ.get("PAUSEPOINT_PG_URL")
    if not url:
        pytest.skip("PAUSEPOINT_PG_URL is not set")
    import psycopg

    from pausepoint.checkpoint.postgres import PostgresSaver

    schema = f"pp_t20_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    scoped = f"{url}?options=-csearch_path%3D{schema}"
    log = tmp_path / "log"
    try:
        with PostgresSaver.from_conn_string(scoped) as pg:
            pg.setup()
            graph = deadline_graph.builder.compile(checkpointer=pg)
            with use_clock(T0):
                graph.invoke({"policy": "fail", "log": str(log)}, thread())
        args = ("--db", scoped, "--graph", "tests.deadline_graph:builder")
        procs = [_cli(*args, "--now", LATER.isoformat(), "--json") for _ in range(3)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in outs]
        outcomes = [o for out, _ in outs for o in json.loads(out)]
        assert sum(o["status"] == "failed" for o in outcomes) == 1
        assert _log_lines(log) == ["expired"]
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


def test_a_node_failing_after_the_timeout_is_an_error_and_exit_1(tmp_path: Path) -> None:
    db, log = tmp_path / "e.sqlite", tmp_path / "log"
    _db_with_due_question(db, log, policy="boom")
    proc = _cli(
        "--db",
        str(db),
        "--graph",
        "tests.deadline_graph:builder",
        "--now",
        LATER.isoformat(),
        "--json",
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    (row,) = json.loads(out)
    assert row["status"] == "error"
    assert "RuntimeError: the node failed after its timeout answer" in row["detail"]
    with SqliteSaver.from_conn_string(str(db)) as db_saver:
        graph = deadline_graph.builder.compile(checkpointer=db_saver)
        assert sweep(graph, now=LATER) == []  # answered (then failed): not waiting any more
