"""Writing runs' events to the database in batches: one transaction for a burst.

`EventWriter.add` only queues a row: the events a run emits without waiting on
anything (a step's chunks, delivered one after another) are all queued before the
writer's task runs, and it writes them in one transaction. One transaction is in
flight at a time; what is queued meanwhile goes into the next one (group commit), so
the cost is a transaction per burst at most, fewer under load. A failed write is
retried after a pause (the rows stay queued, in order).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from pausepoint.server import event_rows
from pausepoint.server.event_rows import EventRow
from pausepoint.server.store_records import Database

__all__ = ["EventWriter"]

_log = logging.getLogger("pausepoint.server")

_RETRY = 0.5
"""Seconds before a failed write is tried again."""


class EventWriter:
    """The queue of rows this process writes, and the task that writes them."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.transactions = 0
        """How many write transactions it committed (for the benchmarks)."""
        self._queued: list[EventRow] = []
        self._task: asyncio.Task[None] | None = None

    def add(self, row: EventRow) -> None:
        """Queue ``row``; the writer's task writes it soon (call on the event loop)."""
        self._queued.append(row)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._write())

    async def flushed(self) -> None:
        """Wait until every row queued so far is written.

        Cancelling the wait does not cancel the writing.
        """
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (``timeout`` seconds at most), then stop."""
        task = self._task
        if task is None:
            return
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), timeout)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _write(self) -> None:
        postgres = self.db.postgres
        while self._queued:
            batch, self._queued = self._queued, []
            try:
                await self.db.run(event_rows.insert(batch, postgres=postgres), write=True)
            except Exception:  # the database is unreachable or busy: try again
                _log.exception("pausepoint serve: writing %d run events failed", len(batch))
                self._queued = batch + self._queued
                await asyncio.sleep(_RETRY)
            else:
                self.transactions += 1
