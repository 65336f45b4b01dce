"""The sync driver: the loop's effects carried out with a thread pool and a sync saver.

Tasks of a step run in worker threads, each in a copy of the caller's context
variables; a step with a single task runs in the caller's thread, and its
outcome goes straight back into the loop. Finished tasks and stream chunks from
the workers (custom writes, subgraph output) come back through one queue, so
the loop sees outcomes one at a time, in the order they finish.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import queue
import threading
import time
from collections.abc import Awaitable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pausepoint.checkpoint.base import (
    CheckpointPut,
    CheckpointRef,
    CheckpointTuple,
    LeaseClaim,
    SaverProtocol,
    StepCommit,
    TaskWrites,
    as_config,
)
from pausepoint.config import RunnableConfig
from pausepoint.drivers.calls import AsyncCalls, SyncCalls, settle
from pausepoint.drivers.owners import LOCAL, claim_kwargs, holder_is_gone
from pausepoint.drivers.retry import retry_delay
from pausepoint.drivers.stop import wind_down
from pausepoint.errors import GraphBubbleUp, ParentCommand
from pausepoint.loop.effects import (
    Call,
    ClaimThread,
    Effect,
    Emit,
    LoadCheckpoint,
    NextOutcome,
    Outcome,
    ReleaseThread,
    Reply,
    RunTasks,
    SaveCheckpoint,
    SaverEffect,
    SaveWrites,
    Sleep,
)
from pausepoint.loop.node import Body
from pausepoint.loop.prepare import ExecTask
from pausepoint.loop.run import RunResult
from pausepoint.running import TASK

__all__ = [
    "Chunk",
    "LeaseHeld",
    "call_sync",
    "callers_commit",
    "commit_of",
    "drive",
    "perform",
    "run_effects",
    "run_task",
]

Chunk = tuple[tuple[str, ...], str, Any]
_Event = tuple[str, Any]
T = TypeVar("T")


def drive(
    loop: Generator[Effect, Reply, RunResult],
    saver: SaverProtocol,
    events: queue.SimpleQueue[_Event],
    max_workers: int | None = None,
) -> Generator[Chunk, None, RunResult]:
    """Run ``loop`` to the end, yielding stream chunks; return its result."""
    pool: ThreadPoolExecutor | None = None
    send: Reply = None
    error: BaseException | None = None
    effect: Effect | None = None
    calls = SyncCalls(saver)
    lease = LeaseHeld(saver)
    try:
        while True:
            try:
                effect = loop.throw(error) if error is not None else loop.send(send)
            except StopIteration as stop:
                return stop.value
            send, error = None, None
            # Dispatch on the exact type (the effects are final): every step passes here
            # several times, and a match on class patterns tries each isinstance in turn.
            if type(effect) is NextOutcome:
                send = yield from _next_outcome(events)
            elif type(effect) is RunTasks:
                tasks = effect.tasks
                if len(tasks) == 1 and not effect.live:  # run here, answer with its outcome
                    send = contextvars.copy_context().run(run_task, tasks[0], calls)
                    if not events.empty():
                        yield from _chunks_so_far(events)
                else:
                    pool = _start_all(tasks, events, pool, max_workers, calls)
            elif type(effect) is Emit:
                yield (effect.ns, effect.mode, effect.payload)
            else:
                send, error = _carry_out(saver, effect, lease)
    except GeneratorExit:  # closed early: the running tasks finish (threads cannot be stopped)
        _stop(wind_down(loop, effect, send), saver, events, lease)
        raise
    finally:
        loop.close()
        _let_go(saver, lease, calls, pool)


def _let_go(
    saver: SaverProtocol, lease: LeaseHeld, calls: SyncCalls, pool: ThreadPoolExecutor | None
) -> None:
    """What a run holds when it ends, however it ends: its lease, its threads."""
    if (held := lease.held) is not None:  # closed or failed before the loop let it go
        LOCAL.drop(saver, held.thread_id, held.run)
        with contextlib.suppress(Exception):  # a lost connection: the lease expires
            saver.release_lease(held.thread_id, held.owner)
    calls.close()
    if pool is not None and pool is not _SHARED.pool:
        pool.shutdown(wait=False)


class LeaseHeld:
    """The thread lease a driven run holds, if any: its writes are fenced with it."""

    __slots__ = ("fence", "fences", "held")

    def __init__(self, saver: SaverProtocol | None) -> None:
        self.held: ClaimThread | None = None
        self.fence: str | None = None
        """The owner that fences the run's writes (``StepCommit.lease``), if any."""
        self.fences: bool = saver is not None and saver.supports_leases

    def commit_of(self, effect: SaveCheckpoint | SaveWrites) -> StepCommit[CheckpointRef]:
        """The `StepCommit` of a save effect, fenced with the lease held.

        A run's last write lets the lease go in the same commit, except one that
        stores two checkpoints (a new run's input with its first step's). It goes
        under a ref: the run's effects carry one (a caller's config dict, from
        ``update_state``, is read here).
        """
        fence = self.fence
        release = fence is not None and effect.release
        at = effect.config  # a ref from the run; a caller's dict is read (ref_of, in line)
        if type(at) is not CheckpointRef:
            at = CheckpointRef.of(at)
        if type(effect) is SaveWrites:
            task = TaskWrites(effect.task_id, effect.writes, effect.task_path)
            return StepCommit(at, (task,), None, None, fence, release, effect.if_head)
        last = CheckpointPut(effect.checkpoint, effect.metadata, effect.new_versions)
        if effect.own_writes:  # the checkpoint, then its own writes (a migration's)
            return StepCommit(at, effect.own_writes, None, last, fence, release)
        first = effect.first
        release = release and first is None
        return StepCommit(at, effect.writes, last, first, fence, release)

    def after_write(
        self, saver: SaverProtocol, step: StepCommit[CheckpointRef]
    ) -> ReleaseThread | None:
        """Note the run's last write done; the release still to carry out, if any.

        A commit made with ``release=True`` let the lease go itself: only this
        process's record of the run goes. Otherwise a `ReleaseThread` follows.
        """
        held = self.held
        if held is None:
            return None
        self.held, self.fence = None, None
        if step.release:
            LOCAL.drop(saver, held.thread_id, held.run)
            return None
        return ReleaseThread(held.thread_id, held.owner, held.run)

    def saw(self, effect: SaverEffect, outcome: Reply) -> None:
        """Note a claim or a release the saver carried out."""
        if type(effect) is ClaimThread and type(outcome) is LeaseClaim:
            self.held = effect if outcome.acquired else None
            self.fence = effect.owner if self.held and self.fences else None
        elif type(effect) is ReleaseThread:
            self.held, self.fence = None, None


