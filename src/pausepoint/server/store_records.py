"""The server's assistants and threads in its tables (`RecordStore`; runs: `Store`).

Every method is one transaction: a flow of `pausepoint.server.store_sql`, driven by the
SQLite or PostgreSQL database object (`Database`). A change to a thread first locks its
row (PostgreSQL ``FOR UPDATE``; SQLite's write lock covers the file).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pausepoint.server.errors import ConflictError, NotFoundError
from pausepoint.server.records import Assistant, JsonObject, ThreadRecord, ThreadStatus
from pausepoint.server.sealing import (
    ASSISTANTS,
    THREADS,
    dump_cell,
    load_cell,
    open_text,
    seal_text,
)
from pausepoint.server.store_sql import DuplicateError, Flow, Row, Then

if TYPE_CHECKING:
    from pausepoint.checkpoint._sealing import Sealer

__all__ = ["Database", "RecordStore", "thread_metadata", "time_of"]

_ASSISTANT_COLUMNS = (
    "assistant_id, graph_id, config, context, metadata, name, description, version, "
    "created_at, updated_at"
)
_THREAD_COLUMNS = "thread_id, metadata, status, created_at, updated_at"


class Database(Protocol):
    """What the store needs of a database: run a flow in one transaction."""

    postgres: bool
    sealer: Sealer | None
    """The keys sealing the user data of the server's tables (`pausepoint.server.sealing`)."""

    async def setup(self) -> None:
        """Create the tables (idempotent)."""
        ...

    async def run(self, flow: Flow, *, write: bool = False, then: Then | None = None) -> Any:
        """Drive ``flow`` in one transaction (then ``then``, PostgreSQL only, in it)."""
        ...

    async def close(self) -> None:
        """Let go of the connection."""
        ...


def time_of(seconds: float) -> datetime.datetime:
    """An aware UTC datetime from seconds since the epoch (the tables' times)."""
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC)


def _assistant(row: Row, sealer: Sealer | None) -> Assistant:
    key = (row[0],)
    description = (
        row[6] if row[6] is None else open_text(sealer, row[6], ASSISTANTS, key, "description")
    )
    return Assistant(
        assistant_id=row[0], graph_id=row[1],
        config=load_cell(sealer, row[2], ASSISTANTS, key, "config"),
        context=load_cell(sealer, row[3], ASSISTANTS, key, "context"),
        metadata=load_cell(sealer, row[4], ASSISTANTS, key, "metadata"),
        name=row[5], description=description, version=int(row[7]),
        created_at=time_of(row[8]), updated_at=time_of(row[9]),
    )  # fmt: skip


def _thread(row: Row, sealer: Sealer | None) -> ThreadRecord:
    return ThreadRecord(
        thread_id=row[0], metadata=load_cell(sealer, row[1], THREADS, (row[0],), "metadata"),
        status=row[2], created_at=time_of(row[3]), updated_at=time_of(row[4]),
    )  # fmt: skip


def thread_metadata(sealer: Sealer | None, thread_id: str, metadata: JsonObject) -> str:
    """A thread's ``metadata`` cell as stored."""
    return dump_cell(sealer, metadata, THREADS, (thread_id,), "metadata")


class RecordStore:
    """Assistants and threads on one database (`SqliteDatabase` or `PostgresDatabase`)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.sealer = db.sealer
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
                return _assistant(rows[0], self.sealer)
            a = assistant
            key, sealer = (a.assistant_id,), self.sealer
            description = a.description
            if description is not None:
                description = seal_text(sealer, description, ASSISTANTS, key, "description")
            yield (
                f"INSERT INTO pausepoint_server_assistants ({_ASSISTANT_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    a.assistant_id, a.graph_id,
                    dump_cell(sealer, a.config, ASSISTANTS, key, "config"),
                    dump_cell(sealer, a.context, ASSISTANTS, key, "context"),
                    dump_cell(sealer, a.metadata, ASSISTANTS, key, "metadata"),
                    a.name, description, a.version,
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
            return _assistant(rows[0], self.sealer) if rows else None

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
            return [_assistant(r, self.sealer) for r in rows]

        result: list[Assistant] = await self.db.run(flow())
        return result

    # --- threads ------------------------------------------------------------------------

    def _thread_row(self, thread_id: str, *, lock: bool = False) -> Flow:
        rows = yield (
            f"SELECT {_THREAD_COLUMNS} FROM pausepoint_server_threads WHERE thread_id = ?"
            + (self._lock if lock else ""),
            (thread_id,),
        )
        return _thread(rows[0], self.sealer) if rows else None

    def _lock_thread(self, thread_id: str) -> Flow:
        """Lock the thread's row (its cells are not opened); whether it exists."""
        rows = yield (
            "SELECT 1 FROM pausepoint_server_threads WHERE thread_id = ?" + self._lock,
            (thread_id,),
        )
        return bool(rows)

    def _insert_thread(
        self, thread_id: str, metadata: JsonObject, now: float, *, if_missing: bool = False
    ) -> Flow:
        """Insert the thread's row (``if_missing``: unless one exists, then nothing)."""
        skip = " ON CONFLICT (thread_id) DO NOTHING" if if_missing else ""
        yield (
            f"INSERT INTO pausepoint_server_threads ({_THREAD_COLUMNS}) "
            f"VALUES (?, ?, ?, ?, ?){skip}",
            (thread_id, thread_metadata(self.sealer, thread_id, metadata), "idle", now, now),
        )
        return ThreadRecord(thread_id, metadata, "idle", time_of(now), time_of(now))

    async def put_thread(
        self,
        thread_id: str,
        metadata: JsonObject,
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
        self, thread_id: str, metadata: JsonObject, now: float
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
                (thread_metadata(self.sealer, thread_id, merged), now, thread_id),
            )
            return dataclasses.replace(got, metadata=merged, updated_at=time_of(now))

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
            return [_thread(r, self.sealer) for r in rows]

        result: list[ThreadRecord] = await self.db.run(flow())
        return result

    async def delete_thread(self, thread_id: str) -> list[str]:
        """Delete the thread's record and its runs; the ids of its runs in flight."""

        def flow() -> Flow:
            if not (yield from self._lock_thread(thread_id)):
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
            if (yield from self._lock_thread(thread_id)):
                yield from self._settle(thread_id, rest, now)

        await self.db.run(flow(), write=True)
