"""Statements, flows and dialects of the SQL savers, and the schema they migrate.

A *flow* is a saver operation written once, as a generator that yields the
`Statement` s to run and receives their rows; `drive` and
`adrive` run one with a blocking or an awaitable ``execute``. A
`Dialect` holds the SQL fragments that differ between SQLite and
PostgreSQL. ``MIGRATIONS`` is the schema, version by version (docs/format.md).
"""

from __future__ import annotations

import dataclasses
import functools
import sqlite3
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from pausepoint.checkpoint._blobs_schema import BLOBS_MIGRATION
from pausepoint.checkpoint._pending_schema import PENDING_MIGRATION, PENDING_TRIGGERS_MIGRATION
from pausepoint.errors import PausepointError

__all__ = [
    "MIGRATIONS",
    "POSTGRES",
    "SQLITE",
    "Dialect",
    "Flow",
    "Row",
    "Rows",
    "SchemaTooNewError",
    "Statement",
    "adrive",
    "check_schema_flow",
    "drive",
    "primed",
    "rows_sql",
    "setup_flow",
]

T = TypeVar("T")
Row = tuple[Any, ...]
Rows = list[Row]


class Statement(NamedTuple):
    """One SQL statement for a driver to run; ``?`` marks parameters.

    A named tuple, as ``CheckpointRef`` and ``StepCommit`` are: a resume makes ~7 (a
    frozen dataclass sets each field through ``object.__setattr__``, ~5x the cost).
    """

    sql: str
    params: Sequence[Any] = ()
    many: bool = False
    """``params`` is a list of parameter tuples, for ``executemany``."""
    fetch: bool = False
    """Send the rows back into the flow (otherwise an empty list is sent)."""


Flow = Generator[Statement, Rows, T]
"""A saver operation: yields statements, receives their rows, returns its result."""


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Dialect:
    """What differs between SQLite and PostgreSQL, as SQL fragments.

    Compared and hashed by identity: the statement cache keys on it, every call.
    """

    name: str
    blob: str
    json: str
    seq_column: str
    json_param: str
    json_select: str
    placeholder: str
    real: str
    boolean: str
    false: str
    now: str
    """The current time in seconds since the epoch: a parameter (``?``) when the
    saver's clock gives it (``client_clock``), else the database's own."""
    client_clock: bool
    unlogged: str
    """How the lease table is created: PostgreSQL's ``UNLOGGED`` (see ``MIGRATIONS``)."""
    returning: bool
    """Whether ``INSERT``/``UPDATE``/``DELETE … RETURNING`` works (SQLite >= 3.35)."""

    def sql(self, text: str) -> str:
        """``text`` with this dialect's parameter placeholder and types filled in."""
        return _filled(self, text, False)

    def lease_sql(self, text: str) -> str:
        """`sql`, and the fragments of the lease table's SQL too."""
        return _filled(self, text, True)

    def _fill(self, text: str, lease: bool) -> str:
        out = (
            text.replace("?", self.placeholder)
            .replace("{blob}", self.blob)
            .replace("{json}", self.json)
            .replace("{seq}", self.seq_column)
            .replace("{json_param}", self.json_param.replace("?", self.placeholder))
            .replace("{json_select}", self.json_select)
        )
        if not lease:
            return out
        return (
            out.replace("{real}", self.real)
            .replace("{bool}", self.boolean)
            .replace("{false}", self.false)
            .replace("{now}", self.now.replace("?", self.placeholder))
            .replace("{unlogged}", self.unlogged)
        )

    def now_params(self, clock: Callable[[], float] | None) -> tuple[object, ...]:
        """The parameters of one ``{now}``: the time by the saver's clock, or none.

        Flows call it as they build the statement, so inside the saver's transaction.
        """
        if not self.client_clock:
            return ()
        if clock is None:
            raise ValueError(f"a {self.name} lease statement needs the saver's clock")
        return (clock(),)


@functools.lru_cache(maxsize=64)
def rows_sql(into: str, row: str, rows: int, then: str) -> str:
    """``into``, ``rows`` times ``row`` (a VALUES list), then ``then``: made once a shape.

    The same text object each time, so the statement caches (`Dialect.sql`, psycopg's)
    find it by a hash it keeps instead of hashing a text made again per call.
    """
    return into + ", ".join([row] * rows) + then


@functools.lru_cache(maxsize=512)
def _filled(dialect: Dialect, text: str, lease: bool) -> str:
    # Every saver call fills in its statement: the same few texts, over and over
    # (a PostgreSQL resume's three cost ~40 replacements each without this cache).
    return dialect._fill(text, lease)  # pyright: ignore[reportPrivateUsage]


