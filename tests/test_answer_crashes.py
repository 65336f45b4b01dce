"""Crash tests of "one answer answers one question" (DESIGN §4.1) with real processes.

A node asks ``q1``, does a side effect, asks ``q2``, does another and returns both
answers (tests/answer_worker.py). A worker process resuming the thread is stopped
at a chosen point: SIGKILL before or after each saver call (every point, found by a
probe run) or at random moments; an ``ainvoke`` cancelled before, during or after
each saver call or after a random delay; its PostgreSQL connection ended with
``pg_terminate_backend`` from another connection (the worker then retries its job
on a fresh connection). Each action is also taken inside the node, just after a
side effect. Then a client that sees only ``get_state()`` carries on until the run
is done: it answers a waiting question by its value (q1 → A1, q2 → A2), and for an
answered question whose run is pending it resends that answer (plainly or by id)
or calls ``invoke(None)``.

Checked after every scenario, from the side-effect log and the thread's history:

- no answer reaches a question it was not sent for: q2 only ever receives "A2",
  and neither question is asked again once its answer was sent;
- the work after an answered ``interrupt()`` runs again only if the run that did it
  was killed, cancelled or lost its connection before its result was saved, and a
  run that ended normally saved its result;
- the thread ends with ``{"q1": "A1", "q2": "A2"}`` and its history never forks.

Runs: SQLite (a file) and PostgreSQL (``PAUSEPOINT_PG_URL``; a fresh schema per
test), sync (``invoke``) and async (``ainvoke``) workers. The default run covers
every saver call once per scenario family (about a minute on two cores). More
repetitions, every client mode at every point, chains of crashes during recovery
and many random moments run on demand::

    PYTHONPATH=src PAUSEPOINT_PG_URL=... .venv/bin/python -m pytest -m stress \\
        tests/test_answer_crashes.py

``PAUSEPOINT_STRESS_ROUNDS`` (default 3: about eight minutes) scales them and
``PAUSEPOINT_STRESS_SEED`` picks the random moments.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import pausepoint
from answer_worker import ANSWERS, Log, build, config, next_input, read_log

WORKER = Path(__file__).with_name("answer_worker.py")
MODES = ("resend", "by-id", "continue")
MAX_RUNS = 12  # client runs per scenario: a few crashes, then the recovery
STRESS_ROUNDS = int(os.environ.get("PAUSEPOINT_STRESS_ROUNDS", "3"))
SEED = int(os.environ.get("PAUSEPOINT_STRESS_SEED", "15"))


# --- processes and backends -----------------------------------------------------------


class Server:
    """The fork server of tests/answer_worker.py, run with this checkout's pausepoint."""

    def __init__(self) -> None:
        src = str(Path(pausepoint.__file__).resolve().parents[1])
        path = os.pathsep.join([src, *filter(None, [os.environ.get("PYTHONPATH")])])
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": path},
        )
        assert "ready" in json.loads(self.readline())

    def readline(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server died (exit {self.proc.wait(10)})")
        return line

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        result: dict[str, Any] = json.loads(self.readline())
        return result

    def close(self) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(30)
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


@dataclasses.dataclass
class Backend:
    kind: str
    dsn: str  # what workers connect to

    @contextlib.contextmanager
    def saver(self) -> Iterator[Any]:
        """A sync saver for the client, which only ever reads state."""
        if self.kind == "sqlite":
            from pausepoint.checkpoint.sqlite import SqliteSaver

            with SqliteSaver.from_conn_string(self.dsn) as saver:
                yield saver
            return
        from pausepoint.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(self.dsn) as saver:
            yield saver


def pg_url() -> str:
    url = os.environ.get("PAUSEPOINT_PG_URL")
    if url:
        return url
    how = 'start a server with: eval "$(scripts/postgres.sh start)"'
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but PAUSEPOINT_PG_URL is not: {how}", pytrace=False)
    pytest.skip(f"PAUSEPOINT_PG_URL is not set; {how}")


@contextlib.contextmanager
def pg_backend() -> Iterator[Backend]:
    """PostgreSQL confined to a fresh schema, dropped afterwards."""
    import psycopg

    from pausepoint.checkpoint.postgres import PostgresSaver

    url = pg_url()
    schema = f"pp_crash_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    try:
        backend = Backend("postgres", f"{url}?options=-csearch_path%3D{schema}")
        with PostgresSaver.from_conn_string(backend.dsn) as saver:
            saver.setup()
        yield backend
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield Backend("sqlite", str(tmp_path / "answers.sqlite"))
        return
    with pg_backend() as pg:
        yield pg


@pytest.fixture
def pg(tmp_path: Path) -> Iterator[Backend]:
    with pg_backend() as backend:
        yield backend


# --- scenarios ------------------------------------------------------------------------


@dataclasses.dataclass
class Scenario:
    """One thread: started, answered up to ``phase``, then resumed with ``trips``.

    ``trips[k]`` stops the k-th client job (see tests/answer_worker.py);
    ``kill_after[k]`` SIGKILLs it after that many seconds instead.
    """

    name: str
    phase: str = "q1"  # the question of the first tripped job
    trips: list[dict[str, Any] | None] = dataclasses.field(default_factory=list)
    kill_after: list[float | None] = dataclasses.field(default_factory=list)
    mode: str = "resend"
    retries: int = 0  # a job retries a run that lost its connection
    client_in_worker: bool = False  # the tripped worker goes on as the client


@dataclasses.dataclass
class Played:
    """What a scenario did: the jobs' answers, the log and the thread's history."""

    responses: list[dict[str, Any]]
    log: list[tuple[str, str, str]]
    final: Any
    history: list[Any]
    first: dict[str, Any]  # the first client job's answer: the tripped one

    def first_outcome(self) -> str | None:
        """How the first client job's first run ended (None: killed)."""
        runs = self.first["runs"]
        return str(runs[0]["outcome"]) if runs else None


class Stage:
    """Plays scenarios of one backend and driver, each on its own thread."""

    def __init__(self, server: Server, backend: Backend, driver: str, tmp: Path) -> None:
        self.server = server
        self.backend = backend
        self.driver = driver
        self.tmp = tmp
        self.prefix = uuid.uuid4().hex[:8]  # thread ids unique in a shared database
        self.played = 0

    def job(self, sc: Scenario, spec: dict[str, Any], k: int) -> dict[str, Any]:
        first = k == 0
        return {
            "backend": self.backend.kind,
            "dsn": self.backend.dsn,
            "thread": self.thread,
            "log": str(self.log),
            "driver": self.driver,
            "input": spec,
            "trip": sc.trips[k] if 0 <= k < len(sc.trips) else None,
            "kill_after": sc.kill_after[k] if 0 <= k < len(sc.kill_after) else None,
            "retries": sc.retries,
            "client": sc.mode if first and sc.client_in_worker else None,
        }

    def play(self, sc: Scenario) -> Played:
        """Play ``sc`` on a new thread, with a client that sees only ``get_state()``."""
        self.played += 1
        self.thread = f"{self.prefix}-{self.played}-{sc.name}"
        self.log = self.tmp / f"{self.played}-{sc.name}.log"
        responses: list[dict[str, Any]] = []
        setup = [{"kind": "start", "for": "-"}]
        if sc.phase == "q2":
            setup.append({"kind": "resume", "value": ANSWERS["q1"], "for": "q1"})
        with self.backend.saver() as saver:
            graph = build(Log(os.devnull), lambda _: None, is_async=False)
            graph = graph.compile(checkpointer=saver)
            cfg = config(self.thread)
            for spec in setup:
                responses.append(self.server.run(self.job(sc, spec, -1)))
            for k in range(MAX_RUNS):
                spec = next_input(graph.get_state(cfg), sc.mode)
                if spec is None:
                    break
                responses.append(self.server.run(self.job(sc, spec, k)))
            else:
                pytest.fail(f"{sc.name}: the thread was not done after {MAX_RUNS} runs")
            final = graph.get_state(cfg)
            history = list(graph.get_state_history(cfg))
        return Played(responses, read_log(self.log), final, history, responses[len(setup)])

    def probe(self) -> dict[str, int]:
        """How many saver calls a run answering each question makes (no trip)."""
        played = self.play(Scenario("probe"))
        check(played, "probe")
        runs = [r for resp in played.responses for r in resp["runs"]]
        return {r["input"]["for"]: len(r["calls"]) for r in runs if r["input"]["for"] != "-"}


# --- the invariants -------------------------------------------------------------------


@dataclasses.dataclass
class Run:
    """One run, read back from the side-effect log."""

    tag: str
    question: str  # the question its input was for ("-": the start)
    lines: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    end: str | None = None  # None: killed

    @property
    def interrupted(self) -> bool:
        return self.end in (None, "cancelled", "lost")

    def saved(self, what: str) -> bool:
        return ("saved", what) in self.lines

    @property
    def worked(self) -> bool:
        return any(label in ("after-q1", "after-q2") for label, _ in self.lines)


def runs_of(log: list[tuple[str, str, str]]) -> list[Run]:
    runs: dict[str, Run] = {}
    for label, value, tag in log:
        if label == "run":
            runs[tag] = Run(tag, value)
        elif label == "end":
            runs[tag].end = value
        else:
            runs[tag].lines.append((label, value))
    return list(runs.values())


ENDS = {"-": "paused-q1", "q1": "paused-q2", "q2": "done"}
"""How a run that was not interrupted ends, by the question its input was for: each
answer takes the run exactly to the next question."""


def _resent(r: Run, saved_before: set[str]) -> bool:
    """A run that resent a consumed answer and returned the next pause, saved before."""
    return r.end == "paused-q2" and r.question == "q1" and "q2" in saved_before


def problems_of(runs: list[Run]) -> list[str]:
    """Every way the runs broke "one answer, one question" (empty: none)."""
    found: list[str] = []
    saved_before: set[str] = set()
    for r in runs:
        for label, value in r.lines:
            if label.startswith("after-") and value != ANSWERS[label.removeprefix("after-")]:
                found.append(f"run {r.tag}: {label[6:]} received {value!r}, not its answer")
        if not r.interrupted and r.end != ENDS[r.question] and not _resent(r, saved_before):
            found.append(f"run {r.tag} for {r.question} ended {r.end!r}")
        wanted = {"paused-q1": "q1", "paused-q2": "q2", "done": "done"}.get(r.end or "")
        # A resend of a consumed answer (by question id) returns the pause saved before.
        if wanted and not r.saved(wanted) and wanted not in saved_before:
            found.append(f"run {r.tag} ended {r.end!r} without saving it")
        saved_before.update(v for label, v in r.lines if label == "saved")
    saves = Counter(v for r in runs for label, v in r.lines if label == "saved")
    found += [f"{what!r} was saved {n} times" for what, n in saves.items() if n > 1]
    for question, result in (("q1", "q2"), ("q2", "done")):
        workers = [r for r in runs if r.question == question and r.worked]
        for r in workers[:-1]:  # each did the work after the answer; a later run did it again
            if not r.interrupted or r.saved(result):
                found.append(
                    f"the work after {question}'s answer ran again after run {r.tag}, "
                    f"which {'saved its result' if r.saved(result) else 'ended ' + repr(r.end)}"
                )
    return found


def problems_in(played: Played) -> list[str]:
    """Every invariant a played scenario broke: its runs, results and history."""
    problems = problems_of(runs_of(played.log))
    final = played.final
    if final.values != {"q1": "A1", "q2": "A2"} or final.next or final.tasks:
        problems.append(f"the thread ended as {final.values!r}, next={final.next!r}")
    for resp in played.responses:
        for r in resp["runs"]:
            if r["outcome"] == "done" and r["values"] != {"q1": "A1", "q2": "A2"}:
                problems.append(f"run {r['run']} returned {r['values']!r}")
            if r["outcome"] == "error":
                problems.append(f"run {r['run']} failed: {r['error']}")
        if resp["exit"] not in (0, None):
            problems.append(f"worker {resp['pid']} exited with {resp['exit']}")
    parents = Counter(
        s.parent_config["configurable"]["checkpoint_id"] for s in played.history if s.parent_config
    )
    problems += [f"checkpoint {c} has {n} children" for c, n in parents.items() if n > 1]
    problems += [
        f"a checkpoint holds {snap.values!r}"
        for snap in played.history
        if {**ANSWERS, **snap.values} != ANSWERS
    ]
    return problems


def check(played: Played, name: str) -> None:
    problems = problems_in(played)
    log = "\n".join(" ".join(line) for line in played.log)
    assert not problems, f"{name}: " + "; ".join(problems) + f"\nlog:\n{log}"


CLEAN_LOG = """
run - 1
saved q1 1
end paused-q1 1
run q1 2
after-q1 A1 2
run q1 3
after-q1 A1 3
asked-q2 - 3
saved q2 3
end paused-q2 3
run q2 4
after-q1 A1 4
after-q2 A2 4
saved done 4
"""


def log_of(text: str) -> list[tuple[str, str, str]]:
    return [(a, b, c) for a, b, c in (line.split() for line in text.strip().splitlines())]


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (("after-q2 A2 4", "after-q2 A1 4"), "run 4: q2 received 'A1', not its answer"),
        (
            ("end paused-q2 3", "end paused-q2 3\nrun q1 6\nafter-q1 A1 6\nend cancelled 6"),
            "after q1's answer ran again after run 3, which saved its result",
        ),
        (
            ("run q1 3", "end paused-q2 2\nrun q1 3"),
            "after q1's answer ran again after run 2, which ended 'paused-q2'",
        ),
        (("saved q2 3\n", ""), "run 3 ended 'paused-q2' without saving it"),
        (
            ("end paused-q1 1", "end paused-q1 1\nrun - 7\nsaved q1 7\nend paused-q1 7"),
            "'q1' was saved 2 times",
        ),
        (
            ("saved done 4", "end cancelled 4\nrun q2 5\nend paused-q2 5"),
            "run 5 for q2 ended 'paused-q2'",
        ),
        (("saved done 4", "saved done 4\nend error 4"), "run 4 for q2 ended 'error'"),
    ],
)
def test_the_checker_catches_each_broken_invariant(edit, problem):
    # A run killed before it saved (2), and one killed after (4), break nothing.
    assert problems_of(runs_of(log_of(CLEAN_LOG))) == []
    broken = CLEAN_LOG.replace(*edit)
    assert broken != CLEAN_LOG
    found = problems_of(runs_of(log_of(broken)))
    assert any(problem in p for p in found), found


