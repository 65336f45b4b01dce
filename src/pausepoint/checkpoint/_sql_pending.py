"""The index of waiting questions in the SQL savers: its schema and its read flow.

``pausepoint_pending`` holds one row per task whose ``"__interrupt__"`` write sits at
the head checkpoint of a thread's root namespace. The database keeps it itself, with
triggers, so it changes in the very statement (hence transaction) that stores the
write or the checkpoint, whichever saver method, guard or batching stored it; a
crash can never leave it behind the rows it indexes, and no saver flow needs a
statement (or a round trip) of its own for it:

- an ``"__interrupt__"`` write at a root checkpoint that no newer root checkpoint of
  its thread follows adds its task's row;
- a new root checkpoint removes the rows of its thread's older ones (the questions
  of a checkpoint that is no longer the head no longer wait);
- deleting the ``"__interrupt__"`` write (``delete_thread``) removes the row.

A row means "maybe waiting": whether its task finished (an ordinary write) or got its
answer (a ``"__resume__"`` write reaching the question's position) is read with the
row, from the same writes the engine reads, so the listing is exactly what
``get_state`` shows. Such rows last only until the thread's next checkpoint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint._dialect import Dialect, Flow, Row, Statement
from pausepoint.checkpoint._pending_schema import NEWER
from pausepoint.checkpoint.base import CheckpointTuple
from pausepoint.checkpoint.questions import (
    GRAPH_KEY,
    PendingPage,
    PendingQuery,
    PendingQuestion,
    TaskState,
    apply_write,
    needs_checkpoint,
    questions_of_task,
)
from pausepoint.constants import ASKED, INTERRUPT, RESUME
from pausepoint.errors import CheckpointDecodeError

if TYPE_CHECKING:
    from pausepoint.checkpoint._sql import SqlCodec

__all__ = ["list_pending_flow"]

_WRITE = """LEFT JOIN pausepoint_writes {a} ON {a}.thread_id = p.thread_id
    AND {a}.checkpoint_ns = '' AND {a}.checkpoint_id = p.checkpoint_id
    AND {a}.task_id = p.task_id AND {a}.idx = {idx}"""
_SELECT = f"""SELECT p.thread_id, p.checkpoint_id, p.task_id, c.{{json_select}},
    i.type, i.value, i.task_path, a.type, a.value, r.type, r.value
    FROM pausepoint_pending p
    JOIN pausepoint_checkpoints c ON c.thread_id = p.thread_id
        AND c.checkpoint_ns = '' AND c.checkpoint_id = p.checkpoint_id
    {_WRITE.format(a="i", idx=-3)} {_WRITE.format(a="a", idx=-5)}
    {_WRITE.format(a="r", idx=-4)}
    WHERE i.type IS NOT NULL AND NOT EXISTS ({NEWER.format(t="p")})
    AND NOT EXISTS (SELECT 1 FROM pausepoint_writes d WHERE d.thread_id = p.thread_id
        AND d.checkpoint_ns = '' AND d.checkpoint_id = p.checkpoint_id
        AND d.task_id = p.task_id AND d.idx >= 0)"""
_ORDER = " ORDER BY p.checkpoint_id, p.thread_id, p.task_id LIMIT "
_CHECKPOINT = """SELECT type, checkpoint FROM pausepoint_checkpoints
    WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?"""


def list_pending_flow(
    dialect: Dialect,
    codec: SqlCodec,
    query: PendingQuery,
    filter_sql: Any,
) -> Flow[PendingPage]:
    """Read a page of waiting questions from the index (see ``list_pending``).

    ``filter_sql``: ``_sql._filter_sql``, which turns metadata items into conditions.
    Rows are read in batches until the page is full (a row may hold no question
    that waits, or one the filters leave out).
    """
    wanted: dict[str, Any] = dict(query.metadata or {})
    if query.graph is not None:
        wanted[GRAPH_KEY] = query.graph
    conds, params, _ = filter_sql(dialect, wanted)
    found: list[PendingQuestion] = []
    errors: list[CheckpointDecodeError] = []
    after = query.after
    batch = query.limit + 1
    while True:
        sql, args = _SELECT, list(params)
        if conds:
            sql += " AND " + " AND ".join(conds)
        if after is not None:
            sql += " AND (p.checkpoint_id, p.thread_id, p.task_id) >= (?, ?, ?)"
            args += after[:3]
        rows = yield Statement(dialect.sql(sql + _ORDER + str(batch)), args, fetch=True)
        for row in rows:
            try:
                found.extend((yield from _questions_of_row(dialect, codec, row)))
            except CheckpointDecodeError as exc:
                errors.append(exc)
        page = query.page(found, errors)
        if len(rows) < batch or (len(page.items) == query.limit and page.next_cursor):
            return page
        last = rows[-1]
        # Past the last row read: its questions are all in ``found`` already.
        after = (str(last[1]), str(last[0]), str(last[2]), 1 << 30)
        batch = min(batch * 4, 5000)


def _questions_of_row(dialect: Dialect, codec: SqlCodec, row: Row) -> Flow[list[PendingQuestion]]:
    thread, cid, task_id = str(row[0]), str(row[1]), str(row[2])
    where = f"the waiting question of task {task_id!r} in thread {thread!r}"
    try:
        metadata = codec.load_metadata(row[3])
        state = TaskState()
        for channel, type_, blob in ((INTERRUPT, row[4], row[5]), (ASKED, row[7], row[8])):
            if type_ is not None:
                apply_write(state, channel, codec.load(type_, blob))
        if row[9] is not None:
            apply_write(state, RESUME, codec.load(row[9], row[10]))
        if not state.waiting():
            return []
        path = str(row[6] or "")
        checkpoint: Any = None
        if needs_checkpoint(cid, task_id, state.interrupts, path):
            stmt = Statement(dialect.sql(_CHECKPOINT), (thread, cid), fetch=True)
            rows = yield stmt
            checkpoint = codec.load(rows[0][0], rows[0][1]) if rows else {}
        config: Any = {
            "configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": cid}
        }
        head = CheckpointTuple(config, checkpoint, metadata)  # type: ignore[arg-type]
        loaded: Any = checkpoint or {}
        return questions_of_task(head, task_id, path, state, lambda: loaded)
    except CheckpointDecodeError as exc:
        raise CheckpointDecodeError(f"{where} cannot be read: {exc}") from exc
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        raise CheckpointDecodeError(
            f"{where} cannot be read ({type(exc).__name__}: {exc}); the row is corrupt"
        ) from exc
