"""Load test of a deployment (issue 34): answers through ``pausepoint serve`` front ends,
executed by ``pausepoint worker`` processes, on one PostgreSQL.

    PAUSEPOINT_PG_URL=postgresql://... PYTHONPATH=src python benchmarks/workers_load.py \\
        [--threads 10000] [--workers 1 2 4 8] [--fronts 2] [--clients 64] [--quick]

Setup: a fresh schema; N threads paused at a question, made by running the served graph
directly on the server's own saver (`RunService`'s compiled graph, ``ainvoke``) after
recording each thread (``create_thread``), so a front end answers them as threads it
made itself: the record exists (no ``if_not_exists``), and its resume precheck reads
the thread's checkpoints as for any thread. The graph (``asks``) asks, and once answered
asks again: every answer stores the next question, so the same N threads stay paused
for every round.

A round per W: F front ends (queue mode, the default on PostgreSQL) and W workers are
started as real processes; concurrent asyncio clients (httpx) post one answer to each
thread in a random order (``POST /threads/{id}/runs`` with ``command={"resume": ...}``,
spread over the front ends); the round ends when every run has ended. Reported:

- answers/s: answers / (last run's end - first run's ``created_at``);
- p50/p99 latency: from the run's ``created_at`` (the answer accepted and recorded) to
  its end as recorded in ``updated_at``, which the worker writes after the checkpoint
  holding the next question is committed: an upper bound on "next question stored" by
  one record write, and the moment every front end can report it;
- CPU per answer: the front ends', workers' and PostgreSQL server processes' CPU time
  (``/proc/<pid>/stat``, taken just before the first answer and after the last run's
  end, so start-up is left out), in all and per kind; the clients' CPU apart;
- per core: answers/s for each CPU second (i.e. answers/s one busy core carries), and
  the projection for more machines that follows from it.

Then the same answers with ``graph.invoke(Command(resume=...))`` called directly from 8
processes (a sync ``PostgresSaver`` each), timed per call and with the same CPU sums.
Timings are reported, never asserted. Standalone: not run by ``benchmarks/run.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypedDict

ROOT = Path(__file__).resolve().parent.parent
GRAPH = "asks=benchmarks.workers_load:asks"
TICK = os.sysconf("SC_CLK_TCK")
PROFILE = ""
"""``--profile DIR``: a cProfile file per front end and worker there."""


class Q(TypedDict, total=False):
    n: int
    answer: str


def _ask(state: Q) -> dict[str, Any]:
    from pausepoint import interrupt

    n = state.get("n", 0)
    return {"answer": interrupt({"question": f"approve step {n}?"}), "n": n + 1}


def asks() -> Any:
    """START -> ask -> ask -> ...: each answer ends a step and stores the next question."""
    from pausepoint import START, StateGraph

    builder = StateGraph(Q)
    builder.add_node("ask", _ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "ask")
    return builder


# --- the database ---------------------------------------------------------------------


def schema_url(base: str, schema: str) -> str:
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options=-csearch_path%3D{schema}"


async def make_threads(url: str, n: int, parallel: int = 16) -> list[str]:
    """``n`` threads recorded by the server's service and paused at their first question."""
    from pausepoint.server.service import RunService

    service = await RunService.open(url, {"asks": asks()}, workers=0)
    graph = service.graphs["asks"]
    ids = [f"t{i:06d}-{uuid.uuid4().hex[:8]}" for i in range(n)]
    gate = asyncio.Semaphore(parallel)

    async def one(tid: str) -> None:
        async with gate:
            await service.create_thread(thread_id=tid)
            out = await graph.ainvoke({"n": 0}, {"configurable": {"thread_id": tid}})
            assert "__interrupt__" in out

    try:
        await asyncio.gather(*(one(t) for t in ids))
    finally:
        await service.close()
    return ids