SQLITE = Dialect(
    name="sqlite",
    blob="BLOB",
    json="TEXT",
    seq_column="seq INTEGER PRIMARY KEY AUTOINCREMENT",
    json_param="?",
    json_select="metadata",
    placeholder="?",
    real="REAL",
    boolean="INTEGER",
    false="0",
    now="?",
    client_clock=True,
    unlogged="",
    returning=sqlite3.sqlite_version_info >= (3, 35, 0),
)
POSTGRES = Dialect(
    name="postgres",
    blob="BYTEA",
    json="JSONB",
    seq_column="seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    json_param="?::jsonb",
    json_select="metadata::text",
    placeholder="%s",
    real="DOUBLE PRECISION",
    boolean="BOOLEAN",
    false="false",
    # The database's clock, not the client's: workers on many machines agree on expiry.
    now="extract(epoch FROM clock_timestamp())::float8",
    client_clock=False,
    # Leases are not WAL-logged: taking or letting one go waits for no WAL flush, and
    # a server crash empties the table (no worker survives it to hold a lease anyway).
    unlogged="UNLOGGED ",
    returning=True,
)

_LZ4 = """DO $$ BEGIN
    ALTER TABLE pausepoint_checkpoints ALTER COLUMN checkpoint SET COMPRESSION lz4;
    ALTER TABLE pausepoint_writes ALTER COLUMN value SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value OR syntax_error THEN
    RAISE NOTICE 'pausepoint: this server has no lz4; values stay compressed with pglz';
END $$"""

MIGRATIONS: tuple[tuple[str | Mapping[str, str], ...], ...] = (
    (
        """CREATE TABLE pausepoint_checkpoints (
            thread_id TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL DEFAULT '',
            checkpoint_id TEXT NOT NULL,
            parent_checkpoint_id TEXT,
            type TEXT NOT NULL,
            checkpoint {blob} NOT NULL,
            metadata {json} NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id))""",
        """CREATE TABLE pausepoint_writes (
            {seq},
            thread_id TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL DEFAULT '',
            checkpoint_id TEXT NOT NULL,
            task_id TEXT NOT NULL,
            idx INTEGER NOT NULL,
            channel TEXT NOT NULL,
            type TEXT NOT NULL,
            value {blob} NOT NULL,
            task_path TEXT NOT NULL DEFAULT '',
            UNIQUE (thread_id, checkpoint_ns, checkpoint_id, task_id, idx))""",
    ),
    (
        """CREATE {unlogged}TABLE pausepoint_leases (
            thread_id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            expires_at {real} NOT NULL,
            ttl {real} NOT NULL,
            nudged {bool} NOT NULL DEFAULT {false})""",
    ),
    (
        # Counts the row's changes: a claim that also reads the thread checks with it
        # that nothing was written between its read and its claim (``_sql_leases``).
        "ALTER TABLE pausepoint_leases ADD COLUMN seq BIGINT NOT NULL DEFAULT 0",
    ),
    # The index of waiting questions, and its backfill from the threads already saved.
    PENDING_MIGRATION,
    # PostgreSQL: values compressed with lz4, not pglz. pglz gives up on random bytes
    # only if nothing repeats near their start; a framed payload starts with JSON, so
    # it compressed 50 MB of a file's bytes before throwing the result away (3x the
    # server CPU of storing them). lz4 is ~2x cheaper on text and records too, for
    # about the same size (benchmarks/README.md, run M). Only values written from now
    # on; a server built without lz4 keeps pglz (the DO block swallows only that).
    ({"postgres": _LZ4},),
    # PostgreSQL: every resume changes its thread's lease row three times (claim, the
    # fence of the answer's write, the release with the last write). With room left on
    # the row's page the new version goes there and the primary key is not touched
    # (a heap-only update); a full page moves it and adds an index entry each time.
    # The table holds one small row per thread, so the space is cheap: 7 % fewer server
    # instructions per resume (benchmarks/README.md, run N). Applies to pages filled
    # from now on.
    ({"postgres": "ALTER TABLE pausepoint_leases SET (fillfactor = 50)"},),
    # Large channel values in rows of their own, once per version; appends as deltas
    # (``_sql_values``). Checkpoints stored before keep their values and read as before.
    BLOBS_MIGRATION,
    # The index of waiting questions kept by the saver's own statements, not by per-row
    # triggers (``_pending_schema``; issue 35, benchmarks/README.md).
    PENDING_TRIGGERS_MIGRATION,
    # Small encodings stored deflated behind a marker (``_packing``): no table changes,
    # but an older pausepoint must refuse rows it cannot read, so the version goes up.
    (),
    # A step's write stored as a reference to the value row holding its bytes
    # (``_write_refs``, type ``ppref/1``): no table changes, refused by older versions.
    (),
    # Value rows named by xxh3-64 of their encoding (16 hex digits) instead of xxh3-128
    # (``_sql_values``): ~0.2 KB less a turn of a long chat (keys, index, references).
    # Rows named before read as before; an older pausepoint would call the new names
    # damaged, so it is told to refuse the database.
    (),
    # A large framed value (bytes, type ``ppjson+blobs/1``) in a value row of its own,
    # and the step's write of it a reference to that row (``_sql_values``,
    # ``_write_refs``): stored once, not twice. No table changes; an older pausepoint
    # would refuse the new rows, so it is told to refuse the database.
    (),
)
"""Schema versions: ``MIGRATIONS[n]`` takes the schema from version n to n + 1.

A statement is the same text for every dialect, or a mapping from dialect name to
its text (a dialect it does not name runs nothing for it)."""


