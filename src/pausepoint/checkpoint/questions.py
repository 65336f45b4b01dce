"""Waiting questions across threads: what ``saver.list_pending`` returns.

A *pending question* is an ``interrupt()`` that waits for an answer: asked (an
``"__interrupt__"`` write of a task at the head checkpoint of a thread's root
namespace), with no stored answer for it (a ``"__resume__"`` write long enough to
reach its position), and its task not finished since. It is exactly what
``graph.get_state(config).interrupts`` shows for the thread, one item per question.

This module holds the values (`PendingQuestion`, `PendingPage`), the rules that
turn one head checkpoint's writes into questions (`questions_of_head`), the filters
and the cursor. Every saver shares them: the default ``list_pending`` of
[`BaseCheckpointSaver`][pausepoint.checkpoint.base.BaseCheckpointSaver] scans the
threads' head checkpoints (correct, slow: for third-party savers), the SQL savers
read an index table kept by the database itself (``_sql_pending``).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from xxhash import xxh3_128_hexdigest

from pausepoint.checkpoint.ids import stamp_time
from pausepoint.constants import (
    ASKED,
    ASKED_SPAN,
    ERROR,
    INTERRUPT,
    NULL_TASK_ID,
    PULL,
    PUSH,
    RESUME,
    SCHEDULED,
)
from pausepoint.errors import CheckpointDecodeError

if TYPE_CHECKING:
    from collections.abc import Callable

    from pausepoint.checkpoint.base import Checkpoint, CheckpointTuple, PendingWrite
    from pausepoint.types import Interrupt

__all__ = ["GRAPH_KEY", "PendingPage", "PendingQuestion", "UnreadableQuestion"]
"""The public names; the rest serve the savers (``_pending``, ``_sql_pending``)."""

GRAPH_KEY = "graph_id"
"""The checkpoint metadata key naming a thread's graph (LangGraph Platform's name for
it). A run sets it with ``config={"metadata": {"graph_id": "approvals"}}``, or with a
``configurable`` key of that name; ``list_pending(graph=...)`` filters on it."""

SortKey = tuple[str, str, str, int]
"""Where a question sorts: ``(checkpoint id, thread id, task id, index in the task)``.

