"""SQL shared by the SQLite and PostgreSQL savers: statements and row mapping.

Each saver operation is written once, as a *flow* (see ``_dialect``): a generator
that yields the statements to run and receives their rows, then returns the result.
The savers only drive flows (sync: a cursor under a lock or from a pool; async: an
async cursor, or the sync saver in a worker thread), so SQL text, row mapping and
serialization live here and nowhere else (STYLE.md §3).

Tables (prefixed so they can live beside LangGraph's in one database):
``pausepoint_migrations`` (applied schema versions), ``pausepoint_checkpoints``
(one row per checkpoint; the checkpoint is one serialized blob and metadata is a
JSON object for filtering), ``pausepoint_writes`` (pending writes; ``seq``
keeps insertion order and survives upserts), ``pausepoint_blobs`` (large channel
values, once per version, appends as deltas: `pausepoint.checkpoint._sql_values`) and
``pausepoint_leases`` (a thread's single writer; its flows are in
`pausepoint.checkpoint._sql_leases`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint._commit import At, CheckpointRef, StepCommit, in_form, ref_of
from pausepoint.checkpoint._dialect import (
    MIGRATIONS,
    POSTGRES,
    SQLITE,
    Dialect,
    Flow,
    Row,
    Rows,
    SchemaTooNewError,
    Statement,
    adrive,
    check_schema_flow,
    drive,
    primed,
    rows_sql,
    setup_flow,
)
from pausepoint.checkpoint._labels import explain_checkpoint, write_label
from pausepoint.checkpoint._pending_schema import index_upkeep, upkeep_statements
from pausepoint.checkpoint._reuse import Found, remember
from pausepoint.checkpoint._sealing import (
    checkpoint_binding,
    metadata_binding,
    write_binding,
)
from pausepoint.checkpoint._shape import check_checkpoint, check_metadata, check_writes, decoded
from pausepoint.checkpoint._sql_codec import SqlCodec
from pausepoint.checkpoint._sql_filters import filter_sql
from pausepoint.checkpoint._sql_pending import list_pending_flow as _list_pending_flow
from pausepoint.checkpoint._sql_values import Unless, each, fill_flow, refs_of, split
from pausepoint.checkpoint._write_refs import REF_FROM, REFERABLE, Appended, refer, resolve_flow
from pausepoint.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointPut,
    CheckpointTuple,
    PendingWrite,
    TaskWrites,
)
from pausepoint.checkpoint.questions import PendingPage, PendingQuery
from pausepoint.config import RunnableConfig
from pausepoint.constants import WRITES_IDX_MAP
from pausepoint.errors import CheckpointDecodeError, SerializationError
from pausepoint.serde import FORMAT

if TYPE_CHECKING:
    from pausepoint.checkpoint._sql_leases import Guard

__all__ = [
    "MIGRATIONS",
    "POSTGRES",
    "SQLITE",
    "Dialect",
    "Flow",
    "Row",
    "Rows",
    "SchemaTooNewError",
    "SqlCodec",
    "Statement",
    "adrive",
    "check_schema_flow",
    "drive",
    "primed",
    "setup_flow",
]

_CHECKPOINT_COLUMNS = (
    "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, {json_select}"
)
SELECT_CHECKPOINTS = f"SELECT {_CHECKPOINT_COLUMNS} FROM pausepoint_checkpoints"
_SELECT_ONE = (
    f"{SELECT_CHECKPOINTS} WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
)
_SELECT_LATEST = (
    f"{SELECT_CHECKPOINTS} WHERE thread_id = ? AND checkpoint_ns = ? "
    "ORDER BY checkpoint_id DESC LIMIT 1"
)
CHECKPOINTS_INTO = """INSERT INTO pausepoint_checkpoints (thread_id, checkpoint_ns,
    checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata)"""
_PUT_INTO = f"{CHECKPOINTS_INTO} VALUES "
PUT_ROW = "(?, ?, ?, ?, ?, ?, {json_param})"
ON_PUT_CONFLICT = """ ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
    parent_checkpoint_id = excluded.parent_checkpoint_id, type = excluded.type,
    checkpoint = excluded.checkpoint, metadata = excluded.metadata"""
WRITES_INTO = """INSERT INTO pausepoint_writes (thread_id, checkpoint_ns, checkpoint_id,
    task_id, idx, channel, type, value, task_path)"""
_INSERT_WRITES = f"{WRITES_INTO} VALUES "
WRITE_ROW = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
# Ordinary writes (idx >= 0) are kept once; special ones (idx < 0) are replaced. One
# statement does both, so a task's writes are one round trip and atomic on their own.
ON_WRITE_CONFLICT = """ ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
    DO UPDATE SET channel = excluded.channel, type = excluded.type,
    value = excluded.value, task_path = excluded.task_path WHERE excluded.idx < 0"""
WRITE_ROWS_PER_STATEMENT = 500
"""Rows per INSERT on PostgreSQL (9 parameters each; it allows 65,535 per statement)."""
_SQLITE_ROWS_PER_STATEMENT = 100
"""SQLite before 3.32 allows only 999 parameters per statement (Ubuntu 20.04 has 3.31)."""
_SELECT_WRITES = """SELECT task_id, channel, type, value, idx FROM pausepoint_writes
    WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? ORDER BY seq"""
WRITE_ARRAYS = """SELECT array_agg(task_id ORDER BY seq), array_agg(channel ORDER BY seq),
    array_agg(type ORDER BY seq), array_agg(value ORDER BY seq),
    array_agg(idx ORDER BY seq) FROM pausepoint_writes w
    WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns
    AND w.checkpoint_id = c.checkpoint_id"""
"""PostgreSQL: a checkpoint's pending writes as five arrays (NULL when it has none)."""
_PG_READ = "SELECT c.*, w.* FROM ({}) c LEFT JOIN LATERAL (" + WRITE_ARRAYS + ") w ON true"
_PG_READ_LATEST, _PG_READ_ONE = _PG_READ.format(_SELECT_LATEST), _PG_READ.format(_SELECT_ONE)
_STILL_THERE = """SELECT 1 FROM pausepoint_checkpoints
    WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"""
