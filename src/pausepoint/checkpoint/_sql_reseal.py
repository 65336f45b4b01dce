"""Sealing rows again: ``rekey`` (to the key that seals now) and ``copy_thread`` under keys.

Every sealed cell is bound to its row (`pausepoint.checkpoint._sealing`), so moving
a thread's rows to another thread id, or moving a cell to another key, means opening
and sealing each cell: Python work, not one ``INSERT ... SELECT``.

``rekey`` reads a table in primary-key order, a batch a transaction, and writes a row
only if a cell is not sealed with the sealing key (a plaintext cell is sealed: this
is also how a database moves to encryption). Each ``UPDATE`` is a compare-and-swap on
the bytes it read (``WHERE value = <what was read>``): a row a running worker changed
meanwhile is left as the worker wrote it (and counted as ``raced``; a rerun sees it
again). A batch is one transaction, so a rekey killed at any point leaves every row
either as it was or re-sealed, never half written; run it again to finish (rows
already under the sealing key are skipped).
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any, Protocol

from pausepoint.checkpoint._dialect import Dialect, Flow, Row, Statement
from pausepoint.checkpoint._sealing import (
    MARK,
    SEALED_METADATA,
    Sealer,
    checkpoint_binding,
    metadata_binding,
    value_binding,
    write_binding,
)
from pausepoint.checkpoint._sql_codec import SqlCodec

__all__ = [
    "TABLES",
    "AsyncRun",
    "RekeyReport",
    "Run",
    "arekey",
    "copy_thread_sealed_flow",
    "rekey",
    "rekey_batch_flow",
    "rekey_steps",
]


@dataclasses.dataclass(frozen=True, slots=True)
class _Table:
    name: str
    key: tuple[str, ...]
    cells: tuple[str, ...]
    """The columns read besides the key: what a cell's binding needs, and the cells."""


TABLES = (
    _Table(
        "pausepoint_checkpoints",
        ("thread_id", "checkpoint_ns", "checkpoint_id"),
        ("checkpoint", "{json_select}"),
    ),
    _Table(
        "pausepoint_writes",
        ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),
        ("channel", "value"),
    ),
    _Table(
        "pausepoint_blobs", ("thread_id", "checkpoint_ns", "channel", "version"), ("base", "value")
    ),
)
"""The tables holding sealed cells, in the order ``rekey`` goes through them."""


@dataclasses.dataclass(slots=True)
class RekeyReport:
    """What ``rekey`` did, in rows.

    Re-sealed; already current; changed by a writer meanwhile (left alone); and
    those that could not be opened (``errors``, one line each).
    """

    resealed: int = 0
    current: int = 0
    raced: int = 0
    errors: list[str] = dataclasses.field(default_factory=lambda: [])

    def add(self, other: RekeyReport) -> None:
        """Add another batch's counts to these."""
        self.resealed += other.resealed
        self.current += other.current
        self.raced += other.raced
        self.errors += other.errors


Batch = tuple[Row | None, RekeyReport]
"""What a batch returns: the last key it read (None: its table is done), its report."""


def _sealer(codec: SqlCodec) -> Sealer:
    if codec.sealer is None:
        raise ValueError("rekey needs a saver with encryption=KeyRing(...)")
    return codec.sealer


def _resealed(sealer: Sealer, data: bytes, aad: bytes) -> bytes | None:
    """``data`` sealed with the sealing key, or None when it already is."""
    if data[:4] == MARK:
        token = data[4:]
        if sealer.current(token):
            return None
        data = sealer.open(token, aad)
    return MARK + sealer.seal(data, aad)


def _opened_metadata(codec: SqlCodec, text: str, aad: bytes) -> dict[str, Any]:
    """Stored metadata, whole (a plaintext one as it is, whatever the sealer allows)."""
    meta = codec.meta_serde.loads_mapping(text)
    if SEALED_METADATA not in meta:
        return meta
    return codec.load_metadata(text, aad)