class SchemaTooNewError(PausepointError, RuntimeError):
    """The database was migrated by a newer pausepoint than this one."""


def _refuse_newer(current: int) -> None:
    if current > len(MIGRATIONS):
        raise SchemaTooNewError(
            f"the database schema is at version {current}, but this pausepoint knows only "
            f"versions up to {len(MIGRATIONS)}; upgrade pausepoint to use this database"
        )


def setup_flow(dialect: Dialect, lock: Statement | None = None) -> Flow[int]:
    """Create or migrate the schema; return the number of migrations applied.

    Args:
        dialect: The database's dialect.
        lock: A statement serializing concurrent setups (PostgreSQL advisory lock).

    """
    if lock is not None:
        # First: even CREATE TABLE IF NOT EXISTS races in PostgreSQL.
        yield lock
    yield Statement("CREATE TABLE IF NOT EXISTS pausepoint_migrations (v INTEGER PRIMARY KEY)")
    rows = yield Statement("SELECT v FROM pausepoint_migrations", fetch=True)
    current = max((int(r[0]) for r in rows), default=0)
    _refuse_newer(current)
    for version in range(current, len(MIGRATIONS)):
        for entry in MIGRATIONS[version]:
            text = entry if isinstance(entry, str) else entry.get(dialect.name)
            if text is not None:
                yield Statement(dialect.lease_sql(text))
        yield Statement(
            dialect.sql("INSERT INTO pausepoint_migrations (v) VALUES (?)"), (version + 1,)
        )
    return len(MIGRATIONS) - current


def check_schema_flow() -> Flow[int]:
    """The schema version of a database opened read-only; raise unless this one reads it."""
    rows = yield Statement(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'pausepoint_migrations'",
        fetch=True,
    )
    if not rows:
        raise ValueError(
            "the database has no pausepoint tables: it is not a pausepoint database "
            "(a saver opened read-write creates them)"
        )
    rows = yield Statement("SELECT max(v) FROM pausepoint_migrations", fetch=True)
    current = int(rows[0][0] or 0)
    _refuse_newer(current)
    if current < len(MIGRATIONS):
        raise ValueError(
            f"the database schema is at version {current}, older than this pausepoint's "
            f"{len(MIGRATIONS)}; open it read-write once to migrate it"
        )
    return current


def drive(flow: Flow[T], execute: Callable[[Statement], Rows]) -> T:
    """Run a flow to completion with a blocking ``execute``."""
    try:
        stmt = next(flow)
        while True:
            stmt = flow.send(execute(stmt))
    except StopIteration as stop:
        result: T = stop.value
        return result
    finally:
        flow.close()


def primed(flow: Flow[T]) -> Flow[T]:
    """``flow`` run now up to its first statement; the same flow from there.

    What a flow does before its first statement is pure work (it has read nothing
    yet): encoding the values it will write, say. A saver that must hold a lock
    while a flow's statements run (SQLite's write lock, shared by every process
    of the file) primes the flow first, so that work is done before the lock is
    taken and other writers do not wait for it. A flow that ends without a
    statement has ended here too: the returned flow yields nothing.
    """
    try:
        first = next(flow)
    except StopIteration as stop:
        flow.close()
        return _nothing(stop.value)
    return _from(first, flow)


def _nothing(value: T) -> Flow[T]:
    return value
    yield  # pragma: no cover - makes this a generator


def _from(first: Statement, flow: Flow[T]) -> Flow[T]:
    stmt = first
    try:
        while True:
            rows = yield stmt
            stmt = flow.send(rows)
    except StopIteration as stop:
        result: T = stop.value
        return result
    finally:
        flow.close()


async def adrive(flow: Flow[T], execute: Callable[[Statement], Awaitable[Rows]]) -> T:
    """Run a flow to completion with an awaitable ``execute``."""
    try:
        stmt = next(flow)
        while True:
            stmt = flow.send(await execute(stmt))
    except StopIteration as stop:
        result: T = stop.value
        return result
    finally:
        flow.close()
