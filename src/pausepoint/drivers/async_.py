"""The async driver: the loop's effects carried out with asyncio tasks and an async saver.

Async nodes are awaited on the event loop; sync nodes run in worker threads
(``asyncio.to_thread``) so they never block it. Outcomes and stream chunks come
back through one ``asyncio.Queue``; worker threads put into it thread-safely.
With a saver whose async methods are its sync ones in a worker thread (SQLite's),
saver calls and a step's lone sync task go to one worker thread together, a
stretch at a time (`pausepoint.drivers.stretch`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, Awaitable, Generator, Sequence
from typing import Any, TypeVar, cast

from pausepoint.checkpoint.base import (
    CheckpointTuple,
    LeaseClaim,
    SaverProtocol,
    as_config,
)
from pausepoint.config import RunnableConfig
from pausepoint.drivers.calls import AsyncCalls, asettle, cancel_calls
from pausepoint.drivers.owners import LOCAL, claim_kwargs, holder_is_gone
from pausepoint.drivers.retry import retry_delay
from pausepoint.drivers.stop import wind_down
from pausepoint.drivers.stretch import RunEnded, Stretch, in_threads
from pausepoint.drivers.sync import LeaseHeld, callers_commit, commit_of
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

__all__ = ["AsyncSink", "drive", "perform", "run_effects"]

_Event = tuple[str, Any]
T = TypeVar("T")


class AsyncSink:
    """A queue that worker threads and the event loop can both put into."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[_Event] = asyncio.Queue()
        self.puts = 0
        """How many events were put so far (a stretch asks: did its task stream?)."""

    def put(self, event: _Event) -> None:
        """Put from any thread."""
        self.puts += 1
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self.queue.put_nowait(event)
        else:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, event)


async def drive(
    loop: Generator[Effect, Reply, RunResult],
    saver: SaverProtocol,
    sink: AsyncSink,
    result: list[RunResult],
    max_concurrency: int | None = None,
) -> AsyncGenerator[tuple[tuple[str, ...], str, Any], None]:
    """Run ``loop`` to the end, yielding stream chunks; append its result to ``result``.

    With ``max_concurrency``, at most that many of a step's tasks run at once (the
    others wait their turn, in the loop's order).
    """
    limit = asyncio.Semaphore(max_concurrency) if max_concurrency else None
    send: Reply = None
    error: BaseException | None = None
    effect: Effect | None = None
    running: set[asyncio.Task[None]] = set()
    calls = AsyncCalls(saver, sink.loop)
    lease = LeaseHeld(saver)
    stretch = Stretch(loop, saver, lease, calls, sink) if in_threads(saver) else None
    try:
        while True:
            try:
                effect = loop.throw(error) if error is not None else loop.send(send)
                send, error = None, None
                if stretch is not None and not running and stretch.takes(effect):
                    effect = await stretch.carry(effect)  # and the effects after it
            except (StopIteration, RunEnded) as stop:
                result.append(cast("RunResult", stop.value))
                return
            # Exact-type dispatch, as in the sync driver.
            if type(effect) is NextOutcome:
                while True:
                    event, item = await sink.queue.get()
                    if event == "done":
                        send = item
                        break
                    yield item
            elif type(effect) is RunTasks:
                _start_all(effect.tasks, sink, calls, limit, running)
            elif type(effect) is Emit:
                yield (effect.ns, effect.mode, effect.payload)
            else:
                send, error = await _not_swallowed(_carry_out(saver, effect, lease))
    except (asyncio.CancelledError, GeneratorExit):  # cancelled, or closed early
        await _cut(loop, effect, stretch, saver, sink, lease, running)
        raise
    finally:
        loop.close()
        await _let_go(saver, lease, running)


async def _cut(
    loop: Generator[Effect, Reply, RunResult],
    effect: Effect | None,
    stretch: Stretch | None,
    saver: SaverProtocol,
    sink: AsyncSink,
    lease: LeaseHeld,
    running: set[asyncio.Task[None]],
) -> None:
    """Stop the run where it is: in a stretch (cut there), or on the event loop."""
    ready: Outcome | None = None  # a stretch's lone task's outcome, not sent
    if stretch is not None:
        effect, ready = stretch.cut(effect)
        open_calls = stretch.open_calls()
        cancel_calls(open_calls)  # the cut task's calls, as a cancelled task's
        await asettle(open_calls)
    await _stop(loop, effect, saver, sink, lease, running, ready)


