"""A front end that enqueues: ``pausepoint serve`` deferring each run to the workers.

`enqueue_runs` applies procrastinate's schema if missing, opens its application on
the same PostgreSQL and sets the service's `RunService.dispatch`, so each run
recorded is also a job on the queue for ``pausepoint worker`` processes. The
service keeps its records and its answers to ``wait``/``join`` (read from the
records), whichever process executes the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pausepoint.workers.queue import dispatcher, ensure_schema, new_app

if TYPE_CHECKING:
    from pausepoint.server.service import RunService

__all__ = ["enqueue_runs"]


async def enqueue_runs(service: RunService, db_url: str) -> None:
    """Make ``service`` defer a job per run; the queue closes with the service."""
    await ensure_schema(db_url)
    app = new_app(db_url)
    await app.open_async()
    service.on_close(app.close_async)
    service.dispatch = dispatcher(app)
