"""Worker processes for tests/test_answer_crashes.py: resume a thread, die on cue.

Run as ``python tests/answer_worker.py``: a fork server. It imports pausepoint (and
psycopg) once, then reads one JSON job per line on stdin; for each job it forks a
child that opens its own saver connection, runs the job and exits, and it answers
one JSON line on stdout: the child's pid, how it ended (exit code or signal) and the
runs it reported. Forking a warm interpreter costs milliseconds where starting one
costs ~0.3 s, which is what makes hundreds of SIGKILLs affordable. The server opens
no connection and starts no thread, so forking it is safe.

The graph has one node. It asks ``"q1"``, appends ``after-q1 <answer> <run>`` to the
side-effect log, asks ``"q2"`` (appending ``asked-q2 - <run>`` when that pauses),
appends ``after-q2 <answer> <run>`` and returns both answers. ``<run>`` tags one
run (``pid.n``: a process may make several). Each run also appends ``run <question>
<run>`` when it starts (the question its input is for, ``-`` for the start) and
``end <how> <run>`` when it returns (``paused-q1``, ``paused-q2``, ``done``,
``cancelled``, ``lost``, ``error``); a killed run has no ``end``. The saver is
wrapped in a :class:`Tripwire` that appends ``saved <what> <run>`` once a saver call
that stores the node's pause on a question (``q1``, ``q2``) or its result (``done``)
has returned, so the log tells which run's work was durable when another run
repeated it. Every line is one
``write`` to an ``O_APPEND`` file: once it returns the line is in the kernel, so a
SIGKILL cannot lose it (``fsync`` would guard against a machine crash, which these
tests do not make, at ~4 ms a line).

A job's ``trip`` says where its first run is interrupted:

- ``{"call": N, "when": "before" | "after" | "during", "action": A}``: around the
  Nth saver call of the run (one of :data:`SAVER_CALLS`, sync or async alike; from 1). ``during``
  (``cancel`` only) cancels, then lets the call start: the cancellation lands at the
  call's first suspension, possibly with its statement in flight.
- ``{"node": "after-q1" | "after-q2", "action": A}``: in the node, just after that
  side effect.
- ``{"after": seconds, "action": "cancel"}``: that long after the run started.

A job's ``kill_after`` (seconds) has the server SIGKILL the child that long after
forking it, wherever it is.

Actions: ``kill`` (SIGKILL itself), ``cancel`` (cancel the ``ainvoke`` task; async
driver only), ``terminate`` (``pg_terminate_backend`` of the saver's connection, from
another connection; PostgreSQL only). A run that lost its connection is retried
with the same input on a fresh connection, up to ``retries`` times, as a worker
retrying its job would. With ``client`` set, the child then goes on as a client in
the same process, with the same saver, until the thread is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, TypedDict

from pausepoint.constants import INTERRUPT
from pausepoint.graph import END, START, StateGraph
from pausepoint.types import Command, interrupt

ANSWERS = {"q1": "A1", "q2": "A2"}
"""The client answers each question by its value: only what it was shown."""
SAVER_CALLS = frozenset(
    {"get_tuple", "commit", "put", "put_writes", "put_after_writes", "put_pair"}
    # Lease calls too, for an engine that takes a thread's lease during a run.
    | {"acquire_lease", "renew_lease", "release_lease"}
)


class State(TypedDict, total=False):
    q1: str
    q2: str


# --- the side-effect log --------------------------------------------------------------


RUN: contextvars.ContextVar[str] = contextvars.ContextVar("RUN", default="-")
"""The tag of the run (``pid.n``) whose code is running: a context variable, so that
a cancelled run's leftover task or thread still writes its own run's tag."""


class Log:
    """The side-effect log: one line per event, each one append."""

    def __init__(self, path: str) -> None:
        self.path = path

    def note(self, label: str, value: str) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{label} {value} {RUN.get()}\n".encode())
        finally:
            os.close(fd)


def read_log(path: Path) -> list[tuple[str, str, str]]:
    """The log's lines as ``(label, value, run)``, in order."""
    if not path.exists():
        return []
    return [tuple(line.split(" ")) for line in path.read_text().splitlines()]  # type: ignore[misc]


