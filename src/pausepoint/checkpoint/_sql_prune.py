"""Retention in SQL, shared by the SQLite and PostgreSQL savers: the prune's requests.

The prune's decisions are made once, in ``_prune``; these flows answer its requests
(`request_flow`): list threads, read one thread's rows (sizes measured by the
database, nothing decoded but the head), and apply a plan in one transaction. An
apply first makes sure no run holds the thread: SQLite's write transaction (``BEGIN
IMMEDIATE``) excludes every other writer until it commits; PostgreSQL locks the
thread's lease row (upserting an empty one), so a worker's claim waits for the
commit. Then it checks that the lease is free and the head (and its writes) is what
the plan was made from; otherwise it deletes nothing and answers ``"busy"``.

Deleting checkpoints deletes their writes and their rows in ``pausepoint_pending``
(the index of waiting questions), then runs `collect_unreferenced_flow`: it deletes the value rows
(``pausepoint_blobs``, shared by checkpoints) no surviving checkpoint needs.

Also here: a thread's stored size (``pausepoint threads show``) and ``copy_thread``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any, cast

from pausepoint.checkpoint._dialect import Dialect, Flow, Statement
from pausepoint.checkpoint._prune import (
    Applied,
    ApplyPlan,
    Key,
    ListThreads,
    ReadThread,
    Request,
    StoredRow,
    ThreadInventory,
)
from pausepoint.checkpoint._sealing import checkpoint_binding
from pausepoint.checkpoint._sql import SqlCodec, delete_thread_flow, get_tuple_flow
from pausepoint.checkpoint._sql_leases import Clock, get_lease_flow
from pausepoint.checkpoint._sql_reseal import copy_thread_sealed_flow
from pausepoint.checkpoint._sql_values import REFS_MARK, refs_of
from pausepoint.checkpoint._write_refs import REF, reference_of
from pausepoint.errors import CheckpointDecodeError

__all__ = [
    "ThreadSize",
    "collect_unreferenced_flow",
    "copy_thread_flow",
    "request_flow",
    "thread_size_flow",
]

_IDS_PER_STATEMENT = 500
"""Checkpoint ids in one ``IN (...)`` list (SQLite before 3.32 allows 999 parameters)."""


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadSize:
    """What a thread's rows cost: counts, and bytes as the database stores them.

    Attributes:
        checkpoints: Checkpoint rows, in every namespace.
        writes: Pending write rows.
        bytes: Bytes of their stored values and metadata, the large values stored
            apart (``pausepoint_blobs``) included (SQLite: the blobs' and texts'
            lengths; PostgreSQL: ``pg_column_size``, after compression).
    """

    checkpoints: int
    writes: int
    bytes: int


def _size(dialect: Dialect, *columns: str) -> str:
    measure = "pg_column_size" if dialect.name == "postgres" else "length"
    return " + ".join(f"coalesce({measure}({c}), 0)" for c in columns)


def request_flow(
    dialect: Dialect, codec: SqlCodec, request: Request, clock: Clock
) -> tuple[Flow[object], bool]:
    """The flow answering a prune request, and whether it writes."""
    match request:
        case ListThreads(after, limit):
            return _threads_flow(dialect, after, limit), False
        case ReadThread(thread):
            return _inventory_flow(dialect, codec, thread, clock), False
        case ApplyPlan():
            return _apply_flow(dialect, codec, request, clock), True


def _threads_flow(dialect: Dialect, after: str, limit: int) -> Flow[object]:
    rows = yield Statement(
        dialect.sql(
            "SELECT DISTINCT thread_id FROM pausepoint_checkpoints WHERE thread_id > ?"
            " ORDER BY thread_id LIMIT ?"
        ),
        (after, int(limit)),
        fetch=True,
    )
    return [str(r[0]) for r in rows]


def _inventory_flow(dialect: Dialect, codec: SqlCodec, thread: str, clock: Clock) -> Flow[object]:
    checkpoints = yield Statement(
        dialect.sql(
            "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, {json_select}, "
            f"{_size(dialect, 'checkpoint', 'metadata')} FROM pausepoint_checkpoints"
            " WHERE thread_id = ?"
        ),
        (thread,),
        fetch=True,
    )
    if not checkpoints:
        return None
    writes = yield Statement(
        dialect.sql(
            f"SELECT checkpoint_ns, checkpoint_id, count(*), sum({_size(dialect, 'value')})"
            " FROM pausepoint_writes WHERE thread_id = ? GROUP BY checkpoint_ns, checkpoint_id"
        ),
        (thread,),
        fetch=True,
    )
    counted = {(str(w[0]), str(w[1])): (int(w[2]), int(w[3] or 0)) for w in writes}
    rows = [_row(thread, r, counted.get((str(r[0]), str(r[1])), (0, 0))) for r in checkpoints]
    head = yield from get_tuple_flow(dialect, codec, {"configurable": {"thread_id": thread}})
    lease = yield from get_lease_flow(dialect, thread, clock)
    return ThreadInventory(thread, rows, head, lease is not None)


def _row(thread: str, row: tuple[Any, ...], writes: tuple[int, int]) -> StoredRow:
    ns, cid, parent, metadata, size = row
    try:
        source = json.loads(metadata).get("source", "")
    except (ValueError, TypeError, AttributeError) as exc:
        raise CheckpointDecodeError(
            f"checkpoint {cid!r} of thread {thread!r}: its metadata is not a JSON object "
            f"({type(exc).__name__}); the row is corrupt"
        ) from exc
    count, written = writes
    return StoredRow(str(ns), str(cid), parent, str(source), count, int(size or 0) + written)


_LOCK_LEASE = """INSERT INTO pausepoint_leases (thread_id, owner, expires_at, ttl, nudged, seq)
    VALUES (?, '', 0, 0, {false}, 0)
    ON CONFLICT (thread_id) DO UPDATE SET seq = pausepoint_leases.seq"""
_HEAD = """SELECT c.checkpoint_id, (SELECT count(*) FROM pausepoint_writes w
    WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = '' AND w.checkpoint_id = c.checkpoint_id)
    FROM pausepoint_checkpoints c WHERE c.thread_id = ? AND c.checkpoint_ns = ''
    ORDER BY c.checkpoint_id DESC LIMIT 1"""


def _apply_flow(dialect: Dialect, codec: SqlCodec, plan: ApplyPlan, clock: Clock) -> Flow[object]:
    thread = plan.thread_id
    if dialect.name == "postgres":  # a claim in another session now waits for our commit
        yield Statement(dialect.lease_sql(_LOCK_LEASE), (thread,))
    lease = yield from get_lease_flow(dialect, thread, clock)
    head = yield Statement(dialect.sql(_HEAD), (thread,), fetch=True)
    now = (str(head[0][0]), int(head[0][1])) if head else ("", 0)
    if lease is not None or now != (plan.head_id, plan.head_writes):
        return "busy"
    for ns, ids in _by_namespace(plan.drop):
        marks = ", ".join("?" * len(ids))
        for table in ("pausepoint_writes", "pausepoint_checkpoints"):
            yield Statement(
                dialect.sql(
                    f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = ?"
                    f" AND checkpoint_id IN ({marks})"
                ),
                (thread, ns, *ids),
            )
        if not ns:  # their questions' index rows (root checkpoints only)
            yield Statement(
                dialect.sql(
                    f"DELETE FROM pausepoint_pending WHERE thread_id = ?"
                    f" AND checkpoint_id IN ({marks})"
                ),
                (thread, *ids),
            )
    if plan.whole:
        yield from delete_thread_flow(dialect, thread)  # its value rows with it
    elif plan.collect:  # not in every part: it reads every checkpoint holding refs
        yield from collect_unreferenced_flow(dialect, codec, thread)
    return Applied(len(plan.drop), 0)


def _by_namespace(keys: Iterable[Key]) -> list[tuple[str, list[str]]]:
    grouped: dict[str, list[str]] = {}
    for ns, cid in keys:
        grouped.setdefault(ns, []).append(cid)
    return [
        (ns, ids[i : i + _IDS_PER_STATEMENT])
        for ns, ids in grouped.items()
        for i in range(0, len(ids), _IDS_PER_STATEMENT)
    ]


def collect_unreferenced_flow(dialect: Dialect, codec: SqlCodec, thread_id: str) -> Flow[int]:
    """Delete the thread's value rows no remaining checkpoint needs (the GC step).

    A checkpoint needs the rows its references name and, for a delta, every row its
    ``base`` chain passes through down to the full value it starts from: whole chains
    stay. So does a remaining write stored as a reference (``_write_refs``). Run in
    the prune's transaction, after its checkpoints are deleted; reads only the value
    rows' keys, the checkpoints that hold references (found by their ``"refs"`` key
    before decoding) and the writes that are references. A checkpoint or reference
    that cannot be decoded keeps every row (what it references is unknown). Returns
    the number of rows deleted.
    """
    thread = str(thread_id)
    rows = yield Statement(
        dialect.sql(
            "SELECT checkpoint_ns, channel, version, base FROM pausepoint_blobs WHERE thread_id = ?"
        ),
        (thread,),
        fetch=True,
    )
    if not rows:
        return 0
    bases: dict[tuple[str, str, str], str | None] = {
        (str(ns), str(ch), str(v)): (None if b is None else str(b)) for ns, ch, v, b in rows
    }
    roots = yield from _referenced_flow(dialect, codec, thread)
    written = yield from _written_flow(dialect, codec, thread)
    if roots is None or written is None:
        return 0  # what a checkpoint or a write references is unknown: keep everything
    needed: set[tuple[str, str, str]] = set()
    for ns, channel, version in roots + written:
        at: str | None = version
        while at is not None and (key := (ns, channel, at)) not in needed:
            needed.add(key)
            at = bases.get(key)
    gone: dict[tuple[str, str], list[str]] = {}
    for ns, channel, version in bases.keys() - needed:
        gone.setdefault((ns, channel), []).append(version)
    for (ns, channel), versions in gone.items():
        for i in range(0, len(versions), _IDS_PER_STATEMENT):
            chunk = versions[i : i + _IDS_PER_STATEMENT]
            yield Statement(
                dialect.sql(
                    "DELETE FROM pausepoint_blobs WHERE thread_id = ? AND checkpoint_ns = ?"
                    f" AND channel = ? AND version IN ({', '.join('?' * len(chunk))})"
                ),
                (thread, ns, channel, *chunk),
            )
    return len(bases) - len(needed)


def _referenced_flow(
    dialect: Dialect, codec: SqlCodec, thread: str
) -> Flow[list[tuple[str, str, str]] | None]:
    """The value rows the thread's checkpoints reference; None when one cannot be read."""
    stored = yield Statement(
        dialect.sql(
            "SELECT checkpoint_ns, type, checkpoint, checkpoint_id"
            " FROM pausepoint_checkpoints WHERE thread_id = ?"
        ),
        (thread,),
        fetch=True,
    )
    out: list[tuple[str, str, str]] = []
    for ns, type_, blob, cid in stored:
        data = bytes(cast("bytes", blob)) if isinstance(blob, bytes | memoryview) else b""
        try:  # a sealed checkpoint is opened first: its references are inside
            data = codec.opened(data, checkpoint_binding(thread, str(ns), str(cid)), "checkpoint")
        except CheckpointDecodeError:
            return None
        if REFS_MARK not in data:
            continue
        try:
            refs = refs_of(codec.decode(type_, data))
        except (CheckpointDecodeError, ValueError, TypeError):
            return None
        out += [(str(ns), channel, version) for channel, version in (refs or {}).items()]
    return out


