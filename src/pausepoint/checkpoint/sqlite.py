"""``SqliteSaver``: checkpoints in a SQLite file, the embedded durable default.

One connection, guarded by a lock, serves every thread of the process (the sync
driver runs tasks on worker threads); WAL mode lets other processes read while
this one writes. Async methods run the same code in a worker thread so the event
loop never blocks. SQL and row mapping are shared with PostgreSQL
(`pausepoint.checkpoint._sql`).

Example:
    >>> with SqliteSaver.from_conn_string("checkpoints.db") as saver:
    ...     graph = builder.compile(checkpointer=saver)
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from pausepoint.checkpoint import (
    _sql,
    _sql_heads,
    _sql_leases,
    _sql_list,
    _sql_prune,
    _sql_reseal,
)
from pausepoint.checkpoint._prune import Request
from pausepoint.checkpoint._sql_prune import ThreadSize
from pausepoint.checkpoint._sql_reseal import RekeyReport
from pausepoint.checkpoint._sqlite_writers import WriterTurns
from pausepoint.checkpoint.base import (
    At,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointRef,
    CheckpointTuple,
    Lease,
    LeaseClaim,
    StepCommit,
    guard_kwargs,
)
from pausepoint.checkpoint.heads import Head
from pausepoint.checkpoint.questions import PendingPage, PendingQuery
from pausepoint.config import RunnableConfig
from pausepoint.errors import CheckpointDecodeError
from pausepoint.serde import SerializerProtocol

if TYPE_CHECKING:
    from pausepoint.checkpoint._sealing import Sealer

__all__ = ["AsyncSqliteSaver", "SqliteSaver"]

T = TypeVar("T")

_RUN_ASYNC = ("acommit", "aacquire_lease", "arelease_lease", "aget_tuple", "alist")
"""The async saver methods the async driver calls during a run."""


class SqliteSaver(BaseCheckpointSaver):
    """A saver storing checkpoints in SQLite; safe to share between threads.

    Args:
        conn: An open connection. Open it with ``check_same_thread=False`` if other
            threads will use the saver (``from_conn_string`` does).
        serde: The serializer of checkpoints and writes; a
            [`Serializer`][pausepoint.serde.Serializer] allowing built-in types by default.
        encryption: Seal every stored value, write and metadata (but the fields the
            engine queries) to its row, e.g. a [`pausepoint.crypto.KeyRing`][];
            docs/security.md.
        clock: Seconds since the epoch, by which leases expire (``lease_clock``).
            Every process sharing the file must use the same time: the system clock,
            unless a test replaces it.
        read_only: Only read: change nothing in the database (no schema, no journal
            mode); a database without pausepoint's tables, or with a schema this
            version does not know, raises ``ValueError``.

    The schema is created (or migrated) when the saver is made. Leases and guarded
    writes hold across processes: each is one transaction under SQLite's write lock.
    """

    batches = True  # each commit() is one transaction: one commit instead of two
    supports_leases = True

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        serde: SerializerProtocol | None = None,
        clock: Callable[[], float] = time.time,
        read_only: bool = False,
        encryption: Sealer | None = None,
    ) -> None:
        self.conn = conn
        self.lease_clock = clock
        self._lock = threading.RLock()
        self._codec = _sql.SqlCodec(serde, encryption)
        self.serde = self._codec.serde
        self._synchronous: int | None = None
        with self._lock:
            # WAL lets readers in other processes work while this one writes. It
            # cannot be switched on inside the caller's open transaction.
            wal = not (conn.in_transaction or read_only)
            pragma = "PRAGMA journal_mode" + ("=WAL" if wal else "")
            mode = conn.execute(pragma).fetchone()
            self.journal_mode = str(mode[0]) if mode else ""
            files = conn.execute("PRAGMA database_list").fetchall()
            main = next((str(f[2]) for f in files if f[1] == "main"), "")
        self._scope = f"sqlite:{main}" if main else super().lease_scope
        # Writers of one file queue for their turn (``_sqlite_writers``), not poll.
        self._turns = WriterTurns(main) if main and not read_only else None
        if read_only:
            self._run(_sql.check_schema_flow())
        else:
            self.setup()

    @classmethod
    def from_conn_string(
        cls,
        path: str,
        *,
        serde: SerializerProtocol | None = None,
        read_only: bool = False,
        encryption: Sealer | None = None,
    ) -> _Opened[Self]:
        """Open (creating if needed) the SQLite database at ``path``; close it on exit.

        Use it as ``with SqliteSaver.from_conn_string(path) as saver:`` or, without
        blocking the event loop, ``async with``.

        Args:
            path: A file path, or ``":memory:"`` for a database that lives as long as
                the context.
            serde: See [`SqliteSaver`][].
            read_only: Open an existing file read-only and change nothing in it (see
                [`SqliteSaver`][]): to inspect a database another program owns.
            encryption: See [`SqliteSaver`][].
        """
        return _Opened(cls, path, serde, read_only, encryption)

    @property
    def lease_scope(self) -> str:
        """The database file (or this saver, for an in-memory database)."""
        return self._scope

    def setup(self) -> None:
        """Create or migrate the schema (idempotent; called by the constructor)."""
        self._run(_sql.setup_flow(_sql.SQLITE), write=True)

    def _execute(self, stmt: _sql.Statement) -> _sql.Rows:
        if stmt.many:
            self.conn.executemany(stmt.sql, stmt.params)
            return []
        cur = self.conn.execute(stmt.sql, stmt.params)
        return cur.fetchall() if stmt.fetch else []

    def _run(self, flow: _sql.Flow[T], *, write: bool = False, durable: bool = True) -> T:
        """Drive ``flow`` on the connection, in a transaction of its own.

        A write's BEGIN IMMEDIATE takes the write lock at once, so a busy database
        waits at the BEGIN (up to the connection's timeout) instead of failing in the
        middle (`_write`); a read's BEGIN is deferred (see below).
        """
        with self._lock:
            conn = self.conn
            if conn.in_transaction:
                # The caller's own transaction: our statements join it, and the caller
                # decides when it commits.
                return _sql.drive(flow, self._execute)
            if write:
                if not durable and self.journal_mode.lower() == "wal":
                    return self._unsynced(flow)
                return self._write(flow)
            # A read takes a checkpoint's row and then its writes: one (deferred)
            # transaction reads them at one moment, so a commit from another
            # connection in between (writes with the next checkpoint) is not half
            # seen as the old checkpoint, newest still, with its successor's writes.
            conn.execute("BEGIN")
            try:
                result = _sql.drive(flow, self._execute)
            except BaseException:
                conn.rollback()
                raise
            conn.commit()
            return result

    def _write(self, flow: _sql.Flow[T]) -> T:
        """``flow`` in a write transaction, in this saver's turn among the file's writers.

        The turn (``_sqlite_writers``) is taken before ``BEGIN IMMEDIATE`` and given
        back once the transaction is over: the next writer waiting wakes at once,
        instead of sleeping out SQLite's busy handler. Called under the lock.

        The flow is primed first (`_sql.primed`): what it computes before its
        first statement (encoding the values it writes) is done before the turn, not
        while the file's other writers wait for it (issue 35).
        """
        conn, turns = self.conn, self._turns
        flow = _sql.primed(flow)
        turn = -1 if turns is None else turns.take()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = _sql.drive(flow, self._execute)
            except BaseException:
                conn.rollback()
                raise
            conn.commit()
            return result
        finally:
            if turns is not None:
                turns.give(turn)

    def _unsynced(self, flow: _sql.Flow[T]) -> T:
        """A write transaction committed without an fsync: taking or letting go a lease.

        A lease need not survive a power cut (the workers holding it do not either),
        and in WAL mode an unsynced commit is still atomic and ordered: the next
        durable commit's fsync covers it, and a torn one is discarded by the WAL's
        checksums. It saves two fsyncs per run (benchmarks/README.md).
        """
        if self._synchronous is None:  # the caller's setting, read once
            mode = self.conn.execute("PRAGMA synchronous").fetchone()
            self._synchronous = int(mode[0]) if mode else 2
        self.conn.execute("PRAGMA synchronous=OFF")
        try:  # the same transaction as a durable write's, under the (re-entrant) lock
            return self._write(flow)
        finally:
            self.conn.execute(f"PRAGMA synchronous={self._synchronous}")

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """See [`pausepoint.checkpoint.base`][]."""
        return self._run(_sql.get_tuple_flow(_sql.SQLITE, self._codec, config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """See [`pausepoint.checkpoint.base`][]."""
        for page in _sql_list.pages(
            _sql.SQLITE, self._codec, config, filter=filter, before=before, limit=limit
        ):
            # A page is read under the lock (one transaction), then yielded without it.
            yield from self._run(page)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        lease: str | None = None,
        release: bool = False,
    ) -> RunnableConfig:
        """See [`pausepoint.checkpoint.base`][]."""
        # The clock is read when the flow builds its statement: inside the transaction.
        guard = _sql_leases.guard_of(config, lease, False, self._lease_now, release)
        flow = _sql.put_flow(_sql.SQLITE, self._codec, config, checkpoint, metadata, guard)
        return self._run(flow, write=True)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
        *,
        lease: str | None = None,
        release: bool = False,
        if_head: bool = False,
    ) -> None:
        """See [`pausepoint.checkpoint.base`][]."""
        flow = _sql.put_writes_flow(
            _sql.SQLITE,
            self._codec,
            config,
            writes,
            task_id=task_id,
            task_path=task_path,
            guard=_sql_leases.guard_of(config, lease, if_head, self._lease_now, release),
        )
        self._run(flow, write=True)

    def commit(self, step: StepCommit[At]) -> At:
        """See [`pausepoint.checkpoint.base`][]: one transaction, so one commit."""
        guard = _sql_leases.guard_of(
            step.config, step.lease, step.if_head, self._lease_now, step.release
        )
        return self._run(_sql.commit_flow(_sql.SQLITE, self._codec, step, guard), write=True)

    def _pending_page(self, query: PendingQuery) -> PendingPage:
        return self._run(_sql.list_pending_flow(_sql.SQLITE, self._codec, query))

    async def _apending_page(self, query: PendingQuery) -> PendingPage:
        return await asyncio.to_thread(self._pending_page, query)

    def thread_ids(self) -> list[str]:
        """Every thread's id, newest first, read without decoding any checkpoint.

        One unreadable checkpoint does not hide the others' threads (``pausepoint
        threads list`` reads each thread on its own).
        """
        return self._run(_sql_heads.thread_ids_flow(_sql.SQLITE))

    def thread_heads(self, after: str = "", limit: int = 1000) -> list[Head]:
        """Each thread's newest root checkpoint, peeked (`pausepoint.checkpoint.heads`).

        Up to ``limit`` threads, in thread id order, from the first id after ``after``:
        pass the last one's id to read on. An unreadable row is a `Head` with its
        ``error``. Reads only; what ``pausepoint check`` batches through.
        """
        return self._run(_sql_heads.thread_heads_flow(_sql.SQLITE, self._codec, after, limit))

    def thread_tuples(
        self, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], CheckpointTuple | CheckpointDecodeError]:
        """Root checkpoints by ``(thread id, checkpoint id)``, whole, a few statements for all.

        As ``get_tuple`` reads each; one that cannot be decoded maps to its error, one
        that is gone is left out. Reads only (``pausepoint check``'s second pass).
        """
        return self._run(_sql_heads.thread_tuples_flow(_sql.SQLITE, self._codec, keys))

    def delete_thread(self, thread_id: str) -> None:
        """See [`pausepoint.checkpoint.base`][]."""
        self._run(_sql.delete_thread_flow(_sql.SQLITE, thread_id), write=True)

    def _prune_request(self, request: Request) -> object:
        flow, write = _sql_prune.request_flow(_sql.SQLITE, self._codec, request, self._lease_now)
        return self._run(flow, write=write)

    async def _aprune_request(self, request: Request) -> object:
        return await asyncio.to_thread(self._prune_request, request)

    def thread_size(self, thread_id: str) -> ThreadSize:
        """What a thread's rows cost (``pausepoint threads show``); nothing decoded."""
        return self._run(_sql_prune.thread_size_flow(_sql.SQLITE, thread_id))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """See ``BaseCheckpointSaver.copy_thread``: one transaction."""
        flow = _sql_prune.copy_thread_flow(
            _sql.SQLITE, source_thread_id, target_thread_id, self._codec
        )
        self._run(flow, write=True)

    def rekey(self, *, batch_size: int = 500) -> RekeyReport:
        """Seal every row again with the sealing key of ``encryption`` (``pausepoint rekey``).

        Rows sealed with another key of the ring, and rows stored in clear, are
        re-sealed, ``batch_size`` rows a transaction, each a compare-and-swap: safe
        beside running workers, and to stop at any point and run again (docs/security.md).

        Raises:
            ValueError: The saver has no ``encryption``.
        """
        return _sql_reseal.rekey(self._run, self._codec, _sql.SQLITE, batch_size)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async [`copy_thread`][] (runs in a worker thread)."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def arekey(self, *, batch_size: int = 500) -> RekeyReport:
        """Async [`rekey`][] (runs in a worker thread, a batch a transaction)."""
        return await asyncio.to_thread(lambda: self.rekey(batch_size=batch_size))

    def acquire_lease(
        self,
        thread_id: str,
        owner: str,
        ttl: float,
        *,
        nudge: bool = False,
        read: CheckpointRef | RunnableConfig | None = None,
    ) -> LeaseClaim:
        """See [`BaseCheckpointSaver.acquire_lease`][]: a write transaction, then the read's.

        The claim is committed without an fsync (`_unsynced`); ``read`` is read after
        it, outside the write lock (`_sql_leases.claim_then_read`).
        """
        claim = _sql_leases.acquire_flow(
            _sql.SQLITE, thread_id, owner, ttl, nudge, self._lease_now
        )  # fmt: skip
        if read is None:
            return self._run(claim, write=True, durable=False)
        _sql_leases.check_read(thread_id, read)
        return _sql_leases.claim_then_read(
            lambda flow: self._run(flow, write=True, durable=False),
            self._run,
            _sql.SQLITE,
            self._codec,
            claim,
            read,
        )

    def renew_lease(self, thread_id: str, owner: str, ttl: float | None = None) -> bool:
        """See [`BaseCheckpointSaver.renew_lease`][]."""
        flow = _sql_leases.renew_flow(_sql.SQLITE, thread_id, owner, ttl, self._lease_now)
        return self._run(flow, write=True, durable=False)

    def release_lease(self, thread_id: str, owner: str) -> bool:
        """See [`BaseCheckpointSaver.release_lease`][]."""
        flow = _sql_leases.release_flow(_sql.SQLITE, thread_id, owner)
        return self._run(flow, write=True, durable=False)

    def get_lease(self, thread_id: str) -> Lease | None:
        """See [`BaseCheckpointSaver.get_lease`][]."""
        return self._run(_sql_leases.get_lease_flow(_sql.SQLITE, thread_id, self._lease_now))

    # Async forms: the same calls in a worker thread, so the event loop never waits
    # on disk I/O or on another thread holding the connection.

    @property
    def async_in_threads(self) -> bool:
        """Whether the async methods a run calls are this class's: the sync ones in a thread.

        Then the async driver calls the sync ones in a worker thread of its own,
        several in one hop (`pausepoint.drivers.stretch`). False for a subclass that
        overrides one of them.
        """
        cls = type(self)
        return all(getattr(cls, name) is getattr(SqliteSaver, name) for name in _RUN_ASYNC)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async [`get_tuple`][] (runs in a worker thread)."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async [`list`][] (runs in a worker thread)."""
        for page in _sql_list.pages(
            _sql.SQLITE, self._codec, config, filter=filter, before=before, limit=limit
        ):
            for item in await asyncio.to_thread(self._run, page):
                yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        lease: str | None = None,
        release: bool = False,
    ) -> RunnableConfig:
        """Async [`put`][] (runs in a worker thread)."""
        return await asyncio.to_thread(
            self.put,
            config,
            checkpoint,
            metadata,
            new_versions,
            **guard_kwargs(lease, False, release),
        )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
        *,
        lease: str | None = None,
        release: bool = False,
        if_head: bool = False,
    ) -> None:
        """Async [`put_writes`][] (runs in a worker thread)."""
        guard = guard_kwargs(lease, if_head, release)
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path, **guard)

    async def acommit(self, step: StepCommit[At]) -> At:
        """Async [`commit`][] (runs in a worker thread)."""
        return await asyncio.to_thread(self.commit, step)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async [`delete_thread`][] (runs in a worker thread)."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def aacquire_lease(
        self,
        thread_id: str,
        owner: str,
        ttl: float,
        *,
        nudge: bool = False,
        read: CheckpointRef | RunnableConfig | None = None,
    ) -> LeaseClaim:
        """Async [`acquire_lease`][] (runs in a worker thread)."""
        claim = self.acquire_lease
        return await asyncio.to_thread(claim, thread_id, owner, ttl, nudge=nudge, read=read)

    async def arenew_lease(self, thread_id: str, owner: str, ttl: float | None = None) -> bool:
        """Async [`renew_lease`][] (runs in a worker thread)."""
        return await asyncio.to_thread(self.renew_lease, thread_id, owner, ttl)

    async def arelease_lease(self, thread_id: str, owner: str) -> bool:
        """Async [`release_lease`][] (runs in a worker thread)."""
        return await asyncio.to_thread(self.release_lease, thread_id, owner)

    async def aget_lease(self, thread_id: str) -> Lease | None:
        """Async [`get_lease`][] (runs in a worker thread)."""
        return await asyncio.to_thread(self.get_lease, thread_id)


