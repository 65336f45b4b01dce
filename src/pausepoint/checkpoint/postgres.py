"""``PostgresSaver`` / ``AsyncPostgresSaver``: checkpoints in PostgreSQL (psycopg 3).

For many workers on many machines sharing threads. Install the extra with
``pip install 'pausepoint[postgres]'``. A saver takes one connection (guarded by a
lock) or a ``psycopg_pool`` pool (a connection per call, no shared lock).
Connections must use ``autocommit=True``. Statements are prepared as the
connection says (``prepare_threshold``): ``from_conn_string`` prepares every statement
on first use, as LangGraph's saver does (a pause and resume on a local server took
~25 % less time than unprepared); pass ``prepare_threshold=None`` when a pooler that
cannot keep prepared statements sits in between (PgBouncer in transaction mode < 1.21).
Each write is atomic: one statement in autocommit mode (no BEGIN/COMMIT round
trips), or one transaction when it needs several. SQL and row mapping are shared with SQLite
(`pausepoint.checkpoint._sql`); the two classes differ only in how they get a cursor.
Leases are timed by the database's clock (``clock_timestamp()``), so workers on
machines whose clocks differ agree on when one expires; ``lease_clock`` is not used.

Example:
    >>> with PostgresSaver.from_conn_string("postgresql://localhost/app") as saver:
    ...     saver.setup()
    ...     graph = builder.compile(checkpointer=saver)
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from pausepoint.checkpoint import _pg_cursor as _pg
from pausepoint.checkpoint import (
    _sql,
    _sql_heads,
    _sql_leases,
    _sql_list,
    _sql_prune,
    _sql_reseal,
)
from pausepoint.checkpoint._async_only import AsyncOnlySaver
from pausepoint.checkpoint._prune import Request
from pausepoint.checkpoint._sql_prune import ThreadSize
from pausepoint.checkpoint._sql_reseal import RekeyReport
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
)
from pausepoint.checkpoint.heads import Head
from pausepoint.checkpoint.questions import PendingPage, PendingQuery
from pausepoint.config import RunnableConfig
from pausepoint.errors import CheckpointDecodeError
from pausepoint.serde import SerializerProtocol

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

    from pausepoint.checkpoint._sealing import Sealer

__all__ = ["AsyncPostgresSaver", "PostgresSaver"]

T = TypeVar("T")
_D = _sql.POSTGRES
# Concurrent setup() calls queue on this advisory lock instead of racing to migrate.
_SETUP_LOCK = _sql.Statement("SELECT pg_advisory_xact_lock(%s)", (0x70617573,), fetch=True)


def _guard(
    config: CheckpointRef | RunnableConfig,
    lease: str | None,
    if_head: bool = False,
    release: bool = False,
) -> _sql_leases.Guard | None:
    return _sql_leases.guard_of(config, lease, if_head, None, release)


def _pages(
    codec: _sql.SqlCodec,
    config: RunnableConfig | None,
    filter: Mapping[str, Any] | None,
    before: RunnableConfig | None,
    limit: int | None,
) -> Iterator[_sql.Flow[list[CheckpointTuple]]]:
    return _sql_list.pages(_D, codec, config, filter=filter, before=before, limit=limit)


def _commit_flow(codec: _sql.SqlCodec, step: StepCommit[At]) -> _sql.Flow[At]:
    guard = _guard(step.config, step.lease, step.if_head, step.release)
    return _sql.commit_flow(_D, codec, step, guard)


def _in_transaction(step: StepCommit[At]) -> bool:
    """Whether a commit takes more than one statement (else it needs no BEGIN/COMMIT)."""
    return not _sql.one_statement_after_writes(step.writes)


class PostgresSaver(BaseCheckpointSaver):
    """A saver storing checkpoints in PostgreSQL, for sync code.

    Args:
        conn: A connection opened with ``autocommit=True``, or a
            ``psycopg_pool.ConnectionPool`` whose connections are.
        serde: The serializer of checkpoints and writes; a
            [`Serializer`][pausepoint.serde.Serializer] allowing built-in types by default.
        encryption: Seal every stored value, write and metadata (but the fields the
            engine queries) to its row, e.g. a [`pausepoint.crypto.KeyRing`][];
            docs/security.md.

    Call [`setup`][] once (it is idempotent) before first use.
    """

    batches = True  # each commit() is one statement when its writes fit one
    supports_leases = True  # fenced writes fold the lease check into their statement

    @property
    def lease_scope(self) -> str:
        """The database its connection (or pool) reaches."""
        scope: str | None = self.__dict__.get("_lease_scope")
        if scope is None:
            scope = self.__dict__["_lease_scope"] = _pg.scope(self.conn)
        return scope

    def __init__(
        self,
        conn: psycopg.Connection[Any] | psycopg_pool.ConnectionPool[Any],
        *,
        serde: SerializerProtocol | None = None,
        encryption: Sealer | None = None,
    ) -> None:
        self.conn = conn
        self._single = isinstance(conn, _pg.load_psycopg().Connection)
        if self._single:
            _pg.check_autocommit(cast("psycopg.Connection[Any]", conn))
        self._lock = threading.Lock()
        self._cursor: tuple[Any, Any, psycopg.Cursor[Any]] | None = None
        self._codec = _sql.SqlCodec(serde, encryption)
        self.serde = self._codec.serde

    @classmethod
    @contextlib.contextmanager
    def from_conn_string(
        cls,
        url: str,
        *,
        serde: SerializerProtocol | None = None,
        prepare_threshold: int | None = 0,
        encryption: Sealer | None = None,
    ) -> Generator[Self]:
        """Connect to ``url`` (autocommit); close on exit.

        Args:
            url: A libpq connection string.
            serde: The serializer (pausepoint's by default).
            prepare_threshold: psycopg's: prepare a statement after this many runs
                (0: on the first); None never prepares (for a pooler such as PgBouncer
                in transaction mode before 1.21).
            encryption: See [`PostgresSaver`][].
        """
        psycopg = _pg.load_psycopg()
        with psycopg.Connection.connect(
            url, autocommit=True, prepare_threshold=prepare_threshold
        ) as conn:
            yield cls(conn, serde=serde, encryption=encryption)

    def setup(self) -> None:
        """Create or migrate the schema (idempotent, safe to run concurrently)."""
        self._run(_sql.setup_flow(_D, lock=_SETUP_LOCK), write=True)

    @contextlib.contextmanager
    def _connection(self) -> Generator[psycopg.Connection[Any]]:
        if self._single:
            with self._lock:
                yield cast("psycopg.Connection[Any]", self.conn)
            return
        pool = cast("psycopg_pool.ConnectionPool[Any]", self.conn)
        with pool.connection() as conn:
            _pg.check_autocommit(conn)
            yield conn

    def _run(self, flow: _sql.Flow[T], *, write: bool = False) -> T:
        if not self._single:
            with self._connection() as conn, conn.cursor() as cur:
                return _pg.drive(conn, cur, flow, write)
        # One connection: its cursor is made once and kept (under the lock), not made
        # and closed per call (~20 Python calls each: issue 35, benchmarks/README.md).
        # Made again if the saver's connection or its cursor factory was replaced.
        with self._lock:
            conn = cast("psycopg.Connection[Any]", self.conn)
            kept = self._cursor
            if kept is None or kept[0] is not conn or kept[1] is not conn.cursor_factory:
                kept = self._cursor = (conn, conn.cursor_factory, conn.cursor())
            return _pg.drive(conn, kept[2], flow, write)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """See [`pausepoint.checkpoint.base`][]."""
        return self._run(_sql.get_tuple_flow(_D, self._codec, config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """See [`pausepoint.checkpoint.base`][]."""
        for page in _pages(self._codec, config, filter, before, limit):
            yield from self._run(page)  # a page read, then yielded without the connection

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
        flow = _sql.put_flow(
            _D, self._codec, config, checkpoint, metadata, _guard(config, lease, release=release)
        )
        return self._run(flow)  # one statement: atomic without BEGIN/COMMIT round trips

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
            _D,
            self._codec,
            config,
            writes,
            task_id=task_id,
            task_path=task_path,
            guard=_guard(config, lease, if_head, release),
        )
        self._run(flow, write=not _sql.one_statement(writes))

    def commit(self, step: StepCommit[At]) -> At:
        """See [`pausepoint.checkpoint.base`][]: one statement when the writes fit one."""
        return self._run(_commit_flow(self._codec, step), write=_in_transaction(step))

    def _pending_page(self, query: PendingQuery) -> PendingPage:
        return self._run(_sql.list_pending_flow(_D, self._codec, query))

    async def _apending_page(self, query: PendingQuery) -> PendingPage:
        return await asyncio.to_thread(self._pending_page, query)

    def thread_ids(self) -> list[str]:
        """Every thread's id, newest first, read without decoding any checkpoint.

        One unreadable checkpoint does not hide the others' threads (``pausepoint
        threads list`` reads each thread on its own).
        """
        return self._run(_sql_heads.thread_ids_flow(_D))

    def thread_heads(self, after: str = "", limit: int = 1000) -> list[Head]:
        """Each thread's newest root checkpoint, peeked (`pausepoint.checkpoint.heads`).

        Up to ``limit`` threads, in thread id order, from the first id after ``after``:
        pass the last one's id to read on. An unreadable row is a `Head` with its
        ``error``. Reads only; what ``pausepoint check`` batches through.
        """
        return self._run(_sql_heads.thread_heads_flow(_D, self._codec, after, limit))

    def thread_tuples(
        self, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], CheckpointTuple | CheckpointDecodeError]:
        """Root checkpoints by ``(thread id, checkpoint id)``, whole, a few statements for all.

        As ``get_tuple`` reads each; one that cannot be decoded maps to its error, one
        that is gone is left out. Reads only (``pausepoint check``'s second pass).
        """
        return self._run(_sql_heads.thread_tuples_flow(_D, self._codec, keys))

    def delete_thread(self, thread_id: str) -> None:
        """See [`pausepoint.checkpoint.base`][]."""
        self._run(_sql.delete_thread_flow(_D, thread_id), write=True)

    def _prune_request(self, request: Request) -> object:
        flow, write = _sql_prune.request_flow(_D, self._codec, request, None)
        return self._run(flow, write=write)

    async def _aprune_request(self, request: Request) -> object:
        return await asyncio.to_thread(self._prune_request, request)

    def thread_size(self, thread_id: str) -> ThreadSize:
        """What a thread's rows cost (``pausepoint threads show``); nothing decoded."""
        return self._run(_sql_prune.thread_size_flow(_D, thread_id))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """See ``BaseCheckpointSaver.copy_thread``: one transaction."""
        flow = _sql_prune.copy_thread_flow(_D, source_thread_id, target_thread_id, self._codec)
        self._run(flow, write=True)

    def rekey(self, *, batch_size: int = 500) -> RekeyReport:
        """See [`SqliteSaver.rekey`][pausepoint.checkpoint.sqlite.SqliteSaver.rekey]."""
        return _sql_reseal.rekey(self._run, self._codec, _D, batch_size)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async [`copy_thread`][] (runs in a worker thread)."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    def acquire_lease(
        self,
        thread_id: str,
        owner: str,
        ttl: float,
        *,
        nudge: bool = False,
        read: CheckpointRef | RunnableConfig | None = None,
    ) -> LeaseClaim:
        """See [`BaseCheckpointSaver.acquire_lease`][]: one statement, with ``read`` too."""
        return self._run(
            _sql_leases.claim_flow(_D, self._codec, thread_id, owner, ttl, nudge, None, read)
        )

    def renew_lease(self, thread_id: str, owner: str, ttl: float | None = None) -> bool:
        """See [`BaseCheckpointSaver.renew_lease`][]: one statement."""
        return self._run(_sql_leases.renew_flow(_D, thread_id, owner, ttl, None))

    def release_lease(self, thread_id: str, owner: str) -> bool:
        """See [`BaseCheckpointSaver.release_lease`][]: one statement."""
        return self._run(_sql_leases.release_flow(_D, thread_id, owner))

    def get_lease(self, thread_id: str) -> Lease | None:
        """See [`BaseCheckpointSaver.get_lease`][]."""
        return self._run(_sql_leases.get_lease_flow(_D, thread_id, None))


