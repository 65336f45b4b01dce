"""Worker processes for test_lease_processes.py (started with multiprocessing's spawn).

Each opens its own connection, as a worker on another machine would, and reports
what it saw through a queue.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from pausepoint.checkpoint.base import BaseCheckpointSaver, TaskWrites
from pausepoint.errors import LeaseLostError
from pausepoint.testing import make_checkpoint, make_metadata

THREAD = "contended"
CONFIG: Any = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}


def open_saver(kind: str, dsn: str) -> BaseCheckpointSaver:
    if kind == "sqlite":
        from pausepoint.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(dsn, check_same_thread=False, isolation_level=None, timeout=60)
        return SqliteSaver(conn)
    import psycopg

    from pausepoint.checkpoint.postgres import PostgresSaver

    return PostgresSaver(psycopg.connect(dsn, autocommit=True, prepare_threshold=None))


def race_acquire(kind: str, dsn: str, n: int, rounds: int, barrier: Any, results: Any) -> None:
    """Each round, all workers take the lease of a new thread at the same moment."""
    saver = open_saver(kind, dsn)
    for r in range(rounds):
        barrier.wait(120)
        claim = saver.acquire_lease(f"race-{r}", f"w{n}", 60.0)
        results.put((r, n, claim.acquired, claim.holder.owner, claim.holder.expires_at))


def race_writes(
    kind: str, dsn: str, n: int, target: int, ttl: float, barrier: Any, results: Any
) -> None:
    """Take the thread's lease when free, then add one checkpoint after the head.

    Every third write of a worker first sleeps past its lease's ttl, so other workers
    take the thread over in the middle and its fenced write must fail.
    """
    saver = open_saver(kind, dsn)
    owner, wrote, lost, attempts = f"w{n}", 0, 0, 0
    barrier.wait(120)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if not saver.acquire_lease(THREAD, owner, ttl).acquired:
            time.sleep(0.005)
            continue
        head = saver.get_tuple(CONFIG)
        assert head is not None
        value = head.checkpoint["channel_values"]["n"]
        if value >= target:
            saver.release_lease(THREAD, owner)
            break
        attempts += 1
        if attempts % 3 == 0:
            time.sleep(ttl * 1.5)
        step = [TaskWrites(f"task-{value}", [("by", owner)])]
        child = make_checkpoint({"n": value + 1, "by": owner})
        try:
            saver.put_after_writes(
                head.config, step, child, make_metadata(value + 1), {}, lease=owner
            )
            wrote += 1
        except LeaseLostError:
            lost += 1
    results.put((n, wrote, lost))