class AsyncSqliteSaver(SqliteSaver):
    """LangGraph's name for the async use of [`SqliteSaver`][].

    Every saver method, sync or async, works on both classes; the async methods
    never block the event loop, and ``from_conn_string`` works with ``async with``.
    """


S = TypeVar("S", bound=SqliteSaver)


class _Opened(Generic[S]):
    """The context ``from_conn_string`` returns: a saver on a connection it owns."""

    def __init__(
        self,
        cls: type[S],
        path: str,
        serde: SerializerProtocol | None,
        read_only: bool = False,
        encryption: Sealer | None = None,
    ) -> None:
        self._cls = cls
        self._encryption = encryption
        self._path = path
        self._serde = serde
        self._read_only = read_only
        self._conn: sqlite3.Connection | None = None

    def __enter__(self) -> S:
        if self._read_only:
            uri = f"{Path(self._path).resolve().as_uri()}?mode=ro"
            self._conn = sqlite3.connect(
                uri, uri=True, check_same_thread=False, isolation_level=None
            )
        else:
            self._conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
        try:
            return self._cls(
                self._conn,
                serde=self._serde,
                read_only=self._read_only,
                encryption=self._encryption,
            )
        except BaseException:
            self._conn.close()
            raise

    def __exit__(self, *exc: object) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def __aenter__(self) -> S:
        return await asyncio.to_thread(self.__enter__)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.__exit__)