# --- the graph ------------------------------------------------------------------------


def build(log: Log, hook: Callable[[str], Any], *, is_async: bool) -> StateGraph[Any]:
    """The two-question graph; ``hook(point)`` runs after each side effect."""

    def asked(question: str) -> Any:
        try:
            return interrupt(question)
        except BaseException:  # the pause (GraphInterrupt): noted, then passed on
            log.note(f"asked-{question}", "-")
            raise

    def ask(_: State) -> dict[str, Any]:
        first = interrupt("q1")
        log.note("after-q1", first)
        hook("after-q1")
        second = asked("q2")
        log.note("after-q2", second)
        hook("after-q2")
        return {"q1": first, "q2": second}

    async def aask(_: State) -> dict[str, Any]:
        first = interrupt("q1")
        log.note("after-q1", first)
        await hook("after-q1")
        second = asked("q2")
        log.note("after-q2", second)
        await hook("after-q2")
        return {"q1": first, "q2": second}

    graph = StateGraph(State)
    graph.add_node("ask", aask if is_async else ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


# --- the client: it sees only get_state() ---------------------------------------------


def next_input(snapshot: Any, mode: str) -> dict[str, Any] | None:
    """What a client that sees only ``snapshot`` sends next; None when the run is done.

    A waiting question is answered by its value. An answered one (run pending) is
    resent (``mode`` ``resend``: a plain value, ``by-id``: keyed by its question id,
    ``Interrupt.question_id``, which names the question, not only its task) or
    continued with ``invoke(None)`` (``mode`` ``continue``). The input names the
    question it is for (``for``), which the worker writes in the log.
    """
    if not snapshot.next and not snapshot.tasks:
        return None if snapshot.values else {"kind": "start", "for": "-"}
    (task,) = snapshot.tasks
    if task.status == "ready":  # the input checkpoint: the node never ran
        return {"kind": "none", "for": "-"}
    if task.status == "waiting":
        question = task.interrupts[0]
    elif task.status == "answered" or (task.status == "failed" and task.answered):
        # Failed with its answer kept: a cancelled run stores CancelledError() (as
        # LangGraph does); the next run runs the node again with the answer.
        question = task.answered[0].interrupt
        if mode == "continue":
            return {"kind": "none", "for": question.value}
    else:
        raise AssertionError(f"a task in an unexpected state: {task!r}")
    answer = ANSWERS[question.value]
    if mode == "by-id":
        return {"kind": "resume", "by_id": {question.question_id: answer}, "for": question.value}
    return {"kind": "resume", "value": answer, "for": question.value}


def blind_retry_is_safe(spec: dict[str, Any] | None) -> bool:
    """Whether a run's input may be sent again as it is after a lost connection.

    Only an answer keyed by question id (``Interrupt.question_id``): if the first
    attempt went through and the node asked its next question, a plain value (or
    one keyed by the task's interrupt id) would answer that question. Any other
    retry reads the thread again first, as the docs advise.
    """
    return spec is not None and "by_id" in spec


def to_input(spec: dict[str, Any]) -> Any:
    """The graph input a JSON input spec stands for."""
    kind = spec["kind"]
    if kind == "start":
        return {}
    if kind == "none":
        return None
    return Command(resume=spec["by_id"] if "by_id" in spec else spec["value"])


def outcome(out: Any) -> dict[str, Any]:
    """A run's result as a report entry: paused on which questions, or done with what."""
    asked = [i.value for i in out.get("__interrupt__", ())]
    values = {k: v for k, v in out.items() if k != "__interrupt__"}
    return {"outcome": "paused" if asked else "done", "asked": asked, "values": values}


# --- the tripwire ---------------------------------------------------------------------


def saved_kind(name: str, args: tuple[Any, ...]) -> str | None:
    """What this saver call stores of the node's: ``q1``/``q2`` (its pause on that
    question), ``done`` (its result) or None."""
    groups: list[Any] = []
    values: dict[str, Any] = {}
    if name == "commit":  # pausepoint's one write: StepCommit
        groups = [tw.writes for tw in args[0].writes]
        if args[0].checkpoint is not None:
            values = args[0].checkpoint.checkpoint["channel_values"]
    elif name == "put_writes":
        groups = [args[1]]
    elif name == "put_after_writes":
        groups = [tw.writes for tw in args[1]]
        values = args[2]["channel_values"]
    elif name == "put_pair":
        groups = [tw.writes for tw in args[2]]
        values = args[3].checkpoint["channel_values"]
    elif name == "put":
        values = args[1]["channel_values"]
    writes = dict(w for ws in groups for w in ws)
    if "q2" in writes or "q2" in values:
        return "done"
    if INTERRUPT in writes:
        return str(writes[INTERRUPT][0].value)
    return None


class Tripwire:
    """A saver proxy that counts calls, logs durable results and trips at one point."""

    def __init__(self, inner: Any, trip: dict[str, Any] | None, act: Any, log: Log) -> None:
        self.inner = inner
        self.trip = trip
        self.act = act  # act(when) does the trip's action, sync or async
        self.log = log
        self.calls = 0
        self.names: list[str] = []  # the calls made, in order

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name in SAVER_CALLS:
            return self._sync(name, attr)
        if name.startswith("a") and name[1:] in SAVER_CALLS:
            return self._async(name[1:], attr)
        return attr

    def _at(self, when: str) -> bool:
        trip = self.trip
        return trip is not None and trip.get("call") == self.calls and trip["when"] == when

    def _saved(self, base: str, args: tuple[Any, ...]) -> None:
        kind = saved_kind(base, args)
        if kind is not None:
            self.log.note("saved", kind)

    def _sync(self, base: str, method: Any) -> Any:
        def call(*args: Any, **kw: Any) -> Any:
            self.calls += 1
            self.names.append(base)
            if self._at("before"):
                self.act("before")
            result = method(*args, **kw)
            self._saved(base, args)
            if self._at("after"):
                self.act("after")
            return result

        return call

    def _async(self, base: str, method: Any) -> Any:
        async def call(*args: Any, **kw: Any) -> Any:
            self.calls += 1
            self.names.append(base)
            for when in ("before", "during"):
                if self._at(when):
                    await self.act(when)
            result = await method(*args, **kw)
            self._saved(base, args)
            if self._at("after"):
                await self.act("after")
            return result

        return call


def kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)  # never reached: SIGKILL cannot be caught


