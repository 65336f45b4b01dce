"""Leases and guarded writes in SQL, shared by the SQLite and PostgreSQL savers.

A lease is one row of ``pausepoint_leases`` per thread. Taking, renewing and
releasing it are each one atomic statement (SQLite without ``RETURNING``: two, in
the saver's write transaction, which holds SQLite's write lock throughout).

A guarded write (`Guard`) stores its rows only if the owner holds the
thread's live lease (renewing it) and, for ``if_head``, its checkpoint is the
newest. SQLite checks first, in the same transaction as the writes (one commit).
PostgreSQL folds the checks into the write's statement as ``WITH`` clauses, and
the inserts select their rows only when the checks pass: one round trip, as
unguarded. The lease's ``UPDATE`` locks its row until the write commits, so a
takeover waits for it and then sees the renewed expiry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from pausepoint.checkpoint._commit import CheckpointRef, ref_of
from pausepoint.checkpoint._dialect import Dialect, Flow, Row, Statement
from pausepoint.checkpoint._leases import check_lease_args, check_release
from pausepoint.checkpoint._pending_schema import ask_sql, index_upkeep, move_sql
from pausepoint.checkpoint._sql import (
    CHECKPOINTS_INTO,
    ON_PUT_CONFLICT,
    ON_WRITE_CONFLICT,
    PUT_ROW,
    WRITE_ROW,
    WRITE_ROWS_PER_STATEMENT,
    WRITES_INTO,
    SqlCodec,
    get_tuple_flow,
    read_query,
    store_rows,
    tuple_of,
)
from pausepoint.checkpoint.base import CheckpointTuple, Lease, LeaseClaim
from pausepoint.config import RunnableConfig
from pausepoint.errors import LeaseLostError, StaleCheckpointError

__all__ = [
    "Clock",
    "Guard",
    "acquire_flow",
    "acquire_read_flow",
    "get_lease_flow",
    "guard_of",
    "release_flow",
    "renew_flow",
]

Clock = Callable[[], float] | None
"""The saver's clock where the client's time rules (SQLite), else None (PostgreSQL)."""

# Taken when free, expired or the owner's own; else only the nudge changes. The
# DO UPDATE always runs, so the row in force afterwards is always returned. ``now``
# is computed once, in VALUES: excluded.expires_at - excluded.ttl.
_TAKE = (
    "(pausepoint_leases.owner = excluded.owner"
    " OR pausepoint_leases.expires_at <= excluded.expires_at - excluded.ttl)"
)
_ACQUIRE = f"""INSERT INTO pausepoint_leases (thread_id, owner, expires_at, ttl, nudged, seq)
    VALUES (?, ?, {{now}} + ?, ?, {{false}}, 0)
    ON CONFLICT (thread_id) DO UPDATE SET seq = pausepoint_leases.seq + 1,
    owner = CASE WHEN {_TAKE} THEN excluded.owner ELSE pausepoint_leases.owner END,
    expires_at = CASE WHEN {_TAKE} THEN excluded.expires_at
        ELSE pausepoint_leases.expires_at END,
    ttl = CASE WHEN {_TAKE} THEN excluded.ttl ELSE pausepoint_leases.ttl END,
    nudged = CASE WHEN pausepoint_leases.owner = excluded.owner THEN pausepoint_leases.nudged
        WHEN {_TAKE} THEN {{false}} ELSE (pausepoint_leases.nudged OR ?) END"""
_RENEW = """UPDATE pausepoint_leases SET expires_at = {now} + COALESCE(?, ttl),
    ttl = COALESCE(?, ttl), seq = seq + 1 WHERE thread_id = ? AND owner = ?"""
# The row stays (no owner, expired): its ``seq`` goes on counting (see acquire_read_flow).
_RELEASE = """UPDATE pausepoint_leases SET owner = '', expires_at = 0, seq = seq + 1
    WHERE thread_id = ? AND owner = ?"""
_SELECT_LEASE = "SELECT owner, expires_at, nudged, {now} FROM pausepoint_leases WHERE thread_id = ?"
_SELECT_NUDGED = "SELECT nudged FROM pausepoint_leases WHERE thread_id = ? AND owner = ?"
_SELECT_HEAD = """SELECT max(checkpoint_id) FROM pausepoint_checkpoints
    WHERE thread_id = ? AND checkpoint_ns = ?"""
# The texts with RETURNING made once: a text made per call is hashed again by the
# statement cache (``Dialect.sql``) on every call (a claim's ~700 characters).
_ACQUIRE_RETURNING = _ACQUIRE + " RETURNING owner, expires_at"
_RENEW_RETURNING = _RENEW + " RETURNING 1"
_RELEASE_RETURNING = _RELEASE + " RETURNING 1"
# PostgreSQL: the checks as WITH clauses of the write's statement.
_FENCE_CTE = """f AS (UPDATE pausepoint_leases SET expires_at = {now} + ttl, seq = seq + 1
    WHERE thread_id = ? AND owner = ? RETURNING 1)"""
# The fence of a run's last write, which lets the lease go as it writes.
_RELEASE_CTE = f"f AS ({_RELEASE} RETURNING 1)"
_HEAD_CTE = f"h AS ({_SELECT_HEAD.replace('max(checkpoint_id)', 'max(checkpoint_id) AS head')})"


def acquire_flow(
    dialect: Dialect, thread_id: str, owner: str, ttl: float, nudge: bool, clock: Clock
) -> Flow[LeaseClaim]:
    """See ``BaseCheckpointSaver.acquire_lease``."""
    check_lease_args(owner, ttl)
    thread = str(thread_id)
    params = (thread, owner, *dialect.now_params(clock), ttl, ttl, bool(nudge))
    if dialect.returning:
        sql = dialect.lease_sql(_ACQUIRE_RETURNING)
        rows = yield Statement(sql, params, fetch=True)
    else:
        yield Statement(dialect.lease_sql(_ACQUIRE), params)
        rows = yield _select_lease(dialect, thread, clock)
    holder = Lease(thread, str(rows[0][0]), float(rows[0][1]))
    return LeaseClaim(holder.owner == owner, holder)


def claim_flow(
    dialect: Dialect,
    codec: SqlCodec,
    thread_id: str,
    owner: str,
    ttl: float,
    nudge: bool,
    clock: Clock,
    read: CheckpointRef | RunnableConfig | None,
) -> Flow[LeaseClaim]:
    """``acquire_lease(..., read=...)``: the claim, and the read once the lease is held.

    PostgreSQL does both in one statement (`acquire_read_flow`). SQLite does not use
    this flow with a ``read``: see `claim_then_read`.
    """
    if read is None:
        return (yield from acquire_flow(dialect, thread_id, owner, ttl, nudge, clock))
    check_read(thread_id, read)
    assert not dialect.client_clock, "SQLite claims, then reads: claim_then_read"
    return (yield from acquire_read_flow(dialect, codec, thread_id, owner, ttl, nudge, read))


def check_read(thread_id: str, read: CheckpointRef | RunnableConfig) -> None:
    """Refuse an ``acquire_lease(read=...)`` that reads another thread than it takes."""
    if ref_of(read)[0] != str(thread_id):
        raise ValueError("acquire_lease(read=...) must read the thread it takes")


def claim_then_read(
    write: Callable[[Flow[LeaseClaim]], LeaseClaim],
    read_with: Callable[[Flow[CheckpointTuple | None]], CheckpointTuple | None],
    dialect: Dialect,
    codec: SqlCodec,
    claim: Flow[LeaseClaim],
    read: CheckpointRef | RunnableConfig,
) -> LeaseClaim:
    """SQLite's ``acquire_lease(..., read=...)``: the claim's transaction, then the read's.

    The claim is a write transaction and holds the file's write lock, which every
    writer of every process waits for: the read (and decoding what it read) comes
    after it, in a read transaction of its own, so that the lock is held for the
    claim's statement alone (issue 35). The read still shows every write committed
    before the claim: it starts after the claim committed. A write committed in
    between is shown too, as if the claim had come after it; it is not the lease
    holder's (every write of a run is fenced by the lease), so the run loses nothing.
    """
    taken = write(claim)
    if not taken.acquired:
        return taken
    found = read_with(get_tuple_flow(dialect, codec, read))
    return LeaseClaim(True, taken.holder, found, read=True)


def acquire_read_flow(
    dialect: Dialect,
    codec: SqlCodec,
    thread_id: str,
    owner: str,
    ttl: float,
    nudge: bool,
    read: CheckpointRef | RunnableConfig,
) -> Flow[LeaseClaim]:
    """``acquire_lease(..., read=config)`` on PostgreSQL: claim and read in one statement.

    The read must show every write committed before the claim took the lease. In
    READ COMMITTED a statement reads from a snapshot taken when it starts, while
    its ``INSERT … ON CONFLICT`` waits for, then sees, a holder that lets the lease
    go (with its last write) after that: the read would be stale. The lease row's
    ``seq`` tells: every statement that changes the row (claim, fenced write,
    release) adds one, and the row is never deleted while the thread lives. The
    statement reads ``seq`` from its snapshot too; if the claim's ``seq`` is not
    exactly one more (or 0, a new row, where the snapshot had none), something
    changed the row in between, and the thread is read again, now that the lease is
    held. A run's writes are all fenced, so nothing it wrote can slip past ``seq``.
    """
    check_lease_args(owner, ttl)
    assert not dialect.client_clock, "PostgreSQL only: the database's clock, RETURNING"
    thread = str(thread_id)
    query, read_params = read_query(dialect, read)
    params = (thread, thread, owner, ttl, ttl, bool(nudge), *read_params)
    (row,) = yield Statement(_acquire_read_sql(dialect, query), params, fetch=True)
    holder = Lease(thread, str(row[0]), float(row[1]))
    if holder.owner != owner:
        return LeaseClaim(False, holder)
    seq, was = int(row[2]), row[3]
    if seq == (0 if was is None else int(was) + 1):
        found = (yield from tuple_of(dialect, codec, row[4:])) if row[4] is not None else None
    else:  # written meanwhile: read again, past the claim
        found = yield from get_tuple_flow(dialect, codec, read)
    return LeaseClaim(True, holder, found, read=True)


@functools.lru_cache(maxsize=8)
def _acquire_read_sql(dialect: Dialect, query: str) -> str:
    """The statement of `acquire_read_flow` around ``query`` (one of `read_query`'s)."""
    return dialect.lease_sql(
        f"WITH was AS (SELECT seq FROM pausepoint_leases WHERE thread_id = ?),"
        f" l AS ({_ACQUIRE} RETURNING owner, expires_at, seq), r AS ({query})"
        " SELECT l.owner, l.expires_at, l.seq, (SELECT seq FROM was), r.*"
        " FROM l LEFT JOIN r ON true"
    )


def renew_flow(
    dialect: Dialect, thread_id: str, owner: str, ttl: float | None, clock: Clock
) -> Flow[bool]:
    """See ``BaseCheckpointSaver.renew_lease``; also the fence of a guarded write."""
    check_lease_args(owner, ttl, ttl_optional=True)
    at = dialect.now_params(clock)
    params = (*at, ttl, ttl, str(thread_id), owner)
    if dialect.returning:
        rows = yield Statement(dialect.lease_sql(_RENEW_RETURNING), params, fetch=True)
        return bool(rows)
    yield Statement(dialect.lease_sql(_RENEW), params)
    rows = yield Statement("SELECT changes()", fetch=True)
    return bool(rows[0][0])


def release_flow(dialect: Dialect, thread_id: str, owner: str) -> Flow[bool]:
    """See ``BaseCheckpointSaver.release_lease``: whether it was nudged while held."""
    check_lease_args(owner, None, ttl_optional=True)
    params = (str(thread_id), owner)
    if dialect.returning:
        rows = yield Statement(
            dialect.lease_sql(_RELEASE + " RETURNING nudged"), params, fetch=True
        )
        return bool(rows and rows[0][0])
    rows = yield Statement(dialect.lease_sql(_SELECT_NUDGED), params, fetch=True)
    yield Statement(dialect.lease_sql(_RELEASE), params)
    return bool(rows and rows[0][0])


def _release_fence(dialect: Dialect, thread: str, owner: str) -> Flow[bool]:
    """Let ``owner``'s lease go as a write's fence: whether it held it (in a transaction)."""
    params = (thread, owner)
    if dialect.returning:
        rows = yield Statement(dialect.lease_sql(_RELEASE_RETURNING), params, fetch=True)
        return bool(rows)
    yield Statement(dialect.lease_sql(_RELEASE), params)
    rows = yield Statement("SELECT changes()", fetch=True)
    return bool(rows[0][0])


def get_lease_flow(dialect: Dialect, thread_id: str, clock: Clock) -> Flow[Lease | None]:
    """See ``BaseCheckpointSaver.get_lease``: the unexpired lease, or None."""
    thread = str(thread_id)
    rows = yield _select_lease(dialect, thread, clock)
    if not rows or float(rows[0][1]) <= float(rows[0][3]):
        return None
    return Lease(thread, str(rows[0][0]), float(rows[0][1]))


def _select_lease(dialect: Dialect, thread: str, clock: Clock) -> Statement:
    params = (*dialect.now_params(clock), thread)
    return Statement(dialect.lease_sql(_SELECT_LEASE), params, fetch=True)


def guard_of(
    at: CheckpointRef | RunnableConfig,
    lease: str | None,
    if_head: bool,
    clock: Clock,
    release: bool = False,
) -> Guard | None:
    """The guard of a write under ``at`` with these options, or None when it has none."""
    if lease is None:
        if release:
            check_release(lease, release)  # raises
        if not if_head:
            return None
    elif type(lease) is not str or not lease:  # the checks' fast path: every write
        check_lease_args(lease, None, ttl_optional=True)  # raises
    thread, ns, checkpoint_id = ref_of(at)
    head: tuple[str, str] | None = None
    if if_head:
        if checkpoint_id is None:
            raise ValueError("put_writes(if_head=True) needs a config with a 'checkpoint_id'")
        head = (ns, str(checkpoint_id))
    return Guard(thread, lease, head, clock, release and lease is not None)


class Guard(NamedTuple):
    """What a write checks before it stores anything (see the module docstring).

    A named tuple: one is made per fenced write (a frozen dataclass costs ~5x as much).
    """

    thread_id: str
    owner: str | None
    """Write only while this owner holds the thread's lease (and renew it)."""
    head: tuple[str, str] | None
    """``(checkpoint_ns, checkpoint_id)``: write only while it is the newest."""
    clock: Clock
    """The saver's clock's time (SQLite); None where the database's clock rules."""
    release: bool = False
    """Let the owner's lease go with the write (the run's last): atomic with it."""

    def store(self, dialect: Dialect, rows: Sequence[Row], puts: Sequence[Row]) -> Flow[None]:
        """Check, then store write rows and checkpoint rows (``_sql.store_rows``)."""
        # if_head: one statement however many rows (a check in a statement of its own
        # could not stop a checkpoint committed between it and the writes).
        one = self.head is not None or len(rows) <= WRITE_ROWS_PER_STATEMENT
        if dialect.name == "postgres" and one:
            yield from self._in_one_statement(dialect, rows, puts)
            return None
        yield from self._check(dialect)
        yield from store_rows(dialect, rows, puts)
        return None

    def _check(self, dialect: Dialect) -> Flow[None]:
        """The checks as statements of their own, in the write's transaction.

        With ``release`` the fence is the release itself: the lease goes first, in the
        transaction that then writes (a failed write rolls it back), one statement
        instead of a renewal and a release.
        """
        if self.owner is not None:
            if self.release:
                held = yield from _release_fence(dialect, self.thread_id, self.owner)
            else:
                held = yield from renew_flow(dialect, self.thread_id, self.owner, None, self.clock)
            if not held:
                yield from self._lease_lost(dialect)
        if self.head is not None:
            params = (self.thread_id, self.head[0])
            rows = yield Statement(dialect.lease_sql(_SELECT_HEAD), params, fetch=True)
            self._check_head(rows[0][0] if rows else None)

    def _in_one_statement(
        self, dialect: Dialect, rows: Sequence[Row], puts: Sequence[Row]
    ) -> Flow[None]:
        """PostgreSQL: checks and inserts as one statement; its row says how it went."""
        params: list[Any] = []
        cond_params: list[Any] = []
        if self.owner is not None:
            params += (self.thread_id, self.owner)
        if self.head is not None:
            params += (self.thread_id, self.head[0])
            cond_params.append(self.head[1])
        if rows:
            params += [v for row in rows for v in row] + cond_params
        if puts:
            params += [v for row in puts for v in row] + cond_params
        upkeep = index_upkeep(True, rows, puts)
        if upkeep.asked:  # the index's changes (``_pending_schema``), as in _guarded_sql
            params += [v for row in upkeep.asked for v in row] + cond_params
        for moved in upkeep.moved:
            params += [*cond_params, *moved]
        fence = None if self.owner is None else self.release
        shape = (len(rows), len(puts), len(upkeep.asked), len(upkeep.moved))
        sql = _guarded_sql(dialect, fence, self.head is not None, *shape)
        (outcome,) = yield Statement(sql, params, fetch=True)
        if not outcome[0]:
            yield from self._lease_lost(dialect)
        if self.head is not None:
            self._check_head(outcome[1])

    def _lease_lost(self, dialect: Dialect) -> Flow[None]:
        """Raise ``LeaseLostError`` naming the lease as it is now (read for the message)."""
        assert self.owner is not None
        rows = yield _select_lease(dialect, self.thread_id, self.clock)
        if not rows or not rows[0][0]:  # none, or let go (owner '')
            raise LeaseLostError(self.thread_id, self.owner, None, 0.0)
        owner, expires_at, _, now = rows[0]
        holder = Lease(self.thread_id, str(owner), float(expires_at))
        raise LeaseLostError(self.thread_id, self.owner, holder, float(now))

    def _check_head(self, head: str | None) -> None:
        assert self.head is not None
        ns, checkpoint_id = self.head
        if head != checkpoint_id:
            raise StaleCheckpointError(self.thread_id, ns, checkpoint_id, head)


@functools.lru_cache(maxsize=256)
def _guarded_sql(
    dialect: Dialect, fence: bool | None, head: bool, rows: int, puts: int, asked: int, moved: int
) -> str:
    """The statement of `Guard._in_one_statement`, by shape (built once each).

    ``fence``: None for no lease, False to renew it, True to let it go with the write.
    ``asked``, ``moved``: the index's changes (``_pending_schema.index_upkeep``).
    """
    ctes: list[str] = []
    conds: list[str] = []
    if fence is not None:
        ctes.append(_RELEASE_CTE if fence else _FENCE_CTE)
        conds.append("EXISTS (SELECT FROM f)")
    if head:
        ctes.append(_HEAD_CTE)
        conds.append("(SELECT head FROM h) = ?")
    where = " AND ".join(conds)
    if rows:
        values = ", ".join([WRITE_ROW] * rows)
        ctes.append(f"w AS ({_insert_if(WRITES_INTO, values, where)}{ON_WRITE_CONFLICT})")
    if puts:
        values = ", ".join([PUT_ROW] * puts)
        ctes.append(f"c AS ({_insert_if(CHECKPOINTS_INTO, values, where)}{ON_PUT_CONFLICT})")
    if asked:
        ctes.append(f"p AS ({ask_sql(asked, where)})")
    ctes += [f"d{n} AS ({move_sql(where)})" for n in range(moved)]
    held = "EXISTS (SELECT FROM f)" if fence is not None else "true"
    checked = "(SELECT head FROM h)" if head else "NULL"
    return dialect.lease_sql(f"WITH {', '.join(ctes)} SELECT {held}, {checked}")


def _insert_if(into: str, values: str, where: str) -> str:
    """``INSERT INTO … (columns)`` of ``values`` rows, only those passing ``where``."""
    return f"{into} SELECT * FROM (VALUES {values}) AS v WHERE {where}"
