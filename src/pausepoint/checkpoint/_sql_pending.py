"""The index of waiting questions in the SQL savers: its schema and its read flow.

``pausepoint_pending`` holds one row per task whose ``"__interrupt__"`` write sits at
the head checkpoint of a thread's root namespace. The saver keeps it in the very
statement (PostgreSQL) or transaction (SQLite) that stores the write or the
checkpoint, whichever saver method, guard or batching stored it
(``_pending_schema.index_upkeep``); a crash can never leave it behind the rows it
indexes, and no saver flow needs a round trip of its own for it:

- an ``"__interrupt__"`` write at a root checkpoint that no newer root checkpoint of
  its thread follows adds its task's row;
- a new root checkpoint removes the rows of its thread's older ones (the questions
  of a checkpoint that is no longer the head no longer wait; SQLite: a trigger);
- deleting a thread or pruning checkpoints removes their rows.

A row means "maybe waiting": whether its task finished (an ordinary write) or got its
answer (a ``"__resume__"`` write reaching the question's position) is read with the
row, from the same writes the engine reads, so the listing is exactly what
``get_state`` shows. Such rows last only until the thread's next checkpoint.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint._dialect import Dialect, Flow, Row, Rows, Statement
from pausepoint.checkpoint._pending_schema import NEWER
from pausepoint.checkpoint._sealing import checkpoint_binding, metadata_binding, write_binding
from pausepoint.checkpoint.base import Checkpoint, CheckpointTuple
from pausepoint.checkpoint.ids import stamp_time
from pausepoint.checkpoint.questions import (
    GRAPH_KEY,
    PendingPage,
    PendingQuery,
    PendingQuestion,
    TaskState,
    UnreadableQuestion,
    apply_write,
    needs_checkpoint,
    questions_of_task,
)
from pausepoint.constants import ASKED, INTERRUPT, RESUME, WRITES_IDX_MAP
from pausepoint.errors import CheckpointDecodeError

if TYPE_CHECKING:
    from pausepoint.checkpoint._sql import SqlCodec
    from pausepoint.config import RunnableConfig

__all__ = ["list_pending_flow"]

Checkpoints = dict[tuple[str, str], Checkpoint]
"""Decoded checkpoints by ``(thread_id, checkpoint_id)``."""

_WRITE = """LEFT JOIN pausepoint_writes {a} ON {a}.thread_id = p.thread_id
    AND {a}.checkpoint_ns = '' AND {a}.checkpoint_id = p.checkpoint_id
    AND {a}.task_id = p.task_id AND {a}.idx = {idx}"""
# The page's rows first, from the index in its order (the planner must not start from
# the writes), then what each row needs, by primary key.
_PAGE = f"""SELECT p.thread_id, p.checkpoint_id, p.task_id FROM pausepoint_pending p
    WHERE NOT (SELECT EXISTS ({NEWER.format(t="p")}))
    AND NOT (SELECT EXISTS (SELECT 1 FROM pausepoint_writes d WHERE d.thread_id = p.thread_id
        AND d.checkpoint_ns = '' AND d.checkpoint_id = p.checkpoint_id
        AND d.task_id = p.task_id AND d.idx >= 0)){{conds}}
    ORDER BY p.checkpoint_id, p.thread_id, p.task_id LIMIT {{limit}}"""
"""``NOT (SELECT EXISTS ...)``, not ``NOT EXISTS``: a scalar subquery is looked up row by
row through the primary keys as the index is read in order, and the read stops at the
limit; PostgreSQL turned ``NOT EXISTS`` into an anti-join that scanned every write."""
# The metadata filter as a scalar subquery, row by row in the index's order: as a join,
# PostgreSQL's planner (which cannot estimate JSON containment) scanned every checkpoint.
_MATCHES = """(SELECT {conds} FROM pausepoint_checkpoints m WHERE m.thread_id = p.thread_id
    AND m.checkpoint_ns = '' AND m.checkpoint_id = p.checkpoint_id)"""
_ROWS = f"""SELECT p.thread_id, p.checkpoint_id, p.task_id, c.{{{{json_select}}}},
    i.type, i.value, i.task_path, a.type, a.value, r.type, r.value
    FROM ({{page}}) p
    JOIN pausepoint_checkpoints c ON c.thread_id = p.thread_id
        AND c.checkpoint_ns = '' AND c.checkpoint_id = p.checkpoint_id
    {_WRITE.format(a="i", idx=-3)} {_WRITE.format(a="a", idx=-5)}
    {_WRITE.format(a="r", idx=-4)}
    ORDER BY p.checkpoint_id, p.thread_id, p.task_id"""
_CHECKPOINTS = """SELECT thread_id, checkpoint_id, type, checkpoint
    FROM pausepoint_checkpoints WHERE checkpoint_ns = ''"""


def list_pending_flow(
    dialect: Dialect,
    codec: SqlCodec,
    query: PendingQuery,
    filter_sql: Callable[[Dialect, Mapping[str, object]], tuple[list[str], list[object], bool]],
) -> Flow[PendingPage]:
    """Read a page of waiting questions from the index (see ``list_pending``).

    ``filter_sql``: ``_sql_filters.filter_sql``, which turns metadata items into conditions.
    Rows are read in batches until the page is full (a row may hold no question
    that waits, or one the filters leave out).
    """
    wanted: dict[str, object] = dict(query.metadata or {})
    if query.graph is not None:
        wanted[GRAPH_KEY] = query.graph
    conds, params, _ = filter_sql(dialect, wanted)
    found: list[PendingQuestion] = []
    errors: list[UnreadableQuestion] = []
    after = query.after
    # One row more than the page tells whether a next page exists; with a cursor, one
    # more again: the first row is the previous page's last task (``>=``: the rest of
    # its questions may be on this page).
    batch = query.limit + (1 if after is None else 2)
    seen: Row = ()
    while True:
        where = [_MATCHES.format(conds=" AND ".join(conds))] if conds else []
        args = list(params)
        if after is not None:
            where.append("(p.checkpoint_id, p.thread_id, p.task_id) >= (?, ?, ?)")
            args += after[:3]
        page_sql = _PAGE.format(conds="".join(f" AND {c}" for c in where), limit=batch)
        sql = _ROWS.format(page=page_sql)
        rows = yield Statement(dialect.sql(sql), args, fetch=True)
        checkpoints = yield from _checkpoints_needed(dialect, codec, rows)
        for row in rows:
            if row[:3] == seen:
                continue  # the last row of the batch before, read again
            try:
                found.extend(_questions_of_row(codec, row, checkpoints))
            except UnreadableQuestion as exc:
                errors.append(exc)
        page = query.page(found, errors)
        if len(rows) < batch or (len(page.items) == query.limit and page.next_cursor):
            return page
        last = rows[-1]
        if query.asked_before is not None and _asked_since(str(last[1]), query.asked_before):
            return page  # rows come in the order asked: the rest were asked later still
        # From the last row read on (``>=``), which the loop above then skips.
        seen = tuple(last[:3])
        after = (str(last[1]), str(last[0]), str(last[2]), 1 << 30)
        batch = min(batch * 2, 5000)


def _asked_since(checkpoint_id: str, when: datetime.datetime) -> bool:
    """Whether a question at ``checkpoint_id`` was surely asked at or after ``when``.

    Only pausepoint's own ids tell their time (others: False, keep reading).
    """
    ts = stamp_time(checkpoint_id)
    return ts is not None and datetime.datetime.fromisoformat(ts) >= when


def _checkpoints_needed(dialect: Dialect, codec: SqlCodec, rows: Rows) -> Flow[Checkpoints]:
    """The checkpoints some rows need (to name a pushed task), in one query.

    Most rows need none: a pull task's stored path names its node, and pausepoint's
    checkpoint ids hold their time. Undecodable ones are left out (their rows fail).
    """
    keys: list[tuple[str, str]] = []
    for row in rows:
        try:
            interrupts = _special(codec, row, INTERRUPT, row[4], row[5])
            if needs_checkpoint(str(row[1]), str(row[2]), interrupts or (), str(row[6] or "")):
                keys.append((str(row[0]), str(row[1])))
        except (CheckpointDecodeError, TypeError, ValueError, AttributeError, IndexError):
            continue
    if not keys:
        return {}
    pairs = ", ".join(["(?, ?)"] * len(keys))
    sql = f"{_CHECKPOINTS} AND (thread_id, checkpoint_id) IN (VALUES {pairs})"
    found = yield Statement(dialect.sql(sql), [v for k in keys for v in k], fetch=True)
    out: Checkpoints = {}
    for thread, cid, type_, blob in found:
        with contextlib.suppress(CheckpointDecodeError, TypeError, ValueError):
            aad = checkpoint_binding(str(thread), "", str(cid))
            out[(str(thread), str(cid))] = codec.load(type_, blob, aad, "the checkpoint")
    return out


def _questions_of_row(codec: SqlCodec, row: Row, checkpoints: Checkpoints) -> list[PendingQuestion]:
    thread, cid, task_id = str(row[0]), str(row[1]), str(row[2])
    where = f"the waiting question of task {task_id!r}"
    try:
        metadata = codec.load_metadata(row[3], metadata_binding(thread, "", cid))
        state = TaskState()
        for channel, type_, blob in ((INTERRUPT, row[4], row[5]), (ASKED, row[7], row[8])):
            if type_ is not None:
                apply_write(state, channel, _special(codec, row, channel, type_, blob))
        if row[9] is not None:
            apply_write(state, RESUME, _special(codec, row, RESUME, row[9], row[10]))
        if not state.waiting():
            return []
        path = str(row[6] or "")
        loaded: Any = checkpoints.get((thread, cid)) or {}
        config: RunnableConfig = {
            "configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": cid}
        }
        head = CheckpointTuple(config, loaded, metadata)  # type: ignore[arg-type]
        return questions_of_task(head, task_id, path, state, lambda: loaded)
    except CheckpointDecodeError as exc:
        raise UnreadableQuestion(thread, f"{where} cannot be read: {exc}") from exc
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        raise UnreadableQuestion(
            thread, f"{where} cannot be read ({type(exc).__name__}: {exc}); the row is corrupt"
        ) from exc


def _special(codec: SqlCodec, row: Row, channel: str, type_: Any, blob: Any) -> Any:
    """The value of a task's special write (``channel``: its fixed index) in ``row``."""
    idx = WRITES_IDX_MAP[channel]
    aad = write_binding(str(row[0]), "", str(row[1]), str(row[2]), idx, channel)
    return codec.load(type_, blob, aad, f"write {idx} of task {str(row[2])!r}")
