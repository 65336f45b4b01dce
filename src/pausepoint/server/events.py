"""Each run's events in this process: a log to replay, and live delivery to listeners.

A run's log is opened when the run is created here (so a stream that attaches late
misses nothing) and filled by the worker that executes it. Event ids count up from
1 within the run (``Last-Event-ID`` resumes after one). The log is kept
``keep_seconds`` after the run ends, for late joins and reconnects, then dropped.
Logs live in memory: a run created or executed by another process (a second server
on the same PostgreSQL) has no log here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from pausepoint.server.records import RunEvent

__all__ = ["EventLog", "EventLogs", "Gone"]

Gone = Callable[[], Awaitable[bool]]
"""Asked while a log waits: whether its run has ended elsewhere."""


class EventLog:
    """One run's events, in order, and whether the run has ended."""

    def __init__(self) -> None:
        self.events: list[RunEvent] = []
        self.ended = False
        self._changed = asyncio.Event()

    def emit(self, event: str, data: Any) -> None:
        """Append an event and wake the listeners (call it on the event loop's thread)."""
        self.events.append(RunEvent(str(len(self.events) + 1), event, data))
        self._notify()

    def end(self) -> None:
        """The run ended: listeners finish after the last event."""
        self.ended = True
        self._notify()

    def reopen(self) -> None:
        """A run executed again (requeued in this process): listeners wait again."""
        self.ended = False

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def changed(self, timeout: float) -> bool:
        """Wait for the next event or the end, up to ``timeout`` seconds; whether one came."""
        try:
            await asyncio.wait_for(self._changed.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def ended_within(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the run's end; whether it ended."""

        async def ended() -> None:
            while not self.ended:
                await self._changed.wait()

        try:
            await asyncio.wait_for(ended(), timeout)
        except TimeoutError:
            return False
        return True

    async def follow(
        self, after: str | None = None, *, gone: Gone | None = None, every: float = 0.5
    ) -> AsyncIterator[RunEvent]:
        """The events after id ``after`` (all if None), then new ones until the end.

        ``gone`` is asked every ``every`` seconds without news: when it answers True
        (the run ended elsewhere, executed by another process), the stream ends too.
        """
        index = _position(after)
        while True:
            while index < len(self.events):
                yield self.events[index]
                index += 1
            if self.ended:
                return
            if not await self.changed(every) and gone is not None and await gone():
                return


def _position(after: str | None) -> int:
    if after is None or after == "":
        return 0
    try:
        return max(int(after), 0)
    except ValueError:
        return 0


class EventLogs:
    """The logs of this process's runs, by run id."""

    def __init__(self, keep_seconds: float = 300.0) -> None:
        self.keep_seconds = keep_seconds
        self._logs: dict[str, EventLog] = {}

    def open(self, run_id: str) -> EventLog:
        """The run's log, made if it has none."""
        log = self._logs.get(run_id)
        if log is None:
            log = self._logs[run_id] = EventLog()
        return log

    def get(self, run_id: str) -> EventLog | None:
        """The run's log, if this process has one."""
        return self._logs.get(run_id)

    def end(self, run_id: str) -> None:
        """The run ended: end its log, and drop it after ``keep_seconds``."""
        log = self._logs.get(run_id)
        if log is None:
            return
        log.end()
        loop = asyncio.get_running_loop()
        loop.call_later(self.keep_seconds, self._drop, run_id, log)

    def discard(self, run_id: str) -> None:
        """Forget the run's log now (a run that was never recorded, or deleted)."""
        log = self._logs.pop(run_id, None)
        if log is not None:
            log.end()

    def _drop(self, run_id: str, log: EventLog) -> None:
        if self._logs.get(run_id) is log and log.ended:
            del self._logs[run_id]
