"""A cold ``get_state`` and a whole history of a long SQLite chat (issue 32, chain42).

    python benchmarks/storage_cold.py build FILE TURNS
    valgrind --tool=callgrind --instr-atstart=no python benchmarks/storage_cold.py \\
        cold FILE CALLS
    valgrind --tool=callgrind --instr-atstart=no python benchmarks/storage_cold.py \\
        resume COPY CALLS
    python benchmarks/storage_cold.py history FILE [ROUNDS]
    python benchmarks/storage_cold.py time FILE [READS]

``build``: ``storage.py``'s chat thread of TURNS turns in a new SQLite file
(``synchronous=OFF``: only the rows matter), or in an empty PostgreSQL database when
FILE is a ``postgresql://`` URL. ``cold``: two reads through new savers
(warming the database's cache and the imports), then callgrind's instrumentation on
(``callgrind_control``) around CALLS more, each through a saver object of its own on
the same connection (nothing cached: what another process reads); "Collected" in
valgrind's output is their instructions, with the switching's (run CALLS=0 to see
it). ``resume``: one turn more through a saver that read the head (warming it), then
CALLS turns under instrumentation: what a writer pays a turn (it adds turns: give it
a copy of the file). ``history``: the wall time of reading the whole history (every
snapshot) through a new saver, ROUNDS times, the time to its first snapshot, and the
process's peak resident set after the first and after the last (one process per
measurement for the peaks: they never go down). ``time``: the median wall time of READS
cold reads.
Run each tree with ``PYTHONPATH`` at its ``src`` and ``PYTHONHASHSEED=0``.
"""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import load_library
from storage import _config, _text, chat_graph  # pyright: ignore[reportPrivateUsage]


def _connect(path: str) -> Any:
    """A SQLite file's connection, or PostgreSQL's for a ``postgresql://`` URL."""
    if not path.startswith("postgresql://"):
        return sqlite3.connect(path, check_same_thread=False)
    import psycopg

    return psycopg.connect(path, autocommit=True, prepare_threshold=0)


def _graph(conn: Any) -> Any:
    if isinstance(conn, sqlite3.Connection):
        from pausepoint.checkpoint.sqlite import SqliteSaver

        return chat_graph(load_library("pausepoint"), SqliteSaver(conn))
    from pausepoint.checkpoint.postgres import PostgresSaver

    saver = PostgresSaver(conn)
    saver.setup()
    return chat_graph(load_library("pausepoint"), saver)


def build(path: str, turns: int) -> None:
    lib = load_library("pausepoint")
    conn = _connect(path)
    graph = _graph(conn)
    if isinstance(conn, sqlite3.Connection):
        conn.execute("PRAGMA synchronous=OFF")
    config = _config("chat")
    graph.invoke({"messages": []}, config)
    for turn in range(1, turns + 1):
        graph.invoke(lib.Command(resume=_text(f"user {turn}")), config)
    if isinstance(conn, sqlite3.Connection):
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def cold(path: str, calls: int) -> None:
    conn = _connect(path)
    graphs = [_graph(conn) for _ in range(calls + 2)]
    for graph in graphs[:2]:
        graph.get_state(_config("chat"))
    switch = ["callgrind_control", "-i"]
    subprocess.run([*switch, "on", str(os.getpid())], check=True, capture_output=True)
    for graph in graphs[2:]:
        graph.get_state(_config("chat"))
    subprocess.run([*switch, "off", str(os.getpid())], check=True, capture_output=True)


def resume(path: str, calls: int) -> None:
    lib = load_library("pausepoint")
    graph = _graph(_connect(path))
    graph.get_state(_config("chat"))
    graph.invoke(lib.Command(resume=_text("warm")), _config("chat"))
    switch = ["callgrind_control", "-i"]
    subprocess.run([*switch, "on", str(os.getpid())], check=True, capture_output=True)
    for n in range(calls):
        graph.invoke(lib.Command(resume=_text(f"more {n}")), _config("chat"))
    subprocess.run([*switch, "off", str(os.getpid())], check=True, capture_output=True)


def history(path: str, rounds: int) -> None:
    conn = _connect(path)
    for _ in range(rounds):
        graph = _graph(conn)
        start = time.perf_counter()
        snapshots = iter(graph.get_state_history(_config("chat")))
        next(snapshots)
        first, first_rss = time.perf_counter() - start, _peak_mb()
        count = 1 + sum(1 for _ in snapshots)
        took = time.perf_counter() - start
        print(
            f"history: {count} snapshots in {took:.2f} s ({took / count * 1e3:.2f} ms each); "
            f"the first after {first * 1e3:.0f} ms (peak RSS {first_rss:.0f} MB then), "
            f"peak RSS {_peak_mb():.0f} MB"
        )


def _peak_mb() -> float:
    """This process's peak resident set so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def timed(path: str, reads: int) -> None:
    conn = _connect(path)
    times: list[float] = []
    for _ in range(reads):
        graph = _graph(conn)
        start = time.perf_counter()
        graph.get_state(_config("chat"))
        times.append(time.perf_counter() - start)
    print(f"cold get_state: median {median(times) * 1e3:.2f} ms, min {min(times) * 1e3:.2f} ms")


def main(argv: list[str]) -> int:
    what, path = argv[0], argv[1]
    if what == "build":
        build(path, int(argv[2]))
    elif what == "cold":
        cold(path, int(argv[2]))
    elif what == "resume":
        resume(path, int(argv[2]))
    elif what == "history":
        history(path, int(argv[2]) if len(argv) > 2 else 1)
    else:
        timed(path, int(argv[2]) if len(argv) > 2 else 21)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
