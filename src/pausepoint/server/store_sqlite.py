"""The server's tables in a SQLite file: its own connection, flows run in a worker thread."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from typing import TYPE_CHECKING, Any

from pausepoint.server.store_sql import DuplicateError, Flow, Row, Statement, Then, ddl, drive

if TYPE_CHECKING:
    from pausepoint.checkpoint._sealing import Sealer

__all__ = ["SqliteDatabase"]


class SqliteDatabase:
    """One connection to the checkpoints' SQLite file, guarded by a lock.

    Each flow is one transaction; a write takes SQLite's write lock at its ``BEGIN
    IMMEDIATE``, so claims and run creations are serialised across processes too.
    ``sealer``: the keys sealing the user data of the tables (`pausepoint.server.sealing`).
    """

    postgres = False

    def __init__(self, path: str, sealer: Sealer | None = None) -> None:
        self.sealer = sealer
        self._conn = sqlite3.connect(
            path, check_same_thread=False, isolation_level=None, timeout=60.0
        )
        self._lock = threading.Lock()

    async def setup(self) -> None:
        """Create the tables (idempotent)."""

        def flow() -> Flow:
            for stmt in ddl(postgres=False):
                yield stmt, ()

        await self.run(flow(), write=True)

    async def run(self, flow: Flow, *, write: bool = False, then: Then | None = None) -> Any:
        """Drive ``flow`` in a transaction of its own, off the event loop.

        ``then`` (PostgreSQL's: work on the flow's connection) is refused.
        """
        if then is not None:
            raise ValueError("a SQLite flow takes no 'then': it is PostgreSQL's")
        return await asyncio.to_thread(self._run, flow, write)

    def _run(self, flow: Flow, write: bool) -> Any:
        with self._lock:
            conn = self._conn

            def execute(stmt: Statement) -> list[Row]:
                return conn.execute(stmt[0], tuple(stmt[1])).fetchall()

            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                result = drive(flow, execute)
            except sqlite3.IntegrityError as exc:
                conn.execute("ROLLBACK")
                raise DuplicateError(str(exc)) from None
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

    async def close(self) -> None:
        """Close the connection."""
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        with self._lock:
            self._conn.close()