def _metadata_resealed(codec: SqlCodec, sealer: Sealer, text: str, aad: bytes) -> str | None:
    meta = codec.meta_serde.loads_mapping(text)
    token = meta.get(SEALED_METADATA)
    if isinstance(token, str) and sealer.current(base64.b64decode(token)[4:]):
        return None
    return codec.dump_metadata(_opened_metadata(codec, text, aad), aad)


def _where(table: _Table) -> str:
    return " AND ".join(f"{k} = ?" for k in table.key)


def rekey_batch_flow(
    dialect: Dialect, codec: SqlCodec, table: _Table, after: Row | None, limit: int
) -> Flow[tuple[Row | None, RekeyReport]]:
    """Re-seal up to ``limit`` rows of ``table`` after the key ``after`` (one transaction).

    Returns the last key read (None: the table is done) and the batch's report.
    """
    sealer = _sealer(codec)
    keys = ", ".join(table.key)
    cond = f" WHERE ({keys}) > ({', '.join('?' * len(table.key))})" if after else ""
    sql = f"SELECT {keys}, {', '.join(table.cells)} FROM {table.name}{cond} ORDER BY {keys}"
    rows = yield Statement(dialect.sql(f"{sql} LIMIT {int(limit)}"), tuple(after or ()), fetch=True)
    report = RekeyReport()
    for row in rows:
        key = tuple(row[: len(table.key)])
        try:
            update = _row_update(dialect, codec, sealer, table, row)
        except Exception as exc:
            report.errors.append(f"{table.name} {key!r}: cannot be opened ({type(exc).__name__})")
            continue
        if update is None:
            report.current += 1
            continue
        done = yield update
        if not dialect.returning or done:
            report.resealed += 1
        else:
            report.raced += 1
    last = tuple(rows[-1][: len(table.key)]) if len(rows) == limit else None
    return last, report


def rekey_steps(
    codec: SqlCodec, dialect: Dialect, batch_size: int
) -> Generator[Flow[Batch], Batch, RekeyReport]:
    """Every table through `rekey_batch_flow`, as a flow of batches; the whole report.

    Yields each batch's flow (for the driver to run as a transaction) and is sent
    its result. Shared by `rekey` and `arekey`: they only run the batches.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size!r}")
    _sealer(codec)
    report = RekeyReport()
    for table in TABLES:
        after: Row | None = None
        while True:
            after, batch = yield rekey_batch_flow(dialect, codec, table, after, batch_size)
            report.add(batch)
            if after is None:
                break
    return report


class Run(Protocol):
    """A saver's ``_run``: drives a flow in one transaction (``write``: a write one)."""

    def __call__(self, flow: Flow[Batch], *, write: bool) -> Batch: ...


class AsyncRun(Protocol):
    """An async saver's ``_run``."""

    def __call__(self, flow: Flow[Batch], *, write: bool) -> Awaitable[Batch]: ...


def rekey(run: Run, codec: SqlCodec, dialect: Dialect, batch_size: int) -> RekeyReport:
    """`rekey_steps`, each batch run by the saver's ``run`` (a write transaction)."""
    steps = rekey_steps(codec, dialect, batch_size)
    try:
        flow = next(steps)
        while True:
            flow = steps.send(run(flow, write=True))
    except StopIteration as stop:
        report: RekeyReport = stop.value
        return report


async def arekey(run: AsyncRun, codec: SqlCodec, dialect: Dialect, batch_size: int) -> RekeyReport:
    """`rekey_steps`, each batch run by the async saver's ``run`` (a write transaction)."""
    steps = rekey_steps(codec, dialect, batch_size)
    try:
        flow = next(steps)
        while True:
            flow = steps.send(await run(flow, write=True))
    except StopIteration as stop:
        report: RekeyReport = stop.value
        return report


