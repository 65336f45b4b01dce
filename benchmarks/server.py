"""``pausepoint serve`` vs the graph in-process: what HTTP adds to a pause + resume.

One iteration: create a thread, run it to its question, resume it to the end. In
process: ``invoke`` twice on the compiled graph with a ``SqliteSaver`` on a file. Over
HTTP: the real ``langgraph-sdk`` sync client against ``pausepoint serve`` (a
subprocess on 127.0.0.1, a SQLite file, runs queued and executed by its workers):
``threads.create``, ``runs.wait(input=...)``, ``runs.wait(command={"resume": ...})``.
Reports the median of each and the median added per round trip. Timings are
reported, never asserted.

    PYTHONPATH=src python benchmarks/server.py [--n 200] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

ROOT = Path(__file__).resolve().parent.parent

Timed = tuple[list[float], list[float]]
"""Seconds: wall clock per iteration, and CPU (per iteration, or one mean)."""


class Ask(TypedDict, total=False):
    request: str
    answer: str
    result: str


def approval() -> Any:
    """START -> ask (interrupt) -> finish: the benchmark's graph (served by name)."""
    from pausepoint import END, START, StateGraph, interrupt

    def ask(state: Ask) -> dict[str, Any]:
        return {"answer": interrupt({"question": f"Approve {state.get('request')}?"})}

    def finish(state: Ask) -> dict[str, Any]:
        return {"result": f"{state.get('request')}: {state.get('answer')}"}

    builder = StateGraph(Ask)
    builder.add_node("ask", ask)
    builder.add_node("finish", finish)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "finish")
    builder.add_edge("finish", END)
    return builder


def in_process(db: Path, n: int) -> Timed:
    """Seconds per iteration, the graph invoked in this process (wall, CPU)."""
    from pausepoint.checkpoint.sqlite import SqliteSaver
    from pausepoint.types import Command

    times: list[float] = []
    cpu = time.process_time()
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = approval().compile(checkpointer=saver)
        for _ in range(n):
            start = time.perf_counter()
            config = {"configurable": {"thread_id": str(uuid.uuid4())}}
            paused = graph.invoke({"request": "deploy"}, config)
            assert "__interrupt__" in paused
            done = graph.invoke(Command(resume="yes"), config)
            assert done["result"] == "deploy: yes"
            times.append(time.perf_counter() - start)
    return times, [(time.process_time() - cpu) / n]


def in_process_async(db: Path, n: int) -> list[float]:
    """Seconds per iteration with ``astream`` twice on an ``AsyncSqliteSaver``: the
    engine's async path, which the server's workers use (the rest is the server's)."""
    import asyncio

    from pausepoint.checkpoint.sqlite import AsyncSqliteSaver
    from pausepoint.types import Command

    async def rounds() -> list[float]:
        times: list[float] = []
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
            graph = approval().compile(checkpointer=saver)
            for _ in range(n):
                start = time.perf_counter()
                config: Any = {"configurable": {"thread_id": str(uuid.uuid4())}}
                async for _ in graph.astream({"request": "deploy"}, config):
                    pass
                async for _ in graph.astream(Command(resume="yes"), config):
                    pass
                times.append(time.perf_counter() - start)
        return times

    return asyncio.run(rounds())


def over_http(url: str, n: int) -> Timed:
    """Seconds per iteration through ``pausepoint serve`` with the SDK's sync client
    (wall; the CPU of this client process, all iterations' mean)."""
    from langgraph_sdk import get_sync_client

    times: list[float] = []
    cpu = time.process_time()
    with get_sync_client(url=url, api_key=None) as client:
        client.http.get("/ok")  # the connection is open before the first round trip
        for _ in range(n):
            start = time.perf_counter()
            tid = client.threads.create()["thread_id"]
            paused: Any = client.runs.wait(tid, "approval", input={"request": "deploy"})
            assert "__interrupt__" in paused
            done: Any = client.runs.wait(tid, "approval", command={"resume": "yes"})
            assert done["result"] == "deploy: yes"
            times.append(time.perf_counter() - start)
    return times, [(time.process_time() - cpu) / n]


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) process ``pid`` has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def probe_ok(url: str, n: int) -> dict[str, list[float]]:
    """``GET /ok`` ``n`` times over one kept-alive connection: with httpx (what the SDK
    uses) and with the standard library's ``http.client`` (about the least a client
    can do), seconds per request."""
    import http.client
    from urllib.parse import urlsplit

    import httpx

    times: dict[str, list[float]] = {"httpx": [], "http.client": []}
    with httpx.Client(base_url=url) as client:
        client.get("/ok")
        for _ in range(n):
            start = time.perf_counter()
            assert client.get("/ok").status_code == 200
            times["httpx"].append(time.perf_counter() - start)
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port)
    try:
        for _ in range(n + 1):
            start = time.perf_counter()
            conn.request("GET", "/ok")
            response = conn.getresponse()
            assert response.status == 200
            response.read()
            times["http.client"].append(time.perf_counter() - start)
    finally:
        conn.close()
    times["http.client"].pop(0)  # the connection's opening
    return times


