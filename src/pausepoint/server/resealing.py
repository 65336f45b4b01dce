"""``pausepoint rekey`` for the server's tables: every sealed cell under the sealing key.

The same walk as the savers' (`pausepoint.checkpoint._sql_reseal`): each table read in
key order, a batch a transaction; a row is written only if one of its cells is not
sealed with the sealing key (a cell stored in clear is sealed: how a server's
database moves to encryption), by a compare-and-swap on the text it read, so a row a
running server changed meanwhile is left as the server wrote it (counted as
``raced``: run again). Killed at any point, every row is as it was or re-sealed.
The tables of a database no server ever used are skipped.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint._sql_reseal import RekeyReport
from pausepoint.server.event_rows import END
from pausepoint.server.sealing import (
    ASSISTANTS,
    EVENTS,
    PREFIX,
    RUNS,
    THREADS,
    open_text,
    seal_text,
)

if TYPE_CHECKING:
    from pausepoint.checkpoint._sealing import Sealer
    from pausepoint.server.store_records import Database
    from pausepoint.server.store_sql import Flow, Row

__all__ = ["TABLES", "rekey", "rekey_batch", "rekey_url"]


@dataclasses.dataclass(frozen=True, slots=True)
class _Table:
    name: str
    key: tuple[str, ...]
    cells: tuple[str, ...]
    only: str = ""
    """A condition on the rows that hold sealed cells (SQL)."""


TABLES = (
    _Table(ASSISTANTS, ("assistant_id",), ("config", "context", "metadata", "description")),
    _Table(THREADS, ("thread_id",), ("metadata",)),
    _Table(RUNS, ("run_id",), ("metadata", "kwargs", "result")),
    _Table(EVENTS, ("run_id", "seq"), ("data",), f"event <> '{END}'"),
)
"""The server's tables and their sealed columns, in the order ``rekey`` goes through them."""


def _resealed(sealer: Sealer, stored: str | None, table: str, key: Row, column: str) -> str | None:
    """The cell sealed with the sealing key; None when it is NULL or already is."""
    if stored is None:
        return None
    if stored.startswith(PREFIX):
        token = base64.b64decode(stored[len(PREFIX) :], validate=True)
        if sealer.current(token):
            return None
        stored = open_text(sealer, stored, table, key, column)
    return seal_text(sealer, stored, table, key, column)


def rekey_batch(sealer: Sealer, table: _Table, after: Row | None, limit: int) -> Flow:
    """Re-seal up to ``limit`` rows of ``table`` after the key ``after`` (one transaction).

    Returns the last key read (None: the table is done) and the batch's `RekeyReport`.
    """
    keys = ", ".join(table.key)
    where: list[str] = [table.only] if table.only else []
    if after is not None:
        where.append(f"({keys}) > ({', '.join('?' * len(table.key))})")
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    rows = yield (
        f"SELECT {keys}, {', '.join(table.cells)} FROM {table.name}{clause} "
        f"ORDER BY {keys} LIMIT {int(limit)}",
        tuple(after or ()),
    )
    report = RekeyReport()
    n = len(table.key)
    for row in rows:
        key, old = tuple(row[:n]), tuple(row[n:])
        try:
            new = [
                _resealed(sealer, c, table.name, key, col)
                for c, col in zip(old, table.cells, strict=True)
            ]
        except Exception as exc:
            report.errors.append(f"{table.name} {key!r}: cannot be opened ({type(exc).__name__})")
            continue
        if all(c is None for c in new):
            report.current += 1
            continue
        sets = ", ".join(f"{c} = ?" for c in table.cells)
        match = " AND ".join(f"{k} = ?" for k in table.key)
        same = " AND ".join(f"COALESCE({c}, '') = ?" for c in table.cells)
        done = yield (
            f"UPDATE {table.name} SET {sets} WHERE {match} AND {same} RETURNING 1",
            (
                *(o if c is None else c for c, o in zip(new, old, strict=True)),
                *key,
                *(o or "" for o in old),
            ),
        )
        if done:
            report.resealed += 1
        else:
            report.raced += 1
    last = tuple(rows[-1][:n]) if len(rows) == limit else None
    return last, report


def _exists(table: str, *, postgres: bool) -> Flow:
    if postgres:
        rows = yield "SELECT to_regclass(?) IS NOT NULL", (table,)
        return bool(rows[0][0])
    rows = yield "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    return bool(rows)


async def rekey(db: Database, batch_size: int = 500) -> RekeyReport:
    """Re-seal the server's tables on ``db`` with its sealer's sealing key.

    Raises:
        ValueError: ``db`` has no sealer, or ``batch_size`` is below 1.
    """
    sealer = db.sealer
    if sealer is None:
        raise ValueError("rekey needs keys: the database's sealer is None")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size!r}")
    report = RekeyReport()
    for table in TABLES:
        if not await db.run(_exists(table.name, postgres=db.postgres)):
            continue
        after: Row | None = None
        while True:
            got: Any = await db.run(rekey_batch(sealer, table, after, batch_size), write=True)
            after, batch = got
            report.add(batch)
            if after is None:
                break
    return report


def rekey_url(db_url: str, sealer: Sealer, batch_size: int = 500) -> RekeyReport:
    """`rekey` for the server's tables in a SQLite file or a ``postgresql://`` database."""
    return asyncio.run(_rekey_url(db_url, sealer, batch_size))


async def _rekey_url(db_url: str, sealer: Sealer, batch_size: int) -> RekeyReport:
    from pausepoint.server.opening import is_postgres_url

    if not is_postgres_url(db_url):
        from pausepoint.server.store_sqlite import SqliteDatabase

        db = SqliteDatabase(db_url, sealer)
        try:
            return await rekey(db, batch_size)
        finally:
            await db.close()
    from psycopg_pool import AsyncConnectionPool

    from pausepoint.server.store_postgres import PostgresDatabase

    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        db_url, min_size=1, max_size=1, open=False,
        kwargs={"autocommit": True, "prepare_threshold": 0},
    )  # fmt: skip
    await pool.open(wait=True)
    try:
        return await rekey(PostgresDatabase(pool, sealer), batch_size)
    finally:
        await pool.close()