def _written_flow(
    dialect: Dialect, codec: SqlCodec, thread: str
) -> Flow[list[tuple[str, str, str]] | None]:
    """The value rows the thread's writes stored as references name (``_write_refs``).

    None when one cannot be read.
    """
    writes = yield Statement(
        dialect.sql(
            "SELECT checkpoint_ns, checkpoint_id, task_id, channel, value, idx"
            " FROM pausepoint_writes WHERE thread_id = ? AND type = ?"
        ),
        (thread, REF),
        fetch=True,
    )
    out: list[tuple[str, str, str]] = []
    for ns, cid, task_id, channel, cell, idx in writes:
        try:
            ref = reference_of(codec, thread, str(ns), str(cid), (task_id, channel, REF, cell, idx))
        except CheckpointDecodeError:
            return None
        out.append((str(ns), str(channel), ref.version))
    return out


def thread_size_flow(dialect: Dialect, thread_id: str) -> Flow[ThreadSize]:
    """A thread's rows: how many, and their bytes as stored (nothing decoded)."""
    counts: list[tuple[int, int]] = []
    for table, columns in (
        ("pausepoint_checkpoints", ("checkpoint", "metadata")),
        ("pausepoint_writes", ("value",)),
        ("pausepoint_blobs", ("value",)),
    ):
        rows = yield Statement(
            dialect.sql(
                f"SELECT count(*), sum({_size(dialect, *columns)}) FROM {table} WHERE thread_id = ?"
            ),
            (str(thread_id),),
            fetch=True,
        )
        counts.append((int(rows[0][0]), int(rows[0][1] or 0)))
    (checkpoints, cbytes), (writes, wbytes), (_, vbytes) = counts
    return ThreadSize(checkpoints, writes, cbytes + wbytes + vbytes)