def test_the_checker_catches_a_fork_and_a_wrong_value():
    def snap(values: dict[str, str], parent: str | None) -> Any:
        cfg = {"configurable": {"checkpoint_id": parent}} if parent else None
        return SimpleNamespace(values=values, parent_config=cfg, next=(), tasks=())

    final = snap({"q1": "A1", "q2": "A2"}, "b")
    history = [final, snap({"q1": "A1", "q2": "A1"}, "a"), snap({}, "a"), snap({}, None)]
    played = Played([], log_of(CLEAN_LOG), final, history, {})
    assert problems_in(played) == [
        "checkpoint a has 2 children",
        "a checkpoint holds {'q1': 'A1', 'q2': 'A1'}",
    ]


# --- the scenario families ------------------------------------------------------------


def call_points(probe: dict[str, int], whens: tuple[str, ...], action: str) -> Iterator[Scenario]:
    """A scenario per saver call of each question's run, per ``when``."""
    for question, calls in probe.items():
        for n in range(1, calls + 1):
            for when in whens:
                trip = {"call": n, "when": when, "action": action}
                yield Scenario(f"{action}-{question}-{when}-{n}", question, [trip])


def node_points(action: str) -> Iterator[Scenario]:
    """A scenario per side effect a run answering each question reaches."""
    for question, points in (("q1", ["after-q1"]), ("q2", ["after-q1", "after-q2"])):
        for point in points:
            trip = {"node": point, "action": action}
            yield Scenario(f"{action}-{question}-in-node-{point}", question, [trip])