_UNLEASED = LeaseHeld(None)


def _carry_out(
    saver: SaverProtocol, effect: SaverEffect, lease: LeaseHeld
) -> tuple[Reply, Exception | None]:
    """Perform a saver effect: its outcome, or the error to send into the loop.

    A save is one ``commit``, made here (no call between the driver and the saver
    on the path every step takes).
    """
    if type(effect) is SaveCheckpoint or type(effect) is SaveWrites:
        step = lease.commit_of(effect)
        try:
            done = saver.commit(step)
        except Exception as exc:  # sent into the loop, which decides
            return None, exc
        if effect.release and (rest := lease.after_write(saver, step)) is not None:
            with contextlib.suppress(Exception):  # written; an unreleased lease expires
                _lease_effect(saver, rest)
        return (done if type(effect) is SaveCheckpoint else None), None
    if type(effect) is ClaimThread:
        # Held from the moment the call starts: interrupted (a cancelled ainvoke), the
        # claim may have gone through, so the driver lets it go when it stops.
        lease.held = effect
    try:
        done = perform(saver, effect)
    except Exception as exc:  # sent into the loop, which decides
        return None, exc
    lease.saw(effect, done)
    return done, None


def _stop(
    flow: Generator[NextOutcome | SaverEffect, object, None],
    saver: SaverProtocol,
    events: queue.SimpleQueue[_Event],
    lease: LeaseHeld,
) -> None:
    """Carry out a `pausepoint.drivers.stop.wind_down` flow: outcomes and writes."""
    send: object = None
    with contextlib.closing(flow):
        while True:
            try:
                need = flow.send(send)
            except StopIteration:
                return
            if type(need) is NextOutcome:
                send = _next_done(events)
            else:
                send = _carry_out(saver, need, lease)


def _next_done(events: queue.SimpleQueue[_Event]) -> Outcome:
    """The next task outcome; the chunks before it are dropped (nobody reads them)."""
    while True:
        kind, item = events.get()
        if kind == "done":
            return item


