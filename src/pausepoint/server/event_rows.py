"""Runs' events in the database: the ``pausepoint_server_events`` table, as flows.

A run's events are rows ``(run_id, seq, event, data, created_at)``: ``seq`` counts up
from 1 within the run and is the SSE ``id``; ``data`` is the event's JSON text. The
process executing a run writes them in batches (`insert`: one transaction for what
a step emitted); a reader anywhere reads the rows after the last ``seq`` it saw
(`after`). The run's end is a row too (event `END`), written in the transaction
that records how the run ended. On PostgreSQL each batch notifies `CHANNEL` with the run id, in
the same transaction (delivered at its commit).

Retention (`expired`): the rows of runs that ended more than ``keep`` seconds ago,
and of runs whose record is gone, are deleted ``limit`` rows per transaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pausepoint.server.records import RunEvent
from pausepoint.server.sealing import EVENTS, dump_cell, load_cell
from pausepoint.server.store_sql import Flow

if TYPE_CHECKING:
    from pausepoint.checkpoint._sealing import Sealer

__all__ = [
    "CHANNEL",
    "END",
    "EventRow",
    "RunState",
    "after",
    "delete_run",
    "expired",
    "failed",
    "insert",
    "last_seq",
    "row",
    "run_state",
    "setup",
]

END = "__end__"
"""The event name of a run's last row: the run ended (never sent to clients)."""

CHANNEL = "pausepoint_server_events"
"""The PostgreSQL channel notified with a run id when rows of that run are committed."""

_SETUP_LOCK = 7_433_033_302
"""Advisory lock id taken while the table is created (servers starting together)."""


@dataclasses.dataclass(frozen=True, slots=True)
class EventRow:
    """One event to write: its run, number, name, JSON text and time."""

    run_id: str
    seq: int
    event: str
    data: str
    created_at: float


@dataclasses.dataclass(frozen=True, slots=True)
class RunState:
    """What a reader needs of a run's record: its status and lease (None: no record)."""

    status: str
    lease_until: float | None


def row(sealer: Sealer | None, run_id: str, seq: int, event: str, data: Any, at: float) -> EventRow:
    """The row of one event: its data as JSON, sealed to ``(run_id, seq)`` under keys.

    The `END` row holds ``null`` in clear (no data of the run's).
    """
    if event == END:
        return EventRow(run_id, seq, END, "null", at)
    return EventRow(run_id, seq, event, dump_cell(sealer, data, EVENTS, (run_id, seq), "data"), at)


def ddl(*, postgres: bool) -> list[str]:
    """The table and its index, idempotent (``IF NOT EXISTS``)."""
    real = "DOUBLE PRECISION" if postgres else "REAL"
    return [
        f"""CREATE TABLE IF NOT EXISTS pausepoint_server_events (
            run_id TEXT NOT NULL, seq BIGINT NOT NULL, event TEXT NOT NULL,
            data TEXT NOT NULL, created_at {real} NOT NULL, PRIMARY KEY (run_id, seq))""",
        """CREATE INDEX IF NOT EXISTS pausepoint_server_events_created
            ON pausepoint_server_events (created_at)""",
    ]


def setup(*, postgres: bool) -> Flow:
    """Create the table (safe when several servers start at once)."""
    if postgres:
        yield f"SELECT pg_advisory_xact_lock({_SETUP_LOCK})", ()
    for stmt in ddl(postgres=postgres):
        yield stmt, ()


