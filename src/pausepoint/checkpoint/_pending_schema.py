"""The index of waiting questions: its schema (versions 4 and 8) and its upkeep.

See ``_sql_pending`` for what the table holds and how it is read; docs/format.md for
the format. Version 4 made the table and had the database keep it with triggers;
version 8 drops the triggers that run per row on PostgreSQL and the per-write ones on
SQLite: the saver keeps the index with its own statements (`index_upkeep`, run in the
statement or the transaction that stores the rows), which PostgreSQL folds into the
write's statement as ``WITH`` clauses (no round trip, no PL/pgSQL call per row).
SQLite keeps the trigger on a new root checkpoint (one index probe in its ``WHEN``):
a statement of the saver's own would cost it more than the trigger does.
Migration statements are per dialect; a dialect missing from an entry has nothing to
run for it. No ``?`` appears in them: they run without parameters.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

__all__ = [
    "ASK_ROW",
    "BACKFILL_THREAD",
    "NEWER",
    "PENDING_MIGRATION",
    "PENDING_TRIGGERS_MIGRATION",
    "Upkeep",
    "ask_sql",
    "index_upkeep",
    "move_sql",
    "upkeep_statements",
]

_TABLE = """CREATE TABLE IF NOT EXISTS pausepoint_pending (
    thread_id TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_id, task_id))"""
# list_pending reads in this order: oldest question first.
_ORDER_INDEX = """CREATE INDEX IF NOT EXISTS pausepoint_pending_order
    ON pausepoint_pending (checkpoint_id, thread_id, task_id)"""
NEWER = """SELECT 1 FROM pausepoint_checkpoints c WHERE c.thread_id = {t}.thread_id
    AND c.checkpoint_ns = '' AND c.checkpoint_id > {t}.checkpoint_id"""
_ADD = f"""INSERT INTO pausepoint_pending (thread_id, checkpoint_id, task_id)
    SELECT NEW.thread_id, NEW.checkpoint_id, NEW.task_id
    WHERE NOT EXISTS ({NEWER.format(t="NEW")}) ON CONFLICT DO NOTHING"""
_MOVE = """DELETE FROM pausepoint_pending
    WHERE thread_id = NEW.thread_id AND checkpoint_id < NEW.checkpoint_id"""
_DROP = """DELETE FROM pausepoint_pending WHERE thread_id = OLD.thread_id
    AND checkpoint_id = OLD.checkpoint_id AND task_id = OLD.task_id"""
_ASKED_WHEN = "NEW.idx = -3 AND NEW.checkpoint_ns = ''"
_DROPPED_WHEN = "OLD.idx = -3 AND OLD.checkpoint_ns = ''"
_MOVED_WHEN = "NEW.checkpoint_ns = ''"
# SQLite: most checkpoints belong to threads with nothing waiting; a lookup is cheaper
# than a DELETE that finds nothing. (PostgreSQL allows no subquery in a trigger's WHEN.)
_MOVED_WHEN_SQLITE = f"""{_MOVED_WHEN} AND EXISTS (SELECT 1 FROM pausepoint_pending
    WHERE thread_id = NEW.thread_id)"""
# Threads saved before the index existed: their heads' asked tasks not finished since.
_BACKFILL = f"""INSERT INTO pausepoint_pending (thread_id, checkpoint_id, task_id)
    SELECT w.thread_id, w.checkpoint_id, w.task_id FROM pausepoint_writes w
    WHERE {{thread}}w.idx = -3 AND w.checkpoint_ns = '' AND NOT EXISTS ({NEWER.format(t="w")})
    AND NOT EXISTS (SELECT 1 FROM pausepoint_writes d WHERE d.thread_id = w.thread_id
        AND d.checkpoint_ns = '' AND d.checkpoint_id = w.checkpoint_id
        AND d.task_id = w.task_id AND d.idx >= 0)
    AND EXISTS (SELECT 1 FROM pausepoint_checkpoints h WHERE h.thread_id = w.thread_id
        AND h.checkpoint_ns = '' AND h.checkpoint_id = w.checkpoint_id)
    ON CONFLICT DO NOTHING"""
BACKFILL_THREAD = _BACKFILL.format(thread="w.thread_id = ? AND ")
"""The backfill of the index for one thread (``?``: its id), after its rows changed
outside the saver (``pausepoint.server.rollback``)."""


def _sqlite_trigger(name: str, event: str, table: str, when: str, body: str) -> str:
    return (
        f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON {table} WHEN {when} "
        f"BEGIN {body}; END"
    )


def _pg_trigger(name: str, event: str, table: str, when: str, body: str) -> tuple[str, str, str]:
    function = f"""CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql
        AS $fn$ BEGIN {body}; RETURN NULL; END $fn$"""
    trigger = f"""CREATE TRIGGER {name} AFTER {event} ON {table}
        FOR EACH ROW WHEN ({when}) EXECUTE FUNCTION {name}()"""
    return function, f"DROP TRIGGER IF EXISTS {name} ON {table}", trigger


_TRIGGERS = (
    ("pausepoint_pending_asked", "INSERT", "pausepoint_writes", _ASKED_WHEN, _ADD),
    ("pausepoint_pending_moved", "INSERT", "pausepoint_checkpoints", _MOVED_WHEN, _MOVE),
    ("pausepoint_pending_dropped", "DELETE", "pausepoint_writes", _DROPPED_WHEN, _DROP),
)

PENDING_MIGRATION: tuple[Mapping[str, str], ...] = (
    {"sqlite": _TABLE, "postgres": _TABLE},
    {"sqlite": _ORDER_INDEX, "postgres": _ORDER_INDEX},
    *({"postgres": _pg_trigger(*t)[0]} for t in _TRIGGERS),
    *({"postgres": _pg_trigger(*t)[1]} for t in _TRIGGERS),
    *(
        {
            "sqlite": _sqlite_trigger(
                *t[:3], _MOVED_WHEN_SQLITE if t[3] is _MOVED_WHEN else t[3], t[4]
            ),
            "postgres": _pg_trigger(*t)[2],
        }
        for t in _TRIGGERS
    ),
    {"sqlite": _BACKFILL.format(thread=""), "postgres": _BACKFILL.format(thread="")},
)
"""Schema version 4 (docs/format.md): the table, its triggers, and the backfill.

