"""Instructions per resume on PostgreSQL: the server's and the client's (callgrind).

    python benchmarks/pg_instructions.py                 # this checkout's src/
    python benchmarks/pg_instructions.py src /tmp/base/src --resumes 200

Resume throughput on PostgreSQL is CPU-bound on a small machine, and the CPU is split
between the worker (Python) and its server backend. Wall time and /proc CPU times on
a shared 2-core VM move by 1.5-2x between runs; instruction counts do not. For each
source tree this script:

- server: starts a throwaway PostgreSQL under ``valgrind --tool=callgrind
  --trace-children=yes`` (initdb into a temporary directory, ``fsync=off``, autovacuum
  off, port 54391), pauses N threads of a one-question graph on one connection, then
  resumes them on a fresh connection and closes it: that backend's callgrind total,
  less that of a connection that resumes only the first few (warming its plans and
  prepared statements up, as the other does), divided by N;
- client: the same script, itself under callgrind, runs twice, with and without the
  resumes: the difference divided by N (the pausing and the connections cancel out).

Needs valgrind and PostgreSQL's binaries (``scripts/postgres.sh`` finds them); run as
root, it runs the server as the ``postgres`` user. Takes about a minute per tree.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Generator
from pathlib import Path
from typing import TypedDict

HERE = Path(__file__).resolve().parent
PORT = 54391
WARM = 10


class Asked(TypedDict):
    answer: str


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("trees", nargs="*", default=[str(HERE.parent / "src")])
    parser.add_argument("--resumes", type=int, default=200)
    parser.add_argument("--inner", nargs=3, metavar=("URL", "N", "MODE"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def inner(url: str, n: int, mode: str) -> None:
    """Pause ``n`` (+ ``WARM``) threads; resume them on a new connection (``resume``) or not."""
    import psycopg  # the tree under test is first on sys.path (PYTHONPATH)
    from psycopg import sql

    from pausepoint import END, START, Command, StateGraph, interrupt
    from pausepoint.checkpoint.postgres import PostgresSaver

    def ask(state: Asked) -> dict[str, str]:
        return {"answer": interrupt("q?")}

    def app(conn: psycopg.Connection[tuple[object, ...]]) -> object:
        graph = StateGraph(Asked)
        graph.add_node("ask", ask)
        graph.add_edge(START, "ask")
        graph.add_edge("ask", END)
        return graph.compile(checkpointer=PostgresSaver(conn))

    schema = sql.Identifier(f"pgi_{uuid.uuid4().hex[:8]}")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(schema))
        conn.execute(sql.SQL("SET search_path TO {}").format(schema))
        PostgresSaver(conn).setup()
        first = app(conn)
        for i in range(n + WARM):
            first.invoke({"answer": ""}, {"configurable": {"thread_id": f"t{i}"}})  # type: ignore[attr-defined]
        with psycopg.connect(url, autocommit=True) as other:
            other.execute(sql.SQL("SET search_path TO {}").format(schema))
            print(f"backend {other.info.backend_pid}", flush=True)
            second = app(other)
            # Both modes resume the first WARM threads: plans and prepared statements
            # made, they cancel out of the difference.
            for i in range(WARM if mode == "idle" else n + WARM):
                cfg = {"configurable": {"thread_id": f"t{i}"}}
                second.invoke(Command(resume="a"), cfg)  # type: ignore[attr-defined]
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(schema))


def _as_pg(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb is None:
        sys.exit("PostgreSQL's binaries (initdb, postgres) were not found")
    return Path(initdb).parent


@contextlib.contextmanager
def server() -> Generator[tuple[str, Path]]:
    """A PostgreSQL under callgrind; yields its URL and the folder of callgrind files."""
    folder = Path(tempfile.mkdtemp(prefix="pg-instr-"))
    os.chmod(folder, 0o777)
    data, out = folder / "data", folder / "cg"
    out.mkdir()
    os.chmod(out, 0o777)
    bindir = _bindir()
    subprocess.run(
        _as_pg([str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"]),
        check=True,
        capture_output=True,
    )
    cmd = ["valgrind", "--tool=callgrind", "--trace-children=yes"]
    cmd += [f"--callgrind-out-file={out}/cg.%p", str(bindir / "postgres"), "-D", str(data)]
    cmd += ["-p", str(PORT), "-k", str(folder), "-c", "listen_addresses=127.0.0.1"]
    cmd += ["-c", "fsync=off", "-c", "autovacuum=off"]
    proc = subprocess.Popen(_as_pg(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"postgresql://postgres@127.0.0.1:{PORT}/postgres"
    try:
        for _ in range(240):
            probe = [str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(PORT)]
            if subprocess.run(probe, check=False, capture_output=True).returncode == 0:
                break
            time.sleep(0.5)
        else:
            sys.exit("PostgreSQL under valgrind did not start")
        yield url, out
    finally:
        subprocess.run(
            _as_pg([str(bindir / "pg_ctl"), "-D", str(data), "stop", "-m", "fast"]), check=False
        )
        proc.wait(timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


def _total(path: Path) -> int:
    for _ in range(240):  # the backend writes its file when it exits
        if path.exists():
            found = re.findall(r"^totals: (\d+)", path.read_text(), re.M)
            if found:
                return int(found[0])
        time.sleep(0.5)
    sys.exit(f"no callgrind total in {path}")


def _run(tree: str, url: str, n: int, mode: str, client: bool) -> tuple[int, int]:
    """(backend pid, client instructions or 0) of one inner run."""
    env = {**os.environ, "PYTHONPATH": tree, "PYTHONHASHSEED": "0"}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--inner", url, str(n), mode]
    with tempfile.TemporaryDirectory() as tmp:
        if client:
            cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/c", *cmd]
        done = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{tree}: the inner run failed:\n{done.stderr[-3000:]}")
        pid = int(re.findall(r"backend (\d+)", done.stdout)[0])
        return pid, (_total(Path(tmp) / "c") if client else 0)


def measure(tree: str, url: str, out: Path, n: int) -> tuple[float, float]:
    """Server and client instructions per resume for one source tree."""
    idle_pid, idle_client = _run(tree, url, n, "idle", client=True)
    busy_pid, busy_client = _run(tree, url, n, "resume", client=True)
    server = _total(out / f"cg.{busy_pid}") - _total(out / f"cg.{idle_pid}")
    return server / n, (busy_client - idle_client) / n


def main(argv: list[str]) -> None:
    args = parse(argv)
    if args.inner:
        url, n, mode = args.inner
        inner(url, int(n), mode)
        return
    if shutil.which("valgrind") is None:
        sys.exit("needs valgrind (apt install valgrind)")
    with server() as (url, out):
        print("| source | server / resume | client / resume | total |")
        print("|---|---|---|---|")
        for tree in args.trees:
            srv, cli = measure(tree, url, out, args.resumes)
            print(f"| {tree} | {srv:,.0f} | {cli:,.0f} | {srv + cli:,.0f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