def new_target_flow(dialect: Dialect, source: str, target: str) -> Flow[None]:
    """Raise ``ValueError`` when the thread ``target`` has checkpoints."""
    del source
    found = yield Statement(
        dialect.sql("SELECT 1 FROM pausepoint_checkpoints WHERE thread_id = ? LIMIT 1"),
        (str(target),),
        fetch=True,
    )
    if found:
        raise ValueError(
            f"copy_thread: the target thread {str(target)!r} already has checkpoints; "
            "delete it first or copy to a new thread id"
        )


def copy_thread_flow(
    dialect: Dialect, source: str, target: str, codec: SqlCodec | None = None
) -> Flow[None]:
    """Copy every checkpoint, write and value row of ``source`` to the new thread ``target``.

    A ``codec`` that seals: each cell opened and sealed again for ``target`` (`_sql_reseal`).
    """
    if codec is not None and codec.sealer is not None:
        flow = copy_thread_sealed_flow(dialect, codec, str(source), str(target), new_target_flow)
        return (yield from flow)
    yield from new_target_flow(dialect, source, target)
    yield Statement(  # the value rows first: the copies' references name them
        dialect.sql(
            """INSERT INTO pausepoint_blobs (thread_id, checkpoint_ns, channel, version, type,
            value, base, anchor) SELECT ?, checkpoint_ns, channel, version, type, value, base,
            anchor FROM pausepoint_blobs WHERE thread_id = ?"""
        ),
        (str(target), str(source)),
    )
    yield Statement(
        dialect.sql(
            """INSERT INTO pausepoint_checkpoints (thread_id, checkpoint_ns, checkpoint_id,
            parent_checkpoint_id, type, checkpoint, metadata)
            SELECT ?, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint,
            metadata FROM pausepoint_checkpoints WHERE thread_id = ?"""
        ),
        (str(target), str(source)),
    )
    yield Statement(
        dialect.sql(
            """INSERT INTO pausepoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id,
            idx, channel, type, value, task_path)
            SELECT ?, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value,
            task_path FROM pausepoint_writes WHERE thread_id = ? ORDER BY seq"""
        ),
        (str(target), str(source)),
    )
    # The source's rows of the index of waiting questions, for the copy.
    yield Statement(
        dialect.sql(
            """INSERT INTO pausepoint_pending (thread_id, checkpoint_id, task_id)
            SELECT ?, checkpoint_id, task_id FROM pausepoint_pending WHERE thread_id = ?"""
        ),
        (str(target), str(source)),
    )
    return None
