"""How late a run's events reach a reader in another process than the one executing it.

Two `RunService`\\ s on one database, as two ``pausepoint serve`` processes would be:
an executor (one worker) and a front end (``workers=0``) with its own memory, its
own connection and, on PostgreSQL, its own ``LISTEN`` connection: it sees only the
rows. A run of ``steps`` steps, each of which sleeps ``--gap`` ms and stamps the time
into the state; the front end streams the run's ``values`` and, for each, takes the
time it arrived minus the stamp: the latency from the step's end to a reader of
another process (the step's checkpoint write included). The same run streamed in
the executing process (its memory log) is the baseline. Timings are reported, never
asserted.

    PYTHONPATH=src python benchmarks/server_feed.py [--steps 100] [--gap 20] [--quick]

PostgreSQL too when ``PAUSEPOINT_PG_URL`` is set.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, TypedDict


class Tick(TypedDict, total=False):
    n: int
    stop: int
    gap: float
    at: float


def ticker() -> Any:
    """START -> tick (loop until ``stop``): each step sleeps ``gap`` s, stamps ``at``."""
    from pausepoint import END, START, StateGraph

    async def tick(state: Tick) -> dict[str, Any]:
        await asyncio.sleep(state.get("gap", 0.0))
        return {"n": state.get("n", 0) + 1, "at": time.time()}

    def again(state: Tick) -> str:
        return "tick" if state.get("n", 0) < state.get("stop", 0) else END

    builder = StateGraph(Tick)
    builder.add_node("tick", tick)
    builder.add_edge(START, "tick")
    builder.add_conditional_edges("tick", again, ["tick", END])
    return builder


async def latencies(db: str, steps: int, gap: float, *, remote: bool) -> list[float]:
    """Seconds from each step's stamp to its ``values`` event at the reader."""
    from pausepoint.server.records import RunRequest
    from pausepoint.server.service import RunService

    graphs = {"ticker": ticker()}
    executor = await RunService.open(db, graphs, workers=1, poll_seconds=0.01)
    await executor.start()
    front = await RunService.open(db, graphs, workers=0) if remote else executor
    try:
        tid = str(uuid.uuid4())
        request = RunRequest("ticker", input={"stop": steps, "gap": gap}, if_not_exists="create")
        run = await front.create_run(tid, request)
        got: list[float] = []
        async for event in front.stream_run(tid, run.run_id):
            if event.event == "values" and "at" in event.data:
                got.append(time.time() - event.data["at"])
        return got
    finally:
        if remote:
            await front.close()
        await executor.close()


def _ms(values: list[float], q: float) -> str:
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.1f}"


def main(argv: list[str] | None = None) -> int:
    """Measure on SQLite (and PostgreSQL if configured); print a Markdown table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=100, help="steps of the run (default 100)")
    p.add_argument("--gap", type=float, default=20.0, help="ms each step sleeps (default 20)")
    p.add_argument("--quick", action="store_true", help="20 steps: does it still run?")
    args = p.parse_args(argv)
    steps = 20 if args.quick else args.steps
    gap = args.gap / 1000
    rows: list[tuple[str, list[float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for remote in (False, True):
            db = str(Path(tmp) / f"feed-{remote}.sqlite")
            rows.append((f"SQLite, {'another process' if remote else 'same process'}",
                         asyncio.run(latencies(db, steps, gap, remote=remote))))  # fmt: skip
    pg = os.environ.get("PAUSEPOINT_PG_URL")
    if pg:
        for remote in (False, True):
            got = asyncio.run(_on_postgres(pg, steps, gap, remote=remote))
            rows.append((f"PostgreSQL, {'another process' if remote else 'same process'}", got))
    print(f"step end -> reader, {steps} steps {args.gap:g} ms apart (ms)\n")
    print("| reader | median | p90 | p99 | max |")
    print("|---|---|---|---|---|")
    for name, got in rows:
        median = f"{statistics.median(got) * 1000:.1f}"
        print(f"| {name} | {median} | {_ms(got, 0.9)} | {_ms(got, 0.99)} | {_ms(got, 1.0)} |")
    return 0


async def _on_postgres(base: str, steps: int, gap: float, *, remote: bool) -> list[float]:
    import psycopg

    schema = f"feed_bench_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    sep = "&" if "?" in base else "?"
    try:
        return await latencies(f"{base}{sep}options=-csearch_path%3D{schema}", steps, gap,
                               remote=remote)  # fmt: skip
    finally:
        async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
            await conn.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


if __name__ == "__main__":
    sys.exit(main())
