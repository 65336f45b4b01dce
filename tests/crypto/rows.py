"""Raw rows of a SQLite database, for the tests that tamper with ciphertexts."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

SEALED_COLUMNS = {
    "pausepoint_checkpoints": ("checkpoint", "metadata"),
    "pausepoint_writes": ("value",),
    "pausepoint_blobs": ("value",),
}
KEYS = {
    "pausepoint_checkpoints": ("thread_id", "checkpoint_ns", "checkpoint_id"),
    "pausepoint_writes": ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),
    "pausepoint_blobs": ("thread_id", "checkpoint_ns", "channel", "version"),
}


def connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(str(path), isolation_level=None)


def snapshot(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the three tables that hold values, sorted."""
    with connect(path) as conn:
        return {
            table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in KEYS
        }


def keys(path: Path, table: str) -> list[tuple[Any, ...]]:
    with connect(path) as conn:
        return conn.execute(f"SELECT {', '.join(KEYS[table])} FROM {table}").fetchall()


def read(path: Path, table: str, column: str, key: tuple[Any, ...]) -> Any:
    where = " AND ".join(f"{k} = ?" for k in KEYS[table])
    with connect(path) as conn:
        return conn.execute(f"SELECT {column} FROM {table} WHERE {where}", key).fetchone()[0]


def write(path: Path, table: str, column: str, key: tuple[Any, ...], value: Any) -> None:
    where = " AND ".join(f"{k} = ?" for k in KEYS[table])
    with connect(path) as conn:
        conn.execute(f"UPDATE {table} SET {column} = ? WHERE {where}", (value, *key))


def checkpoint_keys(path: Path) -> list[tuple[str, str, str]]:
    return [tuple(map(str, k)) for k in keys(path, "pausepoint_checkpoints")]  # type: ignore[misc]


def database_bytes(path: Path) -> bytes:
    """The database file and its write-ahead log, as they are on disk."""
    parts = [path, path.with_name(path.name + "-wal")]
    return b"".join(p.read_bytes() for p in parts if p.exists())
