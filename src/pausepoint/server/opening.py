"""Opening the database a server runs on: the saver and the server's tables.

A SQLite file gets an ``AsyncSqliteSaver`` and a connection of the store's own
(`SqliteDatabase`); a ``postgresql://`` URL gets a connection pool shared by an
``AsyncPostgresSaver`` and the store (`PostgresDatabase`). Served graphs are compiled
again with the saver by `pausepoint.graph.rebind.compiled_with`.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from pausepoint.server.store_records import Database

if TYPE_CHECKING:
    from pausepoint.checkpoint._sealing import Sealer
    from pausepoint.checkpoint.base import BaseCheckpointSaver

__all__ = ["Closer", "close_all", "is_postgres_url", "open_database"]

Closer = Callable[[], Awaitable[object]]
"""What closes one thing opened (run in reverse order by `close_all`)."""


async def open_database(
    db_url: str, workers: int, closers: list[Closer]
) -> tuple[BaseCheckpointSaver, Database]:
    """The saver and the store's database for ``db_url``.

    What closes them is appended to ``closers``.
    """
    if is_postgres_url(db_url):
        return await _open_postgres(db_url, workers, closers)
    return await _open_sqlite(db_url, closers)


def is_postgres_url(db_url: str) -> bool:
    """Whether ``db_url`` names a PostgreSQL server rather than a SQLite file."""
    return db_url.startswith(("postgresql://", "postgres://"))


def env_keys() -> Sealer | None:
    """The keys of ``$PAUSEPOINT_KEYS`` (docs/security.md), None when it is unset.

    They seal the checkpoints and the server's own tables (`pausepoint.server.sealing`).
    ``PAUSEPOINT_ALLOW_PLAINTEXT=1`` reads rows stored in clear (migrating a database).
    """
    if not os.environ.get("PAUSEPOINT_KEYS", "").strip():
        return None
    from pausepoint.crypto import KeyRing  # the crypto extra, needed only then

    allow = os.environ.get("PAUSEPOINT_ALLOW_PLAINTEXT", "").strip() == "1"
    return KeyRing.from_env(allow_plaintext=allow)


async def _open_sqlite(path: str, closers: list[Closer]) -> tuple[BaseCheckpointSaver, Database]:
    from pausepoint.checkpoint.sqlite import AsyncSqliteSaver
    from pausepoint.server.store_sqlite import SqliteDatabase

    keys = env_keys()
    opened = AsyncSqliteSaver.from_conn_string(path, encryption=keys)
    saver = await opened.__aenter__()
    closers.append(lambda: opened.__aexit__(None, None, None))
    db = SqliteDatabase(path, keys)
    closers.append(db.close)
    return saver, db


async def _open_postgres(
    url: str, workers: int, closers: list[Closer]
) -> tuple[BaseCheckpointSaver, Database]:
    from psycopg_pool import AsyncConnectionPool

    from pausepoint.checkpoint.postgres import AsyncPostgresSaver
    from pausepoint.server.store_postgres import PostgresDatabase

    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url,
        min_size=1,
        max_size=max(4, workers * 2 + 2),
        kwargs={"autocommit": True, "prepare_threshold": 0},
        open=False,
    )
    await pool.open(wait=True)
    closers.append(pool.close)
    keys = env_keys()
    saver = AsyncPostgresSaver(pool, encryption=keys)
    await saver.setup()
    return cast("BaseCheckpointSaver", saver), PostgresDatabase(pool, keys)


async def close_all(closers: list[Closer]) -> None:
    """Close what was opened, newest first."""
    while closers:
        await closers.pop()()