def terminate_backend(dsn: str, backend_pid: int) -> None:
    """End a connection's server process from another connection, and wait for it."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s, 10000)", (backend_pid,))


# --- running a job in the child -------------------------------------------------------


class Child:
    """One forked child: runs a job's runs, reporting each as a JSON line."""

    def __init__(self, job: dict[str, Any], out: Any) -> None:
        self.job = job
        self.out = out
        self.log = Log(job["log"])
        self.cfg = config(job["thread"])
        self.runs = 0
        self.trip: dict[str, Any] | None = job.get("trip")
        self.inner: Any = None  # the saver of the run in progress, unwrapped
        self.task: asyncio.Task[Any] | None = None
        self.wire: Tripwire | None = None
        self.tripping: dict[str, Any] | None = None  # the trip of the run in progress

    def start_run(self, spec: dict[str, Any]) -> None:
        RUN.set(f"{os.getpid()}.{self.runs}")
        self.runs += 1
        self.log.note("run", spec.get("for", "-"))

    def report(self, spec: dict[str, Any], **entry: Any) -> None:
        asked = entry.get("asked")
        self.log.note("end", f"paused-{asked[0]}" if asked else entry["outcome"])
        entry = {"run": RUN.get(), "input": spec, "calls": self.wire.names, **entry}
        self.out.write(json.dumps(entry) + "\n")
        self.out.flush()

    def graph(self, saver: Any, *, is_async: bool) -> Any:
        """The graph on ``saver``; the job's first run only is tripped."""
        trip, self.trip = self.trip, None
        self.tripping = trip
        self.inner = saver
        act = self.aact(trip) if is_async else self.act(trip)

        def hook(point: str) -> Any:
            if trip is not None and trip.get("node") == point:
                return act(point)
            return asyncio.sleep(0) if is_async else None  # a cancelled run stops here

        self.wire = Tripwire(saver, trip, act, self.log)  # every run logs what it saved
        return build(self.log, hook, is_async=is_async).compile(checkpointer=self.wire)

    def failed(self, spec: dict[str, Any], exc: BaseException) -> bool:
        """Report a run that raised; False if it lost its connection (retry it)."""
        lost = is_lost_connection(exc)
        self.report(spec, outcome="lost" if lost else "error", error=repr(exc))
        if not lost:
            raise SystemExit(3)
        return False

    def backend_pid(self) -> int:
        return int(self.inner.conn.info.backend_pid)

    # sync ------------------------------------------------------------------------

    def act(self, trip: dict[str, Any] | None) -> Callable[[str], None]:
        def act(_: str) -> None:
            assert trip is not None
            if trip["action"] == "kill":
                kill_self()
            elif trip["action"] == "terminate":
                terminate_backend(self.job["dsn"], self.backend_pid())
            else:
                raise AssertionError(f"the sync driver cannot {trip['action']!r}")

        return act

    def run_sync(self) -> None:
        spec: dict[str, Any] | None = self.job["input"]
        for attempt in range(1 + self.job.get("retries", 0)):
            with open_sync(self.job) as saver:
                if attempt and not blind_retry_is_safe(spec):
                    spec = next_input(self.snapshot_sync(saver), self.job.get("client") or "")
                if spec is not None and not self.run_one_sync(
                    self.graph(saver, is_async=False), spec
                ):
                    continue  # the connection was lost: retry on a fresh one
                mode = self.job.get("client")
                while mode and (spec := next_input(self.snapshot_sync(saver), mode)):
                    self.run_one_sync(self.graph(saver, is_async=False), spec)
                return

    def snapshot_sync(self, saver: Any) -> Any:
        return self.graph(saver, is_async=False).get_state(self.cfg)

    def run_one_sync(self, graph: Any, spec: Any) -> bool:
        self.start_run(spec)
        try:
            out = graph.invoke(to_input(spec), self.cfg)
        except Exception as exc:
            return self.failed(spec, exc)
        self.report(spec, **outcome(out))
        return True

    # async -----------------------------------------------------------------------

    def aact(self, trip: dict[str, Any] | None) -> Callable[[str], Any]:
        async def act(when: str) -> None:
            assert trip is not None
            if trip["action"] == "cancel":
                assert self.task is not None
                self.task.cancel()
                # "during": the call goes on, and the cancellation lands at its
                # first suspension; otherwise it lands here.
                if when != "during":
                    await asyncio.sleep(0)
            elif trip["action"] == "kill":
                kill_self()
            else:
                await asyncio.to_thread(terminate_backend, self.job["dsn"], self.backend_pid())

        return act

    async def run_async(self) -> None:
        spec: dict[str, Any] | None = self.job["input"]
        for attempt in range(1 + self.job.get("retries", 0)):
            async with open_async(self.job) as saver:
                if attempt and not blind_retry_is_safe(spec):
                    snapshot = await self.snapshot_async(saver)
                    spec = next_input(snapshot, self.job.get("client") or "")
                if spec is not None and not await self.run_one_async(
                    self.graph(saver, is_async=True), spec
                ):
                    continue
                mode = self.job.get("client")
                while mode and (spec := next_input(await self.snapshot_async(saver), mode)):
                    await self.run_one_async(self.graph(saver, is_async=True), spec)
                return

    async def snapshot_async(self, saver: Any) -> Any:
        return await self.graph(saver, is_async=True).aget_state(self.cfg)

    async def run_one_async(self, graph: Any, spec: Any) -> bool:
        self.start_run(spec)
        self.task = asyncio.create_task(graph.ainvoke(to_input(spec), self.cfg))
        if self.tripping is not None and "after" in self.tripping:
            asyncio.get_running_loop().call_later(self.tripping["after"], self.task.cancel)
        try:
            out = await self.task
        except asyncio.CancelledError:
            self.report(spec, outcome="cancelled")
            return True
        except Exception as exc:
            return self.failed(spec, exc)
        self.report(spec, **outcome(out))
        return True