async def _let_go(saver: SaverProtocol, lease: LeaseHeld, running: set[asyncio.Task[None]]) -> None:
    """What a run holds when it ends, however it ends: its tasks, its lease."""
    for t in running:
        t.cancel()
    if (held := lease.held) is not None:  # closed, cancelled or failed: let it go
        LOCAL.drop(saver, held.thread_id, held.run)
        with contextlib.suppress(Exception):  # a lost connection: the lease expires
            await saver.arelease_lease(held.thread_id, held.owner)


async def _carry_out(
    saver: SaverProtocol, effect: SaverEffect, lease: LeaseHeld
) -> tuple[Reply, Exception | None]:
    """Perform a saver effect: its outcome, or the error to send into the loop.

    A save is one ``acommit``, made here, as in the sync driver.
    """
    if type(effect) is SaveCheckpoint or type(effect) is SaveWrites:
        step = lease.commit_of(effect)
        try:
            done = await saver.acommit(step)
        except Exception as exc:  # sent into the loop, which decides
            return None, exc
        if effect.release and (rest := lease.after_write(saver, step)) is not None:
            with contextlib.suppress(Exception):  # written; an unreleased lease expires
                await _lease_effect(saver, rest)
        return (done if type(effect) is SaveCheckpoint else None), None
    if type(effect) is ClaimThread:
        # Held from the moment the call starts: interrupted (a cancelled ainvoke), the
        # claim may have gone through, so the driver lets it go when it stops.
        lease.held = effect
    try:
        done = await perform(saver, effect)
    except Exception as exc:  # sent into the loop, which decides
        return None, exc
    lease.saw(effect, done)
    return done, None


async def _not_swallowed(call: Awaitable[T]) -> T:
    """Await a saver call; a cancel of this task that it swallowed is raised after it.

    A saver (or the library under it) may catch the ``CancelledError`` meant for the
    run and return: the cancel then stops the run all the same, here, and the
    write is made again by the stop (`pausepoint.drivers.stop.wind_down`).
    """
    task = asyncio.current_task()
    asked = 0 if task is None else task.cancelling()
    done = await call
    if task is not None and task.cancelling() > asked:
        raise asyncio.CancelledError
    return done


async def _stop(
    loop: Generator[Effect, Reply, RunResult],
    effect: Effect | None,
    saver: SaverProtocol,
    sink: AsyncSink,
    lease: LeaseHeld,
    running: set[asyncio.Task[None]],
    ready: Outcome | None = None,
) -> None:
    """End a stopped run: cancel its running tasks, then save what it owes.

    The tasks are awaited: when ``aclose()`` returns, or the ``CancelledError``
    reaches the caller, no node of the run runs on (a sync node's thread does,
    but its result is dropped). Then the loop is wound down
    (`pausepoint.drivers.stop.wind_down`).
    """
    for t in running:
        t.cancel()
    await asyncio.gather(*running, return_exceptions=True)
    flow = wind_down(loop, effect, ready)
    send: object = None
    try:
        while True:
            try:
                need = flow.send(send)
            except StopIteration:
                return
            if type(need) is NextOutcome:
                send = await _next_done(sink)
            else:
                send = await _carry_out(saver, need, lease)
    finally:
        flow.close()


async def _next_done(sink: AsyncSink) -> Outcome:
    """The next task outcome; the chunks before it are dropped (nobody reads them)."""
    while True:
        kind, item = await sink.queue.get()
        if kind == "done":
            return item


async def run_effects(flow: Generator[SaverEffect | Call, Any, T], saver: SaverProtocol) -> T:
    """Carry out the saver effects of ``flow`` with an async saver; return its result.

    The async form of `pausepoint.drivers.sync.run_effects` (a `Call` is awaited).
    """
    send: Any = None
    try:
        while True:
            try:
                effect = flow.send(send)
            except StopIteration as stop:
                result: T = stop.value
                return result
            if type(effect) is Call:
                send = await _call(effect)
            else:
                send = await perform(saver, effect)
    finally:
        flow.close()


async def perform(saver: SaverProtocol, effect: SaverEffect) -> Reply:
    """Carry out a saver effect with an async saver, with no lease held."""
    if type(effect) is SaveCheckpoint:
        if (given := callers_commit(effect)) is not None:
            return await saver.acommit(given)
        return await saver.acommit(commit_of(effect))
    if type(effect) is SaveWrites:
        await saver.acommit(commit_of(effect))
        return None
    if type(effect) is LoadCheckpoint:
        return await _load(saver, effect)
    if type(effect) is ClaimThread:
        return await _claim(saver, effect)
    return await _lease_effect(saver, effect)


