"""Writing runs' events to the database in batches: a transaction per step at most.

`EventWriter.add` only queues a row. A row that closes a step (``urgent``: the
step's ``values``, a checkpoint, an error, the run's end) has the queue written at
once; any other row (a task's start or result, a custom event, a message token)
waits up to `LINGER` seconds for one: so the events of a step shorter than that
cost one transaction, and a longer step's early events (token streams) are written
every `LINGER` seconds. One transaction is in flight at a time; what is queued
meanwhile goes into the next one (group commit). A failed write is retried after a
pause (the rows stay queued, in order).
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

LINGER = 0.05
"""Seconds a row that does not close a step waits for one before it is written."""


class EventWriter:
    """The queue of rows this process writes, and the task that writes them."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.transactions = 0
        """How many write transactions it committed (for the benchmarks)."""
        self._queued: list[EventRow] = []
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def add(self, row: EventRow, *, urgent: bool = True) -> None:
        """Queue ``row``: written now if ``urgent``, else within `LINGER` seconds.

        Call it on the event loop's thread.
        """
        self._queued.append(row)
        if urgent:
            self._kick()
        elif self._timer is None and not self._writing():
            self._timer = asyncio.get_running_loop().call_later(LINGER, self._kick)

    def _writing(self) -> bool:
        return self._task is not None and not self._task.done()

    def _kick(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._writing():
            self._task = asyncio.get_running_loop().create_task(self._write())

    async def flushed(self) -> None:
        """Wait until every row queued so far is written.

        Cancelling the wait does not cancel the writing.
        """
        if self._queued:
            self._kick()
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (``timeout`` seconds at most), then stop."""
        if self._queued:
            self._kick()
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