Checkpoint ids are time-ordered, so this is the order in which questions were asked;
a new question sorts after every question already listed (the cursor stays valid)."""


@dataclasses.dataclass(frozen=True, slots=True)
class PendingQuestion:
    """One question that waits for an answer, in one thread.

    Attributes:
        thread_id: The thread that waits.
        checkpoint_ns: Its checkpoint namespace: ``""``, the root graph's.
        checkpoint_id: The head checkpoint the question was asked at.
        task_id: The task that asked (or whose subgraph asked).
        task_name: That task's node ("" when the saver cannot tell).
        interrupt_id: ``Interrupt.id``: the 32-hex id of the asking task.
        position: Which ``interrupt()`` call of the task asked it (0 for the first).
        value: What the node passed to ``interrupt()``.
        response_schema: The JSON Schema the answer must match, or None.
        asked_at: When it was asked: the checkpoint's time (UTC).
        deadline: When it expires (UTC), or None.
        on_timeout: What happens on expiry (see ``interrupt()``), or None.
        graph: The graph's name (the checkpoint metadata's ``"graph_id"``), or None.
        metadata: The checkpoint's metadata.
    """

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    task_id: str
    task_name: str
    interrupt_id: str
    position: int
    value: Any
    response_schema: dict[str, Any] | None
    asked_at: datetime.datetime
    deadline: datetime.datetime | None
    on_timeout: Any
    graph: str | None
    metadata: dict[str, Any]
    sort_key: SortKey = dataclasses.field(default=("", "", "", 0), repr=False, compare=False)
    """Where it sorts in ``list_pending`` (see `SortKey`)."""

    @property
    def question_id(self) -> str:
        """The key to answer it with: ``Command(resume={q.question_id: answer})``."""
        return f"{self.interrupt_id}:{self.position}"


class UnreadableQuestion(CheckpointDecodeError):
    """A stored question ``list_pending`` cannot read; the others are listed all the same.

    Attributes:
        thread_id: The thread it belongs to.
    """

    def __init__(self, thread_id: str, message: str) -> None:
        super().__init__(f"thread {thread_id!r}: {message}")
        self.thread_id = thread_id


@dataclasses.dataclass(frozen=True, slots=True)
class PendingPage:
    """One page of ``list_pending``.

    Attributes:
        items: The questions, oldest first.
        next_cursor: Pass it as ``cursor=`` for the next page; None after the last.
        errors: Stored rows that could not be read, each an `UnreadableQuestion` (a
            ``CheckpointDecodeError``) naming its thread; the other rows are listed.
    """

    items: list[PendingQuestion]
    next_cursor: str | None
    errors: list[UnreadableQuestion] = dataclasses.field(default_factory=list[UnreadableQuestion])


@dataclasses.dataclass(frozen=True, slots=True)
class PendingQuery:
    """The arguments of ``list_pending``, checked once (see `PendingQuery.of`)."""

    graph: str | None = None
    metadata: Mapping[str, object] | None = None
    asked_before: datetime.datetime | None = None
    due_by: datetime.datetime | None = None
    limit: int = 50
    after: SortKey | None = None

    @classmethod
    def of(
        cls,
        *,
        graph: str | None = None,
        metadata: Mapping[str, object] | None = None,
        asked_before: datetime.datetime | None = None,
        due_by: datetime.datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> PendingQuery:
        """Check ``list_pending``'s arguments; raise ``ValueError`` naming a bad one."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"list_pending(limit=...) must be a positive int, not {limit!r}")
        for name, when in (("asked_before", asked_before), ("due_by", due_by)):
            if when is not None and (
                not isinstance(when, datetime.datetime) or when.tzinfo is None  # pyright: ignore[reportUnnecessaryIsInstance]
            ):
                raise ValueError(
                    f"list_pending({name}=...) must be a timezone-aware datetime, not {when!r}"
                )
        if metadata is not None and not isinstance(metadata, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"list_pending(metadata=...) must be a mapping, not {metadata!r}")
        after = decode_cursor(cursor) if cursor is not None else None
        return cls(graph, metadata, asked_before, due_by, limit, after)

    def matches(self, q: PendingQuestion) -> bool:
        """Whether ``q`` passes the filters (not the cursor)."""
        if self.graph is not None and q.graph != self.graph:
            return False
        if self.metadata and not all(
            k in q.metadata and q.metadata[k] == v for k, v in self.metadata.items()
        ):
            return False
        if self.asked_before is not None and not q.asked_at < self.asked_before:
            return False
        return self.due_by is None or (q.deadline is not None and q.deadline <= self.due_by)

    def page(
        self, found: Iterable[PendingQuestion], errors: Sequence[UnreadableQuestion] = ()
    ) -> PendingPage:
        """The page of ``found`` (in any order) this query asks for."""
        after = self.after
        wanted = sorted(
            (q for q in found if (after is None or q.sort_key > after) and self.matches(q)),
            key=lambda q: q.sort_key,
        )
        items = wanted[: self.limit]
        more = len(wanted) > self.limit
        return PendingPage(items, encode_cursor(items[-1].sort_key) if more else None, list(errors))


def encode_cursor(key: SortKey) -> str:
    """An opaque cursor for the questions after ``key``."""
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode()


def decode_cursor(cursor: str) -> SortKey:
    """The sort key a cursor names; ``ValueError`` for one this module did not make."""
    try:
        cid, thread, task, k = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        if not all(isinstance(s, str) for s in (cid, thread, task)) or type(k) is not int:
            raise TypeError("wrong types")
    except (ValueError, TypeError, AttributeError) as exc:
        raise ValueError(
            f"list_pending(cursor=...) got {cursor!r}, which is not a cursor list_pending "
            "returned (pass a PendingPage's next_cursor)"
        ) from exc
    return (cid, thread, task, k)


