"""What the periodic repair puts right: jobs of dead workers, runs without a job.

A worker that dies (SIGKILL, lost connection, machine gone) leaves its job ``doing``
in procrastinate's table — holding its thread's lock, so the thread's later jobs
wait — and its run ``running`` in pausepoint's records under a lease nobody renews.
The repair (a periodic job, `pausepoint.workers.tasks`) retries the jobs of workers
whose heartbeat stopped, puts runs whose lease ran out back to ``pending``, and
defers a job for every thread with a pending run and no job waiting or running (a
run requeued so, or one whose defer was lost when its front end died between the
record and the defer). An extra job is harmless: it finds no run to claim.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from pausepoint.server.store_sql import Flow
from pausepoint.workers.queue import QUEUE, defer_run

if TYPE_CHECKING:
    from procrastinate import App

    from pausepoint.server.store import Store

__all__ = ["Repaired", "repair", "unqueued"]

_log = logging.getLogger("pausepoint.workers")

Repaired = tuple[int, int, int]
"""Jobs retried, runs requeued, jobs deferred."""


_DEFER_GRACE = 5.0
"""Seconds a front end has to defer the job of a run it recorded before the repair
defers one (a requeued run, claimed before, gets its job at once)."""


async def unqueued(store: Store, now: float) -> list[tuple[str, str, float]]:
    """Threads with a pending run and no job ``todo`` or ``doing``: (thread, run, not before)."""

    def flow() -> Flow:
        rows = yield (
            "SELECT r.thread_id, MIN(r.run_id), MIN(r.not_before) "
            "FROM pausepoint_server_runs r WHERE r.status = 'pending' "
            "AND (r.attempt > 0 OR r.created_at < ?) AND NOT EXISTS ("
            "SELECT 1 FROM procrastinate_jobs j WHERE j.lock = r.thread_id "
            "AND j.status IN ('todo', 'doing')) GROUP BY r.thread_id",
            (now - _DEFER_GRACE,),
        )
        return [(str(t), str(r), float(n)) for t, r, n in rows]

    result: list[tuple[str, str, float]] = await store.db.run(flow())
    return result


async def repair(app: App, store: Store, *, stalled_seconds: float) -> Repaired:
    """Retry dead workers' jobs, requeue expired runs, defer the missing jobs."""
    retried = 0
    stalled = await app.job_manager.get_stalled_jobs(
        queue=QUEUE, seconds_since_heartbeat=stalled_seconds
    )
    for job in stalled:
        try:
            await app.job_manager.retry_job(job)
        except Exception:  # another repair retried it first, or it ended meanwhile
            _log.debug("pausepoint: stalled job %s not retried", job.id, exc_info=True)
        else:
            retried += 1
    requeued = await store.requeue(expired_before=time.time())
    deferred = 0
    for thread_id, run_id, at in await unqueued(store, time.time()):
        await defer_run(app, thread_id, run_id, at)
        deferred += 1
    if retried or requeued or deferred:
        _log.info(
            "pausepoint: repair retried %d stalled jobs, requeued %d runs, deferred %d jobs",
            retried, requeued, deferred,
        )  # fmt: skip
    return retried, requeued, deferred
