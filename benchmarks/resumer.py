"""Child process of the throughput workloads (see ``throughput.py``).

    python benchmarks/resumer.py LIB KIND TARGET PREFIX WORKERS THREADS

Imports LIB, makes its schema on TARGET (KIND sqlite: a file; postgres: a URL), then
forks WORKERS worker processes: the library is imported once, not once a worker,
and the forks start from a process that has run no graph and holds no connection
or thread. Worker ``index`` owns the thread ids ``PREFIX-k`` for k = index,
index + WORKERS, ... below THREADS. Each opens its own saver, pauses its threads
(each asks one question through interrupt(); on SQLite without an fsync per commit,
which only this untimed set-up skips) and reports ready. Once all are ready (and,
on SQLite, the WAL has been checkpointed into the database file), this process
releases them together; each resumes its threads once with ``Command(resume=...)``
and reports its finish time (``time.monotonic``). On PostgreSQL, the run's tables
live in a schema of its own (``cases.pg_schema``), dropped at the end with every
thread in it; the parent of this process removes a SQLite file whole.
Prints one JSON line: the wall time from the release to the last finish, the
resumes that returned their answer, the node runs, the first wrong result; or
``{"error": ...}``.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import sqlite3
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from cases import ask_graph, config, load_library, open_saver, pg_schema

WAIT = 600.0  # seconds a worker may take for one phase before the run is abandoned
# sqlite3's default busy timeout is 5 s. With eight processes committing on one
# file of a loaded machine, a worker sometimes waited longer for the write lock
# ("database is locked" at pausepoint's BEGIN IMMEDIATE while resuming, 3 runs in 14
# at load ~7). A deployment of several workers on one SQLite file would wait longer,
# as both libraries' connections do here.
BUSY_TIMEOUT = 60.0


@dataclass(frozen=True)
class Job:
    lib: SimpleNamespace
    kind: str
    target: str
    schema: str | None  # PostgreSQL's, for this run
    ids: list[str]

    def saver(self, busy_timeout: float = 5.0) -> Any:
        return open_saver(self.lib, self.kind, self.target, busy_timeout, self.schema)


# --------------------------------------------------------------------------- worker


@contextlib.contextmanager
def no_fsync(saver: Any, kind: str) -> Iterator[None]:
    """SQLite's ``synchronous=OFF`` on the saver's connection, then its setting back.

    Pausing thousands of threads commits thousands of times; without the fsyncs the
    set-up takes a fraction of the time. The timed phase runs with each library's
    own setting, from a database whose WAL was checkpointed (``checkpoint_wal``).
    """
    if kind != "sqlite":
        yield
        return
    (before,) = saver.conn.execute("PRAGMA synchronous").fetchone()
    saver.conn.execute("PRAGMA synchronous=OFF")
    try:
        yield
    finally:
        saver.conn.execute(f"PRAGMA synchronous={int(before)}")


def pause(graph: Any, ids: list[str]) -> str | None:
    for thread in ids:
        out = graph.invoke({"question": f"q-{thread}", "answer": ""}, config(thread))
        asked = [x.value for x in out.get("__interrupt__", [])]
        if asked != [f"q-{thread}"]:
            return f"pausing {thread!r} asked {asked!r}, expected one question"
    return None


def resume(lib: SimpleNamespace, graph: Any, ids: list[str]) -> tuple[int, str | None]:
    done, problem = 0, None
    for thread in ids:
        out = graph.invoke(lib.Command(resume=f"a-{thread}"), config(thread))
        if out.get("answer") == f"a-{thread}" and "__interrupt__" not in out:
            done += 1
        elif problem is None:
            problem = f"resuming {thread!r} returned {out!r}"
    return done, problem


def _wait(pipe: Connection) -> str:
    # A parent that went away (or gave up) reads as "stop".
    try:
        return pipe.recv() if pipe.poll(WAIT) else "stop"
    except EOFError:
        return "stop"


def work(job: Job, pipe: Connection) -> None:
    """One worker process: pause its threads, wait for the release, resume them."""
    phase = "opening the saver"
    try:
        saver = job.saver(BUSY_TIMEOUT)
        runs = [0]
        graph = ask_graph(job.lib, saver, runs)
        phase = "pausing (set-up)"
        with no_fsync(saver, job.kind):
            problem = pause(graph, job.ids)
        pipe.send({"problem": problem})
        if _wait(pipe) != "go":
            return
        phase = "resuming (timed)"
        start = time.monotonic()
        resumed, problem = resume(job.lib, graph, job.ids)
        end = time.monotonic()
        report = {"start": start, "end": end, "resumed": resumed, "problem": problem}
        pipe.send({**report, "node_runs": runs[0]})
    except Exception as exc:
        with contextlib.suppress(OSError):
            pipe.send({"error": _describe(exc, phase)})


def _describe(exc: Exception, phase: str) -> str:
    return f"{type(exc).__name__}: {exc} ({phase}; at {_where(exc)})"


def _where(exc: Exception) -> str:
    # The innermost frame: which saver call failed, e.g. a SQLite busy timeout.
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}"


# --------------------------------------------------------------------------- parent


def checkpoint_wal(path: str) -> None:
    """Move SQLite's WAL into the database file (synced) and empty it.

    The workers paused their threads without fsyncs: this way the timed phase starts
    from one state on both libraries, and its first fsync does not pay for the
    set-up's writes.
    """
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        conn.close()


def _receive(pipe: Connection) -> dict[str, Any]:
    if not pipe.poll(WAIT):
        raise RuntimeError(f"a throughput worker said nothing for {WAIT:.0f}s")
    try:
        message = pipe.recv()
    except EOFError:
        raise RuntimeError("a throughput worker exited early") from None
    if "error" in message:
        raise RuntimeError(f"a throughput worker failed: {message['error']}")
    return message


def _tell(pipes: list[Connection], word: str) -> None:
    for pipe in pipes:
        with contextlib.suppress(OSError):  # it died: its _receive says so
            pipe.send(word)


def run(
    library: str, kind: str, target: str, prefix: str, workers: int, threads: int
) -> dict[str, Any]:
    lib = load_library(library)
    with contextlib.ExitStack() as stack:
        schema = stack.enter_context(pg_schema(target)) if kind == "postgres" else None
        jobs = [
            Job(lib, kind, target, schema, [f"{prefix}-{k}" for k in range(i, threads, workers)])
            for i in range(workers)
        ]
        return _run(jobs)


def _run(jobs: list[Job]) -> dict[str, Any]:
    """Fork a worker per job, release them together, gather what they did."""
    jobs[0].saver().conn.close()  # the tables, made once before any worker starts
    fork = multiprocessing.get_context("fork")  # workers inherit the imported library
    pipes = [fork.Pipe() for _job in jobs]
    procs = [
        fork.Process(target=work, args=(job, theirs))
        for job, (_, theirs) in zip(jobs, pipes, strict=True)
    ]
    mine = [ours for ours, _ in pipes]
    for proc in procs:
        proc.start()
    try:
        readies = [_receive(pipe) for pipe in mine]
        if jobs[0].kind == "sqlite":
            checkpoint_wal(jobs[0].target)
        released = time.monotonic()
        _tell(mine, "go")
        reports = [_receive(pipe) for pipe in mine]
    finally:
        _tell(mine, "stop")  # no-op unless something failed: waiting workers end
        for proc in procs:
            proc.join(WAIT)
            if proc.is_alive():
                proc.kill()
    problems = [r["problem"] for r in readies + reports if r["problem"]]
    return {
        "wall": max(r["end"] for r in reports) - released,
        "resumed": sum(r["resumed"] for r in reports),
        "node_runs": sum(r["node_runs"] for r in reports),
        "problem": problems[0] if problems else None,
    }


def main(argv: list[str]) -> int:
    library, kind, target, prefix, workers, threads = argv
    try:
        found = run(library, kind, target, prefix, int(workers), int(threads))
    except Exception as exc:
        # The RuntimeErrors above already say what failed.
        what = "" if isinstance(exc, RuntimeError) else f"{type(exc).__name__}: "
        found = {"error": f"{what}{exc}"}
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
