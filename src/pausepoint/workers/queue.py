"""The job queue: a `procrastinate` application on the deployment's PostgreSQL.

The queue carries only dispatch: a job ``pausepoint.run`` names a thread (its lock is
the thread id, so one thread's jobs run one at a time, in the order they were
deferred) and tells a worker "this thread has a run to execute". Which run, and
whether it still should, is decided by the run records (`Store.claim`). A job whose
run was cancelled, or already executed by a job before it, finds nothing and ends.

procrastinate's schema (tables ``procrastinate_jobs``, ``procrastinate_events``,
``procrastinate_periodic_defers``, ``procrastinate_workers``, ``procrastinate_version``,
its types, functions and triggers) is applied when it is missing, under an advisory
lock, so front ends and workers starting together apply it once.
"""

from __future__ import annotations

import datetime
import logging
from typing import TYPE_CHECKING, Any

from procrastinate import App, PsycopgConnector
from procrastinate.schema import SchemaManager

if TYPE_CHECKING:
    from pausepoint.server.records import RunRecord
    from pausepoint.server.service import Dispatch

__all__ = ["QUEUE", "RUN_TASK", "defer_run", "dispatcher", "ensure_schema", "new_app"]

_log = logging.getLogger("pausepoint.workers")

QUEUE = "pausepoint"
"""The procrastinate queue of pausepoint's jobs."""

RUN_TASK = "pausepoint.run"
"""The task of a thread's next run."""

_SCHEMA_LOCK = 7_433_033_302
"""Advisory lock id held while procrastinate's schema is checked and applied."""


def new_app(db_url: str, *, pool_size: int = 4) -> App:
    """A procrastinate application on ``db_url`` (not open yet: ``await app.open_async()``)."""
    # procrastinate's pool checks each connection it hands out (one the server cut is
    # replaced)
    connector = PsycopgConnector(conninfo=db_url, min_size=1, max_size=max(2, pool_size))
    return App(connector=connector)


async def ensure_schema(db_url: str) -> bool:
    """Apply procrastinate's schema unless it is there; whether it was applied."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        await conn.execute("SELECT pg_advisory_lock(%s)", (_SCHEMA_LOCK,))
        try:
            cur = await conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")
            row = await cur.fetchone()
            if row is not None and row[0]:
                return False
            await conn.execute(SchemaManager.get_schema())
            return True
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (_SCHEMA_LOCK,))


async def defer_run(
    app: App,
    thread_id: str,
    run_id: str,
    at: float | None = None,
    connection: Any | None = None,
) -> int:
    """Defer the job of a thread's next run (``at``: not before, epoch seconds); its id.

    ``connection``: a psycopg connection whose transaction the job joins (committed
    with it), instead of a transaction of its own.
    """
    options: dict[str, Any] = {"lock": thread_id, "queue": QUEUE}
    if at is not None:
        options["schedule_at"] = datetime.datetime.fromtimestamp(at, datetime.UTC)
    job = app.configure_task(RUN_TASK, **options).make_new_job(thread_id=thread_id, run_id=run_id)
    deferred = await app.job_manager.defer_job_async(job, connection=connection)
    assert deferred.id is not None
    return deferred.id


def dispatcher(app: App) -> Dispatch:
    """A `RunService.dispatch` deferring each recorded run's job in its transaction.

    The run and its job are committed together (one transaction, not two), or
    neither (the request fails, nothing is recorded).
    """

    async def dispatch(run: RunRecord, at: float, connection: Any) -> None:
        await defer_run(app, run.thread_id, run.run_id, at, connection)

    return dispatch