def run_effects(flow: Generator[SaverEffect | Call, Any, T], saver: SaverProtocol) -> T:
    """Carry out the saver effects of ``flow`` with a sync saver; return its result.

    For flows that read and write the saver, and call a user function now and then:
    state inspection and ``update_state`` (`pausepoint.loop.inspection`,
    `pausepoint.graph.update`, which has an async conditional edge called).
    A saver error propagates to the caller: such a flow has nothing to decide on it.
    """
    send: Any = None
    try:
        while True:
            try:
                effect = flow.send(send)
            except StopIteration as stop:
                result: T = stop.value
                return result
            send = call_sync(effect) if type(effect) is Call else perform(saver, effect)
    finally:
        flow.close()


def perform(saver: SaverProtocol, effect: SaverEffect) -> Reply:
    """Carry out a saver effect with a sync saver, with no lease held.

    A save is sent back where it went in its config's form (a caller's dict: a dict).
    """
    if type(effect) is SaveCheckpoint:
        if (given := callers_commit(effect)) is not None:
            return saver.commit(given)
        return saver.commit(commit_of(effect))
    if type(effect) is SaveWrites:
        saver.commit(commit_of(effect))
        return None
    if type(effect) is LoadCheckpoint:
        return _load(saver, effect)
    if type(effect) is ClaimThread:
        return _claim(saver, effect)
    return _lease_effect(saver, effect)


def commit_of(effect: SaveWrites | SaveCheckpoint) -> StepCommit[CheckpointRef]:
    """The `StepCommit` of a save effect made with no lease held."""
    return _UNLEASED.commit_of(effect)


def callers_commit(effect: SaveCheckpoint) -> StepCommit[RunnableConfig] | None:
    """The commit of a save under a caller's config dict (``update_state``'s), as a dict.

    What the saver returns for it (``put``'s config, keys of the saver's own included)
    then goes back to the caller, as LangGraph's ``update_state`` returns it. None for
    a save under a run's `CheckpointRef`.
    """
    at = effect.config
    return None if type(at) is CheckpointRef else StepCommit(at, *commit_of(effect)[1:])


def _load(saver: SaverProtocol, effect: LoadCheckpoint) -> CheckpointTuple | None:
    config = as_config(effect.config)  # LangGraph's read methods take a config dict
    if effect.before is None:
        return saver.get_tuple(config)
    before: RunnableConfig = {"configurable": {"checkpoint_id": effect.before}}
    return next(iter(saver.list(config, before=before, limit=1)), None)


def _lease_effect(saver: SaverProtocol, effect: ReleaseThread | Sleep) -> Reply:
    if type(effect) is ReleaseThread:
        LOCAL.drop(saver, effect.thread_id, effect.run)
        return saver.release_lease(effect.thread_id, effect.owner)
    if type(effect) is Sleep:
        time.sleep(effect.seconds)
        return None
    raise TypeError(f"unknown effect {effect!r}")


def _claim(saver: SaverProtocol, effect: ClaimThread) -> LeaseClaim:
    """Take the thread for this run: in this process first, then the saver's lease."""
    args = (effect.thread_id, effect.owner, effect.ttl)
    refused = LOCAL.take(saver, effect.thread_id, effect.run, effect.owner, effect.ttl)
    if refused is not None:
        return refused
    kw = claim_kwargs(saver, effect.read)
    claim = saver.acquire_lease(*args, **kw)
    if not claim.acquired and holder_is_gone(claim.holder.owner):
        # The holder's process, on this host, is dead: its lease goes now, not at expiry.
        saver.release_lease(effect.thread_id, claim.holder.owner)
        claim = saver.acquire_lease(*args, **kw)
    if not claim.acquired:
        LOCAL.drop(saver, effect.thread_id, effect.run)
    return claim


def _next_outcome(events: queue.SimpleQueue[_Event]) -> Generator[Chunk, None, Outcome]:
    """Pass chunks through until the next task outcome arrives."""
    while True:
        kind, item = events.get()
        if kind == "done":
            return item
        yield item


def _chunks_so_far(events: queue.SimpleQueue[_Event]) -> Generator[Chunk, None, None]:
    """Pass on the chunks a task run in this thread made (no outcome is queued then)."""
    while not events.empty():
        _kind, item = events.get()
        yield item


