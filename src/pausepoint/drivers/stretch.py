"""Stretches of an async run carried out in one worker thread (issue 33).

A saver whose async methods are its sync ones run in a worker thread
(`pausepoint.checkpoint.sqlite.SqliteSaver`'s) costs the async driver a thread hop
per saver call, and each sync node one more. For such a saver the driver hands
the loop to one worker thread for a stretch: the saver effects, and a step's lone
sync task, one after the other, with the sync driver's own code
(`pausepoint.drivers.sync`), until the loop asks for what only the event loop
does: a chunk to stream, several tasks, an async call, a wait, a task that
retries. A run of ``ainvoke`` that streams nothing is then one hop, not one per
saver call and node; a streamed one hops back for each chunk, which it streams
at the same point of the run as before.

One thread at a time advances the loop: the driver awaits the stretch. A stop
(the run cancelled while a stretch runs) is told to the stretch (`Stretch.cut`)
under its lock, which the thread holds only while it advances the loop: the
thread touches neither the loop nor the lease after it, and the driver winds the
run down from the effect the loop waits on, as it does after a hop of its own
(a saver call in flight is made again; a sync node running is not waited for,
its outcome is a ``CancelledError``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Generator
from typing import TYPE_CHECKING, cast

from pausepoint.checkpoint.base import SaverProtocol
from pausepoint.drivers import sync as sdriver
from pausepoint.drivers.calls import AsyncCalls
from pausepoint.drivers.sync import LeaseHeld
from pausepoint.loop.calls import CallSite
from pausepoint.loop.effects import (
    ClaimThread,
    Effect,
    LoadCheckpoint,
    NextOutcome,
    Outcome,
    ReleaseThread,
    Reply,
    RunTasks,
    SaveCheckpoint,
    SaverEffect,
    SaveWrites,
)
from pausepoint.loop.prepare import ExecTask

if TYPE_CHECKING:
    from pausepoint.drivers.async_ import AsyncSink

__all__ = ["RunEnded", "Stretch", "in_threads"]


def in_threads(saver: object) -> bool:
    """Whether ``saver``'s async methods are its sync ones run in a worker thread.

    Asked of the saver's class first (``async_in_threads``, a property): a proxy
    that forwards attributes to such a saver may have async methods of its own.
    """
    if type(getattr(type(saver), "async_in_threads", None)) is not property:
        return False
    said: object = getattr(saver, "async_in_threads", False)
    return said is True


class RunEnded(Exception):
    """The loop ended in a stretch: ``value`` is its result (as ``StopIteration``'s)."""

    def __init__(self, value: object) -> None:
        super().__init__()
        self.value = value


class _Stopped(Exception):
    """The driver stopped the run while the thread made a call: leave everything."""


class Stretch:
    """One run's stretches in a worker thread (see the module's docstring)."""

    __slots__ = (
        "calls",
        "effect",
        "lease",
        "lock",
        "loop",
        "outcome",
        "pending",
        "result",
        "saver",
        "sink",
        "stopped",
        "task",
    )

    def __init__(
        self,
        loop: Generator[Effect, Reply, object],
        saver: SaverProtocol,
        lease: LeaseHeld,
        calls: AsyncCalls,
        sink: AsyncSink,
    ) -> None:
        self.loop = loop
        self.saver = saver
        self.lease = lease
        self.calls = calls
        self.sink = sink
        """The driver's queue of chunks and outcomes (put into from any thread)."""
        self.lock = threading.Lock()
        self.stopped = False
        self.pending = False
        """A stretch was started and the driver has not had where it landed."""
        self.effect: Effect | None = None
        """The effect the loop waits on (its answer not sent), as the thread left it."""
        self.task: ExecTask | None = None
        """The lone task the thread runs now, if any."""
        self.outcome: Outcome | None = None
        """That task's outcome, once it has one."""
        self.result: object = None
        """The loop's result, when it ended in a stretch."""

    @staticmethod
    def takes(effect: Effect) -> bool:
        """Whether a stretch carries ``effect`` out (else the event loop does)."""
        kind = type(effect)
        if kind is RunTasks:
            effect = cast("RunTasks", effect)
            return not effect.live and len(effect.tasks) == 1 and _plain(effect.tasks[0])
        return (
            kind is SaveCheckpoint
            or kind is SaveWrites
            or kind is ClaimThread
            or kind is ReleaseThread
            or kind is LoadCheckpoint
        )

    async def carry(self, effect: Effect) -> Effect:
        """Carry ``effect`` out, and the effects after it, in one worker thread.

        Returns the effect the loop waits on then, for the event loop to carry out;
        `_NEXT`, when the lone task streamed chunks: they are queued, then its outcome.

        Raises:
            RunEnded: The loop ended.
        """
        self.pending, self.effect = True, effect
        if type(effect) is RunTasks:
            self.task, self.outcome = effect.tasks[0], None
        landed = await asyncio.to_thread(self._carry, effect)
        self.pending = False
        if landed is None:
            raise RunEnded(self.result)
        return landed

    def cut(self, effect: Effect | None) -> tuple[Effect | None, Outcome | None]:
        """Stop the stretch in flight; the effect the loop waits on, and a ready outcome.

        ``effect``: the driver's, used when no stretch was in flight. The ready
        outcome is the lone task's (`pausepoint.drivers.stop.wind_down`): its own
        if it has ended, else a ``CancelledError`` (its thread runs on, unwaited).
        """
        with self.lock:
            self.stopped = True
            if not self.pending:
                return effect, None
            task = self.task
            if task is None:
                return self.effect, None
            ready = self.outcome or Outcome(task.task, error=asyncio.CancelledError())
            return self.effect, ready

    def open_calls(self) -> CallSite | None:
        """The ``@task`` calls of the lone task cut by the stop, if any."""
        return None if self.task is None or not self.pending else self.task.open_calls

    # --- in the worker thread --------------------------------------------------------------

    def _carry(self, effect: Effect) -> Effect | None:
        """The stretch, in the worker thread; None when the loop ended."""
        loop = self.loop
        with self.lock:
            if self.stopped:  # stopped as the thread started: nothing of it runs
                return _NEXT
        while True:
            try:
                if type(effect) is RunTasks:
                    reply, error = self._run_lone(effect), None
                    if reply is None:
                        return _NEXT
                else:
                    reply, error = self._saver_effect(cast("SaverEffect", effect))
            except _Stopped:
                return _NEXT  # the driver, stopped, reads nothing more
            with self.lock:
                if self.stopped:
                    return _NEXT
                try:
                    effect = loop.throw(error) if error is not None else loop.send(reply)
                except StopIteration as stop:
                    self.result = stop.value
                    return None
                self.effect = effect
                if not self.takes(effect):
                    return effect
                if type(effect) is RunTasks:
                    self.task, self.outcome = effect.tasks[0], None

    def _run_lone(self, effect: RunTasks) -> Outcome | None:
        """Run the step's lone task here, as the sync driver runs one in place.

        None when it streamed chunks: they go first, then its outcome, through the
        driver's queue (the loop's `RunTasks` takes it as a `NextOutcome` would).
        """
        task = effect.tasks[0]
        before = self.sink.puts
        done = contextvars.copy_context().run(sdriver.run_task, task, self.calls)
        with self.lock:
            if self.stopped:
                raise _Stopped
            self.outcome = done
            self.task = None
            if self.sink.puts == before:
                return done
            self.effect = _NEXT
        self.sink.put(("done", done))
        return None

    def _saver_effect(self, effect: SaverEffect) -> tuple[Reply, Exception | None]:
        """`pausepoint.drivers.sync`'s carry-out, its lease bookkeeping under the lock."""
        saver, lease = self.saver, self.lease
        if type(effect) is SaveCheckpoint or type(effect) is SaveWrites:
            step = lease.commit_of(effect)
            try:
                done = saver.commit(step)
            except Exception as exc:  # sent into the loop, which decides
                return None, exc
            with self.lock:
                if self.stopped:
                    raise _Stopped
                rest = lease.after_write(saver, step) if effect.release else None
            if rest is not None:
                with contextlib.suppress(Exception):  # written; an unreleased lease expires
                    sdriver.perform(saver, rest)
            return (done if type(effect) is SaveCheckpoint else None), None
        if type(effect) is ClaimThread:
            with self.lock:
                if self.stopped:
                    raise _Stopped
                lease.held = effect  # held from the moment the call starts (as the drivers)
        try:
            done = sdriver.perform(saver, effect)
        except Exception as exc:  # sent into the loop, which decides
            return None, exc
        with self.lock:
            if self.stopped:
                raise _Stopped
            lease.saw(effect, done)
        return done, None


_NEXT = NextOutcome()


def _plain(task: ExecTask) -> bool:
    """A task of a sync node with sync edges and no retry policy: it may run in a stretch.

    A retrying task waits between attempts, which a stop must cut short; an async
    node or edge, and a subgraph node, run on the event loop.
    """
    node = task.task.node
    if node.is_async or node.subgraph is not None or node.retry:
        return False
    if task.frame.run.opts.messages is not None:
        return False
    return not any(branch.path_is_async for branch in node.branches)
