"""The server's tables in SQL, shared by SQLite and PostgreSQL: statements as flows.

An operation is a *flow*: a generator that yields ``(sql, params)`` statements (``?``
placeholders) and is sent back each statement's rows; its return value is the
result. `pausepoint.server.store_sqlite` and `pausepoint.server.store_postgres` drive a
flow in one transaction of their own, so the decisions (which run to claim, a
thread's status) are written once, here.

Times are seconds since the epoch (``REAL``), taken from the serving process's clock;
JSON columns hold text. At most one run of a thread is ``running``: the claim picks
only the oldest pending run of a thread none of whose runs is running, and a partial
unique index on ``(thread_id) WHERE status = 'running'`` makes a second one fail.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any

__all__ = [
    "DuplicateError",
    "Flow",
    "Row",
    "Statement",
    "Then",
    "adrive",
    "ddl",
    "drive",
    "dump",
    "load",
]

Row = tuple[Any, ...]
Statement = tuple[str, Sequence[Any]]
Flow = Generator[Statement, list[Row], Any]
Then = Callable[[Any], Awaitable[None]]
"""Work done with a PostgreSQL flow's connection in its transaction, after the flow."""


def ddl(*, postgres: bool) -> list[str]:
    """The tables and indexes, idempotent (``IF NOT EXISTS``)."""
    real = "DOUBLE PRECISION" if postgres else "REAL"
    seq = "BIGSERIAL PRIMARY KEY" if postgres else "INTEGER PRIMARY KEY AUTOINCREMENT"
    return [
        f"""CREATE TABLE IF NOT EXISTS pausepoint_server_assistants (
            assistant_id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, config TEXT NOT NULL,
            context TEXT NOT NULL, metadata TEXT NOT NULL, name TEXT NOT NULL,
            description TEXT, version INTEGER NOT NULL, created_at {real} NOT NULL,
            updated_at {real} NOT NULL)""",
        f"""CREATE TABLE IF NOT EXISTS pausepoint_server_threads (
            thread_id TEXT PRIMARY KEY, metadata TEXT NOT NULL, status TEXT NOT NULL,
            last_error INTEGER NOT NULL DEFAULT 0,
            created_at {real} NOT NULL, updated_at {real} NOT NULL)""",
        f"""CREATE TABLE IF NOT EXISTS pausepoint_server_runs (
            seq {seq}, run_id TEXT NOT NULL UNIQUE, thread_id TEXT NOT NULL,
            assistant_id TEXT NOT NULL, status TEXT NOT NULL, metadata TEXT NOT NULL,
            kwargs TEXT NOT NULL, multitask_strategy TEXT NOT NULL,
            created_at {real} NOT NULL, updated_at {real} NOT NULL,
            not_before {real} NOT NULL, attempt INTEGER NOT NULL DEFAULT 0,
            lease_owner TEXT, lease_until {real}, start_checkpoint TEXT, start_writes BIGINT,
            started INTEGER NOT NULL DEFAULT 0, cancel TEXT, result TEXT)""",
        """CREATE INDEX IF NOT EXISTS pausepoint_server_runs_thread
            ON pausepoint_server_runs (thread_id, seq)""",
        """CREATE INDEX IF NOT EXISTS pausepoint_server_runs_status
            ON pausepoint_server_runs (status, seq)""",
        """CREATE UNIQUE INDEX IF NOT EXISTS pausepoint_server_runs_one_running
            ON pausepoint_server_runs (thread_id) WHERE status = 'running'""",
    ]


def dump(value: object) -> str:
    """A JSON column's text."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def load(text: str | None) -> Any:
    """A JSON column's value (None for NULL)."""
    return None if text is None else json.loads(text)


def drive(flow: Flow, execute: Any) -> Any:
    """Run ``flow`` with a blocking ``execute(statement) -> rows``."""
    try:
        stmt = next(flow)
        while True:
            stmt = flow.send(execute(stmt))
    except StopIteration as stop:
        return stop.value
    finally:
        flow.close()


async def adrive(flow: Flow, execute: Any) -> Any:
    """Run ``flow`` with an awaitable ``execute(statement) -> rows``."""
    try:
        stmt = next(flow)
        while True:
            stmt = flow.send(await execute(stmt))
    except StopIteration as stop:
        return stop.value
    finally:
        flow.close()


class DuplicateError(Exception):
    """A row broke a unique constraint (the database's integrity error, translated)."""
