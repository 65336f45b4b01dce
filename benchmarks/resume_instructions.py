"""Client instructions per resume (callgrind): one-question graph, SQLite file or PostgreSQL.

    PYTHONPATH=src python benchmarks/resume_instructions.py sqlite
    PAUSEPOINT_PG_URL=postgresql://... python benchmarks/resume_instructions.py postgres

One resume of the throughput workload (``throughput.py``): claim the lease and read
the head, run the node, commit the writes and the checkpoint, let the lease go. The
script runs twice under ``valgrind --tool=callgrind`` (``PYTHONHASHSEED=0``): both
pause ``RESUMES + 5`` threads and resume 5 (statements prepared, caches filled), one
then resumes the other ``RESUMES``; the difference divided by ``RESUMES`` is the
process's instructions per resume, pausing and start-up excluded. Unlike
``instructions.py roundtrip/...`` (a pause and a resume) it counts the resume alone,
the throughput benchmark's timed phase; ``pg_instructions.py`` adds PostgreSQL's own.
Deterministic for a given tree (within ~0.1 %), whatever the machine's load.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any, TypedDict

RESUMES = 200
WARM = 5


class Asked(TypedDict):
    answer: str


def inner(database: str, resumes: int) -> None:
    """Inside callgrind: pause, warm up, then resume ``resumes`` threads."""
    from pausepoint import END, START, Command, StateGraph, interrupt

    def ask(state: Asked) -> dict[str, str]:
        return {"answer": interrupt("q?")}

    conn: Any
    schema = f"ri_{uuid.uuid4().hex[:8]}"
    if database == "sqlite":
        from pausepoint.checkpoint.sqlite import SqliteSaver

        path = os.path.join(tempfile.mkdtemp(), "resumes.db")
        conn = sqlite3.connect(path, check_same_thread=False)
        saver: Any = SqliteSaver(conn)
    else:
        import psycopg

        from pausepoint.checkpoint.postgres import PostgresSaver

        url = os.environ["PAUSEPOINT_PG_URL"]
        conn = psycopg.connect(url, autocommit=True, prepare_threshold=0)
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"SET search_path TO {schema}")
        saver = PostgresSaver(conn)
        saver.setup()
    builder = StateGraph(Asked)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(checkpointer=saver)
    for i in range(RESUMES + WARM):
        graph.invoke({"answer": ""}, {"configurable": {"thread_id": f"t{i}"}})
    for i in [*range(RESUMES, RESUMES + WARM), *range(resumes)]:
        graph.invoke(Command(resume="y"), {"configurable": {"thread_id": f"t{i}"}})
    if database == "postgres":
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
    conn.close()


def count(database: str, resumes: int) -> int:
    """Instructions of a whole interpreter that pauses, warms up, resumes ``resumes``."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg"]
        cmd += [sys.executable, str(Path(__file__).resolve()), database, "--inner", str(resumes)]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    found = re.findall(r"Collected : (\d+)", done.stderr)
    if not found:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found[-1])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("database", choices=["sqlite", "postgres"])
    parser.add_argument("--inner", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner is not None:
        inner(args.database, args.inner)
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt install valgrind)", file=sys.stderr)
        return 1
    per = (count(args.database, RESUMES) - count(args.database, 0)) / RESUMES
    print(f"{args.database}: {per:,.0f} instructions per resume (client, {RESUMES} resumes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
