"""Where a SQLite resume's time goes with W worker processes: sqlite3 calls, on and off CPU.

    PYTHONPATH=src python benchmarks/sqlite_waits.py pausepoint 8 1000
    python benchmarks/sqlite_waits.py langgraph 8 1000

The throughput workload's shape (``resumer.py``): W forked workers pause their share
of N threads (without fsyncs), the WAL is checkpointed, then all resume together. Every
``execute``/``executemany``/``commit`` of the workers' connections is timed twice
during the resumes: wall (``perf_counter``) and the thread's CPU (``thread_time``).
Wall minus CPU is the time the call spent off the CPU: waiting for SQLite's write
lock (its busy handler sleeps), an fsync, or another process on the cores. Prints
resumes/s and, per statement kind, calls, wall and off-CPU milliseconds per resume
(summed over the workers). Issue 35: 8 workers spent ~26 ms a resume asleep in
``BEGIN IMMEDIATE`` before the writers' queue (``_sqlite_writers``).

On pausepoint it also times the writers' queue: how long a worker waited for its turn
and how long it held it (from the turn taken to the turn given back: ``BEGIN
IMMEDIATE``, the statements, ``COMMIT``), per resume. The turn is held by one worker
of the file at a time, so the held time over all workers bounds the resumes per
second: 1 / (held per resume).
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from typing import Any, TypedDict

STATS: dict[str, list[float]] = {}  # kind -> [calls, wall seconds, cpu seconds]


class Asked(TypedDict):
    question: str
    answer: str


def _kind(sql: str) -> str:
    """``INSERT``, ``BEGIN IMMEDIATE``, ``PRAGMA SYNCHRONOUS=OFF``, ...: what a row shows."""
    words = sql.upper().split(None, 2) or ["?"]
    return " ".join(words[:2]) if words[0] in ("BEGIN", "PRAGMA") else words[0]


@contextmanager
def _timed(sql: str) -> Iterator[None]:
    wall, cpu = time.perf_counter(), time.thread_time()
    try:
        yield
    finally:
        seen = STATS.setdefault(_kind(sql), [0, 0.0, 0.0])
        seen[0] += 1
        seen[1] += time.perf_counter() - wall
        seen[2] += time.thread_time() - cpu


class TimedCursor(sqlite3.Cursor):
    def execute(self, sql: str, *args: Any) -> Any:  # type: ignore[override]
        with _timed(sql):
            return super().execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:  # type: ignore[override]
        with _timed(sql):
            return super().executemany(sql, *args)


class TimedConnection(sqlite3.Connection):
    def execute(self, sql: str, *args: Any) -> Any:  # type: ignore[override]
        with _timed(sql):
            return super().execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:  # type: ignore[override]
        with _timed(sql):
            return super().executemany(sql, *args)

    def commit(self) -> None:
        with _timed("commit()"):
            super().commit()

    def cursor(self, *args: Any) -> Any:  # type: ignore[override]
        return super().cursor(TimedCursor)


def build(lib: str, path: str) -> tuple[sqlite3.Connection, Any, Any]:
    """A connection (timed), the one-question graph on it, and the library's Command."""
    conn = sqlite3.connect(path, check_same_thread=False, timeout=60, factory=TimedConnection)
    if lib == "pausepoint":
        from pausepoint import END, START, Command, StateGraph, interrupt
        from pausepoint.checkpoint.sqlite import SqliteSaver

        saver: Any = SqliteSaver(conn)
        _time_turns(saver)
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver as LangGraphSaver
        from langgraph.graph import END, START, StateGraph
        from langgraph.types import Command, interrupt

        saver = LangGraphSaver(conn)
        saver.setup()

    def ask(state: Asked) -> dict[str, str]:
        return {"answer": interrupt(state["question"])}

    builder = StateGraph(Asked)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return conn, builder.compile(checkpointer=saver), Command


class _TimedTurns:
    """A saver's writers' queue (``_sqlite_writers.WriterTurns``), timed into STATS."""

    def __init__(self, turns: Any) -> None:
        self._turns, self._taken, self._cpu = turns, 0.0, 0.0

    def take(self) -> int:
        asked = time.perf_counter()
        fd = self._turns.take()
        self._taken, self._cpu = time.perf_counter(), time.thread_time()
        seen = STATS.setdefault("(turn: waited)", [0, 0.0, 0.0])
        seen[0] += 1
        seen[1] += self._taken - asked
        return fd

    def give(self, fd: int) -> None:
        seen = STATS.setdefault("(turn: held)", [0, 0.0, 0.0])
        seen[0] += 1
        seen[1] += time.perf_counter() - self._taken
        seen[2] += time.thread_time() - self._cpu
        self._turns.give(fd)

    def close(self) -> None:
        self._turns.close()


def _time_turns(saver: Any) -> None:
    turns = getattr(saver, "_turns", None)  # a private part: this is a probe
    if turns is not None:
        saver._turns = _TimedTurns(turns)


def work(lib: str, path: str, ids: list[str], pipe: Connection) -> None:
    conn, graph, command = build(lib, path)
    conn.execute("PRAGMA synchronous=OFF")  # the untimed pausing, as resumer.py does
    for thread in ids:
        graph.invoke({"question": thread, "answer": ""}, {"configurable": {"thread_id": thread}})
    conn.execute("PRAGMA synchronous=FULL")
    STATS.clear()
    pipe.send("ready")
    pipe.recv()
    cpu = time.process_time()
    for thread in ids:
        out = graph.invoke(command(resume=f"a{thread}"), {"configurable": {"thread_id": thread}})
        assert out["answer"] == f"a{thread}", out
    pipe.send({"end": time.monotonic(), "cpu": time.process_time() - cpu, "stats": STATS})


def main(argv: list[str]) -> int:
    lib, workers, threads = argv[0], int(argv[1]), int(argv[2])
    path = os.path.join(tempfile.mkdtemp(), "waits.db")
    build(lib, path)[0].close()  # the tables, and the library imported before the forks
    fork = multiprocessing.get_context("fork")
    pipes = [fork.Pipe() for _ in range(workers)]
    procs = [
        fork.Process(
            target=work, args=(lib, path, [f"t{k}" for k in range(i, threads, workers)], theirs)
        )
        for i, (_, theirs) in enumerate(pipes)
    ]
    for proc in procs:
        proc.start()
    for ours, _ in pipes:
        assert ours.recv() == "ready"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    conn.close()
    start = time.monotonic()
    for ours, _ in pipes:
        ours.send("go")
    reports = [ours.recv() for ours, _ in pipes]
    for proc in procs:
        proc.join()
    _print(lib, workers, threads, start, reports)
    return 0


def _print(lib: str, workers: int, n: int, start: float, reports: list[Any]) -> None:
    wall = max(r["end"] for r in reports) - start
    cpu = sum(r["cpu"] for r in reports)
    print(f"{lib}, {workers} workers, {n} resumes: {n / wall:,.0f}/s; CPU {cpu / n * 1e3:.2f} ms")
    total: dict[str, list[float]] = {}
    for report in reports:
        for kind, seen in report["stats"].items():
            into = total.setdefault(kind, [0, 0.0, 0.0])
            for i in range(3):
                into[i] += seen[i]
    print("  statement              calls  wall ms  off-CPU ms  (per resume, all workers)")
    for kind, (calls, spent, on_cpu) in sorted(total.items(), key=lambda kv: -kv[1][1]):
        off = (spent - on_cpu) / n * 1e3
        print(f"  {kind[:22]:22s} {calls / n:5.2f}  {spent / n * 1e3:7.3f}  {off:10.3f}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
