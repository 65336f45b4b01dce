"""Workers: asyncio tasks that claim pending runs and execute them, one at a time each.

A worker claims the oldest runnable run (`Store.claim`: at most one running run per
thread), holding it with a lease it renews every third of ``lease_seconds``; a
renewal also reads a cancellation asked for by another process. The run executes
in a task of its own (`pausepoint.server.execute`), so a cancel stops the graph
through task cancellation: pausepoint's async driver winds the run down and saves
what its durability promises. Then the worker records how the run ended and the
thread's status, and ends the run's event log (`pausepoint.server.events`: the
events not written yet and the end event go in the transaction recording the end).

A run whose lease ran out (its process died) goes back to ``pending``: at start, and
as workers poll. A run of a dead process of this host is requeued at start without
waiting for its lease. ``close`` puts the runs in flight back to ``pending``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pausepoint.server.events import EventLogs
from pausepoint.server.execute import Ended, execute, outcome, plan
from pausepoint.server.records import Assistant, CancelAction, RunRecord, ThreadStatus
from pausepoint.server.rollback import drop_writes_after, roll_back
from pausepoint.server.store import Claimed, Finished, Store
from pausepoint.server.store_sql import dump, load

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import BaseCheckpointSaver
    from pausepoint.graph.compiled import CompiledStateGraph

__all__ = ["IdleWorker", "Workers", "connection_lost", "new_owner"]

_log = logging.getLogger("pausepoint.server")

_CANCEL_GRACE = 2.0
"""Seconds a cancelled run may take to stop before it is cancelled again."""

Resolve = Callable[[RunRecord], Awaitable[tuple["CompiledStateGraph", Assistant]]]


def new_owner() -> str:
    """A lease owner id: ``host/pid/random`` (a dead process of this host is seen)."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