def is_lost_connection(exc: BaseException) -> bool:
    """Whether ``exc`` says the saver's PostgreSQL connection is gone."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - SQLite-only environments
        return False
    return isinstance(exc, psycopg.OperationalError)


@contextlib.contextmanager
def open_sync(job: dict[str, Any]) -> Iterator[Any]:
    if job["backend"] == "sqlite":
        from pausepoint.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(job["dsn"]) as saver:
            yield saver
        return
    from pausepoint.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(job["dsn"]) as saver:
        yield saver


@contextlib.asynccontextmanager
async def open_async(job: dict[str, Any]) -> AsyncIterator[Any]:
    if job["backend"] == "sqlite":
        from pausepoint.checkpoint.sqlite import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(job["dsn"]) as saver:
            yield saver
        return
    from pausepoint.checkpoint.postgres import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(job["dsn"]) as saver:
        yield saver


# --- the fork server ------------------------------------------------------------------


def run_child(job: dict[str, Any], write_fd: int) -> None:
    """The forked child's whole life: run the job, report, exit without cleanup."""
    code = 0
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # the server's stdout carries the protocol: keep it clean
        with os.fdopen(write_fd, "w") as out:
            child = Child(job, out)
            if job["driver"] == "sync":
                child.run_sync()
            else:
                asyncio.run(child.run_async())
    except SystemExit as exc:
        code = int(exc.code or 0)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 4
    os._exit(code)


