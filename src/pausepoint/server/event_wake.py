"""Waking this process's readers of a run's events: local news, PostgreSQL notifications.

A reader registers a `Watch` on its run *before* it reads, so news that lands between
its read and its wait is not lost. Who wakes it: the run's worker in this process
(each event), and, on PostgreSQL, `Listener`: one connection of its own that
listens on the events channel and wakes the watches of the run id each
notification names. While that connection is down, readers fall back to reading
after a timeout; once it is back every watch is woken (news may have been missed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

__all__ = ["Listener", "Watch", "Wakeups"]

_log = logging.getLogger("pausepoint.server")


class Watch:
    """One reader's wake-up for one run (`Wakeups.watch`); `close` it when done."""

    def __init__(self, owner: Wakeups, run_id: str) -> None:
        self.run_id = run_id
        self._owner = owner
        self._event = asyncio.Event()

    def set(self) -> None:
        """News for the run."""
        self._event.set()

    def clear(self) -> None:
        """About to read: later news wakes the next `wait`."""
        self._event.clear()

    async def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for news; whether some came."""
        if self._event.is_set():
            return True
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a cancel that
        # lands as the wait ends (a client leaving a stream just as news comes).
        try:
            async with asyncio.timeout(timeout):
                await self._event.wait()
        except TimeoutError:
            return False
        return True

    def close(self) -> None:
        """Stop watching."""
        self._owner.forget(self)


class Wakeups:
    """The watches of this process's readers, by run id."""

    def __init__(self) -> None:
        self._watches: dict[str, set[Watch]] = {}

    def watch(self, run_id: str) -> Watch:
        """A new watch on ``run_id``."""
        watch = Watch(self, run_id)
        self._watches.setdefault(run_id, set()).add(watch)
        return watch

    def forget(self, watch: Watch) -> None:
        """Drop ``watch``."""
        watches = self._watches.get(watch.run_id)
        if watches is not None:
            watches.discard(watch)
            if not watches:
                del self._watches[watch.run_id]

    def wake(self, run_id: str) -> None:
        """Wake the watches of ``run_id``."""
        for watch in self._watches.get(run_id, ()):
            watch.set()

    def wake_all(self) -> None:
        """Wake every watch (notifications may have been missed)."""
        for watches in self._watches.values():
            for watch in watches:
                watch.set()

    def watched(self, run_id: str) -> bool:
        """Whether a reader of this process watches ``run_id``."""
        return run_id in self._watches


class Listener:
    """``LISTEN`` on ``channel`` over a connection of its own; reconnects when it drops."""

    def __init__(self, url: str, channel: str, wakeups: Wakeups) -> None:
        self.url = url
        self.channel = channel
        self.wakeups = wakeups
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start listening in a task of its own."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="pausepoint-event-listener")

    async def close(self) -> None:
        """Stop listening."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.connected.clear()

    async def _run(self) -> None:
        pause = 0.1
        while True:
            try:
                await self._listen()
            except Exception as exc:  # connection lost: readers poll meanwhile
                _log.warning("pausepoint serve: event notifications lost (%s); reconnecting", exc)
            if self.connected.is_set():  # it was up: try again soon
                pause = 0.1
            self.connected.clear()
            await asyncio.sleep(pause)
            pause = min(pause * 2, 5.0)

    async def _listen(self) -> None:
        import psycopg

        conn: psycopg.AsyncConnection[Any] = await psycopg.AsyncConnection.connect(
            self.url, autocommit=True
        )
        async with conn:
            await conn.execute(f"LISTEN {self.channel}")  # type: ignore[arg-type]  # a constant
            self.connected.set()
            self.wakeups.wake_all()  # what was notified while no connection listened
            async for note in conn.notifies():
                self.wakeups.wake(note.payload)