def _start_all(
    tasks: Sequence[Any],
    events: queue.SimpleQueue[_Event],
    pool: ThreadPoolExecutor | None,
    max_workers: int | None,
    calls: SyncCalls,
) -> ThreadPoolExecutor:
    """Start a step's tasks in the pool; their outcomes come back through ``events``."""
    if pool is None:
        pool = _pool_for(max_workers)
    for task in tasks:
        pool.submit(contextvars.copy_context().run, _start_in_worker, task, events, calls)
    return pool


class _SharedPool:
    """One pool for the parallel steps of top-level runs, started on first use.

    Starting threads for every invoke cost about half of a 10-way fan-out's time
    (benchmarks/, fanout-10). Only runs started outside any task use it: a run
    nested in a task (a subgraph) blocks its worker while it waits, so it gets a
    private pool and can never starve the shared one.
    """

    def __init__(self) -> None:
        self.pool: ThreadPoolExecutor | None = None
        self.lock = threading.Lock()

    def get(self) -> ThreadPoolExecutor:
        with self.lock:
            if self.pool is None:
                self.pool = ThreadPoolExecutor(32, "pausepoint-shared")
            return self.pool


_SHARED = _SharedPool()


def _pool_for(max_workers: int | None) -> ThreadPoolExecutor:
    if max_workers is None and TASK.get() is None:
        return _SHARED.get()
    return ThreadPoolExecutor(max_workers, "pausepoint")


def _start_in_worker(task: ExecTask, events: queue.SimpleQueue[_Event], calls: SyncCalls) -> None:
    events.put(("done", run_task(task, calls)))


def run_task(task: ExecTask, calls: SyncCalls | AsyncCalls) -> Outcome:
    """Run one task to its outcome, retrying by its policy; never raises.

    With `AsyncCalls`: a lone sync task the async driver runs in a worker thread
    (`pausepoint.drivers.stretch`); its ``@task`` calls start on the event loop.
    """
    attempt = 0
    while True:
        body = task.start(calls.spawn)  # a new attempt: the task is its context
        token = TASK.set(task)
        try:
            return Outcome(task.task, _run_body(body))
        except GraphBubbleUp as signal:
            return Outcome(task.task, error=signal)
        except Exception as exc:
            attempt += 1
            delay = retry_delay(task.retry, attempt, exc)
            if delay is None:
                return Outcome(task.task, error=exc)
        finally:
            if task.open_calls is not None:  # the task's @task calls end with it
                settle(task.open_calls)
            TASK.reset(token)
        time.sleep(delay)


# What nodes and edges usually return; isawaitable()'s ABC check is skipped for them.
_PLAIN_RESULTS = frozenset({dict, type(None), str, list, tuple, int, bool})


def _run_body(body: Body) -> list[tuple[str, object]]:
    try:
        call = next(body)
        while isinstance(call, Call):
            try:
                if call.kwargs:
                    result = call_sync(call)
                else:  # call_sync(call) without the call to it: the usual case
                    result = call.sync(*call.args)
                    if type(result) not in _PLAIN_RESULTS and inspect.isawaitable(result):
                        result = _finished(result)
            except ParentCommand as sent:  # a subgraph's command: the body applies it
                call = body.throw(sent)
                continue
            call = body.send(result)
        # Its writes were its last item: let it end. (A close() here threw GeneratorExit
        # into it, and the finally's close() of an ended body does nothing.)
        next(body, None)
        return call
    finally:
        body.close()


def call_sync(call: Call) -> object:
    """Make ``call`` in this thread; an async function's result is awaited to its end.

    An async node or conditional edge under the sync driver runs on an event loop
    of its own (``asyncio.run``), so ``invoke`` and ``update_state`` take it.
    """
    result = call.sync(*call.args, **call.kwargs) if call.kwargs else call.sync(*call.args)
    if type(result) not in _PLAIN_RESULTS and inspect.isawaitable(result):
        return _finished(result)
    return result


def _finished(awaitable: Awaitable[object]) -> object:
    """An awaitable's result, on an event loop of its own."""
    import asyncio  # only for an async node under the sync driver

    return asyncio.run(_await(awaitable))


async def _await(awaitable: Awaitable[object]) -> object:
    return await awaitable
