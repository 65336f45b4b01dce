"""Each run's events: written to the database, read from any process, live.

The process executing a run keeps the run's log in memory (`EventLog`) and writes
each event to the ``pausepoint_server_events`` table (`pausepoint.server.event_rows`)
through a batching writer (`pausepoint.server.event_writer`). Readers of that process
follow the memory log (the fast path); readers of any other process read the rows
after the last ``seq`` they saw, woken by PostgreSQL ``NOTIFY`` (one channel, the run
id as payload: `pausepoint.server.event_wake`) or, on SQLite, by polling with a
short backoff (`POLL_FIRST` doubling to `POLL_MOST` seconds).

Event ids count up from 1 within the run (``Last-Event-ID`` resumes after one);
an attempt after a crash goes on from the last id written. The run's end is an
event (`END`, written in the transaction that records how the run ended; never
sent to clients): a reader stops there, whatever process it is in. A reader also reads the
run's record after ``CHECK_SECONDS`` without news: a run that ended without its
`END` row, or whose record is gone (a rollback), ends the stream; a run whose
executing process stopped renewing its lease (it died) ends it with an ``error``
event (the run is retried by the next worker that takes it over: join again).

Retention: rows of runs ended more than ``keep_seconds`` ago are deleted, in
batches, by every serving process every ``keep_seconds / 4`` (at most a minute).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from pausepoint.server import event_rows
from pausepoint.server.event_rows import END, EventRow
from pausepoint.server.event_wake import Listener, Wakeups, Watch
from pausepoint.server.event_writer import EventWriter
from pausepoint.server.records import RunEvent
from pausepoint.server.store_records import Database
from pausepoint.server.store_sql import Flow

__all__ = [
    "CHECK_SECONDS",
    "END",
    "POLL_FIRST",
    "POLL_MOST",
    "EventLog",
    "EventLogs",
    "position",
]

_log = logging.getLogger("pausepoint.server")

POLL_FIRST = 0.005
"""Seconds a reader of another process's run waits before reading again (SQLite)."""

POLL_MOST = 0.1
"""The longest wait between two reads of a run's rows on SQLite (the backoff's cap)."""

CHECK_SECONDS = 1.0
"""Seconds without news after which a reader reads the run's record."""

_LISTENING_WAIT = 1.0
"""A reader's wait between reads while PostgreSQL notifications are being received."""

_LOST_GRACE = 1.0
"""Seconds past a lease's end before its process is taken for dead (clock skew)."""

_PAGE = 500
"""Rows read at a time."""

_SWEEP_BATCH = 1000
"""Rows a retention transaction deletes at most."""

_LOCAL_KEEP = 30.0
"""Seconds an ended run's memory log is kept for readers of this process."""


def position(last_event_id: str | None) -> int:
    """The ``seq`` a ``Last-Event-ID`` names (0, the start, for none or a bad one)."""
    if last_event_id is None or last_event_id == "":
        return 0
    try:
        return max(int(last_event_id), 0)
    except ValueError:
        return 0


class EventLog:
    """The events of a run executed in this process, from ``base`` + 1 on."""

    def __init__(self, run_id: str, base: int, sink: Callable[[RunEvent], None]) -> None:
        self.run_id = run_id
        self.base = base
        """The run's last event id before this attempt (0 for a first attempt)."""
        self.events: list[RunEvent] = []
        self.ended = False
        self.outcome: tuple[str, Any] | None = None
        """The run's status and join body as recorded at its end (`EventLogs.ended`):
        a join in this process answers from it without reading the record."""
        self._sink = sink

    @property
    def last(self) -> int:
        """The id of the newest event."""
        return self.base + len(self.events)

    def emit(self, event: str, data: Any) -> None:
        """Append an event, write it and wake the readers (on the event loop's thread)."""
        if self.ended:
            return
        got = RunEvent(str(self.last + 1), event, data)
        self.events.append(got)
        self._sink(got)

    def end(self, *, written: bool = False) -> None:
        """The run ended: the `END` event, after which readers stop.

        ``written``: its row is already written (with the run's end): only the memory
        log gets it.
        """
        if self.ended:
            return
        if written:
            self.events.append(RunEvent(str(self.last + 1), END, None))
        else:
            self.emit(END, None)
        self.ended = True


