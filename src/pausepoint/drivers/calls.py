"""Running ``@task`` calls for the drivers: futures, retries, saved writes.

The loop decides what a call is (`pausepoint.loop.calls`); this module runs
it — in a worker thread for the sync driver, as an asyncio task for the async
driver — and saves its outcome as a pending write the moment it is known, so a
crash after a task finished never runs it again.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import inspect
import threading
import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint.base import CheckpointRef, SaverProtocol, StepCommit, TaskWrites
from pausepoint.constants import ASKED, ASKED_SPAN, ERROR, INTERRUPT, NS_SEP, RESUME, RETURN
from pausepoint.drivers.retry import retry_delay
from pausepoint.errors import GraphInterrupt
from pausepoint.loop.calls import CallRequest, CallSite, Memo, returned
from pausepoint.loop.pending import TaskRecord, as_stored, is_own_interrupt
from pausepoint.running import TASK
from pausepoint.scratchpad import Scratchpad
from pausepoint.task_context import TaskContext

if TYPE_CHECKING:
    import asyncio

    from pausepoint.runtime import Runtime

__all__ = [
    "AsyncCalls",
    "SyncCalls",
    "TaskFuture",
    "asettle",
    "cancel_calls",
    "settle",
    "spawned",
]

_PENDING: object = object()


class TaskFuture:
    """The result of a ``@task`` call: ``.result()`` in sync code, ``await`` in async code.

    `cancel` drops a call the caller no longer wants, as LangGraph's future does.
    """

    __slots__ = ("_async", "_cancelled", "_error", "_sync", "_value")

    def __init__(
        self,
        sync: concurrent.futures.Future[Any] | None = None,
        async_: asyncio.Future[Any] | None = None,
        value: object = _PENDING,
        error: BaseException | None = None,
    ) -> None:
        self._sync = sync
        self._async = async_
        self._value = value
        self._error = error
        self._cancelled = False

    @classmethod
    def of(cls, memo: Memo) -> TaskFuture:
        """A future already resolved from a saved result (or a pause still pending)."""
        return cls(value=memo.value, error=memo.pause)

    def cancel(self) -> bool:
        """Cancel the call unless it has finished; return whether it is now cancelled.

        A call on the event loop receives ``CancelledError`` (its coroutine, or the
        wait for its worker thread) and saves no result, so a re-execution of the
        caller that calls it again runs it; a call in a worker thread of the sync
        driver cannot be stopped: it runs to its end. Either way the future is done
        at once, and `result` or ``await`` raise ``CancelledError``
        (``concurrent.futures``' in sync code, asyncio's in async code, as in
        LangGraph).
        """
        if self._cancelled:  # as the futures mirrored: concurrent's say True, asyncio's False
            return self._async is None
        if self.done():
            return False
        self._cancelled = True
        if self._async is not None:
            self._async.cancel()
        elif self._sync is not None:
            self._sync.cancel()
        return True

    def cancelled(self) -> bool:
        """Whether `cancel` cancelled the call."""
        return self._cancelled

    def done(self) -> bool:
        """Whether the result is known (or the call was cancelled)."""
        if self._cancelled:
            return True
        if self._sync is not None:
            return self._sync.done()
        if self._async is not None:
            return self._async.done()
        return True

    def wait(self) -> None:
        """Block until the call has finished, whatever its outcome."""
        if self._sync is not None:
            concurrent.futures.wait([self._sync])

    async def settled(self) -> None:
        """Wait (asynchronously) until the call has finished, whatever its outcome."""
        import asyncio

        if self._async is not None:
            await asyncio.wait([self._async])
        elif self._sync is not None:
            await asyncio.wait([asyncio.wrap_future(self._sync)])

    def result(self, timeout: float | None = None) -> Any:
        """Wait for the task and return its result (or raise its exception)."""
        if self._cancelled:
            raise concurrent.futures.CancelledError
        if self._sync is not None:
            return self._sync.result(timeout)
        if self._async is not None:
            if not self._async.done():
                raise RuntimeError(
                    "this task runs on the event loop: use `await future` in async code "
                    "instead of .result()"
                )
            return self._async.result()
        if self._error is not None:
            raise self._error
        return self._value

    def __await__(self) -> Generator[Any, None, Any]:
        import asyncio

        if self._cancelled:
            return _cancelled().__await__()
        if self._async is not None:
            return self._async.__await__()
        if self._sync is not None:
            return asyncio.wrap_future(self._sync).__await__()
        return _resolved(self).__await__()


async def _resolved(fut: TaskFuture) -> Any:
    return fut.result()


async def _cancelled() -> object:
    import asyncio

    raise asyncio.CancelledError


def spawned(start: Callable[[CallRequest], TaskFuture], req: CallRequest | Memo) -> TaskFuture:
    """A ``@task`` call's future: what ``TaskContext.call`` returns (the driver's half).

    A memo (a saved result, or a pause still pending) resolves at once; a new call
    is started by ``start`` and its caller's outcome waits for it (``settle``).
    The driver hands this factory to each task's context, so the context never
    imports the drivers (tests/test_architecture.py pins the direction).
    """
    if isinstance(req, Memo):
        return TaskFuture.of(req)
    future = start(req)
    req.site.started.append(future)
    return future


def _child_context(
    req: CallRequest, spawner: Callable[[CallRequest | Memo], object]
) -> TaskContext:
    parent = TASK.get()
    assert parent is not None, "a task call runs inside its parent's context"
    if req.trace is not None:  # in the call's own context: its span made current
        req.trace.enter()
    site = CallSite(
        req.id,
        req.site.checkpoint_id,
        req.site.graph_ns,
        req.site.step,
        req.site.records,
        req.site.answers,
        req.site.save_at,
    )
    site.events = req.site.events
    site.kept = req.site.kept
    return TaskContext(
        req.name,
        req.id,
        req.ns,
        Scratchpad(list(req.resume)),
        parent.stream_writer,
        config=parent.config,
        nest=parent.nest,
        calls=site,
        spawn=spawner,
        runtime=_call_runtime(parent.runtime, req),
        graph_ns=f"{parent.graph_ns}{NS_SEP}{req.ns.rsplit(NS_SEP, 1)[-1]}",
    )


def _call_runtime(parent: Runtime[Any], req: CallRequest) -> Runtime[Any]:
    """A ``@task`` call's runtime: its caller's, with the call's own task id."""
    info = parent.execution_info
    if info is None:
        return parent
    return parent.override(execution_info=info.patch(task_id=req.id, checkpoint_ns=req.ns))