_THREAD_TABLES = ("pausepoint_leases", "pausepoint_pending")  # rows keyed by thread alone


def _config(thread: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
    }


def _to_tuple(
    dialect: Dialect, codec: SqlCodec, row: Row, writes: Rows, metadata: dict[str, Any]
) -> Flow[CheckpointTuple | None]:
    """The row's tuple; its large values read from ``pausepoint_blobs`` (``_sql_values``).

    None: deleted since (PostgreSQL reads value rows by later statements; a deletion
    takes a row and the value rows only it needs at once): a read after the deletion.
    A value row missing under a row still there is damage, raised.
    """
    # No sealer: a row's binding is never read (``_sealing.unseal``), so none is made.
    aad = checkpoint_binding(row[0], row[1], row[2]) if codec.sealer is not None else b""
    checkpoint = decoded(row, lambda: codec.load(row[4], row[5], aad, "the checkpoint"))
    refs = decoded(row, lambda: refs_of(checkpoint))
    got: Mapping[int, Any] = {}  # the values of writes stored as references (``_write_refs``)
    try:
        if refs:
            yield from fill_flow(dialect, codec, row, checkpoint, refs)
        if writes:
            got = yield from resolve_flow(dialect, codec, row, writes)
    except CheckpointDecodeError:
        if (yield from _gone(dialect, row)):
            return None
        raise
    return decoded(row, lambda: _tuple_of_row(row, writes, codec, metadata, checkpoint, got))


def _gone(dialect: Dialect, row: Row) -> Flow[bool]:
    """Whether ``row``'s checkpoint was deleted since the row was read (`_to_tuple`)."""
    rows = yield Statement(dialect.sql(_STILL_THERE), (row[0], row[1], row[2]), fetch=True)
    return not rows


def _tuple_of_row(
    row: Row,
    writes: Rows,
    codec: SqlCodec,
    metadata: dict[str, Any],
    checkpoint: Any,
    got: Mapping[int, Any],
) -> CheckpointTuple:
    thread, ns, cid, parent_id = row[:4]
    check_checkpoint(checkpoint, cid)
    pending = [
        PendingWrite(w[0], w[1], got[n] if n in got else codec.load_write(thread, ns, cid, w))
        for n, w in enumerate(writes)
    ]
    check_writes(pending)
    return CheckpointTuple(
        config=_config(thread, ns, cid),
        checkpoint=checkpoint,  # type: ignore[arg-type]
        metadata=metadata,  # type: ignore[arg-type]
        parent_config=_config(thread, ns, parent_id) if parent_id else None,
        pending_writes=pending,
    )


