"""``Store``: assistants, threads and runs in the server's tables (async, both databases).

Every method is one transaction (a flow of `pausepoint.server.store_sql`, driven by
the SQLite or PostgreSQL database object). The decisions that must not race — a
run's creation under a multitask strategy, the claim of the next runnable run, a
run's end and its thread's status — are each one transaction that first locks the
thread's row (PostgreSQL ``FOR UPDATE``; SQLite's write lock covers the file).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from pausepoint.server.errors import ConflictError, NotFoundError
from pausepoint.server.records import (
    Assistant,
    CancelAction,
    MultitaskStrategy,
    RunRecord,
    RunStatus,
    ThreadRecord,
    ThreadStatus,
)
from pausepoint.server.store_sql import DuplicateError, Flow, Row, dump, load

__all__ = ["Claimed", "Database", "Store"]

_ASSISTANT_COLUMNS = (
    "assistant_id, graph_id, config, context, metadata, name, description, version, "
    "created_at, updated_at"
)
_THREAD_COLUMNS = "thread_id, metadata, status, created_at, updated_at"
_RUN_COLUMNS = (
    "run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, "
    "created_at, updated_at"
)
_CLAIM_COLUMNS = _RUN_COLUMNS + ", attempt, start_checkpoint, started, start_writes"
IN_FLIGHT = ("pending", "running")

_REINDEX = """INSERT INTO pausepoint_pending (thread_id, checkpoint_id, task_id)
    SELECT w.thread_id, w.checkpoint_id, w.task_id FROM pausepoint_writes w
    WHERE w.thread_id = ? AND w.idx = -3 AND w.checkpoint_ns = ''
    AND NOT EXISTS (SELECT 1 FROM pausepoint_checkpoints c WHERE c.thread_id = w.thread_id
        AND c.checkpoint_ns = '' AND c.checkpoint_id > w.checkpoint_id)
    AND NOT EXISTS (SELECT 1 FROM pausepoint_writes d WHERE d.thread_id = w.thread_id
        AND d.checkpoint_ns = '' AND d.checkpoint_id = w.checkpoint_id
        AND d.task_id = w.task_id AND d.idx >= 0)
    AND EXISTS (SELECT 1 FROM pausepoint_checkpoints h WHERE h.thread_id = w.thread_id
        AND h.checkpoint_ns = '' AND h.checkpoint_id = w.checkpoint_id)
    ON CONFLICT DO NOTHING"""
"""The saver's backfill of its index of waiting questions (schema 4), for one thread."""


class Database(Protocol):
    """What the store needs of a database: run a flow in one transaction."""

    postgres: bool

    async def setup(self) -> None:
        """Create the tables (idempotent)."""
        ...

    async def run(self, flow: Flow, *, write: bool = False) -> Any:
        """Drive ``flow`` in one transaction."""
        ...

    async def close(self) -> None:
        """Let go of the connection."""
        ...


@dataclasses.dataclass(frozen=True, slots=True)
class Claimed:
    """A run a worker has claimed: the record and what a retry needs."""

    run: RunRecord
    attempt: int
    """1 for the first execution; more after a crash or a shutdown requeued it."""
    start_checkpoint: str | None
    """The thread's head checkpoint id when the run first started (None: none yet)."""
    started: bool
    """Whether an earlier attempt started executing (and may have written checkpoints)."""
    start_writes: int = 0
    """The newest ``pausepoint_writes.seq`` of the thread when the run first started:
    the writes after it are the run's (a rollback deletes them)."""


def _time(seconds: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC)


def _assistant(row: Row) -> Assistant:
    return Assistant(
        assistant_id=row[0], graph_id=row[1], config=load(row[2]), context=load(row[3]),
        metadata=load(row[4]), name=row[5], description=row[6], version=int(row[7]),
        created_at=_time(row[8]), updated_at=_time(row[9]),
    )  # fmt: skip


def _thread(row: Row) -> ThreadRecord:
    return ThreadRecord(
        thread_id=row[0], metadata=load(row[1]), status=row[2],
        created_at=_time(row[3]), updated_at=_time(row[4]),
    )  # fmt: skip