def fork_job(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job in a forked child; its pid, how it ended and what it reported."""
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        run_child(job, write_fd)
    os.close(write_fd)
    kill_after = job.get("kill_after")
    if kill_after is not None:
        time.sleep(kill_after)
        os.kill(pid, signal.SIGKILL)
    with os.fdopen(read_fd) as reports:
        runs = [json.loads(line) for line in reports if line.endswith("\n")]
    _, status = os.waitpid(pid, 0)
    return {
        "pid": pid,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "runs": runs,
    }


def warm_up() -> None:
    """Import (pausepoint imports lazily) and run what a child needs, once, before forking.

    An async run on an in-memory saver starts no thread (a sync run would start the
    sync driver's shared pool, whose threads a forked child would not have).
    """
    import importlib
    import threading

    from pausepoint.checkpoint.memory import InMemorySaver

    for module in ("sqlite3", "pausepoint.checkpoint.sqlite", "pausepoint.drivers.sync"):
        importlib.import_module(module)
    with contextlib.suppress(ImportError):  # PostgreSQL is optional
        importlib.import_module("pausepoint.checkpoint.postgres")
        importlib.import_module("psycopg")

    async def hook(_: str) -> None:
        pass

    graph = build(Log(os.devnull), hook, is_async=True).compile(checkpointer=InMemorySaver())
    for spec in ({"kind": "start"}, {"kind": "resume", "value": "A1"}):
        asyncio.run(graph.ainvoke(to_input(spec), config("warm-up")))
    graph.get_state(config("warm-up"))
    assert threading.active_count() == 1, "the fork server must stay single-threaded"


def serve() -> None:
    """Answer jobs read from stdin, one JSON line each, until stdin closes."""
    warm_up()
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        print(json.dumps(fork_job(json.loads(line))), flush=True)


if __name__ == "__main__":
    serve()