def _writes_of(dialect: Dialect, row: Row) -> Statement:
    return Statement(dialect.sql(_SELECT_WRITES), (row[0], row[1], row[2]), fetch=True)


def get_tuple_flow(
    dialect: Dialect, codec: SqlCodec, config: CheckpointRef | RunnableConfig
) -> Flow[CheckpointTuple | None]:
    """Load the checkpoint the config names (or the newest), with its pending writes."""
    if dialect.name != "postgres":  # one statement: the row, then its writes
        thread, ns, checkpoint_id = ref_of(config)
        if checkpoint_id is None:
            sql, params = _READ_LATEST, (thread, ns, thread, ns, thread, ns)
        else:
            sql, params = _READ_ONE, (thread, ns, checkpoint_id, thread, ns, checkpoint_id)
        rows = yield Statement(sql, params, fetch=True)
        rows.sort(key=_ROW_THEN_WRITES)  # here, not in SQL: its sorter copies each value
        if not rows or rows[0][7]:  # none (writes without their checkpoint row: none)
            return None
        row, writes = rows[0], [w[:5] for w in rows[1:]]  # task, channel, type, value, idx
        return (yield from _to_tuple(dialect, codec, row, writes, metadata_of(row, codec)))
    sql, params = read_query(dialect, config)
    rows = yield Statement(dialect.sql(sql), params, fetch=True)
    if not rows:
        return None
    return (yield from tuple_of(dialect, codec, rows[0]))


# SQLite: the row and its writes in one statement (8th column 0, then 1 and ``seq``), sorted
# in Python: an ``ORDER BY`` copies every row into SQLite's sorter, a 50 MB value too.
_ROW_THEN_WRITES = itemgetter(7, 8)
_ROW_FIRST = f"SELECT {_CHECKPOINT_COLUMNS.format(json_select='metadata')}, 0, 0"
_ITS_WRITES = """SELECT task_id, channel, type, value, idx, NULL, NULL, 1, seq
    FROM pausepoint_writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = """
_READ_ONE = f"""{_ROW_FIRST} FROM pausepoint_checkpoints
    WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?
    UNION ALL {_ITS_WRITES}?"""
_READ_LATEST = f"""SELECT * FROM ({_ROW_FIRST} FROM pausepoint_checkpoints
    WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1)
    UNION ALL {_ITS_WRITES}(SELECT max(checkpoint_id) FROM pausepoint_checkpoints
        WHERE thread_id = ? AND checkpoint_ns = ?)"""


def read_query(
    dialect: Dialect, config: CheckpointRef | RunnableConfig
) -> tuple[str, tuple[Any, ...]]:
    """The query reading the checkpoint ``config`` names (or the newest), and its params.

    PostgreSQL's row also holds the pending writes, as five arrays (columns 7 to 11):
    one round trip. Placeholders are ``?``; the texts are made once (each keeps its hash).
    """
    thread, ns, checkpoint_id = ref_of(config)
    pg = dialect.name == "postgres"
    if checkpoint_id is None:
        return (_PG_READ_LATEST if pg else _SELECT_LATEST), (thread, ns)
    return (_PG_READ_ONE if pg else _SELECT_ONE), (thread, ns, checkpoint_id)


def tuple_of(dialect: Dialect, codec: SqlCodec, row: Row) -> Flow[CheckpointTuple | None]:
    """The tuple of a ``read_query`` row (SQLite: its writes are read now); None: gone."""
    return (yield from listed_tuple(dialect, codec, row, metadata_of(row, codec)))


def with_writes(sql: str) -> str:
    """PostgreSQL: ``sql`` (checkpoint rows), each row with its pending writes.

    As five arrays (columns 7 to 11, NULL when it has none): `listed_tuple` reads no more.
    """
    return _PG_READ.format(sql)


def metadata_of(row: Row, codec: SqlCodec) -> dict[str, Any]:
    """The row's metadata, decoded and checked (errors name the row)."""

    def load() -> dict[str, Any]:
        aad = metadata_binding(row[0], row[1], row[2]) if codec.sealer is not None else b""
        metadata = codec.load_metadata(row[6], aad)
        check_metadata(metadata)
        return metadata

    return decoded(row, load)


