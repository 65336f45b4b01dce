"""The tasks a ``pausepoint worker`` runs: a thread's next run, and the periodic jobs.

- ``pausepoint.run`` (deferred by the front ends, lock = thread id): claim the
  thread's next runnable run in the records and execute it
  (`pausepoint.server.worker.Workers.run_thread`).
- ``pausepoint.repair`` (every ``repair_seconds``): `pausepoint.workers.repair`.
- ``pausepoint.sweep`` (``sweep_cron``): expire the questions whose deadline passed
  (`pausepoint.questions.asweep` per served graph), then settle the threads' status.
- ``pausepoint.clean`` (hourly): delete the queue's jobs that ended more than
  ``retention_hours`` ago.

A periodic job is deferred once per tick however many workers run (procrastinate
records each tick in ``procrastinate_periodic_defers``; a worker that starts late may
defer the latest past tick again, as it only keeps the newest tick's row). The
periodic jobs also carry a queueing lock (at most one waits) and the sweep and the
clean-up a lock (at most one runs): sweeps run one at a time, and a question swept
twice is answered once (the sweep's resume goes through the thread's single-writer
lease; the second finds it answered, ``gone``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import TYPE_CHECKING

from procrastinate import RetryStrategy

from pausepoint.questions import asweep
from pausepoint.workers.queue import QUEUE, RUN_TASK
from pausepoint.workers.repair import repair

if TYPE_CHECKING:
    from procrastinate import App

    from pausepoint.server.service import RunService

__all__ = ["Settings", "register"]

_log = logging.getLogger("pausepoint.workers")


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    """How often the periodic jobs run, and how long queue rows are kept."""

    repair_seconds: int = 5
    """Seconds between repairs (1 to 59)."""
    stalled_seconds: float = 30.0
    """A worker whose heartbeat is older than this is dead: its jobs are retried."""
    sweep_cron: str | None = "* * * * *"
    """When deadlines are swept (cron, a 6th field for seconds); None: never."""
    retention_hours: int = 24
    """Ended jobs older than this are deleted by the hourly clean-up."""


def _connection_errors() -> set[type[Exception]]:
    import psycopg
    import psycopg_pool

    return {psycopg.OperationalError, psycopg.InterfaceError, psycopg_pool.PoolTimeout}


_LOST_CONNECTION = RetryStrategy(max_attempts=20, wait=1, retry_exceptions=_connection_errors())
"""A ``pausepoint.run`` job that lost its connection (before or after its run, which
hands itself back) is tried again a second later, still holding its thread's lock."""


def _every(seconds: int) -> str:
    if not 1 <= seconds <= 59:
        raise ValueError(f"repair_seconds must be 1 to 59, got {seconds}")
    return f"* * * * * */{seconds}"


def register(
    app: App, service: RunService, settings: Settings, stopping: asyncio.Event | None = None
) -> None:
    """Register pausepoint's tasks on ``app``, executing runs with ``service``'s workers.

    A ``pausepoint.run`` job executes the thread's runs one after the other while
    there are runnable ones (until ``stopping`` is set): the thread's jobs behind it
    wait on its lock, and procrastinate wakes no worker when a lock is released
    (they would wait for their next poll); they find nothing left and end.
    """
    workers = service.workers

    @app.task(name=RUN_TASK, queue=QUEUE, retry=_LOST_CONNECTION)
    async def run_thread(thread_id: str, run_id: str) -> None:  # pyright: ignore[reportUnusedFunction]
        del run_id  # which run is next is the records' decision
        while await workers.run_thread(thread_id):
            if stopping is not None and stopping.is_set():
                return

    @app.periodic(cron=_every(settings.repair_seconds))
    @app.task(name="pausepoint.repair", queue=QUEUE, queueing_lock="pausepoint.repair")
    async def repair_task(timestamp: int) -> None:  # pyright: ignore[reportUnusedFunction]
        del timestamp
        await repair(app, service.store, stalled_seconds=settings.stalled_seconds)

    if settings.sweep_cron is not None:

        @app.periodic(cron=settings.sweep_cron)
        @app.task(
            name="pausepoint.sweep",
            queue=QUEUE,
            lock="pausepoint.sweep",
            queueing_lock="pausepoint.sweep",
        )
        async def sweep_task(timestamp: int) -> None:  # pyright: ignore[reportUnusedFunction]
            del timestamp
            await sweep_deadlines(service)

    @app.periodic(cron="17 * * * *")
    @app.task(
        name="pausepoint.clean",
        queue=QUEUE,
        lock="pausepoint.clean",
        queueing_lock="pausepoint.clean",
    )
    async def clean_task(timestamp: int) -> None:  # pyright: ignore[reportUnusedFunction]
        del timestamp
        await clean(app, settings.retention_hours)


async def sweep_deadlines(service: RunService) -> int:
    """Sweep each served graph's due questions; settle the threads touched; how many."""
    one = len(service.graphs) == 1
    acted = 0
    for name, graph in service.graphs.items():
        outcomes = await asweep(graph, graph_id=None if one else name)
        for done in outcomes:
            if done.status in ("answered", "failed", "error"):
                acted += 1
                if await service.store.get_thread(done.thread_id) is not None:
                    await service.settle_thread(done.thread_id)
            _log.info(
                "pausepoint: deadline of %s on thread %s: %s",
                done.question_id, done.thread_id, done.status,
            )  # fmt: skip
    return acted


async def clean(app: App, retention_hours: int) -> None:
    """Delete the queue's ended jobs (failed, cancelled, aborted too) older than that."""
    await app.job_manager.delete_old_jobs(
        nb_hours=retention_hours,
        queue=QUEUE,
        include_failed=True,
        include_cancelled=True,
        include_aborted=True,
    )
