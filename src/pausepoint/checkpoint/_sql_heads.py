"""The SQL savers' ``thread_heads`` and ``thread_tuples``: root checkpoints in batches.

One statement per batch, in thread id order (a keyset: ``thread_id > after``): the
newest root checkpoint of each thread, found through the primary key, with its
metadata. Its checkpoint is peeked (`pausepoint.checkpoint.heads.peek`), not decoded;
a row that cannot be read is a `Head` with its ``error``, never the end of the batch.
``thread_tuples`` then reads, in one statement per chunk, the checkpoints the check
needs whole (decoded, with their pending writes, as ``get_tuple`` gives them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from pausepoint.checkpoint._dialect import Dialect, Flow, Row, Statement
from pausepoint.checkpoint._sealing import checkpoint_binding, metadata_binding
from pausepoint.checkpoint._sql import SELECT_CHECKPOINTS, WRITE_ARRAYS, tuple_of
from pausepoint.checkpoint.heads import Head, peek, unreadable_head, work_left
from pausepoint.errors import CheckpointDecodeError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pausepoint.checkpoint._sql import SqlCodec
    from pausepoint.checkpoint.base import CheckpointTuple

__all__ = ["thread_heads_flow", "thread_ids_flow", "thread_tuples_flow"]

_HEADS = """SELECT c.thread_id, c.checkpoint_id, c.type, c.checkpoint, c.{json_select}
    FROM (SELECT thread_id, max(checkpoint_id) AS head FROM pausepoint_checkpoints
        WHERE checkpoint_ns = '' AND thread_id > ? GROUP BY thread_id
        ORDER BY thread_id LIMIT ?) h
    JOIN pausepoint_checkpoints c ON c.thread_id = h.thread_id
        AND c.checkpoint_ns = '' AND c.checkpoint_id = h.head
    ORDER BY c.thread_id"""


def thread_heads_flow(
    dialect: Dialect, codec: SqlCodec, after: str, limit: int
) -> Flow[list[Head]]:
    """Up to ``limit`` threads' heads, the first thread id after ``after`` first."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit!r}")
    rows = yield Statement(dialect.sql(_HEADS), (after, limit), fetch=True)
    return [_head(codec, row) for row in rows]


_CHUNK = 400
"""Checkpoints per statement (two parameters each: SQLite before 3.32 allows 999)."""


def thread_tuples_flow(
    dialect: Dialect, codec: SqlCodec, keys: Sequence[tuple[str, str]]
) -> Flow[dict[tuple[str, str], CheckpointTuple | CheckpointDecodeError]]:
    """The root checkpoints ``(thread id, checkpoint id)``, whole; unreadable: the error.

    A key whose checkpoint is gone is left out.
    """
    found: dict[tuple[str, str], CheckpointTuple | CheckpointDecodeError] = {}
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        pairs = ", ".join(["(?, '', ?)"] * len(chunk))
        keyed = f"(thread_id, checkpoint_ns, checkpoint_id) IN (VALUES {pairs})"
        sql = f"{SELECT_CHECKPOINTS} WHERE {keyed}"
        if dialect.name == "postgres":  # the writes in the same row: one round trip
            sql = f"SELECT c.*, w.* FROM ({sql}) c LEFT JOIN LATERAL ({WRITE_ARRAYS}) w ON true"
        rows = yield Statement(dialect.sql(sql), [v for k in chunk for v in k], fetch=True)
        for row in rows:
            key = (str(row[0]), str(row[2]))
            try:
                read = yield from tuple_of(dialect, codec, row)
            except CheckpointDecodeError as exc:
                found[key] = exc
                continue
            if read is not None:  # None: deleted since its row was read
                found[key] = read
    return found


def _head(codec: SqlCodec, row: Row) -> Head:
    thread, cid, type_, blob, metadata = str(row[0]), str(row[1]), row[2], row[3], row[4]
    try:
        data = codec.opened(blob, checkpoint_binding(thread, "", cid), "the checkpoint")
        tree = peek(type_, data)
        if tree is None:  # another serde's format: decoded whole
            tree = cast("Mapping[str, object]", codec.decode(type_, data))
        stamp = tree.get("graph")
        return Head(
            thread_id=thread,
            checkpoint_id=cid,
            metadata=codec.load_metadata(metadata, metadata_binding(thread, "", cid)),
            stamp=cast("Mapping[str, object]", stamp) if isinstance(stamp, dict) else None,
            work_left=work_left(tree),
        )
    except (CheckpointDecodeError, ValueError, TypeError, AttributeError) as exc:
        where = f"checkpoint {cid!r} of thread {thread!r}"
        if isinstance(exc, CheckpointDecodeError) and where not in str(exc):
            exc = exc.with_message(f"{where}: {exc}")
        return unreadable_head(thread, cid, exc)


def thread_ids_flow(dialect: Dialect) -> Flow[list[str]]:
    """Every thread's id, the thread with the newest checkpoint first; nothing decoded."""
    rows = yield Statement(
        dialect.sql(
            "SELECT thread_id, max(checkpoint_id) AS head FROM pausepoint_checkpoints"
            " WHERE checkpoint_ns = '' GROUP BY thread_id ORDER BY head DESC"
        ),
        fetch=True,
    )
    return [str(row[0]) for row in rows]