def with_modes(scenarios: Iterator[Scenario], every: bool) -> Iterator[Scenario]:
    """Each scenario with one client mode in turn, or with every mode."""
    for i, sc in enumerate(scenarios):
        for mode in MODES if every else (MODES[i % len(MODES)],):
            yield dataclasses.replace(sc, name=f"{sc.name}-{mode}", mode=mode)


def play_all(stage: Stage, scenarios: Iterator[Scenario]) -> list[tuple[Scenario, Played]]:
    """Play and check each scenario."""
    played: list[tuple[Scenario, Played]] = []
    for sc in scenarios:
        p = stage.play(sc)
        check(p, sc.name)
        played.append((sc, p))
    return played


def rounds(stress: bool) -> int:
    return STRESS_ROUNDS if stress else 1


DRIVERS = ["sync", "async"]
STRESS = [
    pytest.param(False, id="once"),
    pytest.param(True, marks=pytest.mark.stress, id="stress"),
]


# --- SIGKILL --------------------------------------------------------------------------


@pytest.mark.parametrize("stress", STRESS)
@pytest.mark.parametrize("driver", DRIVERS)
def test_sigkill_at_every_saver_call_and_in_the_node(server, backend, driver, tmp_path, stress):
    stage = Stage(server, backend, driver, tmp_path)
    probe = stage.probe()
    for _ in range(rounds(stress)):
        scenarios = [
            *call_points(probe, ("before", "after"), "kill"),
            *node_points("kill"),
        ]
        for sc, played in play_all(stage, with_modes(iter(scenarios), every=stress)):
            assert played.first["signal"] == signal.SIGKILL, f"{sc.name}: no kill"