Idempotent (``IF NOT EXISTS``, ``DROP TRIGGER IF EXISTS``, ``ON CONFLICT DO NOTHING``):
a database whose recorded version was set back runs it again unharmed."""


PENDING_TRIGGERS_MIGRATION: tuple[Mapping[str, str], ...] = (
    {"sqlite": "DROP TRIGGER IF EXISTS pausepoint_pending_asked"},
    {"sqlite": "DROP TRIGGER IF EXISTS pausepoint_pending_dropped"},
    *(
        {"postgres": f"DROP TRIGGER IF EXISTS {name} ON {table}"}
        for name, _, table, _, _ in _TRIGGERS
    ),
    *({"postgres": f"DROP FUNCTION IF EXISTS {name}()"} for name, *_ in _TRIGGERS),
)
"""Schema version 8: the saver keeps the index (see the module docstring). Idempotent."""

_ASKED_IDX = -3  # constants.WRITES_IDX_MAP["__interrupt__"]
ASK_ROW = "(?, ?, ?)"
_ASK = """INSERT INTO pausepoint_pending (thread_id, checkpoint_id, task_id)
    SELECT v.column1, v.column2, v.column3 FROM (VALUES {values}) AS v
    WHERE {where}NOT EXISTS (SELECT 1 FROM pausepoint_checkpoints c
        WHERE c.thread_id = v.column1 AND c.checkpoint_ns = ''
        AND c.checkpoint_id > v.column2) ON CONFLICT DO NOTHING"""
_MOVED_ROWS = "DELETE FROM pausepoint_pending WHERE {where}thread_id = ? AND checkpoint_id < ?"


class Upkeep(NamedTuple):
    """What a write does to the index, as the triggers did it.

    Attributes:
        asked: ``(thread, checkpoint id, task id)`` of each root ``"__interrupt__"``
            write that no root checkpoint stored with it follows: a row to add (unless
            a newer root checkpoint is stored already, checked in SQL).
        moved: ``(thread, checkpoint id)`` of the newest root checkpoint stored, per
            thread: the older rows of the thread go (PostgreSQL; SQLite's trigger).
    """

    asked: list[Any]
    moved: list[Any]


_NO_UPKEEP = Upkeep([], [])


def index_upkeep(
    postgres: bool, rows: Sequence[Sequence[Any]], puts: Sequence[Sequence[Any]]
) -> Upkeep:
    """The index's changes for storing write ``rows`` and checkpoint rows ``puts``.

    Rows as ``_sql`` makes them: a write's ``(thread, ns, checkpoint id, task id, idx,
    ...)``, a checkpoint's ``(thread, ns, checkpoint id, ...)``.
    """
    # Plain loops, no comprehension or dict unless needed: every commit runs this.
    newest: dict[str, str] | None = None
    for put in puts:
        if put[1] == "":
            if newest is None:
                newest = {}
            if put[2] > newest.get(put[0], ""):
                newest[put[0]] = put[2]
    asked: list[Any] = []
    for row in rows:
        if (
            row[4] == _ASKED_IDX
            and row[1] == ""
            and (newest is None or row[2] >= newest.get(row[0], ""))
        ):
            asked.append((row[0], row[2], row[3]))
    if postgres and newest is not None:
        return Upkeep(asked, list(newest.items()))
    return Upkeep(asked, []) if asked else _NO_UPKEEP


@functools.lru_cache(maxsize=64)
def ask_sql(rows: int, where: str = "") -> str:
    """The insert adding ``rows`` asked tasks (``ASK_ROW`` each), if ``where`` holds."""
    return _ASK.format(values=", ".join([ASK_ROW] * rows), where=f"{where} AND " if where else "")


def move_sql(where: str = "") -> str:
    """The delete of a thread's rows older than a checkpoint, if ``where`` holds."""
    return _MOVED_ROWS.format(where=f"{where} AND " if where else "")


def upkeep_statements(upkeep: Upkeep) -> list[tuple[str, list[Any]]]:
    """The statements (text with ``?``, parameters) of the index's ``upkeep``."""
    out: list[tuple[str, list[Any]]] = []
    if upkeep.asked:
        out.append((ask_sql(len(upkeep.asked)), [v for row in upkeep.asked for v in row]))
    out += [(move_sql(), [thread, cid]) for thread, cid in upkeep.moved]
    return out