@dataclasses.dataclass(slots=True)
class TaskState:
    """What one task's special writes say about its questions (see ``TaskRecord``)."""

    interrupts: tuple[Interrupt, ...] = ()
    asked: int | None = None
    resume: list[object] | None = None
    done: bool = False

    def waiting(self) -> bool:
        """Asked, not finished, and no stored answer reaches its position."""
        if not self.interrupts or self.done:
            return False
        answers = self.resume
        position = self.own_position()
        return answers is None or len(answers) <= position

    def own_position(self) -> int:
        """Position of the task's own question (the loop's ``TaskRecord.position``)."""
        if self.asked is not None:
            return self.asked
        return len(self.resume) if self.resume else 0


def task_states(pending: Iterable[PendingWrite]) -> dict[str, TaskState]:
    """Group a checkpoint's pending writes into each task's `TaskState`."""
    states: dict[str, TaskState] = {}
    for task_id, channel, value in pending:
        if task_id == NULL_TASK_ID:
            continue
        state = states.get(task_id)
        if state is None:
            state = states[task_id] = TaskState()
        apply_write(state, channel, value)
    return states


def apply_write(state: TaskState, channel: str, value: Any) -> None:
    """Fold one write of the task into ``state`` (as ``loop.pending.read_records`` does)."""
    if channel == INTERRUPT:
        state.interrupts = tuple(value or ())
    elif channel == RESUME:
        state.resume = list(value) if isinstance(value, (list, tuple)) else [value]  # pyright: ignore[reportUnknownArgumentType]
    elif channel == ASKED:
        state.asked = value
    elif channel not in (ERROR, SCHEDULED, ASKED_SPAN):
        state.done = True


def questions_of_head(
    head: CheckpointTuple, paths: Mapping[str, str] | None = None
) -> list[PendingQuestion]:
    """The questions waiting at ``head``, a thread's newest root checkpoint.

    ``paths``: task id → the task path the saver stored with its writes (helps name
    the task without decoding the checkpoint; optional).
    """
    conf = head.config.get("configurable") or {}
    thread = str(conf.get("thread_id"))
    try:
        states = task_states(head.pending_writes or ())
        out: list[PendingQuestion] = []
        for task_id, state in states.items():
            if state.waiting():
                path = (paths or {}).get(task_id, "")
                out.extend(questions_of_task(head, task_id, path, state, lambda: head.checkpoint))
        return out
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        raise UnreadableQuestion(
            thread,
            f"its waiting questions cannot be read ({type(exc).__name__}: {exc}); "
            "the row is corrupt",
        ) from exc


def questions_of_task(
    head: CheckpointTuple,
    task_id: str,
    path: str,
    state: TaskState,
    checkpoint: Callable[[], Checkpoint],
) -> list[PendingQuestion]:
    """One `PendingQuestion` per interrupt of a waiting task.

    ``head`` gives the config and metadata (its checkpoint may be a placeholder);
    ``checkpoint()`` loads the real one, only when the task's name or the time of
    the question needs it.
    """
    conf = head.config.get("configurable") or {}
    cid = str(conf.get("checkpoint_id"))
    thread = str(conf.get("thread_id"))
    metadata = dict(head.metadata)
    graph = metadata.get(GRAPH_KEY)
    asked_at = _asked_at(cid, checkpoint)
    step = metadata.get("step")
    name = task_name(
        task_id,
        state.interrupts,
        path,
        checkpoint,
        cid,
        step + 1 if isinstance(step, int) else None,
    )
    out: list[PendingQuestion] = []
    for k, i in enumerate(state.interrupts):
        position = i.position if i.position is not None else state.own_position()
        out.append(
            PendingQuestion(
                thread_id=thread,
                checkpoint_ns="",
                checkpoint_id=cid,
                task_id=task_id,
                task_name=name,
                interrupt_id=str(i.id),
                position=int(position),
                value=i.value,
                response_schema=getattr(i, "response_schema", None),
                asked_at=asked_at,
                deadline=getattr(i, "deadline", None),
                on_timeout=getattr(i, "on_timeout", None),
                graph=graph if isinstance(graph, str) else None,
                metadata=metadata,
                sort_key=(cid, thread, task_id, k),
            )
        )
    return out