class EventLogs:
    """The run logs of this process, the writer of their rows, and readers of any run."""

    def __init__(self, db: Database, keep_seconds: float = 300.0, url: str | None = None) -> None:
        self.db = db
        self.keep_seconds = keep_seconds
        self.writer = EventWriter(db)
        self.wakeups = Wakeups()
        self.listener = Listener(url, event_rows.CHANNEL, self.wakeups) if url else None
        self._logs: dict[str, EventLog] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._sweeper: asyncio.Task[None] | None = None

    # --- lifecycle ------------------------------------------------------------------------

    async def setup(self) -> None:
        """Create the events table (idempotent)."""
        await self.db.run(event_rows.setup(postgres=self.db.postgres), write=True)

    def start(self) -> None:
        """Sweep old rows in a task of its own.

        The notifications (PostgreSQL) are listened for from the first reader on
        (`_watch`): every ``NOTIFY`` in a database wakes every backend that listens there
        (each reads the queue in a transaction of its own), so a process that never
        reads another's events, a queue worker, holds no listening connection.
        """
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep_forever(), name="pausepoint-events")

    async def close(self) -> None:
        """Write what is queued, then stop the tasks."""
        await self.writer.close()
        tasks = [t for t in (self._sweeper, *self._tasks) if t is not None]
        self._sweeper = None
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.listener is not None:
            await self.listener.close()

    # --- the executing process ------------------------------------------------------------

    async def begin(self, run_id: str, *, fresh: bool) -> EventLog:
        """The run's log for the attempt this process starts (``fresh``: its first)."""
        base = 0 if fresh else int(await self.db.run(event_rows.last_seq(run_id)))
        log = self._logs[run_id] = EventLog(run_id, base, self._sink(run_id))
        return log

    def get(self, run_id: str) -> EventLog | None:
        """The run's memory log, if this process executes (or executed) it."""
        return self._logs.get(run_id)

    def _sink(self, run_id: str) -> Callable[[RunEvent], None]:
        def sink(event: RunEvent) -> None:
            at = time.time()
            self.writer.add(
                event_rows.row(self.db.sealer, run_id, int(event.id), event.event, event.data, at)
            )
            self.wakeups.wake(run_id)

        return sink

    async def flushed(self) -> None:
        """Wait until every event emitted so far is in the database."""
        await self.writer.flushed()

    async def settled(self, run_id: str) -> None:
        """Wait until no write in flight holds events of the run (then `end_flow`)."""
        await self.writer.settled(run_id)

    def end_flow(self, run_id: str) -> Flow | None:
        """The statements writing the run's events still queued and its `END` row.

        For the transaction that records the run's end, right after `settled` (then
        call `ended`); None when this process has no log of the run.
        """
        log = self._logs.get(run_id)
        if log is None or log.ended:
            return None
        rows = self.writer.take(run_id)
        rows.append(EventRow(run_id, log.last + 1, END, "null", time.time()))
        return event_rows.insert(rows, postgres=self.db.postgres)

    def ended(self, run_id: str, outcome: tuple[str, Any] | None = None) -> None:
        """The run's end and its `END` row (`end_flow`) are written: end the memory log.

        ``outcome``: the status and join body the run's record now holds.
        """
        log = self._logs.get(run_id)
        if log is not None:
            log.outcome = outcome
            log.end(written=True)
            self._ending(run_id, log)

    def end(self, run_id: str) -> None:
        """The run ended (its record says so): write its `END` event.

        A run this process did not execute (cancelled while pending) gets its `END`
        row after the newest row the database has of it.
        """
        log = self._logs.get(run_id)
        if log is None:
            self._background(self.db.run(self._end_row(run_id), write=True))
            return
        log.end()
        self._ending(run_id, log)

    def _ending(self, run_id: str, log: EventLog) -> None:
        self.wakeups.wake(run_id)
        asyncio.get_running_loop().call_later(
            min(self.keep_seconds, _LOCAL_KEEP), self._drop, run_id, log
        )

    def _end_row(self, run_id: str) -> Any:
        return event_rows.end_next(run_id, time.time(), postgres=self.db.postgres)

    def abandon(self, run_id: str) -> None:
        """The run is no longer this process's (its lease was lost): forget its log.

        No `END`: the run goes on in its next attempt, which readers then follow. Its
        rows not written yet are dropped: the next attempt numbers its own from the
        last row written.
        """
        self.writer.take(run_id)
        self._logs.pop(run_id, None)
        self.wakeups.wake(run_id)

    def discard(self, run_id: str) -> None:
        """The run's record was deleted: forget its log and delete its rows."""
        self._logs.pop(run_id, None)
        self.wakeups.wake(run_id)
        self._background(self.db.run(event_rows.delete_run(run_id), write=True))

    def _drop(self, run_id: str, log: EventLog) -> None:
        if self._logs.get(run_id) is log:
            del self._logs[run_id]

    def _background(self, work: Any) -> None:
        async def guarded() -> None:
            try:
                await work
            except Exception:  # retention deletes the rows later
                _log.exception("pausepoint serve: a run events write failed")

        task = asyncio.ensure_future(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- readers --------------------------------------------------------------------------

    async def last(self, run_id: str) -> int:
        """The id of the run's newest event (0: none yet)."""
        log = self._logs.get(run_id)
        if log is not None:
            return log.last
        return int(await self.db.run(event_rows.last_seq(run_id)))

    def outcome(self, run_id: str) -> tuple[str, Any] | None:
        """The run's status and join body if this process recorded its end, else None."""
        log = self._logs.get(run_id)
        return None if log is None else log.outcome

    def executing(self, run_id: str) -> bool:
        """Whether this process executes the run now (its end will wake its readers)."""
        log = self._logs.get(run_id)
        return log is not None and not log.ended

    def quiet_wait(self, run_id: str) -> float:
        """How long a reader of ``run_id`` may wait for a wake-up before reading again."""
        if run_id in self._logs:
            return _LISTENING_WAIT
        if self.listener is not None and self.listener.connected.is_set():
            return _LISTENING_WAIT
        return POLL_FIRST

    def _watch(self, run_id: str) -> Watch:
        """A watch on ``run_id``'s wake-ups; the first one starts the listening."""
        if self.listener is not None:
            self.listener.start()  # once: later calls do nothing
        return self.wakeups.watch(run_id)

    async def wait(self, run_id: str, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for news of the run; whether some came."""
        watch = self._watch(run_id)
        try:
            return await watch.wait(timeout)
        finally:
            watch.close()

    async def follow(self, run_id: str, after: int = 0) -> AsyncIterator[RunEvent]:
        """The run's events after id ``after``, then the new ones until the run ends."""
        watch = self._watch(run_id)
        try:
            quiet = 0.0
            delay = POLL_FIRST
            while True:
                watch.clear()
                batch = await self._read(run_id, after)
                for event in batch:
                    if event.event == END:
                        return
                    yield event
                    after = int(event.id)
                if batch:
                    quiet, delay = 0.0, POLL_FIRST
                    continue
                if quiet >= CHECK_SECONDS:
                    quiet = 0.0
                    verdict = await self._verdict(run_id, after)
                    if verdict is not None:
                        for event in verdict:
                            yield event
                        return
                wait = self.quiet_wait(run_id)
                if wait == POLL_FIRST:  # polling: back off while nothing comes
                    wait = delay
                    delay = min(delay * 2, POLL_MOST)
                if not await watch.wait(wait):
                    quiet += wait
        finally:
            watch.close()

    async def _read(self, run_id: str, after: int) -> list[RunEvent]:
        log = self._logs.get(run_id)
        if log is not None and after >= log.base:
            return log.events[after - log.base :]  # the fast path: this process's run
        rows: list[RunEvent] = await self.db.run(
            event_rows.after(run_id, after, _PAGE, self.db.sealer)
        )
        return rows

    async def _verdict(self, run_id: str, after: int) -> list[RunEvent] | None:
        """None while the run goes on; else the last events to send before the stream ends.

        A run that ended (or whose record is gone) gives its rows not read yet; a run
        whose process stopped renewing its lease gives an ``error`` event.
        """
        state = await self.db.run(event_rows.run_state(run_id))
        if state is not None and state.status == "pending":
            return None
        if state is not None and state.status == "running":
            lease = state.lease_until
            if lease is None or lease + _LOST_GRACE >= time.time():
                return None
            message = (
                f"the process executing run {run_id!r} stopped renewing its lease (it "
                "stopped or lost the database); the run is taken over by the next worker "
                "that finds it: join its stream again to follow it"
            )
            return [RunEvent(str(after), "error", {"error": "RunLost", "message": message})]
        rest: list[RunEvent] = await self.db.run(
            event_rows.after(run_id, after, 1_000_000, self.db.sealer)
        )
        return [e for e in rest if e.event != END]

    # --- retention ------------------------------------------------------------------------

    async def sweep(self, now: float | None = None) -> int:
        """Delete the rows of runs ended more than ``keep_seconds`` ago; how many."""
        before = (time.time() if now is None else now) - self.keep_seconds
        total = 0
        while True:
            n = int(await self.db.run(event_rows.expired(before, _SWEEP_BATCH), write=True))
            total += n
            if n < _SWEEP_BATCH:
                return total
            await asyncio.sleep(0)  # let the requests in between the batches

    async def _sweep_forever(self) -> None:
        period = max(1.0, min(self.keep_seconds / 4, 60.0))
        while True:
            await asyncio.sleep(period)
            try:
                await self.sweep()
            except Exception:  # the database is unreachable: next time
                _log.exception("pausepoint serve: deleting old run events failed")