def _outcome(req: CallRequest, value: object, error: BaseException | None) -> TaskRecord:
    if req.trace is not None:
        req.trace.ended(error)
    if error is None:
        return TaskRecord(writes=[(RETURN, returned(req.name, value))], done=True)
    if isinstance(error, GraphInterrupt):
        found = error.interrupts
        own = error.position is not None and bool(found) and is_own_interrupt(found[0], req.ns)
        rec = TaskRecord(
            interrupts=found,
            resume=list(req.resume) or None,
            asked=error.position if own else None,
        )
        if own and req.trace is not None:
            rec.asked_span = req.trace.asked()
        return rec
    return TaskRecord(error=repr(error), resume=list(req.resume) or None)


def _writes(rec: TaskRecord) -> list[tuple[str, object]]:
    if rec.done:
        return list(rec.writes)
    if rec.interrupts:
        stored = as_stored(rec.interrupts, rec.asked)
        if rec.asked_span is not None:  # hidden: the answering run links to the asker
            return [
                (INTERRUPT, stored),
                (ASKED, rec.asked),
                (ASKED_SPAN, rec.asked_span),
                (ERROR, None),
            ]
        if rec.asked is not None:
            return [(INTERRUPT, stored), (ASKED, rec.asked), (ERROR, None)]
        return [(INTERRUPT, stored), (ERROR, None)]
    return [(ERROR, rec.error)]


def settle(site: CallSite | None) -> None:
    """Wait for every call a task started: a task ends only when its calls have.

    A caller that fails (or pauses) on one call's outcome must not leave a sibling
    call running past the end of the step, where it would still write.
    """
    for future in site.started if site is not None else ():
        future.wait()


async def asettle(site: CallSite | None) -> None:
    """`settle` for the async driver."""
    for future in site.started if site is not None else ():
        await future.settled()


def cancel_calls(site: CallSite | None) -> None:
    """Cancel every call a task started and that still runs: the task is cancelled."""
    for future in site.started if site is not None else ():
        future.cancel()


def _commit(req: CallRequest, writes: list[tuple[str, object]]) -> StepCommit[CheckpointRef]:
    """A call's writes, saved against the checkpoint its task runs from."""
    assert req.save_at is not None
    return StepCommit(req.save_at, (TaskWrites(req.id, writes),))


