"""psycopg plumbing of the PostgreSQL savers: connections checked, flows run on cursors.

Sync and async, each a few lines: everything else the two savers share lives in
`pausepoint.checkpoint._sql` (STYLE.md §3).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, LiteralString, TypeVar, cast

from pausepoint.checkpoint import _sql

if TYPE_CHECKING:
    import psycopg

__all__ = ["adrive", "check_autocommit", "drive", "load_psycopg", "scope"]

T = TypeVar("T")


def load_psycopg() -> Any:
    """The ``psycopg`` module, or an ImportError saying how to install it."""
    try:
        import psycopg
    except ImportError as exc:
        raise ImportError(
            "the PostgreSQL savers need psycopg 3, which is not installed; "
            "install it with: pip install 'pausepoint[postgres]'"
        ) from exc
    return psycopg


def check_autocommit(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
    if not conn.autocommit:
        raise ValueError(
            "the PostgreSQL saver needs connections with autocommit=True (it runs its own "
            "transactions); connect with psycopg.connect(url, autocommit=True), or "
            "pass kwargs={'autocommit': True} to the pool"
        )


def _sql_text(stmt: _sql.Statement) -> LiteralString:
    # Statement text comes only from _sql's constants, never from user input.
    return cast(LiteralString, stmt.sql)


def drive(
    conn: psycopg.Connection[Any], cur: psycopg.Cursor[Any], flow: _sql.Flow[T], write: bool
) -> T:
    """Run ``flow`` with ``cur``, in a transaction when it ``write`` s several statements."""

    def execute(stmt: _sql.Statement) -> _sql.Rows:
        sql: LiteralString = stmt.sql  # type: ignore[assignment]  # from _sql's constants only
        if stmt.many:
            cur.executemany(sql, stmt.params)
            return []
        # Rows in binary: a blob comes as its bytes, not as hex text to decode (a 50 MB
        # value read ~3x faster); same Python types.
        cur.execute(sql, stmt.params, binary=stmt.fetch)
        return cur.fetchall() if stmt.fetch else []

    if not write:
        return _sql.drive(flow, execute)
    with conn.transaction():
        return _sql.drive(flow, execute)


async def adrive(cur: psycopg.AsyncCursor[Any], flow: _sql.Flow[T]) -> T:
    """Run ``flow`` with the async cursor ``cur`` (rows in binary, as `drive`)."""

    async def execute(stmt: _sql.Statement) -> _sql.Rows:
        if stmt.many:
            await cur.executemany(_sql_text(stmt), stmt.params)
            return []
        await cur.execute(_sql_text(stmt), stmt.params, binary=stmt.fetch)
        return await cur.fetchall() if stmt.fetch else []

    return await _sql.adrive(flow, execute)


def scope(conn: Any) -> str:
    """The database a connection or pool reaches (no password), as a lease scope.

    Made once per saver: ``conn.info.dsn`` asks libpq for the whole connection
    string (about a round trip to a local server), and a run reads the scope two or three times.
    """
    info = getattr(conn, "info", None)
    dsn = getattr(info, "dsn", None) if info is not None else getattr(conn, "conninfo", None)
    return f"postgresql:{dsn}" if dsn else f"postgresql@{id(conn):x}"