class AsyncPostgresSaver(AsyncOnlySaver):
    """A saver storing checkpoints in PostgreSQL, for async code (``a``-methods only).

    Args:
        conn: An ``AsyncConnection`` opened with ``autocommit=True``, or a
            ``psycopg_pool.AsyncConnectionPool`` whose connections are.
        serde: See [`PostgresSaver`][].
        encryption: See [`PostgresSaver`][].

    Call [`setup`][] once (it is idempotent) before first use.
    """

    batches = True  # each acommit() is one statement when its writes fit one
    supports_leases = True
    sync_twin = "PostgresSaver"

    @property
    def lease_scope(self) -> str:
        """The database its connection (or pool) reaches."""
        scope: str | None = self.__dict__.get("_lease_scope")
        if scope is None:
            scope = self.__dict__["_lease_scope"] = _pg.scope(self.conn)
        return scope

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any] | psycopg_pool.AsyncConnectionPool[Any],
        *,
        serde: SerializerProtocol | None = None,
        encryption: Sealer | None = None,
    ) -> None:
        self.conn = conn
        self._single = isinstance(conn, _pg.load_psycopg().AsyncConnection)
        if self._single:
            _pg.check_autocommit(cast("psycopg.AsyncConnection[Any]", conn))
        self._lock = asyncio.Lock()
        self._cursor: tuple[Any, Any, psycopg.AsyncCursor[Any]] | None = None
        self._codec = _sql.SqlCodec(serde, encryption)
        self.serde = self._codec.serde

    @classmethod
    @contextlib.asynccontextmanager
    async def from_conn_string(
        cls,
        url: str,
        *,
        serde: SerializerProtocol | None = None,
        prepare_threshold: int | None = 0,
        encryption: Sealer | None = None,
    ) -> AsyncGenerator[Self]:
        """Connect to ``url`` (autocommit); close on exit.

        See [`PostgresSaver.from_conn_string`][].
        """
        psycopg = _pg.load_psycopg()
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, prepare_threshold=prepare_threshold
        )
        async with conn:
            yield cls(conn, serde=serde, encryption=encryption)

    async def setup(self) -> None:
        """Create or migrate the schema (idempotent, safe to run concurrently)."""
        await self._run(_sql.setup_flow(_D, lock=_SETUP_LOCK), write=True)

    @contextlib.asynccontextmanager
    async def _pooled(self) -> AsyncGenerator[psycopg.AsyncConnection[Any]]:
        """A connection of the pool, for one call (one connection: see `_run`)."""
        pool = cast("psycopg_pool.AsyncConnectionPool[Any]", self.conn)
        task = asyncio.current_task()
        asked = 0 if task is None else task.cancelling()
        async with pool.connection() as conn:
            if task is not None and task.cancelling() > asked:
                # Cancelled as the pool handed the connection over: psycopg_pool waits
                # with asyncio.wait_for, which on Python 3.11 then returns the
                # connection and drops the cancel. Raised here, the cancel is not lost.
                raise asyncio.CancelledError
            _pg.check_autocommit(conn)
            yield conn

    async def _run(self, flow: _sql.Flow[T], *, write: bool = False) -> T:
        if not self._single:
            async with self._pooled() as conn:
                tx = conn.transaction() if write else contextlib.nullcontext()
                async with tx, conn.cursor() as cur:
                    return await _pg.adrive(cur, flow)
        # One connection: its cursor is kept, as PostgresSaver's is (made and closed
        # per call it cost ~25 Python calls a statement: issue 35).
        async with self._lock:
            conn = cast("psycopg.AsyncConnection[Any]", self.conn)
            kept = self._cursor
            if kept is None or kept[0] is not conn or kept[1] is not conn.cursor_factory:
                kept = self._cursor = (conn, conn.cursor_factory, conn.cursor())
            if not write:
                return await _pg.adrive(kept[2], flow)
            async with conn.transaction():
                return await _pg.adrive(kept[2], flow)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async ``get_tuple``; see [`pausepoint.checkpoint.base`][]."""
        return await self._run(_sql.get_tuple_flow(_D, self._codec, config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async ``list``; see [`pausepoint.checkpoint.base`][]."""
        for page in _pages(self._codec, config, filter, before, limit):
            for item in await self._run(page):
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
        """Async ``put``; see [`pausepoint.checkpoint.base`][]."""
        flow = _sql.put_flow(
            _D, self._codec, config, checkpoint, metadata, _guard(config, lease, release=release)
        )
        return await self._run(flow)  # one statement: atomic without BEGIN/COMMIT

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
        """Async ``put_writes``; see [`pausepoint.checkpoint.base`][]."""
        flow = _sql.put_writes_flow(
            _D,
            self._codec,
            config,
            writes,
            task_id=task_id,
            task_path=task_path,
            guard=_guard(config, lease, if_head, release),
        )
        await self._run(flow, write=not _sql.one_statement(writes))

    async def acommit(self, step: StepCommit[At]) -> At:
        """Async ``commit``; see [`pausepoint.checkpoint.base`][]."""
        return await self._run(_commit_flow(self._codec, step), write=_in_transaction(step))

    async def _apending_page(self, query: PendingQuery) -> PendingPage:
        return await self._run(_sql.list_pending_flow(_D, self._codec, query))

    async def adelete_thread(self, thread_id: str) -> None:
        """Async ``delete_thread``; see [`pausepoint.checkpoint.base`][]."""
        await self._run(_sql.delete_thread_flow(_D, thread_id), write=True)

    async def _aprune_request(self, request: Request) -> object:
        flow, write = _sql_prune.request_flow(_D, self._codec, request, None)
        return await self._run(flow, write=write)

    async def athread_size(self, thread_id: str) -> ThreadSize:
        """What a thread's rows cost; nothing decoded."""
        return await self._run(_sql_prune.thread_size_flow(_D, thread_id))

    async def arekey(self, *, batch_size: int = 500) -> RekeyReport:
        """Async `PostgresSaver.rekey`: the same batches (`_sql_reseal.rekey_steps`), pooled."""
        return await _sql_reseal.arekey(self._run, self._codec, _D, batch_size)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async ``copy_thread``: one transaction."""
        flow = _sql_prune.copy_thread_flow(_D, source_thread_id, target_thread_id, self._codec)
        await self._run(flow, write=True)

    async def aacquire_lease(
        self,
        thread_id: str,
        owner: str,
        ttl: float,
        *,
        nudge: bool = False,
        read: CheckpointRef | RunnableConfig | None = None,
    ) -> LeaseClaim:
        """Async ``acquire_lease``; see [`BaseCheckpointSaver.acquire_lease`][]."""
        return await self._run(
            _sql_leases.claim_flow(_D, self._codec, thread_id, owner, ttl, nudge, None, read)
        )

    async def arenew_lease(self, thread_id: str, owner: str, ttl: float | None = None) -> bool:
        """Async ``renew_lease``; see [`BaseCheckpointSaver.renew_lease`][]."""
        return await self._run(_sql_leases.renew_flow(_D, thread_id, owner, ttl, None))

    async def arelease_lease(self, thread_id: str, owner: str) -> bool:
        """Async ``release_lease``; see [`BaseCheckpointSaver.release_lease`][]."""
        return await self._run(_sql_leases.release_flow(_D, thread_id, owner))

    async def aget_lease(self, thread_id: str) -> Lease | None:
        """Async ``get_lease``; see [`BaseCheckpointSaver.get_lease`][]."""
        return await self._run(_sql_leases.get_lease_flow(_D, thread_id, None))
