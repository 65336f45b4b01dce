"""``RunService``: the one interface the HTTP layer calls (assistants, threads, runs).

It opens the saver and the server's tables on one database (a SQLite file or a
PostgreSQL URL), compiles each served graph with that saver, and owns the workers
that execute runs (`pausepoint.server.worker`). Requests only record: a run is
written ``pending`` and a worker executes it.
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

from pausepoint.graph.rebind import compiled_with
from pausepoint.server.assistants import (
    DEFAULT_ASSISTANT_NAMESPACE,
    AssistantBook,
    SortOrder,
    default_assistant_id,
    matches,
    page,
)
from pausepoint.server.errors import NotFoundError
from pausepoint.server.events import EventLogs, position
from pausepoint.server.execute import check_request, graph_input, outcome
from pausepoint.server.opening import Closer, close_all, is_postgres_url, open_database
from pausepoint.server.precheck import check_resume, checking_graph
from pausepoint.server.records import (
    Assistant,
    CancelAction,
    JsonObject,
    RunEvent,
    RunRecord,
    RunRequest,
    RunStatus,
    ThreadRecord,
    ThreadStatus,
)
from pausepoint.server.store import Claimed, Database, Store
from pausepoint.server.unopenable import PartlyOpened
from pausepoint.server.worker import IdleWorker, Workers

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import BaseCheckpointSaver
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.graph.state import StateGraph

__all__ = [
    "DEFAULT_ASSISTANT_NAMESPACE",
    "Dispatch",
    "RunService",
    "default_assistant_id",
]

Dispatch = Callable[[RunRecord, float, Any], Awaitable[None]]
"""Told of a run being recorded, the time (epoch seconds) it may start, and the
PostgreSQL connection of the transaction recording it (it defers the run's job in
that transaction: the run and its job are committed together, or neither)."""

Recorded = tuple[RunRecord, list[tuple[str, str, str]], Claimed | None]

_POLL = 0.05
"""Seconds between reads of a run's record while waiting for its end when no wake-up
can come (SQLite, a run executed by another process)."""


class RunService(AssistantBook):
    """Assistants, threads and runs over one database, with the workers that run them.

    Made by `open`; `start` starts the workers, `close` stops them and closes the
    database. Every method is safe to call concurrently from the event loop.
    """

    graphs: Mapping[str, CompiledStateGraph]
    saver: BaseCheckpointSaver

    def __init__(
        self,
        graphs: Mapping[str, CompiledStateGraph],
        saver: BaseCheckpointSaver,
        db: Database,
        closers: list[Closer],
        *,
        workers: int,
        lease_seconds: float,
        poll_seconds: float,
        keep_events_seconds: float,
        events_url: str | None = None,
    ) -> None:
        self.graphs = graphs
        self.saver = saver
        self.store = Store(db)
        self.events = EventLogs(db, keep_events_seconds, url=events_url)
        self.workers = Workers(
            self.store, saver, self.events, self._resolve,
            count=workers, lease_seconds=lease_seconds, poll_seconds=poll_seconds,
        )  # fmt: skip
        self._closers = closers
        self.dispatch: Dispatch | None = None
        """Set (`pausepoint.workers`): tells a job queue of each run recorded, in the
        recording transaction, for workers of other processes."""
        self._started = False
        self._checking = {name: checking_graph(g, saver) for name, g in graphs.items()}
        # by id or graph name: an assistant never changes once made (no update, no delete)
        self._assistants: dict[str, Assistant] = {}

    @classmethod
    async def open(
        cls,
        db_url: str,
        graphs: Mapping[str, CompiledStateGraph | StateGraph],
        *,
        workers: int = 4,
        lease_seconds: float = 30.0,
        poll_seconds: float = 1.0,
        keep_events_seconds: float = 300.0,
        pool_for: int | None = None,
    ) -> RunService:
        """Open the saver and the server's tables (created if missing); no worker runs yet.

        Args:
            db_url: A SQLite file path or a ``postgresql://`` URL: the checkpoints'
                database, which also gets the server's tables.
            graphs: The served graphs by name (their ``graph_id``); each is compiled
                again with this database's saver.
            workers: How many runs this process executes at once.
            lease_seconds: How long a claimed run stays claimed without its worker
                renewing it: a run of a process that died is requeued after it (at
                once at start when that process ran on this host).
            poll_seconds: How often idle workers look for runs they were not told
                about (other processes' runs, ``after_seconds``, expired leases).
            keep_events_seconds: How long a run's events are kept after it ends
                (then deleted from the database).
            pool_for: How many runs execute at once in this process when not its
                own ``workers`` do (a queue worker's concurrency): sizes the pool.
        """
        closers: list[Closer] = []
        db: Database
        try:
            saver, db = await open_database(db_url, max(workers, pool_for or 0), closers)
            await db.setup()
            postgres_url = db_url if is_postgres_url(db_url) else None
            compiled = {name: compiled_with(g, saver) for name, g in graphs.items()}
            service = cls(
                compiled, saver, db, closers, workers=workers, lease_seconds=lease_seconds,
                poll_seconds=poll_seconds, keep_events_seconds=keep_events_seconds,
                events_url=postgres_url,
            )  # fmt: skip
            await service.events.setup()
            closers.append(service.events.close)
            service.events.start()
            for name in compiled:
                await service.create_assistant(
                    name, assistant_id=default_assistant_id(name), name=name,
                    metadata={"created_by": "system"}, if_exists="do_nothing",
                )  # fmt: skip
        except BaseException:
            await close_all(closers)
            raise
        return service

    def on_close(self, closer: Closer) -> None:
        """Run ``closer`` when the service closes (before the database is closed)."""
        self._closers.append(closer)

    async def start(self) -> None:
        """Requeue the runs a dead process left ``running``, then start the workers."""
        if not self._started:
            self._started = True
            await self.workers.start()

    async def close(self) -> None:
        """Stop the workers (runs in flight are left to be requeued) and the database."""
        if self._started:
            self._started = False
            await self.workers.close()
        await close_all(self._closers)

    async def _resolve(self, run: RunRecord) -> tuple[CompiledStateGraph, Assistant]:
        assistant = await self.get_assistant(run.assistant_id)
        return self.graph_for(assistant), assistant

    # --- threads ------------------------------------------------------------------------

    async def create_thread(
        self,
        *,
        thread_id: str | None = None,
        metadata: JsonObject | None = None,
        if_exists: Literal["raise", "do_nothing"] = "raise",
    ) -> ThreadRecord:
        """Store a new thread (a fresh uuid4 id unless ``thread_id``).

        Raises:
            ConflictError: ``thread_id`` exists and ``if_exists="raise"``.
        """
        tid = thread_id or str(uuid.uuid4())
        return await self.store.put_thread(tid, metadata or {}, time.time(), if_exists=if_exists)

    async def get_thread(self, thread_id: str) -> ThreadRecord:
        """The thread's record.

        Raises:
            NotFoundError: No such thread.
        """
        return await self.store.thread(thread_id)

    async def patch_thread(self, thread_id: str, *, metadata: JsonObject) -> ThreadRecord:
        """Merge ``metadata`` into the thread's metadata."""
        return await self.store.merge_thread_metadata(thread_id, metadata, time.time())

    async def delete_thread(self, thread_id: str) -> None:
        """Cancel the thread's runs, then delete its runs, checkpoints and record."""
        await self.store.thread(thread_id)
        for got in await self.store.runs(thread_id, limit=1_000_000, offset=0, status=None):
            run = got.run if isinstance(got, PartlyOpened) else got  # its id and status open
            if run.status in ("pending", "running"):
                await self.cancel_run(thread_id, run.run_id, wait=True)
        for run_id in await self.store.delete_thread(thread_id):
            self.events.discard(run_id)
        await self.saver.adelete_thread(thread_id)

    async def search_threads(
        self,
        *,
        ids: list[str] | None = None,
        metadata: JsonObject | None = None,
        values: JsonObject | None = None,
        status: ThreadStatus | None = None,
        limit: int = 10,
        offset: int = 0,
        sort_by: str = "created_at",
        sort_order: SortOrder = "desc",
    ) -> tuple[list[ThreadRecord], int]:
        """A page of threads matching every filter given, and how many match in all.

        ``metadata`` and ``values`` match when each of their keys has that value.
        """
        found = await self._threads(ids, metadata, values, status)
        return page(found, sort_by, sort_order, limit, offset), len(found)

    async def count_threads(
        self,
        *,
        metadata: JsonObject | None = None,
        values: JsonObject | None = None,
        status: ThreadStatus | None = None,
    ) -> int:
        """How many threads match every filter given."""
        return len(await self._threads(None, metadata, values, status))

    async def _threads(
        self,
        ids: list[str] | None,
        metadata: JsonObject | None,
        values: JsonObject | None,
        status: ThreadStatus | None,
    ) -> list[ThreadRecord]:
        found = [
            t
            for t in await self.store.threads(ids=ids, status=status)
            if matches(t.metadata, metadata)
        ]
        if values:
            kept: list[ThreadRecord] = []
            for t in found:
                graph = self.graph_of_thread(t)
                if graph is None:
                    continue
                state = await graph.aget_state({"configurable": {"thread_id": t.thread_id}})
                have: object = state.values
                if isinstance(have, dict) and matches(cast("JsonObject", have), values):
                    kept.append(t)
            found = kept
        return found

    def graph_of_thread(self, thread: ThreadRecord) -> CompiledStateGraph | None:
        """The graph named by the thread's ``metadata.graph_id``, if it is served."""
        graph_id = thread.metadata.get("graph_id")
        return self.graphs.get(graph_id) if isinstance(graph_id, str) else None

    async def settle_thread(self, thread_id: str) -> ThreadRecord:
        """Work out the thread's status again; the thread.

        For after its state was changed directly (``POST /threads/{id}/state``):
        ``busy`` while runs are in flight, else from its last run and its head.
        """
        thread = await self.store.thread(thread_id)
        await self.store.settle_thread(thread_id, await self._rest(thread), time.time())
        return await self.store.thread(thread_id)

    async def _rest(self, thread: ThreadRecord) -> ThreadStatus:
        if await self.store.last_ended_status(thread.thread_id) == "error":
            return "error"
        graph = self.graph_of_thread(thread)
        if graph is None:
            return "idle"
        return (await outcome(graph, thread.thread_id))[1]

    # --- runs ---------------------------------------------------------------------------

    async def create_run(self, thread_id: str, request: RunRequest) -> RunRecord:
        """Record a run ``pending`` for the workers, after checking it against the graph.

        Applies ``if_not_exists`` (an unknown thread) and ``multitask_strategy`` (a
        busy thread). Raises ``NotFoundError``, ``ConflictError`` or
        ``InvalidRequestError``; nothing is written then.
        """
        assistant = await self.get_assistant(request.assistant_id)
        graph = self.graph_for(assistant)
        check_request(graph, request)
        await self._check_resume(assistant.graph_id, thread_id, request)
        now = _now()
        run = RunRecord(
            run_id=str(uuid.uuid4()), thread_id=thread_id, assistant_id=assistant.assistant_id,
            status="pending", metadata=dict(request.metadata or {}), kwargs=request.to_json(),
            multitask_strategy=request.multitask_strategy, created_at=now, updated_at=now,
        )  # fmt: skip
        # A waiting worker of this process gets the run claimed in its record's
        # transaction. What follows the record (`_recorded`) is done as it ends, even
        # if this request is cancelled meanwhile (the run would else wait for a lease
        # to run out, or a poll).
        idle = self.workers.reserve() if self.dispatch is None else None
        claim_for = None
        if idle is not None:
            claim_for = (self.workers.owner, now.timestamp() + self.workers.lease_seconds)
        at = now.timestamp() + (request.after_seconds or 0.0)
        dispatch = self.dispatch
        recording = asyncio.ensure_future(
            self.store.create_run(
                run,
                not_before=at,
                create_thread=request.if_not_exists == "create",
                stamp={"graph_id": assistant.graph_id, "assistant_id": assistant.assistant_id},
                claim_for=claim_for,
                then=None if dispatch is None else (lambda conn: dispatch(run, at, conn)),
            )
        )
        recording.add_done_callback(lambda done: self._recorded(idle, done))
        run, _, _ = await asyncio.shield(recording)
        return run

    def _recorded(self, idle: IdleWorker | None, done: asyncio.Future[Recorded]) -> None:
        """A run's transaction ended: act on what it did, hand its claim over or wake.

        The runs it cancelled are stopped; the run claimed for the reserved worker is
        handed to it (a run not claimed wakes a worker instead).
        """
        recorded = not done.cancelled() and done.exception() is None
        if not recorded:
            if idle is not None:
                self.workers.hand(idle, None, wake=False)
            return
        _, cancelled, claimed = done.result()
        for run_id, was, action in cancelled:
            self._cancelled_now(run_id, was, cast("CancelAction", action))
        if idle is not None:
            self.workers.hand(idle, claimed)
        else:
            self.workers.wake()

    async def _check_resume(self, graph_id: str, thread_id: str, request: RunRequest) -> None:
        """Refuse a resume the engine would refuse, with its typed error.

        Nothing is written. A refusal counts only when no run of the thread is in
        flight: else the state the resume will meet is not known yet (its run fails
        then); the thread's record is read only then, after a refusal. A thread with no
        server record is checked too when the run may create its record
        (``if_not_exists="create"``): its checkpoints may have been written outside
        the server, by the application's own ``invoke``.
        """
        checking = self._checking.get(graph_id)
        command = request.command
        if checking is None or command is None or command.get("resume") is None:
            return
        try:
            await check_resume(checking, thread_id, graph_input(request))
        except Exception:
            # Read only now (most resumes pass): a refusal stands unless the thread is
            # busy, or has no record and the run may not create one (the store's 404).
            thread = await self.store.get_thread(thread_id)
            if thread is None and request.if_not_exists != "create":
                return
            if thread is not None and thread.status == "busy":
                return
            raise

    def _cancelled_now(self, run_id: str, was: str, action: CancelAction) -> None:
        """Act on a cancellation the records took: stop the run here, or end its log."""
        if was == "running":
            self.workers.cancel(run_id, action)  # else its own process's heartbeat sees it
        elif action == "rollback":
            self.events.discard(run_id)
        else:
            self.events.end(run_id)

    async def get_run(self, thread_id: str, run_id: str) -> RunRecord:
        """The run's record (``NotFoundError`` if it is not a run of this thread)."""
        got = await self.store.get_run(thread_id, run_id)
        if got is None:
            raise NotFoundError(f"run {run_id!r} of thread {thread_id!r} not found")
        return got

    async def read_run(self, thread_id: str, run_id: str) -> RunRecord | PartlyOpened:
        """The run's record as far as it opens (`PartlyOpened`: a cell does not).

        Raises:
            NotFoundError: It is not a run of this thread.
        """
        got = await self.store.read_run(thread_id, run_id)
        if got is None:
            raise NotFoundError(f"run {run_id!r} of thread {thread_id!r} not found")
        return got

    async def list_runs(
        self,
        thread_id: str,
        *,
        limit: int = 10,
        offset: int = 0,
        status: RunStatus | None = None,
    ) -> list[RunRecord | PartlyOpened]:
        """The thread's runs, newest first (one whose record opens in part: `PartlyOpened`)."""
        await self.store.thread(thread_id)
        return await self.store.runs(thread_id, limit=limit, offset=offset, status=status)

    async def cancel_run(
        self,
        thread_id: str,
        run_id: str,
        *,
        action: CancelAction = "interrupt",
        wait: bool = False,
    ) -> None:
        """Cancel a pending or running run; ``wait`` until it has stopped.

        A pending run ends at once (``interrupted``; ``rollback`` deletes it). A
        running one is stopped by its worker: ``interrupted`` with what it saved, or,
        for ``rollback``, deleted with the checkpoints it wrote. A run that has ended
        is left as it is.
        """
        was = await self.store.cancel_run(thread_id, run_id, action, time.time())
        if was not in ("pending", "running"):
            return
        self._cancelled_now(run_id, was, action)
        if was == "pending":
            thread = await self.store.thread(thread_id)
            await self.store.settle_thread(thread_id, await self._rest(thread), time.time())
            return
        if wait:
            await self._wait_ended(run_id)

    async def delete_run(self, thread_id: str, run_id: str) -> None:
        """Delete a run that is not running (``ConflictError`` if it is)."""
        await self.store.delete_run(thread_id, run_id)
        self.events.discard(run_id)

    async def join_run(
        self, thread_id: str, run_id: str, *, run: RunRecord | None = None
    ) -> JsonObject:
        """Wait for the run to end; the wait/join body.

        The final values (plus ``"__interrupt__": [{"value", "id"}]`` when it stopped
        at questions), or ``{"__error__": {"error": type name, "message": str}}``.
        ``run``: its record, when the caller has it (it is not read again).
        """
        if run is None or run.run_id != run_id or run.thread_id != thread_id:
            run = await self.get_run(thread_id, run_id)
        status, body = await self._wait_ended(run_id)
        if status == "deleted":
            raise NotFoundError(f"run {run_id!r} of thread {thread_id!r} was rolled back")
        if body is None:  # ended before it executed (cancelled while pending)
            assistant = await self.get_assistant(run.assistant_id)
            body = (await outcome(self.graph_for(assistant), thread_id))[0]
        return cast("JsonObject", body)

    async def _wait_ended(self, run_id: str) -> tuple[str, Any]:
        """Wait until the run is no longer pending or running; its status and body.

        The status is ``"deleted"`` if its record is gone (a rollback). The record is
        read again at each of the run's events (its end is one), and every
        ``_POLL`` seconds when no wake-up can come (SQLite, another process's run).
        """
        while True:
            got = self.events.outcome(run_id)  # its end recorded by this process
            if got is None and self.events.executing(run_id):
                # executed here: its end wakes this wait, and the outcome is kept
                await self.events.wait(run_id, self.events.quiet_wait(run_id))
                continue
            if got is None:
                got = await self.store.run_result(run_id)
            if got is None:
                return "deleted", None
            if got[0] not in ("pending", "running"):
                return got
            wait = self.events.quiet_wait(run_id)
            await self.events.wait(run_id, _POLL if wait < _POLL else wait)

    async def stream_run(
        self,
        thread_id: str,
        run_id: str,
        *,
        last_event_id: str | None = None,
        from_now: bool = False,
    ) -> AsyncIterator[RunEvent]:
        """The run's events after ``last_event_id`` (all without one), then the live ones.

        ``from_now``: only the events from now on (a join of a run not created
        ``stream_resumable``). The events come from the database when another process
        executes the run; the stream ends when the run ends (an ``error`` event last
        when its executing process died). The run's record is not opened: a run ended
        because it cannot be (`Store.claim`) streams its ``error`` event.
        """
        if await self.store.run_status(thread_id, run_id) is None:
            raise NotFoundError(f"run {run_id!r} of thread {thread_id!r} not found")
        after = await self.events.last(run_id) if from_now else position(last_event_id)
        async for event in self.events.follow(run_id, after):
            yield event


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)