def insert(rows: Sequence[EventRow], *, postgres: bool) -> Flow:
    """Write a batch of rows (one statement per 100); notify each run on PostgreSQL.

    A row whose ``(run_id, seq)`` exists is skipped: a process that lost its run's
    lease may still be writing while the run's next attempt writes the same numbers.
    """
    for start in range(0, len(rows), 100):
        chunk = rows[start : start + 100]
        values = ", ".join("(?, ?, ?, ?, ?)" for _ in chunk)
        params: list[Any] = []
        for r in chunk:
            params += [r.run_id, r.seq, r.event, r.data, r.created_at]
        yield (
            "INSERT INTO pausepoint_server_events (run_id, seq, event, data, created_at) "
            f"VALUES {values} ON CONFLICT DO NOTHING",
            params,
        )
    if postgres:
        for run_id in dict.fromkeys(r.run_id for r in rows):
            yield "SELECT pg_notify(?, ?)", (CHANNEL, run_id)


def after(run_id: str, seq: int, limit: int, sealer: Sealer | None) -> Flow:
    """The run's events after ``seq``, in order, ``limit`` at most (`END` included).

    Their data opened with ``sealer`` (`row`); an `END` row's is never read.
    """
    rows = yield (
        "SELECT seq, event, data FROM pausepoint_server_events "
        "WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        (run_id, seq, limit),
    )
    return [
        RunEvent(
            str(r[0]), str(r[1]),
            None if r[1] == END else load_cell(sealer, r[2], EVENTS, (run_id, int(r[0])), "data"),
        )
        for r in rows
    ]  # fmt: skip


def last_seq(run_id: str) -> Flow:
    """The run's newest ``seq`` (0: none)."""
    rows = yield (
        "SELECT COALESCE(MAX(seq), 0) FROM pausepoint_server_events WHERE run_id = ?",
        (run_id,),
    )
    return int(rows[0][0] or 0)


def end_next(run_id: str, now: float, *, postgres: bool) -> Flow:
    """Write the run's `END` row after its newest one (a run ended by another process)."""
    yield (
        "INSERT INTO pausepoint_server_events (run_id, seq, event, data, created_at) "
        "SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, 'null', ? FROM pausepoint_server_events "
        "WHERE run_id = ? ON CONFLICT DO NOTHING",
        (run_id, END, now, run_id),
    )
    if postgres:
        yield "SELECT pg_notify(?, ?)", (CHANNEL, run_id)


def failed(sealer: Sealer | None, run_id: str, error: Any, now: float, *, postgres: bool) -> Flow:
    """Write an ``error`` event with ``error`` and the `END` row after the run's newest row.

    For a run ended without executing (its record cannot be opened): its readers get
    the error and stop.
    """
    last = yield from last_seq(run_id)
    rows = [
        row(sealer, run_id, last + 1, "error", error, now),
        row(sealer, run_id, last + 2, END, None, now),
    ]
    yield from insert(rows, postgres=postgres)


def run_state(run_id: str) -> Flow:
    """The run's status and lease (None when it has no record)."""
    rows = yield (
        "SELECT status, lease_until FROM pausepoint_server_runs WHERE run_id = ?",
        (run_id,),
    )
    if not rows:
        return None
    lease = rows[0][1]
    return RunState(str(rows[0][0]), None if lease is None else float(lease))


def delete_run(run_id: str) -> Flow:
    """Delete the run's events (its record was deleted)."""
    yield "DELETE FROM pausepoint_server_events WHERE run_id = ?", (run_id,)


def expired(before: float, limit: int) -> Flow:
    """Delete up to ``limit`` rows of runs ended before ``before`` or gone; how many.

    A row is written after its run started and before it ended, so a row older than
    ``before`` whose run is not in flight and was last changed before ``before``
    belongs to a run that ended before then.
    """
    rows = yield (
        "DELETE FROM pausepoint_server_events WHERE (run_id, seq) IN ("
        "SELECT e.run_id, e.seq FROM pausepoint_server_events e WHERE e.created_at < ? "
        "AND NOT EXISTS (SELECT 1 FROM pausepoint_server_runs r WHERE r.run_id = e.run_id "
        "AND (r.status IN ('pending', 'running') OR r.updated_at >= ?)) "
        "ORDER BY e.created_at LIMIT ?) RETURNING seq",
        (before, before, limit),
    )
    return len(rows)
