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


def key_ids(path: Path) -> dict[str, int]:
    """How many sealed cells each key id sealed (``"clear"``: cells not sealed)."""
    import base64
    import json

    from pausepoint.crypto import KeyRing

    reader = KeyRing({"any": bytes(32)})
    counts: dict[str, int] = {}
    with connect(path) as conn:
        cells: list[bytes] = [
            bytes(r[0]) for r in conn.execute("SELECT checkpoint FROM pausepoint_checkpoints")
        ]
        cells += [bytes(r[0]) for r in conn.execute("SELECT value FROM pausepoint_writes")]
        cells += [bytes(r[0]) for r in conn.execute("SELECT value FROM pausepoint_blobs")]
        for (text,) in conn.execute("SELECT metadata FROM pausepoint_checkpoints"):
            token = json.loads(text).get("__pausepoint_sealed__")
            cells.append(base64.b64decode(token) if token else b"")
    for cell in cells:
        name = reader.key_id_of(cell[4:]) if cell[:4] == b"\x00pp\xe5" else "clear"
        counts[name] = counts.get(name, 0) + 1
    return counts
