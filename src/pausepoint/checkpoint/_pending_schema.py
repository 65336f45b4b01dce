"""Schema version 4: the index of waiting questions, kept by the database itself.

See ``_sql_pending`` for what the table holds and how it is read; docs/format.md for
the format. Statements are per dialect (the triggers' syntax differs); a dialect
missing from an entry has nothing to run for it. No ``?`` appears in them: they run
without parameters.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["NEWER", "PENDING_MIGRATION"]

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
    WHERE w.idx = -3 AND w.checkpoint_ns = '' AND NOT EXISTS ({NEWER.format(t="w")})
    AND NOT EXISTS (SELECT 1 FROM pausepoint_writes d WHERE d.thread_id = w.thread_id
        AND d.checkpoint_ns = '' AND d.checkpoint_id = w.checkpoint_id
        AND d.task_id = w.task_id AND d.idx >= 0)
    AND EXISTS (SELECT 1 FROM pausepoint_checkpoints h WHERE h.thread_id = w.thread_id
        AND h.checkpoint_ns = '' AND h.checkpoint_id = w.checkpoint_id)
    ON CONFLICT DO NOTHING"""


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
    {"sqlite": _BACKFILL, "postgres": _BACKFILL},
)
"""Schema version 4 (docs/format.md): the table, its triggers, and the backfill.

Idempotent (``IF NOT EXISTS``, ``DROP TRIGGER IF EXISTS``, ``ON CONFLICT DO NOTHING``):
a database whose recorded version was set back runs it again unharmed."""