async def _load(saver: SaverProtocol, effect: LoadCheckpoint) -> CheckpointTuple | None:
    config = as_config(effect.config)  # LangGraph's read methods take a config dict
    if effect.before is None:
        return await saver.aget_tuple(config)
    before: RunnableConfig = {"configurable": {"checkpoint_id": effect.before}}
    async for older in saver.alist(config, before=before, limit=1):
        return older
    return None


async def _lease_effect(saver: SaverProtocol, effect: ReleaseThread | Sleep) -> Reply:
    if type(effect) is ReleaseThread:
        LOCAL.drop(saver, effect.thread_id, effect.run)
        return await saver.arelease_lease(effect.thread_id, effect.owner)
    if type(effect) is Sleep:
        await asyncio.sleep(effect.seconds)
        return None
    raise TypeError(f"unknown effect {effect!r}")


async def _claim(saver: SaverProtocol, effect: ClaimThread) -> LeaseClaim:
    """Take the thread for this run: in this process first, then the saver's lease."""
    args = (effect.thread_id, effect.owner, effect.ttl)
    refused = LOCAL.take(saver, effect.thread_id, effect.run, effect.owner, effect.ttl)
    if refused is not None:
        return refused
    kw = claim_kwargs(saver, effect.read, "aacquire_lease")
    claim = await saver.aacquire_lease(*args, **kw)
    if not claim.acquired and holder_is_gone(claim.holder.owner):
        # The holder's process, on this host, is dead: its lease goes now, not at expiry.
        await saver.arelease_lease(effect.thread_id, claim.holder.owner)
        claim = await saver.aacquire_lease(*args, **kw)
    if not claim.acquired:
        LOCAL.drop(saver, effect.thread_id, effect.run)
    return claim


def _start_all(
    tasks: Sequence[ExecTask],
    sink: AsyncSink,
    calls: AsyncCalls,
    limit: asyncio.Semaphore | None,
    running: set[asyncio.Task[None]],
) -> None:
    """Start a step's tasks; each one's outcome comes back through ``sink``."""
    for task in tasks:
        t = asyncio.create_task(_start(task, sink, calls, limit))
        running.add(t)
        t.add_done_callback(functools.partial(_ended, task, sink, running))


def _ended(task: ExecTask, sink: AsyncSink, running: set[Any], done: asyncio.Task[None]) -> None:
    """A task's asyncio task is done: one cancelled before it ended still has an outcome."""
    running.discard(done)
    if done.cancelled():  # a fresh error: its repr is what the saved error shows
        sink.put(("done", Outcome(task.task, error=asyncio.CancelledError())))


async def _start(
    task: ExecTask, sink: AsyncSink, calls: AsyncCalls, limit: asyncio.Semaphore | None
) -> None:
    if limit is None:
        sink.put(("done", await run_task(task, calls)))
        return
    async with limit:
        sink.put(("done", await run_task(task, calls)))


async def run_task(task: ExecTask, calls: AsyncCalls) -> Outcome:
    """Run one task to its outcome, retrying by its policy; never raises."""
    attempt = 0
    while True:
        body = task.start(calls.spawn)  # a new attempt: the task is its context
        TASK.set(task)  # this asyncio task has its own context
        try:
            return Outcome(task.task, await _run_body(body))
        except GraphBubbleUp as signal:
            return Outcome(task.task, error=signal)
        except Exception as exc:
            attempt += 1
            delay = retry_delay(task.retry, attempt, exc)
            if delay is None:
                return Outcome(task.task, error=exc)
        except asyncio.CancelledError:  # the run is stopped: so are the task's calls
            cancel_calls(task.open_calls)
            raise
        finally:
            if task.open_calls is not None:  # the task's @task calls end with it
                await asettle(task.open_calls)
        await asyncio.sleep(delay)


async def _call(call: Call) -> object:
    """Await an async function's call; run a sync one in a worker thread."""
    if call.async_ is not None:
        return await call.async_(*call.args, **call.kwargs)
    return await asyncio.to_thread(call.sync, *call.args, **call.kwargs)


async def _run_body(body: Body) -> list[tuple[str, object]]:
    try:
        call = next(body)
        while isinstance(call, Call):
            try:
                result = await _call(call)
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