def postgres_pids(url: str) -> list[int]:
    """The PostgreSQL server's processes (the postmaster's children and itself)."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        master = _stat(int(row[0]))[0]  # while this backend lives
    pids = [master]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if _stat(int(entry))[0] == master:
                    pids.append(int(entry))
    return pids


def _stat(pid: int) -> tuple[int, float]:
    """(parent pid, CPU seconds) of ``pid`` from ``/proc/<pid>/stat``."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def cpu_of(pids: Sequence[int]) -> dict[int, float]:
    got: dict[int, float] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            got[pid] = _stat(pid)[1]
    return got


def cpu_spent(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds between the two readings (a process gone meanwhile counts 0)."""
    return sum(after[p] - before.get(p, 0.0) for p in after)


def run_times(url: str, since: float) -> list[tuple[float, float, str]]:
    """(created_at, ended, status) of the runs created since ``since``."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT created_at, updated_at, status FROM pausepoint_server_runs "
            "WHERE created_at >= %s",
            (since,),
        ).fetchall()
    return [(float(a), float(b), str(s)) for a, b, s in rows]


def attempts(url: str, since: float) -> dict[int, int]:
    """How many runs since ``since`` were claimed how many times."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT attempt, count(*) FROM pausepoint_server_runs "
            "WHERE created_at >= %s GROUP BY attempt ORDER BY attempt",
            (since,),
        ).fetchall()
    return {int(a): int(n) for a, n in rows}


def commits(url: str) -> int:
    """The database's committed transactions so far (PostgreSQL's statistics, which
    lag by up to a second: read after a pause)."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def unfinished(url: str, since: float) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pausepoint_server_runs "
            "WHERE created_at >= %s AND status IN ('pending', 'running')",
            (since,),
        ).fetchone()
    assert row is not None
    return int(row[0])


