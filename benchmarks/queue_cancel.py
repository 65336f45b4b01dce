"""How promptly ``interrupt``/``rollback`` stop a run held by a queue worker (issue 34).

    PAUSEPOINT_PG_URL=postgresql://... python benchmarks/queue_cancel.py [--rounds 10]

A front end (`RunService` deferring jobs) and a ``pausepoint worker`` (`run_worker`)
in one process, on a fresh schema. Each round starts a run that waits forever, waits
until it runs, cancels it from the front end, and times until its record says
``interrupted``. Two ways for the worker to learn of the cancel: the NOTIFY on
``pausepoint_cancel`` (the default), and the lease renewal alone (every third of
``--lease-seconds``). Prints median and worst per way; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import time
import uuid
from typing import Any, TypedDict

import psycopg

from pausepoint import END, START, StateGraph
from pausepoint.server.records import RunRequest
from pausepoint.server.service import RunService
from pausepoint.workers.frontend import enqueue_runs
from pausepoint.workers.process import run_worker
from pausepoint.workers.tasks import Settings


class S(TypedDict, total=False):
    n: int


async def forever(state: S) -> dict[str, Any]:
    await asyncio.Event().wait()
    return {}


def graph() -> StateGraph:
    builder = StateGraph(S)
    builder.add_node("wait", forever)
    builder.add_edge(START, "wait")
    builder.add_edge("wait", END)
    return builder


async def measure(url: str, rounds: int, lease: float, listen: bool) -> list[float]:
    graphs = {"forever": graph()}
    front = await RunService.open(url, graphs, workers=0)
    await enqueue_runs(front, url)
    ready = asyncio.Event()
    settings = Settings(repair_seconds=1, sweep_cron=None)
    worker = asyncio.create_task(
        run_worker(
            url,
            graphs,
            concurrency=2,
            lease_seconds=lease,
            settings=settings,
            ready=ready,
            listen_cancels=listen,
        )
    )
    await ready.wait()
    took: list[float] = []
    try:
        for i in range(rounds):
            tid = f"t{i}-{uuid.uuid4().hex[:6]}"
            run = await front.create_run(
                tid, RunRequest("forever", input={}, if_not_exists="create")
            )
            while (await front.get_run(tid, run.run_id)).status != "running":
                await asyncio.sleep(0.005)
            await asyncio.sleep(0.05)  # into the node
            start = time.perf_counter()
            await front.cancel_run(tid, run.run_id, action="interrupt")
            while (await front.get_run(tid, run.run_id)).status == "running":
                await asyncio.sleep(0.002)
            took.append(time.perf_counter() - start)
    finally:
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker
        await front.close()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--lease-seconds", type=float, default=30.0)
    args = parser.parse_args()
    base = os.environ["PAUSEPOINT_PG_URL"]
    for listen in (True, False):
        schema = f"bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
        sep = "&" if "?" in base else "?"
        url = f"{base}{sep}options=-csearch_path%3D{schema}"
        try:
            took = asyncio.run(measure(url, args.rounds, args.lease_seconds, listen))
        finally:
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]
        way = "NOTIFY pausepoint_cancel" if listen else "lease renewal only"
        median, worst = statistics.median(took) * 1000, max(took) * 1000
        median, worst = statistics.median(took) * 1000, max(took) * 1000
        print(
            f"{way:26} lease {args.lease_seconds:g}s: median {median:.1f} ms, "
            f"worst {worst:.1f} ms over {len(took)} cancels"
        )


if __name__ == "__main__":
    main()