def _run(row: Row) -> RunRecord:
    return RunRecord(
        run_id=row[0], thread_id=row[1], assistant_id=row[2], status=row[3],
        metadata=load(row[4]), kwargs=load(row[5]), multitask_strategy=row[6],
        created_at=_time(row[7]), updated_at=_time(row[8]),
    )  # fmt: skip


class Store:
    """The server's records on one database (`SqliteDatabase` or `PostgresDatabase`)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._lock = " FOR UPDATE" if db.postgres else ""

    # --- assistants ---------------------------------------------------------------------

    async def put_assistant(
        self, assistant: Assistant, *, if_exists: Literal["raise", "do_nothing"]
    ) -> Assistant:
        """Insert ``assistant``; an existing id raises or returns the stored one."""

        def flow() -> Flow:
            rows = yield (
                f"SELECT {_ASSISTANT_COLUMNS} FROM pausepoint_server_assistants "
                "WHERE assistant_id = ?",
                (assistant.assistant_id,),
            )
            if rows:
                if if_exists == "raise":
                    raise ConflictError(f"assistant {assistant.assistant_id!r} already exists")
                return _assistant(rows[0])
            a = assistant
            yield (
                f"INSERT INTO pausepoint_server_assistants ({_ASSISTANT_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    a.assistant_id, a.graph_id, dump(a.config), dump(a.context),
                    dump(a.metadata), a.name, a.description, a.version,
                    a.created_at.timestamp(), a.updated_at.timestamp(),
                ),
            )  # fmt: skip
            return a

        try:
            result: Assistant = await self.db.run(flow(), write=True)
        except DuplicateError:  # created meanwhile by another process
            if if_exists == "raise":
                raise ConflictError(
                    f"assistant {assistant.assistant_id!r} already exists"
                ) from None
            got = await self.get_assistant(assistant.assistant_id)
            assert got is not None
            return got
        return result

    async def get_assistant(self, assistant_id: str) -> Assistant | None:
        """The assistant, or None."""

        def flow() -> Flow:
            rows = yield (
                f"SELECT {_ASSISTANT_COLUMNS} FROM pausepoint_server_assistants "
                "WHERE assistant_id = ?",
                (assistant_id,),
            )
            return _assistant(rows[0]) if rows else None

        result: Assistant | None = await self.db.run(flow())
        return result

    async def assistants(self, graph_id: str | None = None) -> list[Assistant]:
        """Every assistant (of ``graph_id``), oldest first."""

        def flow() -> Flow:
            where, params = ("WHERE graph_id = ?", (graph_id,)) if graph_id else ("", ())
            rows = yield (
                f"SELECT {_ASSISTANT_COLUMNS} FROM pausepoint_server_assistants {where} "
                "ORDER BY created_at, assistant_id",
                params,
            )
            return [_assistant(r) for r in rows]

        result: list[Assistant] = await self.db.run(flow())
        return result

    # --- threads ------------------------------------------------------------------------

    def _thread_row(self, thread_id: str, *, lock: bool = False) -> Flow:
        rows = yield (
            f"SELECT {_THREAD_COLUMNS} FROM pausepoint_server_threads WHERE thread_id = ?"
            + (self._lock if lock else ""),
            (thread_id,),
        )
        return _thread(rows[0]) if rows else None

    def _insert_thread(self, thread_id: str, metadata: dict[str, Any], now: float) -> Flow:
        yield (
            f"INSERT INTO pausepoint_server_threads ({_THREAD_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
            (thread_id, dump(metadata), "idle", now, now),
        )
        return ThreadRecord(thread_id, metadata, "idle", _time(now), _time(now))

    async def put_thread(
        self,
        thread_id: str,
        metadata: dict[str, Any],
        now: float,
        *,
        if_exists: Literal["raise", "do_nothing"],
    ) -> ThreadRecord:
        """Insert a thread; an existing one raises ``ConflictError`` or is returned."""

        def flow() -> Flow:
            got = yield from self._thread_row(thread_id)
            if got is not None:
                if if_exists == "raise":
                    raise ConflictError(f"thread {thread_id!r} already exists")
                return got
            return (yield from self._insert_thread(thread_id, metadata, now))

        try:
            result: ThreadRecord = await self.db.run(flow(), write=True)
        except DuplicateError:
            if if_exists == "raise":
                raise ConflictError(f"thread {thread_id!r} already exists") from None
            return await self.thread(thread_id)
        return result

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        """The thread, or None."""
        result: ThreadRecord | None = await self.db.run(self._thread_row(thread_id))
        return result

    async def thread(self, thread_id: str) -> ThreadRecord:
        """The thread; ``NotFoundError`` if there is none."""
        got = await self.get_thread(thread_id)
        if got is None:
            raise NotFoundError(f"thread {thread_id!r} not found")
        return got

    async def merge_thread_metadata(
        self, thread_id: str, metadata: dict[str, Any], now: float
    ) -> ThreadRecord:
        """Merge ``metadata`` into the thread's (one transaction)."""

        def flow() -> Flow:
            got: ThreadRecord | None = yield from self._thread_row(thread_id, lock=True)
            if got is None:
                raise NotFoundError(f"thread {thread_id!r} not found")
            merged = {**got.metadata, **metadata}
            yield (
                "UPDATE pausepoint_server_threads SET metadata = ?, updated_at = ? "
                "WHERE thread_id = ?",
                (dump(merged), now, thread_id),
            )
            return dataclasses.replace(got, metadata=merged, updated_at=_time(now))

        result: ThreadRecord = await self.db.run(flow(), write=True)
        return result

    async def threads(
        self, *, ids: Sequence[str] | None = None, status: ThreadStatus | None = None
    ) -> list[ThreadRecord]:
        """Threads with these ids and this status (all when None), oldest first."""

        def flow() -> Flow:
            where: list[str] = []
            params: list[Any] = []
            if ids is not None:
                if not ids:
                    return []
                where.append(f"thread_id IN ({', '.join('?' * len(ids))})")
                params.extend(ids)
            if status is not None:
                where.append("status = ?")
                params.append(status)
            clause = f"WHERE {' AND '.join(where)}" if where else ""
            rows = yield (
                f"SELECT {_THREAD_COLUMNS} FROM pausepoint_server_threads {clause} "
                "ORDER BY created_at, thread_id",
                params,
            )
            return [_thread(r) for r in rows]

        result: list[ThreadRecord] = await self.db.run(flow())
        return result

    async def delete_thread(self, thread_id: str) -> list[str]:
        """Delete the thread's record and its runs; the ids of its runs in flight."""

        def flow() -> Flow:
            got = yield from self._thread_row(thread_id, lock=True)
            if got is None:
                raise NotFoundError(f"thread {thread_id!r} not found")
            rows = yield (
                "SELECT run_id FROM pausepoint_server_runs WHERE thread_id = ? "
                "AND status = 'running'",
                (thread_id,),
            )
            yield "DELETE FROM pausepoint_server_runs WHERE thread_id = ?", (thread_id,)
            yield "DELETE FROM pausepoint_server_threads WHERE thread_id = ?", (thread_id,)
            return [str(r[0]) for r in rows]

        result: list[str] = await self.db.run(flow(), write=True)
        return result

    def _settle(self, thread_id: str, rest: ThreadStatus | None, now: float) -> Flow:
        """Set the thread's status: ``busy`` while runs are in flight, else ``rest``."""
        rows = yield (
            "SELECT count(*) FROM pausepoint_server_runs WHERE thread_id = ? "
            "AND status IN ('pending', 'running')",
            (thread_id,),
        )
        status = "busy" if rows[0][0] else rest
        if status is not None:
            yield (
                "UPDATE pausepoint_server_threads SET status = ?, updated_at = ? "
                "WHERE thread_id = ?",
                (status, now, thread_id),
            )
        return status

    async def settle_thread(self, thread_id: str, rest: ThreadStatus, now: float) -> None:
        """Set the thread's status to ``busy`` if runs are in flight, else ``rest``."""

        def flow() -> Flow:
            got = yield from self._thread_row(thread_id, lock=True)
            if got is not None:
                yield from self._settle(thread_id, rest, now)

        await self.db.run(flow(), write=True)

    # --- runs ---------------------------------------------------------------------------

    async def create_run(
        self,
        run: RunRecord,
        *,
        not_before: float,
        create_thread: bool,
        stamp: dict[str, Any],
    ) -> tuple[RunRecord, list[tuple[str, str, str]]]:
        """Record ``run`` pending, applying its multitask strategy to the runs in flight.

        Returns the run and the runs in flight it cancelled, as ``(run_id, status
        before, action)``:
        their records already say so (a pending one is ``interrupted`` or deleted at
        once; a running one carries the action for its worker).

        Raises:
            NotFoundError: No such thread and ``create_thread`` is false.
            ConflictError: The thread is busy and the strategy is ``reject``.
        """
        now = run.created_at.timestamp()
        thread_id = run.thread_id
        strategy: MultitaskStrategy = run.multitask_strategy

        def flow() -> Flow:
            got: ThreadRecord | None = yield from self._thread_row(thread_id, lock=True)
            if got is None:
                if not create_thread:
                    raise NotFoundError(f"thread {thread_id!r} not found")
                got = yield from self._insert_thread(thread_id, {}, now)
                assert got is not None
            rows = yield (
                "SELECT run_id, status FROM pausepoint_server_runs WHERE thread_id = ? "
                "AND status IN ('pending', 'running') ORDER BY seq",
                (thread_id,),
            )
            cancel: list[tuple[str, str, str]] = []
            if rows and strategy == "reject":
                raise ConflictError(
                    f"thread {thread_id!r} is busy: a run is pending or running, and "
                    "multitask_strategy is 'reject'"
                )
            if rows and strategy in ("interrupt", "rollback"):
                for run_id, status in rows:
                    cancel.append((str(run_id), str(status), strategy))
                    yield from self._cancel_in_flight(str(run_id), str(status), strategy, now)
            yield (
                f"INSERT INTO pausepoint_server_runs ({_RUN_COLUMNS}, not_before) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.run_id, thread_id, run.assistant_id, "pending", dump(run.metadata),
                    dump(run.kwargs), strategy, now, now, not_before,
                ),
            )  # fmt: skip
            metadata = {**got.metadata, **stamp}
            yield (
                "UPDATE pausepoint_server_threads SET status = 'busy', metadata = ?, "
                "updated_at = ? WHERE thread_id = ?",
                (dump(metadata), now, thread_id),
            )
            return run, cancel

        result: tuple[RunRecord, list[tuple[str, str, str]]] = await self.db.run(flow(), write=True)
        return result

    def _cancel_in_flight(self, run_id: str, status: str, action: str, now: float) -> Flow:
        """Cancel a run in flight in the records.

        A pending run ends at once (``interrupted``, or deleted by a rollback); a
        running one is marked for its worker, which stops it.
        """
        if status == "pending" and action == "rollback":
            yield "DELETE FROM pausepoint_server_runs WHERE run_id = ?", (run_id,)
        elif status == "pending":
            yield (
                "UPDATE pausepoint_server_runs SET status = 'interrupted', updated_at = ? "
                "WHERE run_id = ?",
                (now, run_id),
            )
        else:
            yield (
                "UPDATE pausepoint_server_runs SET cancel = ?, updated_at = ? WHERE run_id = ?",
                (action, now, run_id),
            )

    async def cancel_run(
        self, thread_id: str, run_id: str, action: CancelAction, now: float
    ) -> str:
        """Cancel a run of the thread; its status before (a finished one: unchanged).

        Raises:
            NotFoundError: No such run of this thread.
        """

        def flow() -> Flow:
            yield from self._thread_row(thread_id, lock=True)
            rows = yield (
                "SELECT status FROM pausepoint_server_runs WHERE run_id = ? AND thread_id = ?",
                (run_id, thread_id),
            )
            if not rows:
                raise NotFoundError(f"run {run_id!r} of thread {thread_id!r} not found")
            status = str(rows[0][0])
            if status in IN_FLIGHT:
                yield from self._cancel_in_flight(run_id, status, action, now)
            return status

        result: str = await self.db.run(flow(), write=True)
        return result

    async def claim(self, owner: str, now: float, lease_until: float) -> Claimed | None:
        """Take the oldest runnable pending run; None when there is none.

        Runnable: due (``not_before``), and the oldest pending run of a thread none of
        whose runs is running.
        """

        def flow() -> Flow:
            rows = yield (
                "SELECT r.seq, r.thread_id FROM pausepoint_server_runs r "
                "WHERE r.status = 'pending' AND r.not_before <= ? AND NOT EXISTS ("
                "SELECT 1 FROM pausepoint_server_runs o WHERE o.thread_id = r.thread_id "
                "AND (o.status = 'running' OR (o.status = 'pending' AND o.seq < r.seq))) "
                "ORDER BY r.seq LIMIT 1",
                (now,),
            )
            if not rows:
                return None
            seq, thread_id = rows[0]
            yield from self._thread_row(str(thread_id), lock=True)
            got = yield (
                "UPDATE pausepoint_server_runs SET status = 'running', lease_owner = ?, "
                "lease_until = ?, attempt = attempt + 1, updated_at = ? "
                f"WHERE seq = ? AND status = 'pending' RETURNING {_CLAIM_COLUMNS}",
                (owner, lease_until, now, seq),
            )
            if not got:
                return None
            row = got[0]
            return Claimed(_run(row[:9]), int(row[9]), row[10], bool(row[11]), int(row[12] or 0))

        try:
            result: Claimed | None = await self.db.run(flow(), write=True)
        except DuplicateError:  # another process claimed a run of that thread first
            return None
        return result

    async def mark_started(self, run_id: str, owner: str, start_checkpoint: str | None) -> int:
        """Remember where the run starts from (first attempt only).

        The thread's head checkpoint, and its newest write's ``seq``, which this
        returns.
        """

        def flow() -> Flow:
            rows = yield (
                "SELECT COALESCE(MAX(w.seq), 0) FROM pausepoint_writes w "
                "JOIN pausepoint_server_runs r ON r.thread_id = w.thread_id "
                "WHERE r.run_id = ?",
                (run_id,),
            )
            seq = int(rows[0][0] or 0)
            yield (
                "UPDATE pausepoint_server_runs SET started = 1, start_checkpoint = ?, "
                "start_writes = ? WHERE run_id = ? AND lease_owner = ? AND started = 0",
                (start_checkpoint, seq, run_id, owner),
            )
            return seq

        result: int = await self.db.run(flow(), write=True)
        return result

    async def drop_writes_after(self, thread_id: str, seq: int) -> None:
        """Delete the thread's checkpoint writes newer than ``seq`` (a rollback).

        Then index again the questions its head waits on (the saver's index of
        waiting questions): a question the rolled-back run had moved past waits again.
        """

        def flow() -> Flow:
            yield (
                "DELETE FROM pausepoint_writes WHERE thread_id = ? AND seq > ?",
                (thread_id, seq),
            )
            yield _REINDEX, (thread_id,)

        await self.db.run(flow(), write=True)

    async def renew(self, run_id: str, owner: str, lease_until: float) -> tuple[bool, str | None]:
        """Extend the run's lease; whether it is still ours, and a cancel asked for."""

        def flow() -> Flow:
            rows = yield (
                "SELECT cancel FROM pausepoint_server_runs WHERE run_id = ? "
                "AND status = 'running' AND lease_owner = ?",
                (run_id, owner),
            )
            if not rows:
                return False, None
            yield (
                "UPDATE pausepoint_server_runs SET lease_until = ? WHERE run_id = ?",
                (lease_until, run_id),
            )
            return True, rows[0][0]

        result: tuple[bool, str | None] = await self.db.run(flow(), write=True)
        return result

    async def finish(
        self,
        run: RunRecord,
        owner: str,
        status: RunStatus | None,
        result: dict[str, Any] | None,
        rest: ThreadStatus,
        now: float,
    ) -> bool:
        """End a running run held by ``owner``, then settle its thread's status.

        ``status`` None deletes the run (a rollback). False if the run is no longer
        ``owner``'s (requeued after its lease expired).
        """

        def flow() -> Flow:
            yield from self._thread_row(run.thread_id, lock=True)
            rows = yield (
                "SELECT 1 FROM pausepoint_server_runs WHERE run_id = ? "
                "AND status = 'running' AND lease_owner = ?",
                (run.run_id, owner),
            )
            if not rows:
                return False
            if status is None:
                yield "DELETE FROM pausepoint_server_runs WHERE run_id = ?", (run.run_id,)
            else:
                yield (
                    "UPDATE pausepoint_server_runs SET status = ?, result = ?, "
                    "lease_owner = NULL, lease_until = NULL, updated_at = ? WHERE run_id = ?",
                    (status, dump(result), now, run.run_id),
                )
            yield from self._settle(run.thread_id, rest, now)
            return True

        done: bool = await self.db.run(flow(), write=True)
        return done

    async def requeue(self, *, owners: Sequence[str] = (), expired_before: float | None) -> int:
        """Put running runs back to pending; how many.

        Those held by ``owners``, and (``expired_before``) those whose lease ran out
        before then.
        """

        def flow() -> Flow:
            n = 0
            for owner in owners:
                rows = yield (
                    "UPDATE pausepoint_server_runs SET status = 'pending', lease_owner = NULL, "
                    "lease_until = NULL WHERE status = 'running' AND lease_owner = ? "
                    "RETURNING run_id",
                    (owner,),
                )
                n += len(rows)
            if expired_before is not None:
                rows = yield (
                    "UPDATE pausepoint_server_runs SET status = 'pending', lease_owner = NULL, "
                    "lease_until = NULL WHERE status = 'running' AND lease_until < ? "
                    "RETURNING run_id",
                    (expired_before,),
                )
                n += len(rows)
            return n

        result: int = await self.db.run(flow(), write=True)
        return result

    async def running_owners(self) -> list[str]:
        """The lease owners of the running runs."""

        def flow() -> Flow:
            rows = yield (
                "SELECT DISTINCT lease_owner FROM pausepoint_server_runs "
                "WHERE status = 'running' AND lease_owner IS NOT NULL",
                (),
            )
            return [str(r[0]) for r in rows]

        result: list[str] = await self.db.run(flow())
        return result

    async def get_run(self, thread_id: str, run_id: str) -> RunRecord | None:
        """The run of this thread, or None."""

        def flow() -> Flow:
            rows = yield (
                f"SELECT {_RUN_COLUMNS} FROM pausepoint_server_runs "
                "WHERE run_id = ? AND thread_id = ?",
                (run_id, thread_id),
            )
            return _run(rows[0]) if rows else None

        result: RunRecord | None = await self.db.run(flow())
        return result

    async def run_result(self, run_id: str) -> tuple[str, Any] | None:
        """The run's status and its stored join body (None while it has none)."""

        def flow() -> Flow:
            rows = yield (
                "SELECT status, result FROM pausepoint_server_runs WHERE run_id = ?",
                (run_id,),
            )
            return (str(rows[0][0]), load(rows[0][1])) if rows else None

        result: tuple[str, Any] | None = await self.db.run(flow())
        return result

    async def runs(
        self, thread_id: str, *, limit: int, offset: int, status: RunStatus | None
    ) -> list[RunRecord]:
        """The thread's runs, newest first."""

        def flow() -> Flow:
            extra, params = ("AND status = ? ", (status,)) if status else ("", ())
            rows = yield (
                f"SELECT {_RUN_COLUMNS} FROM pausepoint_server_runs WHERE thread_id = ? "
                f"{extra}ORDER BY seq DESC LIMIT ? OFFSET ?",
                (thread_id, *params, limit, offset),
            )
            return [_run(r) for r in rows]

        result: list[RunRecord] = await self.db.run(flow())
        return result

    async def last_ended_status(self, thread_id: str) -> str | None:
        """The status of the thread's newest run that ended."""

        def flow() -> Flow:
            rows = yield (
                "SELECT status FROM pausepoint_server_runs WHERE thread_id = ? "
                "AND status NOT IN ('pending', 'running') ORDER BY seq DESC LIMIT 1",
                (thread_id,),
            )
            return str(rows[0][0]) if rows else None

        result: str | None = await self.db.run(flow())
        return result

    async def delete_run(self, thread_id: str, run_id: str) -> None:
        """Delete a run that is not running.

        Raises:
            NotFoundError: No such run of this thread.
            ConflictError: It is running (cancel it first).
        """

        def flow() -> Flow:
            yield from self._thread_row(thread_id, lock=True)
            rows = yield (
                "SELECT status FROM pausepoint_server_runs WHERE run_id = ? AND thread_id = ?",
                (run_id, thread_id),
            )
            if not rows:
                raise NotFoundError(f"run {run_id!r} of thread {thread_id!r} not found")
            if rows[0][0] == "running":
                raise ConflictError(f"run {run_id!r} is running: cancel it first")
            yield "DELETE FROM pausepoint_server_runs WHERE run_id = ?", (run_id,)

        await self.db.run(flow(), write=True)