def listed_tuple(
    dialect: Dialect, codec: SqlCodec, row: Row, metadata: dict[str, Any]
) -> Flow[CheckpointTuple | None]:
    """The tuple of a checkpoint row: its writes, then its values, read.

    The writes are read by a statement of their own unless the row holds them
    (`with_writes`; ``read_query``'s on PostgreSQL).
    """
    if len(row) > 7:
        tasks, channels, types, values, indexes = row[7:12]
        writes: Rows = (
            list(zip(tasks, channels, types, values, indexes, strict=True)) if tasks else []
        )
    else:
        writes = yield _writes_of(dialect, row)
    return (yield from _to_tuple(dialect, codec, row, writes, metadata))


def put_flow(
    dialect: Dialect,
    codec: SqlCodec,
    at: At,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    guard: Guard | None = None,
) -> Flow[At]:
    """Store a checkpoint whose parent is ``at``'s ``checkpoint_id``; return where it is."""
    ref = ref_of(at)
    blobs: list[Statement | Unless] = []
    params = put_params(dialect, codec, ref, checkpoint, metadata, None, blobs)
    yield from each(blobs)
    if guard is None:
        yield from store_rows(dialect, [], [params])
    else:
        yield from guard.store(dialect, [], [params])
    return in_form(at, ref.at(checkpoint["id"]))


def put_params(
    dialect: Dialect,
    codec: SqlCodec,
    parent: CheckpointRef,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    found: Found | None = None,
    blobs: list[Statement | Unless] | None = None,
    appended: dict[str, Appended] | None = None,
) -> Row:
    """The parameters of a checkpoint's row (``PUT_ROW``), its values encoded.

    ``found``: encodings of large writes stored in the same call (see ``_reuse``).
    ``blobs``: gets the statements storing its large values, to run before the row
    (``_sql_values``); None: every value in the row, as before schema version 7.
    ``appended``: gets the values stored in rows, by channel (``_write_refs``).
    """
    thread, ns, parent_id = parent
    try:
        stored: Mapping[str, Any] = checkpoint
        if blobs is not None:
            stored, more = split(
                codec, codec.chains, dialect, thread, ns, checkpoint, found, appended
            )
            blobs.extend(more)
        type_, blob = codec.dump_checkpoint(stored, found)
    except SerializationError as exc:
        values = checkpoint["channel_values"]
        raise explain_checkpoint(values, codec.dump, exc) from None
    cid = checkpoint["id"]
    if codec.sealer is None:  # no binding to make: ~20 Python calls each (issue 35)
        blob = codec.sealed(blob, b"")  # deflated when small (`_packing`)
        meta = codec.dump_metadata(metadata, b"")
    else:
        blob = codec.sealed(blob, checkpoint_binding(thread, ns, cid))
        meta = codec.dump_metadata(metadata, metadata_binding(thread, ns, cid))
    if dialect.name == "postgres" and "\\u0000" in meta:
        raise SerializationError(
            "cannot save checkpoint metadata containing a NUL character ('\\x00'): "
            "PostgreSQL's JSONB cannot store it; remove it from the run's metadata"
        )
    return (thread, ns, cid, parent_id, type_, blob, meta)


def put_writes_flow(
    dialect: Dialect,
    codec: SqlCodec,
    at: CheckpointRef | RunnableConfig,
    writes: Sequence[tuple[str, object]],
    *,
    task_id: str,
    task_path: str,
    guard: Guard | None = None,
) -> Flow[None]:
    """Store a task's writes: ordinary ones inserted once, special ones upserted."""
    rows = _write_rows(codec, ref_of(at), writes, task_id, task_path)
    if guard is not None:
        yield from guard.store(dialect, rows, [])
        return None
    yield from store_rows(dialect, rows, [])
    return None


