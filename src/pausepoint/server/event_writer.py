"""Writing runs' events to the database in batches: a transaction per step at most.

`EventWriter.add` only queues a row; the queue is written `LINGER` seconds after its
first row, in one transaction: the events of a step shorter than that (its tasks'
starts and results, its ``values``) share a transaction, and a longer step's events
(a token stream) are written every `LINGER` seconds. One transaction is in flight at
a time; what is queued meanwhile goes into the next one (group commit). When a run
ends, its rows still queued are taken out (`take`) and written by the transaction that
records the run's end, so a run shorter than `LINGER` costs no transaction of its
own. A failed write is retried after a pause (the rows stay queued, in order).
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
"""Seconds a queued row waits for more before the queue is written."""


class EventWriter:
    """The queue of rows this process writes, and the task that writes them."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.transactions = 0
        """How many write transactions it committed (for the benchmarks)."""
        self._queued: list[EventRow] = []
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._batch: asyncio.Future[None] | None = None
        self._batch_runs: set[str] = set()

    def add(self, row: EventRow) -> None:
        """Queue ``row``: written within `LINGER` seconds (call on the event loop)."""
        self._queued.append(row)
        if self._timer is None and not self._writing():
            self._timer = asyncio.get_running_loop().call_later(LINGER, self._kick)

    def take(self, run_id: str) -> list[EventRow]:
        """Take the run's queued rows out of the queue (to write them elsewhere)."""
        mine = [r for r in self._queued if r.run_id == run_id]
        if mine:
            self._queued = [r for r in self._queued if r.run_id != run_id]
        return mine

    async def settled(self, run_id: str) -> None:
        """Wait until no transaction in flight holds rows of the run.

        Its rows are then either written or queued (`take` them right after, with no
        ``await`` between). Cancelling the wait does not cancel the writing.
        """
        while self._batch is not None and run_id in self._batch_runs:
            await asyncio.shield(self._batch)

    def _writing(self) -> bool:
        return self._task is not None and not self._task.done()

    def _kick(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._writing() and self._queued:
            self._task = asyncio.get_running_loop().create_task(self._write())

    async def flushed(self) -> None:
        """Wait until every row queued so far is written.

        Cancelling the wait does not cancel the writing.
        """
        self._kick()
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (``timeout`` seconds at most), then stop."""
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
            done = self._batch = asyncio.get_running_loop().create_future()
            self._batch_runs = {r.run_id for r in batch}
            try:
                await self.db.run(event_rows.insert(batch, postgres=postgres), write=True)
            except Exception:  # the database is unreachable or busy: try again
                _log.exception("pausepoint serve: writing %d run events failed", len(batch))
                self._queued = batch + self._queued
                self._release(done)
                await asyncio.sleep(_RETRY)
            else:
                self.transactions += 1
            finally:
                self._release(done)

    def _release(self, done: asyncio.Future[None]) -> None:
        if not done.done():
            done.set_result(None)
        if self._batch is done:
            self._batch = None
            self._batch_runs = set()