@pytest.mark.parametrize("stress", STRESS)
@pytest.mark.parametrize("driver", DRIVERS)
def test_sigkill_at_random_moments(server, backend, driver, tmp_path, stress):
    rng = random.Random(f"{SEED}-{backend.kind}-{driver}")
    stage = Stage(server, backend, driver, tmp_path)
    count = 6 * rounds(stress)
    for i in range(count):
        # Up to ~3 crashes in a row, during the resume and then during the recovery.
        chain = rng.randint(1, 3 if stress else 1)
        sc = Scenario(
            f"random-{i}",
            rng.choice(("q1", "q2")),
            kill_after=[rng.uniform(0.0, 0.06) for _ in range(chain)],
            mode=MODES[i % len(MODES)],
        )
        check(stage.play(sc), sc.name)


@pytest.mark.stress
@pytest.mark.parametrize("driver", DRIVERS)
def test_sigkill_again_during_the_recovery(server, backend, driver, tmp_path):
    """Chains of deterministic kills: the resume, then each resend, die at some call."""
    rng = random.Random(f"{SEED}-chain-{backend.kind}-{driver}")
    stage = Stage(server, backend, driver, tmp_path)
    probe = stage.probe()
    for i in range(10 * STRESS_ROUNDS):
        trips: list[dict[str, Any] | None] = []
        for _ in range(rng.randint(2, 4)):
            n = rng.randint(1, max(probe.values()))
            trips.append({"call": n, "when": rng.choice(("before", "after")), "action": "kill"})
        sc = Scenario(f"chain-{i}", rng.choice(("q1", "q2")), trips, mode=rng.choice(MODES))
        check(stage.play(sc), sc.name)


