"""Resume throughput: W worker processes resume N paused threads on one shared database.

One run of ``throughput-W/KIND`` (KIND: sqlite or postgres) starts ``resumer.py``,
which makes the library's schema and forks W worker processes, each owning a
disjoint share of the N thread ids (every W-th). Each worker opens its own saver
on the shared store and pauses its threads (one ``interrupt()`` each); this is not
timed. Once all are ready, they are released together and each resumes its threads
once with ``Command(resume=...)``. The time is from that release to the last
worker's finish; resumes per second = N / time. ``resumer.py`` says how, and why it
forks.

The store: SQLite is a fresh file in a temporary directory (WAL, each library's own
connection settings as in ``cases.open_saver`` but a longer busy timeout; the
untimed pausing skips fsyncs, and the WAL is checkpointed into the file before the
release), removed afterwards. PostgreSQL is ``PAUSEPOINT_PG_URL``, with the run's
tables in a schema of its own (``cases.pg_schema``), dropped at the end; thread ids
carry a random prefix per run. The tables are made once before the workers start,
so their own ``setup()`` calls never race to create them (LangGraph's PostgreSQL
migrations are not safe to run concurrently).

``resumer.py`` starts under this process's environment, so a ``pausepoint@base``
measurement (whose ``PYTHONPATH`` starts with the baseline tree) forks baseline
workers.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import startup
from cases import RESUME_RATE, Case, Workload

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Shape:
    kind: str  # sqlite or postgres
    workers: int
    threads: int


@dataclass(frozen=True)
class Outcome:
    """One run: the timed wall, and what the workers did (checked by ``check``)."""

    wall: float  # seconds from the release to the last finish
    resumed: int  # resumes that returned the answer and no further interrupt
    node_runs: int  # node-body runs over both phases, all workers
    problem: str | None  # the first wrong result a worker saw


@contextlib.contextmanager
def _store(kind: str) -> Iterator[str]:
    """The shared store's address: a new SQLite file, or the PostgreSQL server."""
    if kind == "postgres":
        yield os.environ["PAUSEPOINT_PG_URL"]
        return
    folder = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    try:
        yield str(folder / "bench.db")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(library: str, shape: Shape, target: str) -> Outcome:
    prefix = f"tp-{uuid.uuid4().hex[:12]}"
    sizes = [str(shape.workers), str(shape.threads)]
    done = subprocess.run(
        [sys.executable, str(HERE / "resumer.py"), library, shape.kind, target, prefix, *sizes],
        capture_output=True,
        text=True,
        check=False,
        # Bytecode caches on (a checkout may turn them off): the set-up, not timed,
        # goes faster.
        env=startup.child_env(),
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"resumer.py exited {done.returncode}: {tail}")
    found = json.loads(lines[-1])
    if "error" in found:
        raise RuntimeError(found["error"])
    return Outcome(**found)


def throughput(shape: Shape) -> Callable[[str], Case]:
    """The case on ``library`` (by name: only ``resumer.py`` imports it)."""

    def build(library: str) -> Case:
        runs = [0]

        def run(i: int) -> Outcome:
            with _store(shape.kind) as target:
                outcome = _run(library, shape, target)
            runs[0] += outcome.node_runs
            return outcome

        def check(out: Outcome) -> str | None:
            if out.problem:
                return out.problem
            if out.resumed != shape.threads:
                return f"{out.resumed} of {shape.threads} threads resumed with their answer"
            return None

        return Case(
            run=run, check=check, node_runs=runs, clock=lambda out: out.wall, rerun_first=False
        )

    return build


# --------------------------------------------------------------------------- registry


THREADS = 1000  # per run
QUICK_SHAPE = (2, 40)  # workers, threads: does it still run?


def workloads(kinds: list[str]) -> list[Workload]:
    """``throughput-W/KIND`` for W = 4, 8 and the quick W = 2, on each store in ``kinds``."""
    found: list[Workload] = []
    for kind in kinds:
        for workers, threads in ((4, THREADS), (8, THREADS), QUICK_SHAPE):
            found.append(
                Workload(
                    f"throughput-{workers}/{kind}",
                    f"{workers} worker processes resume {threads:,} paused threads once each "
                    f"on one {kind} database; time from their common start to the last finish",
                    throughput(Shape(kind, workers, threads)),
                    None,
                    RESUME_RATE,
                    by_name=True,
                    rounds=5,
                    per_run=threads,
                )
            )
    return found
