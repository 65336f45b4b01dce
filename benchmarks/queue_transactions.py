"""What a served answer commits on PostgreSQL in queue mode, counted by kind (issue 34).

One process holds a front end's `RunService` (``workers=0``, each run deferred as a
procrastinate job, as ``pausepoint serve --db postgresql://...`` does) and a worker's
(`RunService` with ``workers=0`` and procrastinate's worker running pausepoint's
tasks, as ``pausepoint worker`` does). N threads are paused at a question first; then
each gets one answer (``create_run`` with ``command={"resume": ...}``: the precheck,
the record, the defer; no HTTP, which commits nothing), one at a time, the next posted
once the run has ended (seen in the worker's memory: the wait reads nothing).
Counted per answer: the server's store transactions by flow (front end and worker
apart), procrastinate's statements by query, the saver's calls by method, and
PostgreSQL's own ``xact_commit`` for the database over the same span (which also
counts what the Python counts miss: the listeners', procrastinate's heartbeats and
polls). Counts, not timings.

    eval "$(bash scripts/postgres.sh start)"
    PYTHONPATH=src python benchmarks/queue_transactions.py [--threads 100]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.workers_load import asks, commits, make_threads, schema_url  # noqa: E402


def count_store(service: Any, counts: Counter[str], side: str) -> None:
    """Count ``service``'s store (and events) transactions by flow, live."""
    db = service.store.db
    run = db.run

    async def counted(flow: Any, **options: Any) -> Any:
        name = flow.__qualname__.replace(".<locals>.flow", "").rsplit(".", 1)[-1]
        counts[f"{side}: store {name}"] += 1
        return await run(flow, **options)

    db.run = counted


def count_saver(service: Any, counts: Counter[str], side: str) -> None:
    """Count ``service``'s saver calls by method (each a transaction or a statement)."""
    saver = service.saver
    for name in ("aget_tuple", "alist", "acommit", "aput", "aput_writes"):
        method = getattr(saver, name, None)
        if method is None:
            continue

        def wrap(method: Any, name: str) -> Any:
            if name == "alist":

                def listing(*args: Any, **kwargs: Any) -> Any:
                    counts[f"{side}: saver {name}"] += 1
                    return method(*args, **kwargs)

                return listing

            async def call(*args: Any, **kwargs: Any) -> Any:
                counts[f"{side}: saver {name}"] += 1
                return await method(*args, **kwargs)

            return call

        setattr(saver, name, wrap(method, name))


def count_queue(app: Any, counts: Counter[str], side: str) -> None:
    """Count procrastinate's statements by query name."""
    connector = app.connector
    for name in ("execute_query_async", "execute_query_one_async", "execute_query_all_async"):
        method = getattr(connector, name)

        def wrap(method: Any) -> Any:
            async def call(query: str, **arguments: Any) -> Any:
                counts[f"{side}: procrastinate {_query_name(query)}"] += 1
                return await method(query, **arguments)

            return call

        setattr(connector, name, wrap(method))
    for name in (
        "execute_query_one_async_with_connection",
        "execute_query_all_async_with_connection",
    ):
        method = getattr(connector, name, None)
        if method is None:
            continue

        def joined(method: Any) -> Any:
            async def call(connection: Any, query: str, **arguments: Any) -> Any:
                key = f"{side}: procrastinate {_query_name(query)} (in the record's transaction)"
                counts[key] += 1
                return await method(connection, query, **arguments)

            return call

        setattr(connector, name, joined(method))


def _query_name(query: str) -> str:
    text = " ".join(query.split())
    for marker in ("procrastinate_", "FROM ", "INTO ", "UPDATE "):
        at = text.find(marker)
        if at >= 0:
            return text[at : at + 48].split("(")[0].split(" WHERE")[0]
    return text[:40]


async def measure(url: str, threads: int) -> tuple[int, Counter[str], int]:
    """Answers, the counts, PostgreSQL's commits over the answers."""
    from pausepoint.server.records import RunRequest
    from pausepoint.server.service import RunService
    from pausepoint.workers.frontend import enqueue_runs
    from pausepoint.workers.queue import QUEUE, ensure_schema, new_app
    from pausepoint.workers.tasks import Settings, register

    graphs = {"asks": asks()}
    ids = await make_threads(url, threads)
    await ensure_schema(url)
    front = await RunService.open(url, graphs, workers=0, pool_for=1)
    await enqueue_runs(front, url)
    back = await RunService.open(url, graphs, workers=0, pool_for=4)
    app = new_app(url, pool_size=6)
    stopping = asyncio.Event()
    register(app, back, Settings(sweep_cron=None), stopping)
    counts: Counter[str] = Counter()
    await back.start()
    async with app.open_async():
        worker = asyncio.create_task(
            app.run_worker_async(
                queues=[QUEUE], concurrency=4, name=back.workers.owner,
                install_signal_handlers=False, fetch_job_polling_interval=5.0,
            )
        )  # fmt: skip
        try:
            await asyncio.sleep(1.0)
            count_store(front, counts, "front end")
            count_saver(front, counts, "front end")
            count_queue(front_app(front), counts, "front end")
            count_store(back, counts, "worker")
            count_saver(back, counts, "worker")
            count_queue(app, counts, "worker")
            before = commits(url)
            for tid in ids:
                run = await front.create_run(
                    tid, RunRequest("asks", command={"resume": "yes"}, multitask_strategy="enqueue")
                )
                while not _ended(back, run.run_id):
                    await asyncio.sleep(0.002)
            await asyncio.sleep(1.5)  # PostgreSQL's statistics lag
            total = commits(url) - before
        finally:
            stopping.set()
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)
    await back.close()
    await front.close()
    return len(ids), counts, total


def _ended(worker: Any, run_id: str) -> bool:
    """Whether the worker's memory log of the run has ended (no query)."""
    log = worker.events.get(run_id)
    return log is not None and bool(log.ended)


def front_app(front: Any) -> Any:
    """The procrastinate application `enqueue_runs` opened for ``front``."""
    dispatch = front.dispatch
    cells = dispatch.__closure__ or ()
    for cell in cells:
        value = cell.cell_contents
        if hasattr(value, "connector"):
            return value
    raise RuntimeError("no procrastinate app in the front end's dispatch")


def main(argv: list[str] | None = None) -> int:
    """Count, print a Markdown table."""
    import os

    import psycopg

    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--threads", type=int, default=100, help="answers (one per thread)")
    args = p.parse_args(argv)
    base = os.environ.get("PAUSEPOINT_PG_URL")
    if not base:
        print("PAUSEPOINT_PG_URL is not set (scripts/postgres.sh start)", file=sys.stderr)
        return 2
    schema = f"qtx_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        started = time.perf_counter()
        n, counts, total = asyncio.run(measure(schema_url(base, schema), args.threads))
        took = time.perf_counter() - started
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
    print(f"{n} answers, one at a time ({took:.1f} s in all)\n")
    print("| who: what | per answer |")
    print("|---|---|")
    for kind, count in sorted(counts.items(), key=lambda kv: (kv[0].split(":")[0], -kv[1])):
        if count:
            print(f"| {kind} | {count / n:.2f} |")
    counted = sum(counts.values())
    joined = sum(c for k, c in counts.items() if "in the record's transaction" in k)
    print(f"| counted above (transactions of their own) | {(counted - joined) / n:.2f} |")
    print(f"| PostgreSQL `xact_commit` (the database, everything) | {total / n:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
