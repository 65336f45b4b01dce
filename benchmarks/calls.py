"""Python calls per resume (cProfile): one-question graph, SQLite file or PostgreSQL.

    PYTHONPATH=src python benchmarks/calls.py sqlite
    PYTHONPATH=src PAUSEPOINT_PG_URL=postgresql://... python benchmarks/calls.py postgres --top 30

Pauses N + 5 threads, resumes 5 (warm-up: statements prepared, caches filled), then
profiles the resumes of the other N and prints ``total_calls / N``: the function calls
one resume makes, builtins included, deterministic for a given tree (issue 35's
"Python calls per resume"). ``--top`` also prints the functions called most.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sqlite3
import sys
import tempfile
import uuid
from typing import Any, TypedDict


class Asked(TypedDict):
    answer: str


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("database", choices=["sqlite", "postgres"])
    parser.add_argument("--resumes", type=int, default=200)
    parser.add_argument("--top", type=int, default=0)
    args = parser.parse_args(argv)
    from pausepoint import END, START, Command, StateGraph, interrupt

    def ask(state: Asked) -> dict[str, str]:
        return {"answer": interrupt("q?")}

    conn: Any
    schema = f"calls_{uuid.uuid4().hex[:8]}"
    if args.database == "sqlite":
        from pausepoint.checkpoint.sqlite import SqliteSaver

        path = os.path.join(tempfile.mkdtemp(), "calls.db")
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        saver: Any = SqliteSaver(conn)
    else:
        import psycopg

        from pausepoint.checkpoint.postgres import PostgresSaver

        conn = psycopg.connect(os.environ["PAUSEPOINT_PG_URL"], autocommit=True)
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"SET search_path TO {schema}")
        saver = PostgresSaver(conn)
        saver.setup()
    builder = StateGraph(Asked)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(checkpointer=saver)
    n = args.resumes
    for i in range(n + 5):
        graph.invoke({"answer": ""}, {"configurable": {"thread_id": f"t{i}"}})
    for i in range(n, n + 5):
        graph.invoke(Command(resume="y"), {"configurable": {"thread_id": f"t{i}"}})
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(n):
        graph.invoke(Command(resume="y"), {"configurable": {"thread_id": f"t{i}"}})
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_calls  # type: ignore[attr-defined]
    print(f"{args.database}: {total / n:,.0f} Python calls per resume ({n} resumes)")
    if args.top:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("ncalls").print_stats(args.top)
        print(out.getvalue())
    if args.database == "postgres":
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
    conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