def _asked_at(checkpoint_id: str, checkpoint: Callable[[], Checkpoint]) -> datetime.datetime:
    ts = stamp_time(checkpoint_id) or checkpoint()["ts"]
    when = datetime.datetime.fromisoformat(ts)
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return when.astimezone(datetime.UTC)


def task_name(
    task_id: str,
    interrupts: Sequence[Interrupt],
    path: str,
    checkpoint: Callable[[], Checkpoint],
    checkpoint_id: str = "",
    step: int | None = None,
) -> str:
    """The node of task ``task_id``, found without the graph.

    A pull task's stored path (``"('__pregel_pull', 'node')"``) names its node.
    Otherwise the names the checkpoint mentions (``Send`` packets, channels, nodes
    that ran) are candidates, each confirmed by a hash: a task's own interrupt id is
    the digest of ``"<node>:<task id>"``; a question a subgraph asked carries the
    digest of the subgraph's namespace instead, so then the task id itself is
    recomputed, as the loop makes it, from ``checkpoint_id`` and ``step`` (the step
    the head checkpoint's tasks run at): with the node's name for a pull task, the
    packet's index for a pushed one. "" when none is confirmed.
    """
    if not interrupts:
        return ""
    pulled = _pull_name(path)
    if pulled:
        return pulled
    target = str(interrupts[0].id)
    saved = checkpoint()
    names = list(_candidates(saved))
    for name in names:
        if xxh3_128_hexdigest(f"{name}:{task_id}".encode()) == target:
            return name
    if step is None or not checkpoint_id:
        return ""
    return _named_by_id(task_id, saved, names, checkpoint_id, step)


def _named_by_id(
    task_id: str, saved: Checkpoint, names: list[str], checkpoint_id: str, step: int
) -> str:
    """The candidate whose task id, recomputed, is ``task_id`` ("" if none is)."""
    for idx, name in enumerate(_packet_nodes(saved)):
        if name is not None and _task_id(checkpoint_id, step, name, PUSH, str(idx)) == task_id:
            return name
    for name in names:
        if _task_id(checkpoint_id, step, name, PULL, name) == task_id:
            return name
    return ""


def _task_id(checkpoint_id: str, step: int, name: str, kind: str, key: str) -> str:
    """A root-namespace task's id, as ``pausepoint.loop.tasks.task_id`` makes it.

    Ids are stored, so the formula is a format; tests/savers/test_pending.py checks
    that the two agree.
    """
    digest = xxh3_128_hexdigest(
        f"{checkpoint_id}\x00\x00{step}\x00{name}\x00{kind}\x00{key}".encode()
    )
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:]}"


def _pull_name(path: str) -> str:
    prefix = f"('{PULL}', '"
    if path.startswith(prefix) and path.endswith("')"):
        return path[len(prefix) : -2]
    return ""


def _packet_nodes(checkpoint: Checkpoint) -> list[str | None]:
    """The node of each ``Send`` packet the checkpoint holds, in order (None: unreadable)."""
    values = checkpoint.get("channel_values") or {}
    packets: Sequence[object] = values.get("__pregel_tasks") or ()
    nodes: list[str | None] = []
    for p in packets:
        node = getattr(p, "node", None)
        nodes.append(node if isinstance(node, str) else None)
    return nodes


def _candidates(checkpoint: Checkpoint) -> Iterable[str]:
    seen: set[str] = set()
    names: list[object] = list(_packet_nodes(checkpoint))
    versions = checkpoint.get("channel_versions") or {}
    names.extend(str(chan).removeprefix("branch:to:") for chan in versions)
    names.extend(checkpoint.get("versions_seen") or {})
    for name in names:
        if isinstance(name, str) and name not in seen:
            seen.add(name)
            yield name


def needs_checkpoint(
    checkpoint_id: str, task_id: str, interrupts: Sequence[Interrupt], path: str
) -> bool:
    """Whether `questions_of_task` must load the checkpoint (to name the task or date it)."""
    del task_id  # a pull task's path names its node, whoever asked
    if stamp_time(checkpoint_id) is None:
        return True
    return bool(interrupts) and not _pull_name(path)