def _row_update(
    dialect: Dialect, codec: SqlCodec, sealer: Sealer, table: _Table, row: Row
) -> Statement | None:
    """The compare-and-swap re-sealing ``row``, or None when it is current."""
    returning = " RETURNING 1" if dialect.returning else ""
    where = _where(table)
    key = tuple(row[: len(table.key)])
    if table.name == "pausepoint_checkpoints":
        thread, ns, cid, blob, meta = row
        data = bytes(blob)
        new = _resealed(sealer, data, checkpoint_binding(thread, ns, cid))
        new_meta = _metadata_resealed(codec, sealer, meta, metadata_binding(thread, ns, cid))
        if new is None and new_meta is None:
            return None
        sql = (
            f"UPDATE {table.name} SET checkpoint = ?, metadata = {{json_param}} "
            f"WHERE {where} AND checkpoint = ?{returning}"
        )
        params = (new or data, new_meta or meta, *key, data)
        return Statement(dialect.sql(sql), params, fetch=dialect.returning)
    if table.name == "pausepoint_writes":
        thread, ns, cid, task_id, idx, channel, blob = row
        aad = write_binding(thread, ns, cid, task_id, idx, channel)
    else:
        thread, ns, channel, version, base, blob = row
        aad = value_binding(thread, ns, channel, version, base)
    data = bytes(blob)
    new = _resealed(sealer, data, aad)
    if new is None:
        return None
    sql = f"UPDATE {table.name} SET value = ? WHERE {where} AND value = ?{returning}"
    return Statement(dialect.sql(sql), (new, *key, data), fetch=dialect.returning)


def copy_thread_sealed_flow(
    dialect: Dialect,
    codec: SqlCodec,
    source: str,
    target: str,
    check_target: Callable[[Dialect, str, str], Flow[None]],
) -> Flow[None]:
    """``copy_thread`` for a saver that seals: each cell opened and sealed for ``target``."""
    yield from check_target(dialect, source, target)
    for table in TABLES:
        columns = _COPIED[table.name]
        order = " ORDER BY seq" if table.name == "pausepoint_writes" else ""
        select = ", ".join("{json_select}" if c == "metadata" else c for c in columns)
        rows = yield Statement(
            dialect.sql(f"SELECT {select} FROM {table.name} WHERE thread_id = ?{order}"),
            (source,),
            fetch=True,
        )
        marks = ", ".join("{json_param}" if c == "metadata" else "?" for c in columns)
        insert = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({marks})"
        for row in rows:
            moved = _moved(codec, table.name, row, target)
            yield Statement(dialect.sql(insert), moved)
    return None


_COPIED = {
    "pausepoint_checkpoints": (
        "thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type",
        "checkpoint", "metadata",
    ),
    "pausepoint_writes": (
        "thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel", "type",
        "value", "task_path",
    ),
    "pausepoint_blobs": (
        "thread_id", "checkpoint_ns", "channel", "version", "type", "value", "base", "anchor",
    ),
}  # fmt: skip


def _moved(codec: SqlCodec, table: str, row: Sequence[Any], target: str) -> tuple[Any, ...]:
    """``row`` of ``table`` as the copy stores it: under ``target``, its cells re-sealed."""
    thread, ns = str(row[0]), str(row[1])
    if table == "pausepoint_checkpoints":
        cid = str(row[2])
        data = codec.opened(row[5], checkpoint_binding(thread, ns, cid), "the checkpoint")
        meta = codec.load_metadata(row[6], metadata_binding(thread, ns, cid))
        sealed = codec.sealed(data, checkpoint_binding(target, ns, cid))
        text = codec.dump_metadata(meta, metadata_binding(target, ns, cid))
        return (target, *row[1:5], sealed, text)
    if table == "pausepoint_writes":
        cid, task_id, idx, channel = str(row[2]), str(row[3]), row[4], str(row[5])
        what = f"write {idx} of task {task_id!r}"
        data = codec.opened(row[7], write_binding(thread, ns, cid, task_id, idx, channel), what)
        sealed = codec.sealed(data, write_binding(target, ns, cid, task_id, idx, channel))
        return (target, *row[1:7], sealed, row[8])
    channel, version, base = str(row[2]), str(row[3]), row[6]
    what = f"stored value {version!r} of channel {channel!r}"
    data = codec.opened(row[5], value_binding(thread, ns, channel, version, base), what)
    sealed = codec.sealed(data, value_binding(target, ns, channel, version, base))
    return (target, *row[1:5], sealed, *row[6:])