def app_alone(where: Path, n: int) -> list[float]:
    """``GET /ok`` through the server's ASGI application alone (no socket, no HTTP
    parsing: the ASGI messages built by hand), seconds of CPU per request."""
    import asyncio

    from pausepoint.server.app import create_app
    from pausepoint.server.service import RunService

    scope: dict[str, Any] = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": "/ok", "raw_path": b"/ok", "root_path": "",
        "query_string": b"", "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2024),
    }  # fmt: skip

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def rounds() -> list[float]:
        service = await RunService.open(str(where / "app.sqlite"), {"approval": approval()})
        app = create_app(service)
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        times: list[float] = []
        try:
            for _ in range(n + 10):
                start = time.process_time()
                for _ in range(20):
                    await app(dict(scope), receive, send)
                times.append((time.process_time() - start) / 20)
            assert sent[0]["status"] == 200
            return times[10:]
        finally:
            await service.close()

    return asyncio.run(rounds())


def count_transactions(service: Any) -> dict[str, int]:
    """Count the service's store transactions by kind (the flow's function), live."""
    counts: dict[str, int] = {}
    run = service.store.db.run

    async def counted(flow: Any, **options: Any) -> Any:
        name = flow.__qualname__.replace(".<locals>.flow", "").rsplit(".", 1)[-1]
        key = f"{name} ({'write' if options.get('write') else 'read'})"
        counts[key] = counts.get(key, 0) + 1
        return await run(flow, **options)

    service.store.db.run = counted
    return counts


def events_written_or_not(
    where: Path, name: str, n: int
) -> tuple[Timed, Timed, float, dict[str, int]]:
    """`RunService` round trips with the runs' events written to the database, and with
    the event writer stubbed out (events in memory only), taken in turn so the load of
    the machine weighs on both alike; the event write transactions per round trip, and
    the store's transactions by kind (all of them, over the ``n`` round trips)."""
    import asyncio

    from pausepoint.server.records import RunRequest
    from pausepoint.server.service import RunService

    async def join(service: RunService, run: Any) -> Any:
        # as the HTTP route does: it has the run's record (older versions read it again)
        if "run" in inspect.signature(service.join_run).parameters:
            return await service.join_run(run.thread_id, run.run_id, run=run)
        return await service.join_run(run.thread_id, run.run_id)

    async def one(service: RunService) -> tuple[float, float]:
        cpu = time.process_time()
        start = time.perf_counter()
        tid = (await service.create_thread()).thread_id
        run = await service.create_run(tid, RunRequest("approval", input={"request": "d"}))
        assert "__interrupt__" in await join(service, run)
        run = await service.create_run(tid, RunRequest("approval", command={"resume": "y"}))
        assert (await join(service, run))["result"] == "d: y"
        return time.perf_counter() - start, time.process_time() - cpu

    async def rounds() -> tuple[Timed, Timed, float, dict[str, int]]:
        written = await RunService.open(str(where / f"{name}.sqlite"), {"approval": approval()})
        memory = await RunService.open(str(where / f"{name}-mem.sqlite"), {"approval": approval()})
        memory.events.writer.add = lambda row: None  # type: ignore[method-assign]
        await written.start()
        await memory.start()
        counts = count_transactions(written)
        times: tuple[Timed, Timed] = (([], []), ([], []))
        try:
            for _ in range(n):
                for service, (wall, cpu) in zip((written, memory), times, strict=True):
                    took = await one(service)
                    wall.append(took[0])
                    cpu.append(took[1])
            return times[0], times[1], written.events.writer.transactions / n, counts
        finally:
            await written.close()
            await memory.close()

    return asyncio.run(rounds())