_LOST = frozenset({"OperationalError", "InterfaceError", "PoolTimeout", "PoolClosed"})


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a lost PostgreSQL connection.

    Not a failure of the graph: psycopg's ``OperationalError``/``InterfaceError``, the
    pool's timeout.
    """
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        kind = type(seen)
        if kind.__module__.startswith(("psycopg", "psycopg_pool")) and any(
            k.__name__ in _LOST for k in kind.__mro__
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _dead_here(owner: str) -> bool:
    host, _, rest = owner.partition("/")
    pid_text = rest.partition("/")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class IdleWorker:
    """A worker waiting for news: woken by a recorded run, or handed a claimed one."""

    __slots__ = ("handed", "reserved", "waiting", "woken")

    def __init__(self) -> None:
        self.woken = asyncio.Event()
        self.waiting = False
        """Past its claim, waiting: it may be handed a run (`Workers.reserve`)."""
        self.reserved = False
        """A request is recording a run for it: it waits for that, whatever the time."""
        self.handed: Claimed | None = None


class Workers:
    """``count`` workers of one serving process."""

    def __init__(
        self,
        store: Store,
        saver: BaseCheckpointSaver,
        events: EventLogs,
        resolve: Resolve,
        *,
        count: int,
        lease_seconds: float,
        poll_seconds: float,
    ) -> None:
        self.store = store
        self.saver = saver
        self.events = events
        self.resolve = resolve
        self.count = count
        self.lease_seconds = lease_seconds
        self.poll_seconds = poll_seconds
        self.owner = new_owner()
        self._idle: list[IdleWorker] = []
        self._loops: list[asyncio.Task[None]] = []
        self._running: dict[str, asyncio.Task[Ended]] = {}
        self._cancels: dict[str, CancelAction] = {}
        self._closing = False
        self._handbacks: set[asyncio.Task[None]] = set()
        self._missed = 0
        """Wakes no idle worker took (counted: a worker done with a run claims again)."""

    async def start(self) -> None:
        """Requeue orphaned runs, then start the workers."""
        owners = [o for o in await self.store.running_owners() if _dead_here(o)]
        await self.store.requeue(owners=owners, expired_before=time.time())
        self._closing = False
        self._loops = [
            asyncio.create_task(self._loop(), name=f"pausepoint-worker-{n}")
            for n in range(self.count)
        ]

    async def close(self) -> None:
        """Stop the workers; their runs in flight go back to ``pending``."""
        self._closing = True  # a worker whose cancel was dropped stops at its next turn
        for task in self._loops:
            task.cancel()
        # gather, not a suppressed await: a cancel of close itself still propagates.
        await asyncio.gather(*self._loops, return_exceptions=True)
        self._loops = []
        await self.store.requeue(owners=[self.owner], expired_before=None)

    def wake(self) -> None:
        """A run was recorded: one idle worker looks for it now.

        Waking one, not all, keeps a run's acceptance to one claim: every woken
        worker would claim (a write transaction each) and all but one find nothing.
        """
        for idle in self._idle:
            if not idle.woken.is_set() and not idle.reserved:
                idle.woken.set()
                return
        self._missed += 1  # every worker is busy: the next one done claims again

    @property
    def waiting(self) -> int:
        """How many workers wait for news now (a run recorded is handed to one)."""
        return sum(1 for idle in self._idle if idle.waiting and not idle.reserved)

    def reserve(self) -> IdleWorker | None:
        """A waiting worker kept for the run a request is about to record (then `hand`).

        None when no worker waits: the run is then recorded ``pending`` and claimed.
        """
        if self._closing:
            return None
        for idle in self._idle:
            if idle.waiting and not idle.woken.is_set() and not idle.reserved:
                idle.reserved = True
                return idle
        return None

    def hand(self, idle: IdleWorker, claimed: Claimed | None, *, wake: bool = True) -> None:
        """End a reservation: give the worker the run claimed for it, or just wake it.

        ``wake`` False (nothing was recorded): it goes on waiting. A run claimed for a
        worker that stopped meanwhile goes back to ``pending``.
        """
        idle.reserved = False
        if claimed is None and not wake and idle.waiting:
            return  # it goes on with its timed wait
        if claimed is not None and idle not in self._idle:
            task = asyncio.ensure_future(self._release(claimed.run.run_id))
            self._handbacks.add(task)
            task.add_done_callback(self._handbacks.discard)
            return
        idle.handed = claimed
        idle.woken.set()

    async def _release(self, run_id: str) -> None:
        try:
            await self.store.release(run_id, self.owner)
        except Exception:  # the database is closing: its lease runs out instead
            _log.warning("pausepoint serve: run %s left to its lease's expiry", run_id)

    def cancel(self, run_id: str, action: CancelAction) -> bool:
        """Cancel the run if a worker of this process executes it."""
        task = self._running.get(run_id)
        if task is None:
            return False
        self._cancels.setdefault(run_id, action)
        task.cancel()
        return True

    async def _loop(self) -> None:
        look = True
        while not self._closing:
            try:
                look = await self._next(look)
            except Exception:  # a database error: the worker goes on after a pause
                _log.exception("pausepoint serve: a worker's claim or run failed")
                look = True
                await asyncio.sleep(self.poll_seconds)

    async def _next(self, look: bool) -> bool:
        """Claim a run and execute it, or wait for news (``poll_seconds`` at most).

        ``look`` False: skip the claim (the run just finished found nothing runnable
        in the same transaction, and no run was recorded since). Whether the next
        turn should claim.
        """
        # Idle (wakeable) from before the claim: a run recorded while the claim looks
        # finds this worker's event, so no wake falls between the claim and the wait.
        idle = IdleWorker()
        self._idle.append(idle)
        try:
            claimed: Claimed | None = None
            if look:
                now = time.time()
                claimed = await self.store.claim(self.owner, now, now + self.lease_seconds)
            if claimed is None:
                idle.waiting = True
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a cancel
                # that lands as the wait ends (a wake as close cancels the worker).
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.poll_seconds):
                        await idle.woken.wait()
                idle.waiting = False
                if idle.reserved:  # a run is being recorded for this worker: its end wakes
                    await idle.woken.wait()
                claimed = idle.handed
        finally:
            self._idle.remove(idle)
        if claimed is None:
            if not idle.woken.is_set():  # idle for a while: look for dead runs
                await self.store.requeue(expired_before=time.time())
            return True
        if idle.woken.is_set() and idle.handed is None:  # a wake meant for an idle worker
            self.wake()
        missed = self._missed
        finished = await self.run_claimed(claimed, look=True)
        return finished is None or finished.runnable or self._missed != missed

    async def run_thread(self, thread_id: str) -> bool:
        """Claim the thread's next runnable run and execute it; whether to call again.

        For a process whose runs come from a job queue (`pausepoint.workers`) rather
        than this object's own loops: the queue names the thread, the records decide
        which run is next. The thread's runs of dead processes whose lease ran out
        are requeued first, in the claim's transaction. False when there was no run,
        or when the transaction recording the run's end saw no other run of the
        thread in flight (a run recorded later has a job of its own).
        """
        now = time.time()
        claimed = await self.store.claim(
            self.owner, now, now + self.lease_seconds, thread_id=thread_id
        )
        if claimed is None:
            return False
        finished = await self.run_claimed(claimed)
        return finished is None or finished.thread_busy

    async def run_claimed(self, claimed: Claimed, *, look: bool = False) -> Finished | None:
        """Execute a run this worker claimed, renewing its lease; record how it ended.

        Cancelled from outside (this process stops), the run is left ``running`` under
        this owner: `close` puts it back to ``pending``. How its end was recorded
        (`Store.finish`, ``look`` passed on); None when it was not (handed back).
        """
        run = claimed.run
        log = await self.events.begin(run.run_id, fresh=claimed.attempt == 1)
        try:
            graph, assistant = await self.resolve(run)
            # the claim marked the run started: where it started, and the head now
            start, start_writes = claimed.start_checkpoint, claimed.start_writes
            resumed = claimed.started and claimed.head != start
            the = plan(assistant, run, continue_from_head=resumed)
        except Exception as exc:  # an unknown assistant, an unreadable thread...
            if connection_lost(exc):
                await self._hand_back(run, exc)
                return None
            error = {"error": type(exc).__name__, "message": str(exc)}
            log.emit("error", error)
            return await self._finish(run, "error", {"__error__": error}, "error", look)
        task = asyncio.create_task(execute(graph, assistant, run, the, log.emit, connection_lost))
        self._running[run.run_id] = task
        beat = asyncio.create_task(self._heartbeat(run, task))
        try:
            try:
                ended = await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise  # the worker stops (close): the run is requeued
                action = self._cancels.get(run.run_id)
                if action is None:  # the lease was lost: the run is someone else's now
                    self.events.abandon(run.run_id)
                    return None
                return await self._cancelled(graph, run, action, start, start_writes)
            except Exception as exc:  # not the graph's failure: reading its outcome failed
                if connection_lost(exc):
                    await self._hand_back(run, exc)
                    return None
                error = {"error": type(exc).__name__, "message": str(exc)}
                log.emit("error", error)
                ended = Ended("error", {"__error__": error}, "error")
            return await self._finish(run, ended.status, ended.body, ended.rest, look)
        finally:
            beat.cancel()
            self._running.pop(run.run_id, None)
            self._cancels.pop(run.run_id, None)

    async def _hand_back(self, run: RunRecord, exc: BaseException) -> None:
        """The database went away mid-run: the run goes back to ``pending``.

        It runs again from its last checkpoint (in this process or another). If the
        database is still away, its lease runs out and it is requeued then.
        """
        _log.warning("pausepoint: run %s handed back: %s: %s", run.run_id, type(exc).__name__, exc)
        self.events.abandon(run.run_id)  # no END: readers follow the run's next attempt
        try:
            await self.store.release(run.run_id, self.owner)
        except Exception:
            _log.warning("pausepoint: run %s left to its lease's expiry", run.run_id)

    async def _cancelled(
        self,
        graph: CompiledStateGraph,
        run: RunRecord,
        action: CancelAction,
        start: str | None,
        start_writes: int,
    ) -> Finished | None:
        if action == "rollback":
            try:
                await roll_back(self.saver, run.thread_id, start)
                if start is not None:  # the answers and writes it added to its start
                    await drop_writes_after(self.store.db, run.thread_id, start_writes)
            except Exception:  # kept as an interrupted run: nothing is lost
                _log.exception("pausepoint serve: run %s could not be rolled back", run.run_id)
            else:
                _, rest = await outcome(graph, run.thread_id)
                finished = await self._finish(run, None, None, rest)
                self.events.discard(run.run_id)
                return finished
        body, rest = await outcome(graph, run.thread_id)
        return await self._finish(run, "interrupted", body, rest)

    async def _finish(
        self, run: RunRecord, status: Any, body: Any, rest: ThreadStatus, look: bool = False
    ) -> Finished:
        # The run's last events and its end event are written with its end: a reader
        # that sees either has all the run's events to read.
        await self.events.settled(run.run_id)
        closing = self.events.end_flow(run.run_id)  # no await between: nothing is lost
        now = time.time()
        stored = None if status is None else load(dump(body))  # as a reader of the row sees it
        finished = await self.store.finish(
            run, self.owner, status, body, rest, now, also=closing, look=look
        )
        if finished:
            self.events.ended(run.run_id, None if status is None else (status, stored))
        else:  # requeued after its lease ran out: the next attempt ends it
            self.events.abandon(run.run_id)
        return finished

    async def _heartbeat(self, run: RunRecord, task: asyncio.Task[Ended]) -> None:
        """Renew the run's lease until it ends; act on a cancel asked meanwhile.

        A cancel asked by another process is read here. A run still going
        ``_CANCEL_GRACE`` seconds (at least a renewal period) after its cancel is
        cancelled again: a cancellation that lands in a PostgreSQL query can be
        swallowed below the engine's driver, which then waits on the step's tasks.
        """
        asked: float | None = None
        renewed = time.monotonic()
        while not task.done():
            await asyncio.sleep(self.lease_seconds / 3)  # the claim has just set the lease
            if task.done():
                return
            try:
                ours, cancel = await self.store.renew(
                    run.run_id, self.owner, time.time() + self.lease_seconds
                )
            except Exception as exc:  # the database is away: try again, up to the lease
                if time.monotonic() - renewed < self.lease_seconds * 2 / 3:
                    _log.warning("pausepoint: lease of run %s not renewed: %s", run.run_id, exc)
                    continue
                ours, cancel = False, None  # it may be taken over soon: stop first
            renewed = time.monotonic()
            if not ours:
                task.cancel()
                return
            if cancel in ("interrupt", "rollback") or run.run_id in self._cancels:
                if asked is None:
                    asked = time.monotonic()
                    if run.run_id not in self._cancels and cancel in ("interrupt", "rollback"):
                        self.cancel(run.run_id, cancel)
                elif time.monotonic() - asked >= max(_CANCEL_GRACE, self.lease_seconds / 3):
                    _log.warning("pausepoint serve: run %s ignored its cancel: again", run.run_id)
                    asked = time.monotonic()
                    task.cancel()
