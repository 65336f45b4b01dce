"""``Store``: the server's runs (and, from `RecordStore`, assistants and threads).

Reading a run's record is `pausepoint.server.run_reads`' (the base class).

Every method is one transaction (a flow of `pausepoint.server.store_sql`, driven by
the SQLite or PostgreSQL database object). The decisions that must not race — a
run's creation under a multitask strategy, the claim of the next runnable run, a
run's end and its thread's status — are each one transaction that first locks the
thread's row (PostgreSQL ``FOR UPDATE``; SQLite's write lock covers the file).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pausepoint.server.errors import ConflictError, NotFoundError
from pausepoint.server.records import (
    CancelAction,
    JsonObject,
    RunRecord,
    RunStatus,
    ThreadRecord,
    ThreadStatus,
)
from pausepoint.server.run_reads import RUN_COLUMNS, RunReads, run_of_row
from pausepoint.server.sealing import RUNS, dump_cell
from pausepoint.server.store_records import Database, thread_metadata
from pausepoint.server.store_sql import DuplicateError, Flow, Then
from pausepoint.server.unopenable import OPEN_ERRORS, Unopenable, end_flow, log_ended

__all__ = ["CANCEL_CHANNEL", "Claimed", "Database", "Finished", "Store"]

CANCEL_CHANNEL = "pausepoint_cancel"
"""PostgreSQL's channel told ``"<action> <run id>"`` when a running run is cancelled:
the process executing it (`pausepoint.workers`) stops it at once rather than at its
next lease renewal."""

_CLAIM_COLUMNS = RUN_COLUMNS + ", attempt, start_checkpoint, started, start_writes"
IN_FLIGHT = ("pending", "running")


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
    head: str | None = None
    """The thread's head checkpoint id at the claim (a retry whose start it is not
    continues from it)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Finished:
    """What `Store.finish` did: true when the run was the worker's and is ended."""

    ours: bool
    thread_busy: bool = False
    """Runs of the thread are still in flight (pending behind it)."""
    runnable: bool = True
    """A claim may find a run (always true unless ``finish`` was asked to ``look``)."""

    def __bool__(self) -> bool:
        return self.ours


_NOT_OURS = Finished(ours=False)