# --- the processes --------------------------------------------------------------------


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def deployment(
    url: str, fronts: int, workers: int, concurrency: int, logs: Path
) -> Iterator[tuple[list[str], list[int]]]:
    """Front ends and workers as processes; yields the front ends' URLs and every pid."""
    procs: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        for i in range(fronts):
            port = _free_port()
            cmd = ["serve", "--db", url, "--port", str(port), "--graph", GRAPH]
            procs.append(_spawn(cmd, logs / f"front-{workers}-{i}.log"))
            urls.append(f"http://127.0.0.1:{port}")
        for i in range(workers):
            cmd = ["worker", "--db", url, "--graph", GRAPH, f"--concurrency={concurrency}"]
            procs.append(_spawn(cmd, logs / f"worker-{workers}-{i}.log"))
        worker_logs = [logs / f"worker-{workers}-{i}.log" for i in range(workers)]
        _wait_ready(procs, urls, worker_logs, logs)
        yield urls, [p.pid for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``python -m pausepoint.cli *args``, its output to ``log``."""
    with log.open("wb") as out:
        cmd = [sys.executable, "-m", "pausepoint.cli", *args]
        if PROFILE:  # cProfile written at the process's exit (SIGTERM ends it cleanly)
            cmd[1:1] = ["-m", "cProfile", "-o", str(Path(PROFILE) / f"{log.stem}.prof")]
        return subprocess.Popen(cmd, env=_env(), stdout=out, stderr=subprocess.STDOUT)


def _wait_ready(
    procs: list[subprocess.Popen[bytes]], urls: list[str], logs: list[Path], where: Path
) -> None:
    """Until every front end answers ``/ok`` and every worker says it takes jobs."""
    import httpx

    deadline = time.monotonic() + 120
    for front in urls:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{front}/ok").status_code == 200:
                    break
            _check_alive(procs, where, deadline)
            time.sleep(0.1)
    for log in logs:
        while "pausepoint worker: graphs" not in log.read_text(errors="replace"):
            _check_alive(procs, where, deadline)
            time.sleep(0.1)


def _check_alive(procs: list[subprocess.Popen[bytes]], logs: Path, deadline: float) -> None:
    if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
        text = "\n".join(f"--- {f.name}\n{f.read_text()}" for f in sorted(logs.glob("*.log")))
        raise RuntimeError(f"a process exited or did not start:\n{text}")


async def answer_all(fronts: list[str], ids: list[str], clients: int) -> int:
    """Post one answer to each thread (in the given order) from ``clients`` tasks;
    returns how many were refused or lost (a dropped connection: not retried)."""
    import httpx

    todo = list(reversed(ids))
    refused = 0

    async def client(k: int, http: httpx.AsyncClient) -> None:
        nonlocal refused
        front = fronts[k % len(fronts)]
        while todo:
            tid = todo.pop()
            body = {"assistant_id": "asks", "command": {"resume": "yes"}}
            try:
                got = await http.post(f"{front}/threads/{tid}/runs", json=body)
            except httpx.TransportError as exc:  # not retried: it may have been accepted
                refused += 1
                print(f"lost {tid}: {exc!r}", file=sys.stderr)
                continue
            if got.status_code != 200:
                refused += 1
                print(f"refused {tid}: {got.status_code} {got.text[:200]}", file=sys.stderr)

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        await asyncio.gather(*(client(k, http) for k in range(clients)))
    return refused


# --- one round ------------------------------------------------------------------------


class Result(TypedDict):
    label: str
    answers: int
    errors: int
    span: float
    latencies: list[float]
    cpu: dict[str, float]


def served_round(
    url: str, ids: list[str], workers: int, fronts: int, clients: int, concurrency: int, logs: Path
) -> Result:
    order = random.sample(ids, len(ids))
    with deployment(url, fronts, workers, concurrency, logs) as (urls, pids):
        n_front = fronts
        pg = postgres_pids(url)
        groups = {"front ends": pids[:n_front], "workers": pids[n_front:], "PostgreSQL": pg}
        time.sleep(1.5)
        xacts = commits(url)
        before = {k: cpu_of(v) for k, v in groups.items()}
        me = os.times()
        since = time.time()
        refused = asyncio.run(answer_all(urls, order, clients))
        clients_cpu = (os.times().user - me.user) + (os.times().system - me.system)
        while unfinished(url, since):
            time.sleep(0.05)
        groups["PostgreSQL"] = postgres_pids(url)  # with connections opened meanwhile
        after = {k: cpu_of(v) for k, v in groups.items()}
    time.sleep(1.5)  # the processes have exited: their statistics are flushed
    xacts = commits(url) - xacts  # (with their shutdowns': a few in all)
    runs = run_times(url, since)
    print(f"W={workers}: transactions per answer {xacts / max(1, len(runs)):.1f}", flush=True)
    print(f"W={workers}: claims per run (attempt) {attempts(url, since)}", flush=True)
    cpu = {k: cpu_spent(before[k], after[k]) for k in groups}
    cpu["clients"] = clients_cpu
    return Result(
        label=f"served, W={workers}",
        answers=len(runs),
        errors=refused + sum(1 for _, _, s in runs if s not in ("success", "interrupted")),
        span=max(e for _, e, _ in runs) - min(c for c, _, _ in runs),
        latencies=[e - c for c, e, _ in runs],
        cpu=cpu,
    )


def _direct(url: str, ids: list[str], start: Any, ready: Any, out: Any, finish: Any) -> None:
    """One of the direct processes: ``invoke(Command(resume=...))`` on each of ``ids``."""
    from pausepoint.checkpoint.postgres import PostgresSaver
    from pausepoint.types import Command

    with PostgresSaver.from_conn_string(url) as saver:
        graph = asks().compile(checkpointer=saver)
        ready.put(os.getpid())
        start.wait()
        t0 = os.times()
        spans: list[tuple[float, float]] = []
        for tid in ids:
            began = time.time()
            got = graph.invoke(Command(resume="yes"), {"configurable": {"thread_id": tid}})
            assert "__interrupt__" in got
            spans.append((began, time.time()))
        t1 = os.times()
        out.put((spans, (t1.user - t0.user) + (t1.system - t0.system)))
        finish.wait()  # keep the connection (its server process) until its CPU is read


def direct_round(url: str, ids: list[str], procs: int) -> Result:
    ctx = multiprocessing.get_context("spawn")
    order = random.sample(ids, len(ids))
    start, finish, ready, out = ctx.Event(), ctx.Event(), ctx.Queue(), ctx.Queue()
    children = [
        ctx.Process(target=_direct, args=(url, order[k::procs], start, ready, out, finish))
        for k in range(procs)
    ]
    for c in children:
        c.start()
    for _ in children:
        ready.get(timeout=600)  # connected, graph compiled
    time.sleep(1.5)
    xacts = commits(url)
    before = cpu_of(postgres_pids(url))
    start.set()
    got = [out.get(timeout=3600) for _ in children]
    after = cpu_of(postgres_pids(url))
    finish.set()
    for c in children:
        c.join()
    time.sleep(1.5)  # their connections closed: their statistics are flushed
    xacts = commits(url) - xacts
    print(f"direct: transactions per answer {xacts / len(ids):.1f}", flush=True)
    spans = [s for spans, _ in got for s in spans]
    return Result(
        label=f"direct `invoke`, {procs} processes",
        answers=len(spans),
        errors=0,
        span=max(e for _, e in spans) - min(b for b, _ in spans),
        latencies=[e - b for b, e in spans],
        cpu={"processes": sum(c for _, c in got), "PostgreSQL": cpu_spent(before, after)},
    )


# --- the report -----------------------------------------------------------------------


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(results: list[Result], threads: int, cores: int) -> None:
    print(f"\n{threads} paused threads, one answer each per row; {cores} cores\n")
    print(
        "| deployment | answers | errors | answers/s | p50 ms | p99 ms "
        "| CPU ms/answer (all) | of which | answers/s per busy core |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        rate = r["answers"] / r["span"]
        server_cpu = sum(v for k, v in r["cpu"].items() if k != "clients")
        per = server_cpu / r["answers"] * 1000
        parts = ", ".join(f"{k} {v / r['answers'] * 1000:.1f}" for k, v in r["cpu"].items())
        print(
            f"| {r['label']} | {r['answers']} | {r['errors']} | {rate:.1f} "
            f"| {statistics.median(r['latencies']) * 1000:.0f} "
            f"| {_pct(r['latencies'], 0.99) * 1000:.0f} | {per:.1f} | {parts} "
            f"| {1000 / per:.1f} |"
        )
    print(
        "\nCPU ms/answer (all) leaves the clients out. Projection: answers/s per busy core"
        " x cores given to workers, front ends and PostgreSQL together (while PostgreSQL"
        " is not the bottleneck: its share is in 'of which')."
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--threads", type=int, default=10_000, help="paused threads (10000)")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8], help="W values")
    p.add_argument("--fronts", type=int, default=2, help="front ends (default 2)")
    p.add_argument("--clients", type=int, default=64, help="concurrent clients (64)")
    p.add_argument("--concurrency", type=int, default=4, help="runs at once per worker (4)")
    p.add_argument("--direct", type=int, default=8, help="processes of the direct row (8)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="60 threads, W 1 and 2, 1 front end, 2 direct processes: a smoke run",
    )
    p.add_argument("--seed", type=int, default=34)
    p.add_argument("--profile", default="", help="DIR: cProfile each front end and worker")
    args = p.parse_args(argv)
    global PROFILE
    PROFILE = args.profile
    if args.quick:
        args.threads, args.workers, args.fronts, args.clients, args.direct = 60, [1, 2], 1, 8, 2
    random.seed(args.seed)
    import psycopg

    base = os.environ["PAUSEPOINT_PG_URL"]
    schema = f"load_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    url = schema_url(base, schema)
    results: list[Result] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            began = time.perf_counter()
            ids = asyncio.run(make_threads(url, args.threads))
            took = time.perf_counter() - began
            print(f"setup: {len(ids)} paused threads in {took:.1f} s", flush=True)
            for w in args.workers:
                logs = Path(tmp)
                r = served_round(url, ids, w, args.fronts, args.clients, args.concurrency, logs)
                results.append(r)
                report([r], args.threads, os.cpu_count() or 1)  # in case a later round fails
            r = direct_round(url, ids, args.direct)
            results.append(r)
            print(f"{r['label']}: {r['answers'] / r['span']:.1f} answers/s", flush=True)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]
    report(results, args.threads, os.cpu_count() or 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