class SyncCalls:
    """Runs ``@task`` calls in a thread pool and saves their writes with a sync saver."""

    def __init__(self, saver: SaverProtocol) -> None:
        self.saver = saver
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def spawn(self, req: CallRequest | Memo) -> TaskFuture:
        """The future of a call: started now (in the pool), or resolved from a memo."""
        return spawned(self._start, req)

    def _start(self, req: CallRequest) -> TaskFuture:
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(32, "pausepoint-task")
            pool = self._pool
        ctx = contextvars.copy_context()
        return TaskFuture(sync=pool.submit(ctx.run, self._run, req))

    def close(self) -> None:
        """Release the worker threads (calls still running finish first)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def _persist(self, req: CallRequest, writes: list[tuple[str, object]]) -> None:
        if req.save_at is not None:
            self.saver.commit(_commit(req, writes))
        else:  # durability "exit": saved when the run ends or pauses
            req.site.keep(req, writes)

    def _run(self, req: CallRequest) -> object:
        if req.new_answer:
            self._persist(req, [(RESUME, list(req.resume))])
        attempt = 0
        while True:
            child = _child_context(req, self.spawn)
            token = TASK.set(child)
            try:
                result = req.fn(*req.args, **req.kwargs)
                if inspect.iscoroutine(result):
                    import asyncio  # only for an async task under the sync driver

                    result = asyncio.run(result)
                settle(child.open_calls)
                return self._finish(req, result, None)
            except GraphInterrupt as signal:
                settle(child.open_calls)
                return self._finish(req, None, signal)
            except Exception as exc:
                settle(child.open_calls)
                attempt += 1
                delay = retry_delay(req.retry, attempt, exc)
                if delay is None:
                    return self._finish(req, None, exc)
            finally:
                TASK.reset(token)
            time.sleep(delay)

    def _finish(self, req: CallRequest, value: object, error: BaseException | None) -> object:
        rec = _outcome(req, value, error)
        req.site.record(req, rec)
        self._persist(req, _writes(rec))
        req.site.report(req, value, error)
        if error is not None:
            raise error
        return value


class AsyncCalls:
    """Runs ``@task`` calls as asyncio tasks and saves their writes with an async saver."""

    def __init__(self, saver: SaverProtocol, loop: asyncio.AbstractEventLoop) -> None:
        self.saver = saver
        self.loop = loop

    def spawn(self, req: CallRequest | Memo) -> TaskFuture:
        """The future of a call: started now (on the event loop), or resolved from a memo."""
        return spawned(self._start, req)

    def _start(self, req: CallRequest) -> TaskFuture:
        """Start the call on the event loop (from any thread)."""
        import asyncio

        try:
            on_loop = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            return TaskFuture(async_=asyncio.ensure_future(self._run(req)))
        return TaskFuture(sync=asyncio.run_coroutine_threadsafe(self._run(req), self.loop))

    def close(self) -> None:
        """Nothing to release: calls are asyncio tasks."""

    async def _persist(self, req: CallRequest, writes: list[tuple[str, object]]) -> None:
        if req.save_at is not None:
            await self.saver.acommit(_commit(req, writes))
        else:  # durability "exit": saved when the run ends or pauses
            req.site.keep(req, writes)

    async def _run(self, req: CallRequest) -> object:
        import asyncio

        if req.new_answer:
            await self._persist(req, [(RESUME, list(req.resume))])
        attempt = 0
        while True:
            child = _child_context(req, self.spawn)
            TASK.set(child)  # this asyncio task's own context
            try:
                if req.is_async:
                    result = await req.fn(*req.args, **req.kwargs)
                else:
                    result = await asyncio.to_thread(req.fn, *req.args, **req.kwargs)
                await asettle(child.open_calls)
                return await self._finish(req, result, None)
            except GraphInterrupt as signal:
                await asettle(child.open_calls)
                return await self._finish(req, None, signal)
            except Exception as exc:
                await asettle(child.open_calls)
                attempt += 1
                delay = retry_delay(req.retry, attempt, exc)
                if delay is None:
                    return await self._finish(req, None, exc)
            await asyncio.sleep(delay)

    async def _finish(self, req: CallRequest, value: object, error: BaseException | None) -> object:
        rec = _outcome(req, value, error)
        req.site.record(req, rec)
        await self._persist(req, _writes(rec))
        req.site.report(req, value, error)
        if error is not None:
            raise error
        return value