class Store(RunReads):
    """The server's records on one database (`SqliteDatabase` or `PostgresDatabase`)."""

    # --- runs ---------------------------------------------------------------------------

    async def create_run(
        self,
        run: RunRecord,
        *,
        not_before: float,
        create_thread: bool,
        stamp: JsonObject,
        claim_for: tuple[str, float] | None = None,
        then: Then | None = None,
    ) -> tuple[RunRecord, list[tuple[str, str, str]], Claimed | None]:
        """Record ``run`` pending, applying its multitask strategy to the runs in flight.

        Returns the run, the runs in flight it cancelled, as ``(run_id, status
        before, action)`` (their records already say so: a pending one is
        ``interrupted`` or deleted at once; a running one carries the action for its
        worker), and the run claimed when ``claim_for`` (a lease owner and the
        lease's end) is given and the run is runnable at once: no run of the thread
        in flight, due now. The claim is the one `claim` makes, in the same
        transaction: an idle worker is handed the run with no claim of its own.
        ``then`` runs in the same transaction (PostgreSQL: the job queue's defer).

        Raises:
            NotFoundError: No such thread and ``create_thread`` is false.
            ConflictError: The thread is busy and the strategy is ``reject``.
        """
        now = run.created_at.timestamp()
        thread_id = run.thread_id

        def flow() -> Flow:
            thread: ThreadRecord = yield from self._run_thread(thread_id, create_thread, now)
            busy, cancel = yield from self._apply_strategy(run, now)
            seq = yield from self._insert_run(run, now, not_before)
            yield from self._mark_busy(thread, stamp, now)
            claimed: Claimed | None = None
            if claim_for is not None and not busy and not_before <= now:
                owner, lease_until = claim_for
                started = yield from self.start_flow(seq, thread_id, owner, now, lease_until)
                claimed = started if isinstance(started, Claimed) else None
            return run, cancel, claimed

        result: tuple[RunRecord, list[tuple[str, str, str]], Claimed | None] = await self.db.run(
            flow(), write=True, then=then
        )
        return result

    def _run_thread(self, thread_id: str, create: bool, now: float) -> Flow:
        """Lock and read a new run's thread; created first when missing and ``create``."""
        got: ThreadRecord | None = yield from self._thread_row(thread_id, lock=True)
        if got is not None:
            return got
        if not create:
            raise NotFoundError(f"thread {thread_id!r} not found")
        # Requests creating one thread at once: PostgreSQL locks no row not there yet,
        # so each would insert it and all but one fail on the key. The insert of a row
        # another transaction is inserting waits for its commit, then does nothing;
        # the row (new or theirs) is then locked and read.
        yield from self._insert_thread(thread_id, {}, now, if_missing=True)
        got = yield from self._thread_row(thread_id, lock=True)
        if got is None:  # deleted as soon as it was created
            raise ConflictError(f"thread {thread_id!r} was deleted meanwhile: retry")
        return got

    def _apply_strategy(self, run: RunRecord, now: float) -> Flow:
        """Apply ``run``'s multitask strategy to its thread's runs in flight.

        Returns whether runs were in flight, and those cancelled as ``(run_id, status
        before, action)``. Raises ``ConflictError`` when ``reject`` meets any.
        """
        thread_id, strategy = run.thread_id, run.multitask_strategy
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
        return bool(rows), cancel

    def _insert_run(self, run: RunRecord, now: float, not_before: float) -> Flow:
        """Insert ``run``'s row, ``pending`` (its cells sealed); its ``seq``."""
        key = (run.run_id,)
        inserted = yield (
            f"INSERT INTO pausepoint_server_runs ({RUN_COLUMNS}, not_before) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
            (
                run.run_id, run.thread_id, run.assistant_id, "pending",
                dump_cell(self.sealer, run.metadata, RUNS, key, "metadata"),
                dump_cell(self.sealer, run.kwargs, RUNS, key, "kwargs"),
                run.multitask_strategy, now, now, not_before,
            ),
        )  # fmt: skip
        return int(inserted[0][0])

    def _mark_busy(self, thread: ThreadRecord, stamp: JsonObject, now: float) -> Flow:
        """The thread is ``busy``; ``stamp`` (its graph, its assistant) in its metadata."""
        metadata = {**thread.metadata, **stamp}
        yield (
            "UPDATE pausepoint_server_threads SET status = 'busy', metadata = ?, "
            "updated_at = ? WHERE thread_id = ?",
            (thread_metadata(self.sealer, thread.thread_id, metadata), now, thread.thread_id),
        )

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
            if self.db.postgres:  # delivered at commit to the process holding the run
                yield "SELECT pg_notify(?, ?)", (CANCEL_CHANNEL, f"{action} {run_id}")

    async def cancel_run(
        self, thread_id: str, run_id: str, action: CancelAction, now: float
    ) -> str:
        """Cancel a run of the thread; its status before (a finished one: unchanged).

        Raises:
            NotFoundError: No such run of this thread.
        """

        def flow() -> Flow:
            yield from self._lock_thread(thread_id)
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

    async def claim(
        self, owner: str, now: float, lease_until: float, *, thread_id: str | None = None
    ) -> Claimed | None:
        """Take the oldest runnable pending run (of ``thread_id`` if given); None if none.

        Runnable: due (``not_before``), and the oldest pending run of a thread none of
        whose runs is running. With ``thread_id``, the thread's runs whose lease ran
        out before ``now`` (their process died) are put back to ``pending`` first, in
        the same transaction. The claim also marks the run started (`start_flow`).

        A run whose record cannot be opened (a sealed cell tampered with, a row in
        clear while plaintext is refused) is ended ``error`` in the claim's
        transaction (`start_flow`), and the claim goes on to the next runnable run:
        such a run never blocks the others.
        """
        only, params = ("AND r.thread_id = ? ", (now, thread_id)) if thread_id else ("", (now,))
        unopenable: list[Unopenable] = []

        def flow() -> Flow:
            if thread_id is not None:
                yield (
                    "UPDATE pausepoint_server_runs SET status = 'pending', lease_owner = NULL, "
                    "lease_until = NULL WHERE thread_id = ? AND status = 'running' "
                    "AND lease_until < ?",
                    (thread_id, now),
                )
            while True:
                rows = yield (
                    "SELECT r.seq, r.thread_id FROM pausepoint_server_runs r "
                    f"WHERE r.status = 'pending' AND r.not_before <= ? {only}AND NOT EXISTS ("
                    "SELECT 1 FROM pausepoint_server_runs o WHERE o.thread_id = r.thread_id "
                    "AND (o.status = 'running' OR (o.status = 'pending' AND o.seq < r.seq))) "
                    "ORDER BY r.seq LIMIT 1",
                    params,
                )
                if not rows:
                    return None
                seq, tid = rows[0]
                yield from self._lock_thread(str(tid))
                got = yield from self.start_flow(int(seq), str(tid), owner, now, lease_until)
                if not isinstance(got, Unopenable):
                    return got
                unopenable.append(got)  # ended: the next runnable run, in this transaction

        try:
            result: Claimed | None = await self.db.run(flow(), write=True)
        except DuplicateError:  # another process claimed a run of that thread first
            return None
        log_ended(unopenable)  # committed
        return result

    def start_flow(
        self, seq: int, thread_id: str, owner: str, now: float, lease_until: float
    ) -> Flow:
        """Claim the pending run ``seq`` (its thread's row locked): a `Claimed`, or None.

        On its first claim the run is also marked started: the thread's head
        checkpoint and the newest write's ``seq`` are kept as where it starts from (a
        rollback goes back there; a retry continues from the head if it moved). The
        newest of the table, not of the thread: ``seq`` only grows, so the thread's
        later writes are the same, and it is one index step where the thread's own
        maximum read all its writes (2–3 ms a claim at 1,000 turns on SQLite).

        A run whose record cannot be opened (`pausepoint.server.sealing`) is not
        claimed: it is ended ``error`` (`pausepoint.server.unopenable.end_flow`), its
        thread settled (``error``, or ``busy`` while other runs of it wait), and the
        flow returns its `Unopenable`.
        """
        rows = yield (
            "SELECT r.started, (SELECT MAX(c.checkpoint_id) FROM pausepoint_checkpoints c "
            "WHERE c.thread_id = ? AND c.checkpoint_ns = ''), (SELECT COALESCE(MAX(w.seq), 0) "
            "FROM pausepoint_writes w) "
            "FROM pausepoint_server_runs r WHERE r.seq = ? AND r.status = 'pending'",
            (thread_id, seq),
        )
        if not rows:
            return None
        was_started, head, writes = bool(rows[0][0]), rows[0][1], int(rows[0][2] or 0)
        first = "" if was_started else ", started = 1, start_checkpoint = ?, start_writes = ?"
        got = yield (
            "UPDATE pausepoint_server_runs SET status = 'running', lease_owner = ?, "
            f"lease_until = ?, attempt = attempt + 1, updated_at = ?{first} "
            f"WHERE seq = ? AND status = 'pending' RETURNING {_CLAIM_COLUMNS}",
            (owner, lease_until, now, *(() if was_started else (head, writes)), seq),
        )
        if not got:
            return None
        row = got[0]
        try:
            run = run_of_row(row[:9], self.sealer)
        except OPEN_ERRORS as exc:
            sealer, postgres = self.sealer, self.db.postgres
            gone = yield from end_flow(sealer, str(row[0]), thread_id, exc, now, postgres=postgres)
            yield from self._settle(thread_id, "error", now)
            return gone
        return Claimed(run, int(row[9]), row[10], was_started, int(row[12] or 0), head=head)

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
        result: JsonObject | None,
        rest: ThreadStatus,
        now: float,
        also: Flow | None = None,
        *,
        look: bool = False,
    ) -> Finished:
        """End a running run held by ``owner``, then settle its thread's status.

        ``status`` None deletes the run (a rollback). Falsy if the run is no longer
        ``owner``'s (requeued after its lease expired). ``also`` runs in the same
        transaction when the run was ``owner``'s (the run's end event). The answer
        also says whether runs of the thread are still in flight and (``look``)
        whether a claim now would find a run of any thread: a worker told no skips
        the claim that would find nothing.
        """

        def flow() -> Flow:
            yield from self._lock_thread(run.thread_id)
            rows = yield (
                "SELECT 1 FROM pausepoint_server_runs WHERE run_id = ? "
                "AND status = 'running' AND lease_owner = ?",
                (run.run_id, owner),
            )
            if not rows:
                return _NOT_OURS
            if status is None:
                yield "DELETE FROM pausepoint_server_runs WHERE run_id = ?", (run.run_id,)
            else:
                yield (
                    "UPDATE pausepoint_server_runs SET status = ?, result = ?, "
                    "lease_owner = NULL, lease_until = NULL, updated_at = ? WHERE run_id = ?",
                    (
                        status,
                        dump_cell(self.sealer, result, RUNS, (run.run_id,), "result"),
                        now,
                        run.run_id,
                    ),
                )
            settled = yield from self._settle(run.thread_id, rest, now)
            if also is not None:
                yield from also
            runnable = True
            if look:
                found = yield (
                    "SELECT 1 FROM pausepoint_server_runs r WHERE r.status = 'pending' "
                    "AND r.not_before <= ? AND NOT EXISTS (SELECT 1 FROM "
                    "pausepoint_server_runs o WHERE o.thread_id = r.thread_id "
                    "AND o.status = 'running') LIMIT 1",
                    (now,),
                )
                runnable = bool(found)
            return Finished(ours=True, thread_busy=settled == "busy", runnable=runnable)

        done: Finished = await self.db.run(flow(), write=True)
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

    async def release(self, run_id: str, owner: str) -> bool:
        """Put a run ``owner`` holds back to ``pending`` (its database went away mid-run).

        Whether it was ``owner``'s: a run whose lease was taken over is left alone.
        """

        def flow() -> Flow:
            rows = yield (
                "UPDATE pausepoint_server_runs SET status = 'pending', lease_owner = NULL, "
                "lease_until = NULL WHERE run_id = ? AND status = 'running' "
                "AND lease_owner = ? RETURNING run_id",
                (run_id, owner),
            )
            return bool(rows)

        result: bool = await self.db.run(flow(), write=True)
        return result

    async def delete_run(self, thread_id: str, run_id: str) -> None:
        """Delete a run that is not running.

        Raises:
            NotFoundError: No such run of this thread.
            ConflictError: It is running (cancel it first).
        """

        def flow() -> Flow:
            yield from self._lock_thread(thread_id)
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
