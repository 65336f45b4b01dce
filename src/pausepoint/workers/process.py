"""One ``pausepoint worker`` process: the queue's jobs executed with the server's code.

`run_worker` opens the records and the saver (`RunService`, with no workers of its
own loop), procrastinate's application with pausepoint's tasks, and the cancel
listener; then takes jobs, ``concurrency`` at once, until SIGTERM or SIGINT.

Graceful shutdown: the first signal stops taking jobs and waits up to
``shutdown_seconds`` for the runs in flight to finish; the runs still going then are
stopped and handed back (``pending`` again, executed by another worker from their
last checkpoint) and the jobs are deferred again by the next repair.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Mapping
from typing import TYPE_CHECKING

from procrastinate import App
from procrastinate.app import WorkerOptions

from pausepoint.server.service import RunService
from pausepoint.workers.cancels import listen_for_cancels
from pausepoint.workers.queue import QUEUE, ensure_schema, new_app
from pausepoint.workers.tasks import Settings, register

if TYPE_CHECKING:
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.graph.state import StateGraph

__all__ = ["run_worker"]

_log = logging.getLogger("pausepoint.workers")


async def run_worker(
    db_url: str,
    graphs: Mapping[str, CompiledStateGraph | StateGraph],
    *,
    concurrency: int = 4,
    lease_seconds: float = 30.0,
    shutdown_seconds: float = 30.0,
    settings: Settings | None = None,
    ready: asyncio.Event | None = None,
    listen_cancels: bool = True,
) -> None:
    """Execute the queue's runs until SIGTERM/SIGINT (or until cancelled).

    ``ready`` is set once jobs are taken. ``listen_cancels=False`` leaves a cancel
    to the lease renewal (benchmarks/queue_cancel.py compares the two).
    """
    settings = settings or Settings()
    await ensure_schema(db_url)
    service = await RunService.open(
        db_url, graphs, workers=0, lease_seconds=lease_seconds, pool_for=concurrency
    )  # no claim loop of its own: the queue's jobs name the threads
    app = new_app(db_url, pool_size=concurrency + 2)
    stopping = asyncio.Event()
    register(app, service, settings, stopping)
    options: WorkerOptions = {
        "queues": [QUEUE],
        "concurrency": concurrency,
        "name": service.workers.owner,
        "install_signal_handlers": False,
        "shutdown_graceful_timeout": shutdown_seconds,
        "update_heartbeat_interval": max(1.0, settings.stalled_seconds / 6),
        "stalled_worker_timeout": settings.stalled_seconds,
        "fetch_job_polling_interval": max(1.0, settings.repair_seconds),
    }
    listening = asyncio.Event()
    try:
        await service.start()
        async with app.open_async():
            if listen_cancels:
                listener = asyncio.create_task(
                    listen_for_cancels(db_url, service.workers, ready=listening)
                )
            else:
                listening.set()
                listener = asyncio.create_task(asyncio.Event().wait())
            try:
                await listening.wait()
                if ready is not None:
                    ready.set()
                await _take_jobs(app, options, service, stopping)
            finally:
                listener.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listener
    finally:
        await service.close()  # hands back the runs still held by this process


async def _take_jobs(
    app: App, options: WorkerOptions, service: RunService, stopping: asyncio.Event
) -> None:
    """Run procrastinate's worker until a signal; start it again if it stops by itself.

    procrastinate stops its worker when one of its side tasks fails (a heartbeat on a
    connection the server cut); its jobs were stopped then, and the runs they held
    are handed back before it starts again.
    """
    while True:
        worker = asyncio.create_task(app.run_worker_async(**options))
        _on_signals(worker, stopping)
        try:
            await worker
        except asyncio.CancelledError:
            if not stopping.is_set():
                raise
        except Exception:
            _log.exception("pausepoint worker: procrastinate's worker failed")
        if stopping.is_set():
            return
        _log.warning("pausepoint worker: procrastinate's worker stopped; starting it again")
        with contextlib.suppress(Exception):  # if the database is away: the leases expire
            await service.store.requeue(owners=[service.workers.owner], expired_before=None)
        await asyncio.sleep(1.0)


def _on_signals(worker: asyncio.Task[None], stop: asyncio.Event) -> None:
    """SIGTERM/SIGINT: set ``stop``, stop the procrastinate worker gracefully."""
    loop = asyncio.get_running_loop()

    def handle() -> None:
        if stop.is_set():
            _log.warning("pausepoint worker: second signal, stopping now")
        else:
            _log.info("pausepoint worker: stopping: no new run; runs in flight may finish")
        stop.set()
        worker.cancel()  # procrastinate: stop fetching, wait (graceful timeout), abort

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, handle)