@contextlib.contextmanager
def serving(db: Path) -> Iterator[tuple[str, int]]:
    """``pausepoint serve`` on a free port, stopped afterwards; yields its URL and pid."""
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    cmd = [sys.executable, "-m", "pausepoint.cli", "serve", "--db", str(db)]
    cmd += ["--port", str(port), "--graph", "approval=benchmarks.server:approval"]
    log = db.with_suffix(".log").open("wb")
    process = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(db.with_suffix(".log").read_text())
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/ok").status_code == 200:
                    break
            time.sleep(0.05)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=15)
        log.close()


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.2f}"


def main(argv: list[str] | None = None) -> int:
    """Run both sides, print Markdown tables."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=200, help="iterations per side (default 200)")
    p.add_argument("--quick", action="store_true", help="20 iterations: does it still run?")
    args = p.parse_args(argv)
    n = 20 if args.quick else args.n
    warm = max(3, n // 10)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        in_process(where / "warm.sqlite", warm)
        local, local_cpu = in_process(where / "local.sqlite", n)
        in_process_async(where / "warm-async.sqlite", warm)
        local_async = in_process_async(where / "async.sqlite", n)
        events_written_or_not(where, "warm-service", warm)
        (service, service_cpu), (unwritten, _), writes, counts = events_written_or_not(
            where, "service", n
        )
        with serving(where / "served.sqlite") as (url, pid):
            over_http(url, warm)
            before = cpu_seconds(pid)
            remote, client_cpu = over_http(url, n)
            server_cpu = (cpu_seconds(pid) - before) / n
            probe_ok(url, warm)
            before = cpu_seconds(pid)
            ok = probe_ok(url, n)
            ok_server_cpu = (cpu_seconds(pid) - before) / (2 * n)
        ok_app = app_alone(where, n)
    load = max(load, os.getloadavg()[0])
    added = statistics.median(remote) - statistics.median(local)
    print(f"pause + resume round trip, SQLite, median of {n} (ms); load average <= {load:.1f}\n")
    print("| path | create + run to the question + resume to the end | CPU ms |")
    print("|---|---|---|")
    print(f"| in process (`invoke` x2) | {_ms(local)} | {_ms(local_cpu)} |")
    print(f"| in process, async (`astream` x2, `AsyncSqliteSaver`) | {_ms(local_async)} | |")
    print(
        "| `RunService` in process (records, queue, workers; no HTTP) | "
        f"{_ms(service)} | {_ms(service_cpu)} (median) |"
    )
    print(f"| `RunService`, events not written to the database | {_ms(unwritten)} | |")
    print(
        f"| `pausepoint serve` + langgraph-sdk (3 requests) | {_ms(remote)} | "
        f"server {server_cpu * 1000:.2f} + client {_ms(client_cpu)} (means) |"
    )
    print(f"| added in all (serve - in process) | {added * 1000:.2f} | |")
    http_only = statistics.median(remote) - statistics.median(service)
    print(f"| of which HTTP (serve - RunService) | {http_only * 1000:.2f} | |")
    events = statistics.median(service) - statistics.median(unwritten)
    print(f"| of which writing the events (RunService - not written) | {events * 1000:.2f} | |")
    print(f"\n`GET /ok`, one kept-alive connection, median of {n} (ms)\n")
    print("| client | per request |")
    print("|---|---|")
    for client, took in ok.items():
        print(f"| {client} | {_ms(took)} |")
    print(f"| server CPU per request (both clients' requests, mean) | {ok_server_cpu * 1000:.2f} |")
    print(f"| of which the ASGI application alone (CPU, no socket) | {_ms(ok_app)} |")
    print(f"\nevent write transactions per round trip: {writes:.2f}")
    print("store transactions per round trip (RunService, events written):")
    for kind, count in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"  {kind}: {count / n:.2f}")
    print(f"  all: {sum(counts.values()) / n:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
