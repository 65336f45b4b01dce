"""The server's tables in PostgreSQL: a flow is one transaction on a pooled connection."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, LiteralString, cast

from pausepoint.server.store_sql import DuplicateError, Flow, Row, Statement, Then, adrive, ddl

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

    from pausepoint.checkpoint._sealing import Sealer

__all__ = ["PostgresDatabase"]

_SETUP_LOCK = 7_433_033_301
"""Advisory lock id taken while the tables are created (servers starting together)."""


class PostgresDatabase:
    """The server's tables on the pool the saver uses (connections in autocommit mode).

    ``sealer``: the keys sealing the user data of the tables (`pausepoint.server.sealing`).
    """

    postgres = True

    def __init__(
        self, pool: psycopg_pool.AsyncConnectionPool[Any], sealer: Sealer | None = None
    ) -> None:
        self.sealer = sealer
        self._pool = pool

    async def setup(self) -> None:
        """Create the tables (idempotent, safe when several servers start at once)."""

        def flow() -> Flow:
            yield f"SELECT pg_advisory_xact_lock({_SETUP_LOCK})", ()
            for stmt in ddl(postgres=True):
                yield stmt, ()

        await self.run(flow(), write=True)

    async def run(self, flow: Flow, *, write: bool = False, then: Then | None = None) -> Any:
        """Drive ``flow`` in a transaction of its own; then ``then`` with its connection.

        ``then`` runs in the same transaction, after the flow (another library's
        statements: the job queue's defer of a run recorded by the flow).
        """
        del write  # every flow is a transaction: reads see one snapshot of the rows
        task = asyncio.current_task()
        asked = 0 if task is None else task.cancelling()
        async with self._pool.connection() as conn:
            if task is not None and task.cancelling() > asked:
                # Cancelled as the pool handed the connection over: on Python 3.11
                # psycopg_pool's wait (asyncio.wait_for) returns it and drops the
                # cancel (see AsyncPostgresSaver._connection). Raised, it is not lost.
                raise asyncio.CancelledError
            return await self._in_transaction(conn, flow, then)

    async def _in_transaction(
        self, conn: psycopg.AsyncConnection[Any], flow: Flow, then: Then | None
    ) -> Any:
        import psycopg

        async with conn.transaction(), conn.cursor() as cur:

            async def execute(stmt: Statement) -> list[Row]:
                sql = cast("LiteralString", stmt[0].replace("?", "%s"))
                await cur.execute(sql, tuple(stmt[1]))
                return await cur.fetchall() if cur.description is not None else []

            try:
                result = await adrive(flow, execute)
            except psycopg.errors.UniqueViolation as exc:
                raise DuplicateError(str(exc)) from None
            if then is not None:
                await then(conn)
            return result

    async def close(self) -> None:
        """Nothing: the pool belongs to the service, which closes it."""