# --- asyncio cancellation -------------------------------------------------------------


@pytest.mark.parametrize("stress", STRESS)
def test_cancelled_ainvoke_at_every_saver_call_and_in_the_node(server, backend, tmp_path, stress):
    """The cancelled worker goes on as the client itself, on the same saver."""
    stage = Stage(server, backend, "async", tmp_path)
    probe = stage.probe()
    for _ in range(rounds(stress)):
        scenarios = [
            *call_points(probe, ("before", "during", "after"), "cancel"),
            *node_points("cancel"),
        ]
        in_worker = (dataclasses.replace(sc, client_in_worker=True) for sc in scenarios)
        for sc, played in play_all(stage, with_modes(in_worker, every=stress)):
            assert played.first_outcome() == "cancelled", f"{sc.name}: no cancellation"


@pytest.mark.parametrize("stress", STRESS)
def test_cancelled_ainvoke_after_random_delays(server, backend, tmp_path, stress):
    rng = random.Random(f"{SEED}-cancel-{backend.kind}")
    stage = Stage(server, backend, "async", tmp_path)
    for i in range(6 * rounds(stress)):
        trip = {"after": rng.uniform(0.0, 0.02), "action": "cancel"}
        sc = Scenario(
            f"cancel-random-{i}",
            rng.choice(("q1", "q2")),
            [trip],
            mode=MODES[i % len(MODES)],
            client_in_worker=bool(i % 2),
        )
        check(stage.play(sc), sc.name)


# --- pg_terminate_backend -------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.parametrize("stress", STRESS)
@pytest.mark.parametrize("driver", DRIVERS)
def test_terminated_connection_then_retry_on_a_fresh_one(server, pg, driver, tmp_path, stress):
    stage = Stage(server, pg, driver, tmp_path)
    probe = stage.probe()
    for _ in range(rounds(stress)):
        scenarios = [
            *call_points(probe, ("before", "after"), "terminate"),
            *node_points("terminate"),
        ]
        retrying = (dataclasses.replace(sc, retries=2) for sc in scenarios)
        for sc, played in play_all(stage, with_modes(retrying, every=stress)):
            # Ending the connection after a run's last call loses the run nothing.
            trip = sc.trips[0] or {}
            last = trip.get("call") == probe[sc.phase] and trip["when"] == "after"
            lost = played.first_outcome() == "lost"
            assert lost != last, f"{sc.name}: ended {played.first_outcome()!r}"