def _write_rows(
    codec: SqlCodec,
    ref: CheckpointRef,
    writes: Sequence[tuple[str, object]],
    task_id: str,
    task_path: str,
    found: Found | None = None,
    plain: dict[int, bytes] | None = None,
) -> list[Row]:
    """A task's write rows (one per slot), their values encoded, deflated or sealed.

    ``plain``: the rows that may be stored as references (``_write_refs.refer``) are
    left as encoded, noted here by ``id(row)``: ``refer`` seals them.
    """
    thread, ns, checkpoint_id = ref
    if checkpoint_id is None:
        raise ValueError("put_writes needs a config with a 'checkpoint_id'")
    # Position of the first write to a slot, value of the last: what one upsert per
    # write would leave (one statement may not touch a row twice).
    rows: dict[int, Row] = {}
    for n, (channel, value) in enumerate(writes):
        idx = WRITES_IDX_MAP.get(channel, n)
        try:  # the label is built only for an error: it parses the task path
            type_, blob = codec.dump(value, channel)
        except SerializationError:
            codec.dump(value, write_label(channel, value, task_id, task_path))
            raise
        if found is not None and type_ == FORMAT:  # a write a checkpoint may hold too
            remember(found, value, blob)
        if plain is not None and idx >= 0 and type_ in REFERABLE and len(blob) >= REF_FROM:
            row = (thread, ns, checkpoint_id, task_id, idx, channel, type_, blob, task_path)
            plain[id(row)] = blob  # its row is in ``rows``: the id stays its own
            rows[idx] = row
            continue
        if codec.sealer is None:  # no binding to make; deflated when small (`_packing`)
            blob = codec.sealed(blob, b"")
        else:
            aad = write_binding(thread, ns, checkpoint_id, task_id, idx, channel)
            blob = codec.sealed(blob, aad)
        rows[idx] = (thread, ns, checkpoint_id, task_id, idx, channel, type_, blob, task_path)
    return list(rows.values())


def write_chunks(
    dialect: Dialect, rows: Sequence[Row], size: int | None = None
) -> list[tuple[str, list[Any]]]:
    """The upserts (text with ``?``, parameters) that store ``rows``, ``size`` a statement."""
    if size is None:
        pg = dialect.name == "postgres"
        size = WRITE_ROWS_PER_STATEMENT if pg else _SQLITE_ROWS_PER_STATEMENT
    out: list[tuple[str, list[Any]]] = []
    for start in range(0, len(rows), size):
        chunk = rows[start : start + size]
        text = rows_sql(_INSERT_WRITES, WRITE_ROW, len(chunk), ON_WRITE_CONFLICT)
        out.append((text, [v for row in chunk for v in row]))
    return out


def put_after_writes_flow(
    dialect: Dialect,
    codec: SqlCodec,
    at: At,
    writes: Sequence[TaskWrites],
    checkpoint: Checkpoint | None,
    metadata: CheckpointMetadata,
    first: CheckpointPut | None = None,
    guard: Guard | None = None,
) -> Flow[At]:
    """Tasks' writes against the config's checkpoint, then a checkpoint after it.

    ``checkpoint`` None (with ``first``): ``first`` and its own writes alone.

    With ``first`` (``put_pair``), that checkpoint is stored under the config, and the
    writes and the other checkpoint go after it: both rows in one INSERT. Everything
    is encoded before the first statement. On PostgreSQL, when the writes fit one
    upsert, it leads the INSERT as a data-modifying ``WITH``: one statement, atomic on
    its own (see `one_statement_after_writes`).
    """
    ref = under = ref_of(at)
    puts: list[Row] = []
    blobs: list[Statement | Unless] = []
    if first is not None:
        puts.append(put_params(dialect, codec, ref, first.checkpoint, first.metadata, None, blobs))
        under = ref.at(first.checkpoint["id"])
    found: Found = {}  # a large value written and in the checkpoint is encoded once
    plain: dict[int, bytes] = {}  # writes a value row may hold (``_write_refs``)
    rows = [
        row
        for task in writes
        for row in _write_rows(
            codec, under, task.writes, task.task_id, task.task_path, found, plain
        )
    ]
    appended: dict[str, Appended] = {}
    if checkpoint is not None:
        puts.append(put_params(dialect, codec, under, checkpoint, metadata, found, blobs, appended))
    rows = refer(codec, rows, plain, appended)  # value rows first: written before these
    yield from each(blobs)  # before the rows referencing them
    if guard is None:
        yield from store_rows(dialect, _first_of_each_slot(rows), puts)
    else:
        yield from guard.store(dialect, _first_of_each_slot(rows), puts)
    return in_form(at, under if checkpoint is None else ref.at(checkpoint["id"]))


