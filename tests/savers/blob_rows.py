"""What a thread's value rows (``pausepoint_blobs``) should be, read without the saver.

Used by the retention tests: after a prune, a copy or a delete, every value row of a
thread must be needed by one of its checkpoints or of its writes stored as references
(referenced, or on the ``base`` chain of one referenced), and every one needed must
be there. Read with plain SQL, ``zlib``
and ``json`` (the stored checkpoint is pausepoint's JSON, deflated when small), not
with the saver's code.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from pausepoint.checkpoint._packing import DICTIONARY
from pausepoint.checkpoint.sqlite import SqliteSaver

Row = tuple[str, str, str]
"""A value row: ``(checkpoint_ns, channel, version)``."""


def execute(saver: Any, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """Run ``sql`` (``?`` placeholders) on the saver's connection; its rows."""
    if isinstance(saver, SqliteSaver):
        with saver._lock:  # pyright: ignore[reportPrivateUsage]
            rows = saver.conn.execute(sql, params).fetchall()
            saver.conn.commit()
            return rows
    cur = saver.conn.execute(sql.replace("?", "%s"), params)
    return cur.fetchall() if cur.description else []


def stored(saver: Any, thread: str) -> dict[Row, str | None]:
    """The thread's value rows and each one's base."""
    rows = execute(
        saver,
        "SELECT checkpoint_ns, channel, version, base FROM pausepoint_blobs WHERE thread_id = ?",
        (thread,),
    )
    return {(str(r[0]), str(r[1]), str(r[2])): r[3] for r in rows}


def _inflated(data: bytes) -> bytes:
    if data[:4] == b"\x00ppZ":  # deflated (schema version 9, docs/format.md)
        return zlib.decompressobj(-15, zdict=DICTIONARY).decompress(data[4:])
    return data


def needed(saver: Any, thread: str) -> set[Row]:
    """The value rows the thread's checkpoints and writes need (missing ones included)."""
    bases = stored(saver, thread)
    out: set[Row] = set()

    def chain(ns: str, channel: str, version: str) -> None:
        at: str | None = version
        while at is not None:
            out.add((ns, channel, at))
            at = bases.get((ns, channel, at))

    refs = execute(
        saver,
        "SELECT checkpoint_ns, channel, value FROM pausepoint_writes"
        " WHERE thread_id = ? AND type = 'ppref/1'",
        (thread,),
    )
    for ns, channel, cell in refs:  # "<version> <from> <to> <wrap> <digest>"
        chain(str(ns), str(channel), _inflated(bytes(cell)).decode().rsplit(" ", 4)[0])
    rows = execute(
        saver,
        "SELECT checkpoint_ns, checkpoint FROM pausepoint_checkpoints WHERE thread_id = ?",
        (thread,),
    )
    for ns, blob in rows:
        checkpoint = json.loads(_inflated(bytes(blob)))
        for channel in checkpoint.get("refs", []):
            chain(str(ns), channel, checkpoint["channel_values"][channel])
    return out


def orphans(saver: Any, thread: str) -> set[Row]:
    """Value rows of the thread that no checkpoint needs."""
    return stored(saver, thread).keys() - needed(saver, thread)


def dangling(saver: Any, thread: str) -> set[Row]:
    """Value rows the thread's checkpoints need that are not stored."""
    return needed(saver, thread) - stored(saver, thread).keys()
