"""What ``pausepoint workers`` shows: the queue's depth, the runs, the workers alive."""

from __future__ import annotations

import dataclasses
from typing import Any

from pausepoint.workers.queue import QUEUE

__all__ = ["QueueStatus", "queue_status"]


@dataclasses.dataclass(frozen=True, slots=True)
class QueueStatus:
    """One look at the queue (`queue_status`)."""

    jobs_waiting: int
    """pausepoint's jobs ``todo`` (the queue's depth; scheduled ones included)."""
    jobs_running: int
    """pausepoint's jobs ``doing``."""
    runs_pending: int
    """Runs recorded ``pending`` (waiting for a worker, or for ``after_seconds``)."""
    runs_running: int
    """Runs recorded ``running`` (executing, or held by a dead worker's lease)."""
    workers_alive: int
    """Workers whose heartbeat is newer than ``stalled_seconds``."""
    workers_stalled: int
    """Workers registered whose heartbeat is older (dead, or cut off)."""
    oldest_pending_seconds: float | None
    """How long the oldest pending run has waited (None: none waits)."""

    def as_json(self) -> dict[str, Any]:
        """The fields as a JSON object."""
        return dataclasses.asdict(self)


_QUERY = """
SELECT
  (SELECT count(*) FROM procrastinate_jobs WHERE queue_name = %(q)s AND status = 'todo'),
  (SELECT count(*) FROM procrastinate_jobs WHERE queue_name = %(q)s AND status = 'doing'),
  (SELECT count(*) FROM pausepoint_server_runs WHERE status = 'pending'),
  (SELECT count(*) FROM pausepoint_server_runs WHERE status = 'running'),
  (SELECT count(*) FROM procrastinate_workers
     WHERE last_heartbeat >= now() - make_interval(secs => %(s)s)),
  (SELECT count(*) FROM procrastinate_workers
     WHERE last_heartbeat < now() - make_interval(secs => %(s)s)),
  (SELECT extract(epoch FROM now()) - min(created_at) FROM pausepoint_server_runs
     WHERE status = 'pending')
"""


async def queue_status(db_url: str, *, stalled_seconds: float = 30.0) -> QueueStatus:
    """Read the queue's status (the tables must exist: a front end or worker made them).

    Raises:
        psycopg.errors.UndefinedTable: No front end or worker has run on this database.
    """
    import psycopg

    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        cur = await conn.execute(_QUERY, {"q": QUEUE, "s": stalled_seconds})
        row = await cur.fetchone()
    assert row is not None
    oldest = None if row[6] is None else max(0.0, float(row[6]))
    return QueueStatus(*(int(v) for v in row[:6]), oldest_pending_seconds=oldest)