def commit_flow(
    dialect: Dialect, codec: SqlCodec, step: StepCommit[At], guard: Guard | None = None
) -> Flow[At]:
    """Store a `StepCommit` in one transaction: the flow of the write it is.

    Writes alone, a checkpoint alone, or writes then a checkpoint (and a checkpoint
    before them): the statements ``put_writes``, ``put`` and ``put_after_writes``
    make today, so one step still costs one transaction (PostgreSQL: one statement
    when the writes fit one, see `one_statement_after_writes`).
    """
    at, writes, last = step.config, step.writes, step.checkpoint
    if last is None and step.first is None:
        if len(writes) == 1:
            task = writes[0]
            yield from put_writes_flow(
                dialect, codec, at, task.writes, task_id=task.task_id,
                task_path=task.task_path, guard=guard,
            )  # fmt: skip
            return at
        ref = ref_of(at)
        rows = [r for t in writes for r in _write_rows(codec, ref, *_args(t))]
        rows = _first_of_each_slot(rows)
        yield from (
            store_rows(dialect, rows, []) if guard is None else guard.store(dialect, rows, [])
        )
        return at
    checkpoint = None if last is None else last.checkpoint  # None: ``first`` and its writes
    metadata: CheckpointMetadata = {} if last is None else last.metadata
    if checkpoint is not None and step.first is None and not writes:
        return (yield from put_flow(dialect, codec, at, checkpoint, metadata, guard))
    return (
        yield from put_after_writes_flow(
            dialect, codec, at, writes, checkpoint, metadata, step.first, guard
        )
    )


def _args(task: TaskWrites) -> tuple[Sequence[tuple[str, object]], str, str]:
    return (task.writes, task.task_id, task.task_path)


def store_rows(dialect: Dialect, rows: Sequence[Row], puts: Sequence[Row]) -> Flow[None]:
    """Store write rows (one per slot), then checkpoint rows (``put_params``), unguarded.

    And the index's changes (``_pending_schema``): on PostgreSQL in the same statement.
    """
    chunks = write_chunks(dialect, rows)
    pg = dialect.name == "postgres"
    upkeep = index_upkeep(pg, rows, puts)
    one = pg and len(chunks) <= 1  # PostgreSQL, the writes in one statement
    parts = chunks
    if puts:
        put = rows_sql(_PUT_INTO, PUT_ROW, len(puts), ON_PUT_CONFLICT)
        parts.append((put, [value for row in puts for value in row]))
    if upkeep.asked or upkeep.moved:
        parts += upkeep_statements(upkeep)
    if one and len(parts) > 1:
        # One statement: the others as data-modifying WITH clauses of the last.
        *ctes, (last, last_params) = parts
        with_ = ", ".join(f"u{n} AS ({text})" for n, (text, _) in enumerate(ctes))
        params = [v for _, part_params in ctes for v in part_params]
        yield Statement(dialect.sql(f"WITH {with_} {last}"), (*params, *last_params))
        return None
    for text, part_params in parts:
        yield Statement(dialect.sql(text), part_params)
    return None


def _first_of_each_slot(rows: list[Row]) -> list[Row]:
    """One row per (task, idx), where the first row's place holds the last one's value.

    Rows of several tasks go in one upsert, which may not touch a row twice: a
    task named twice keeps its first position and its last values (as separate
    calls would, for special writes; ordinary ones are kept once, so the first wins).
    """
    slots: dict[tuple[Any, Any], Row] = {}
    for row in rows:
        key = (row[3], row[4])
        if key in slots and row[4] >= 0:
            continue
        slots[key] = row
    return list(slots.values())


def one_statement_after_writes(writes: Sequence[TaskWrites]) -> bool:
    """Whether `put_after_writes_flow` is one PostgreSQL statement."""
    return sum(len(task.writes) for task in writes) <= WRITE_ROWS_PER_STATEMENT


def one_statement(writes: Sequence[object]) -> bool:
    """Whether `put_writes_flow` stores ``writes`` in a single PostgreSQL statement.

    A single statement is atomic by itself, so a saver in autocommit mode need not
    wrap it in a transaction (a round trip each for BEGIN and COMMIT).
    """
    return len(writes) <= WRITE_ROWS_PER_STATEMENT


def list_pending_flow(dialect: Dialect, codec: SqlCodec, query: PendingQuery) -> Flow[PendingPage]:
    """A page of waiting questions, read from the index (``_sql_pending``)."""
    sealed = codec.sealer is not None
    return _list_pending_flow(dialect, codec, query, lambda d, f: filter_sql(d, f, sealed))


def delete_thread_flow(dialect: Dialect, thread_id: str) -> Flow[None]:
    """Delete every row of a thread: checkpoints, writes, value rows, lease, index rows."""
    for table in (
        "pausepoint_writes",
        "pausepoint_checkpoints",
        "pausepoint_blobs",
        *_THREAD_TABLES,
    ):
        yield Statement(dialect.sql(f"DELETE FROM {table} WHERE thread_id = ?"), (str(thread_id),))
