"""Applying declared migrations to a stored thread (issue 31, docs/deploys.md).

Where a thread is loaded into a graph whose fingerprint differs from the one that
wrote it, and the graph declares migrations (`pausepoint.loop.migration_ops`), the
thread is moved: `plan_migration` reads the newest checkpoint into a `StoredThread`
(its pending writes grouped by the task that saved them, each task found by its
node and path, since a task's id hashes its node's name), applies the migrations in
order, and makes a new checkpoint of it: source ``"migrate"``, the running graph's
stamp, the same step, and each pending task's writes saved anew under the id it
has there. A question keeps its position and its answer; its interrupt id is the
one its task's new namespace gives (``metadata["interrupts"]`` maps old → new, so an
answer sent by the old id is still taken). Subgraphs a question waits in are moved
with it, into the namespaces their tasks' new ids give, with their own migrations.

The new checkpoint's id is derived from the old one's (one clock tick later, the
rest hashed), so a snapshot of the thread before the move shows the very ids the
move writes, and a move cut short and made again writes the same rows. Nothing is
written here: a run saves a plan with `save_plan` (subgraphs first, the root last,
each checkpoint with its writes in one commit), so a crash leaves the thread as it
was or moved. A migration that fails raises ``MigrationError``; one that leaves some
piece the graph cannot honour, ``GraphMismatchError`` naming what remains.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any, cast

from xxhash import xxh3_64_intdigest, xxh3_128_hexdigest

from pausepoint.checkpoint.base import CheckpointRef, CheckpointTuple, PendingWrite, TaskWrites
from pausepoint.checkpoint.ids import new_stamp, now_iso
from pausepoint.constants import BRANCH_TO, INTERRUPT, JOIN, NULL_TASK_ID, PULL, PUSH, TASKS
from pausepoint.errors import GraphMismatchError, MigrationError
from pausepoint.loop.compat_check import (
    STAMP,
    Problem,
    find_mismatch,
    refuse_mismatch,
    same_graph,
)
from pausepoint.loop.effects import LoadCheckpoint, SaveCheckpoint
from pausepoint.loop.migration_ops import StoredTask, StoredThread
from pausepoint.loop.namespaces import stateful_ns
from pausepoint.loop.pending import TaskRecord, read_records
from pausepoint.loop.restore import next_step, restore
from pausepoint.loop.tasks import task_id, task_ns
from pausepoint.types import Interrupt, Send

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import Checkpoint, CheckpointMetadata
    from pausepoint.loop.spec import GraphSpec

__all__ = [
    "MigrationPlan",
    "declares",
    "fitted",
    "plan_migration",
    "save_plan",
    "translated_resume",
]

MIGRATE = "migrate"
"""The ``source`` of a migrated checkpoint's metadata (docs/format.md)."""
_CALL = "__call__"


@dataclasses.dataclass(slots=True)
class Level:
    """One namespace's migrated checkpoint, ready to save."""

    parent: CheckpointRef
    """Where it goes: its thread, namespace and parent (None: the namespace's first)."""
    saved: CheckpointTuple
    """It as a run reads it back (config at its id, its pending writes)."""
    writes: list[TaskWrites]


@dataclasses.dataclass(slots=True)
class MigrationPlan:
    """A thread's move to the running graph: its levels, subgraphs first, root last."""

    levels: list[Level] = dataclasses.field(default_factory=list[Level])
    applied: list[str] = dataclasses.field(default_factory=list[str])
    """Labels of the migrations that changed something, in order."""
    renamed: dict[str, str] = dataclasses.field(default_factory=dict[str, str])
    """Interrupt id at the old checkpoint → id at the new one."""

    @property
    def root(self) -> CheckpointTuple:
        """The migrated checkpoint of the namespace the plan was made for."""
        return self.levels[-1].saved

    def view(self, ns: str) -> CheckpointTuple | None:
        """The migrated checkpoint of namespace ``ns``, if the plan moves one there."""
        for level in self.levels:
            if level.parent.checkpoint_ns == ns:
                return level.saved
        return None


def declares(spec: GraphSpec) -> bool:
    """Whether ``spec`` or a subgraph of it declares migrations."""
    if spec.migrations:
        return True
    for node in spec.nodes.values():
        sub: Any = node.subgraph or node.calls_graph
        inner = getattr(sub, "spec", None)
        if inner is not None and declares(inner):
            return True
    return False


def plan_migration(
    spec: GraphSpec, saved: CheckpointTuple
) -> Generator[LoadCheckpoint, Any, MigrationPlan]:
    """The move of ``saved`` (and the subgraphs its questions wait in) to ``spec``.

    Raises:
        MigrationError: A migration raised: nothing is written.
        GraphMismatchError: What the migrations leave that ``spec`` cannot honour.
    """
    plan = MigrationPlan()
    parents = dict(saved.metadata.get("parents") or {})
    ref = CheckpointRef.of(saved.config)
    problems = yield from _level(spec, saved, ref.at(ref.checkpoint_id), parents, plan)
    if problems:
        conf = saved.config.get("configurable") or {}
        raise GraphMismatchError(
            str(conf.get("thread_id")), saved.checkpoint["id"], problems, applied=plan.applied
        )
    return plan


def fitted(
    spec: GraphSpec, saved: CheckpointTuple, *, movable: bool
) -> Generator[LoadCheckpoint | SaveCheckpoint, Any, CheckpointTuple]:
    """``saved`` (another graph wrote it) made to fit ``spec``, or refused.

    ``movable``: ``saved`` is its namespace's newest, loaded by a run or an update:
    if the graph declares migrations, the thread is moved and the move saved (the
    migrated checkpoint is returned). Otherwise ``GraphMismatchError`` is raised
    when it does not fit.
    """
    if movable and declares(spec):
        plan = yield from plan_migration(spec, saved)
        yield from save_plan(plan)
        return plan.root
    yield from refuse_mismatch(spec, saved)
    return saved


def save_plan(plan: MigrationPlan) -> Generator[SaveCheckpoint, Any, None]:
    """Save a plan: each checkpoint with its writes in one commit, the root's last."""
    for level in plan.levels:
        save = SaveCheckpoint(level.parent, level.saved.checkpoint, level.saved.metadata, {})
        save.own_writes = level.writes
        yield save


def translated_resume(resume: object, metadata: Mapping[str, Any]) -> object:
    """A resume map keyed by interrupt ids from before a migration, keyed by today's."""
    moved: object = metadata.get("interrupts")
    if metadata.get("source") != MIGRATE or not isinstance(moved, dict) or not moved:
        return resume
    if not isinstance(resume, dict):
        return resume
    ids = cast("dict[str, str]", moved)
    out: dict[object, object] = {}
    for key, value in cast("dict[object, object]", resume).items():
        if isinstance(key, str):
            iid, sep, at = key.partition(":")
            out[ids.get(iid, iid) + sep + at] = value
        else:
            out[key] = value
    return out


# --- one namespace ---------------------------------------------------------------------


def _level(
    spec: GraphSpec,
    saved: CheckpointTuple,
    where: CheckpointRef,
    parents: dict[str, str],
    plan: MigrationPlan,
) -> Generator[LoadCheckpoint, Any, list[Problem]]:
    """Move one namespace's checkpoint ``saved`` to ``where`` (its new namespace)."""
    old_ns = _ns(saved)
    thread, unplaced = _decompose(spec, saved, old_ns)
    if not same_graph(spec, saved.checkpoint):
        _apply(spec, saved, thread, plan)
    stamp: Mapping[str, object] = spec.shape.stamp if spec.shape is not None else {}
    new_id = _derived_id(
        saved.checkpoint["id"], f"{where.checkpoint_ns}\x00{stamp.get('fingerprint')}"
    )
    ids = _new_ids(thread, new_id, where.checkpoint_ns)
    own = _own_renames(thread, ids, old_ns, where.checkpoint_ns)
    plan.renamed.update(own)
    problems = _calls_asking(thread)
    kids = {**parents, where.checkpoint_ns: new_id}
    for task in thread.tasks:
        problems += yield from _child(spec, task, ids, old_ns, where, kids, plan)
    pending = _pending(thread, ids, unplaced, plan.renamed)
    moved_here = {
        i.id: plan.renamed[i.id]
        for t in thread.tasks
        for i in _interrupts(t)
        if i.id in plan.renamed
    }
    checkpoint: Checkpoint = {
        "v": saved.checkpoint["v"],
        "id": new_id,
        "ts": now_iso(),
        "channel_values": thread.values,
        "channel_versions": thread.versions,
        "versions_seen": thread.seen,
        "updated_channels": None,
    }
    checkpoint[STAMP] = _checking_stamp(spec, saved.checkpoint, thread)  # pyright: ignore[reportGeneralTypeIssues]
    metadata = _metadata(saved, thread, parents, plan, moved_here)
    conf = {"thread_id": where.thread_id, "checkpoint_ns": where.checkpoint_ns}
    config = {"configurable": {**conf, "checkpoint_id": new_id}}
    parent_config = (
        None
        if where.checkpoint_id is None
        else {"configurable": {**conf, "checkpoint_id": where.checkpoint_id}}
    )
    moved = CheckpointTuple(config, checkpoint, metadata, parent_config, pending)  # pyright: ignore[reportArgumentType]
    problems += find_mismatch(spec, moved, restore(spec, moved)).problems
    if spec.shape is not None:
        checkpoint[STAMP] = spec.shape.stamp  # pyright: ignore[reportGeneralTypeIssues]
    writes = [
        TaskWrites(tid, [(w.channel, w.value) for w in pending if w.task_id == tid], _path(t))
        for t, tid in ((t, ids[id(t)]) for t in thread.tasks)
    ]
    writes = [w for w in writes if w.writes]
    plan.levels.append(Level(where, moved, writes))
    return problems


def _ns(saved: CheckpointTuple) -> str:
    return str((saved.config.get("configurable") or {}).get("checkpoint_ns", ""))


def _decompose(
    spec: GraphSpec, saved: CheckpointTuple, ns: str
) -> tuple[StoredThread, dict[str, list[tuple[str, object]]]]:
    """``saved`` as a `StoredThread`, and the writes of tasks it could not place."""
    stored = saved.checkpoint
    step = next_step(saved.metadata)
    records: dict[str, list[tuple[str, object]]] = {}
    updates: list[tuple[str, object]] = []
    for tid, channel, value in saved.pending_writes or ():
        if tid == NULL_TASK_ID:
            updates.append((channel, value))
        else:
            records.setdefault(tid, []).append((channel, value))
    values = dict(stored["channel_values"])
    versions = dict(stored["channel_versions"])
    seen = {node: dict(v) for node, v in stored["versions_seen"].items()}
    old_stamp: object = stored.get(STAMP)
    reducers: object = old_stamp.get("reducers") if isinstance(old_stamp, dict) else None  # pyright: ignore[reportUnknownMemberType]
    thread = StoredThread(
        values, versions, seen, [], updates,
        dict(cast("dict[str, str]", reducers)) if isinstance(reducers, dict) else {},
        namespace=ns, step=step,
    )  # fmt: skip
    names = {*seen, *spec.nodes, *(_target(k) for k in {*values, *versions})}
    for op in spec.migrations:
        names.update(op.nodes)
    cid = stored["id"]
    for name in sorted(n for n in names if n):
        tid = task_id(cid, ns, step, name, PULL, name)
        if tid in records:
            thread.tasks.append(StoredTask(name, "pull", 0, records.pop(tid), None, name, tid))
    packets: object = values.get(TASKS)
    for idx, send in enumerate(cast("list[object]", packets) if isinstance(packets, list) else []):
        if isinstance(send, Send):
            tid = task_id(cid, ns, step, send.node, PUSH, str(idx))
            if tid in records:
                thread.tasks.append(
                    StoredTask(send.node, "push", idx, records.pop(tid), None, send.node, tid)
                )
    _find_calls(thread, records, cid, ns, step)
    return thread, records


def _target(key: str) -> str:
    if key.startswith(BRANCH_TO):
        return key[len(BRANCH_TO) :]
    if key.startswith(JOIN):
        return key.rpartition(":")[2]
    return ""


def _find_calls(
    thread: StoredThread, records: dict[str, list[tuple[str, object]]], cid: str, ns: str, step: int
) -> None:
    """Place the records of ``@task`` calls: each call's id hashes its caller's."""
    queue = list(thread.tasks)
    limit = 2 * (len(records) + len(queue)) + 16
    while queue and records:
        parent = queue.pop(0)
        for index in range(limit):
            tid = task_id(cid, ns, step, _CALL, PUSH, f"{parent.old_id}/{index}")
            if tid in records:
                call = StoredTask(_CALL, "call", index, records.pop(tid), parent, _CALL, tid)
                thread.tasks.append(call)
                queue.append(call)


def _apply(
    spec: GraphSpec, saved: CheckpointTuple, thread: StoredThread, plan: MigrationPlan
) -> None:
    for op in spec.migrations:
        try:
            changed = op.apply(thread)
        except Exception as exc:
            conf = saved.config.get("configurable") or {}
            raise MigrationError(
                f"migration {op.label} failed on thread {conf.get('thread_id')!r} "
                f"(checkpoint {saved.checkpoint['id']!r}, namespace {_ns(saved)!r}): "
                f"{type(exc).__name__}: {exc}. Nothing was written: fix the migration "
                "and load the thread again (see docs/deploys.md)",
                label=op.label,
            ) from exc
        if changed and op.label not in plan.applied:
            plan.applied.append(op.label)


def _derived_id(old: str, salt: str) -> str:
    """The migrated checkpoint's id: one tick after ``old``, the rest hashed from ``salt``.

    The same thread moved by the same graph gets the same id (a snapshot shows what
    the move writes; a move made again rewrites the same rows). An id not made by
    `new_stamp` (another saver's) gets a new one.
    """
    if len(old) != 36 or old[14] != "6":
        return new_stamp()[0]
    try:
        ticks = int(old[:8] + old[9:13] + old[15:18], 16) + 1
    except ValueError:
        return new_stamp()[0]
    h = f"{ticks:015x}"
    low = (0x2 << 62) | (xxh3_64_intdigest(f"{old}\x00{salt}".encode()) >> 2)
    tail = f"{low:016x}"
    return f"{h[:8]}-{h[8:12]}-6{h[12:]}-{tail[:4]}-{tail[4:]}"


def _new_ids(thread: StoredThread, new_id: str, ns: str) -> dict[int, str]:
    """Each task's id at the new checkpoint (callers before their calls)."""
    ids: dict[int, str] = {}
    step = thread.step
    for task in thread.tasks:
        if task.kind == "pull":
            tid = task_id(new_id, ns, step, task.node, PULL, task.node)
        elif task.kind == "push":
            tid = task_id(new_id, ns, step, task.node, PUSH, str(task.index))
        else:
            assert task.parent is not None
            tid = task_id(new_id, ns, step, _CALL, PUSH, f"{ids[id(task.parent)]}/{task.index}")
        ids[id(task)] = tid
    return ids


def _own_renames(
    thread: StoredThread, ids: Mapping[int, str], old_ns: str, new_ns: str
) -> dict[str, str]:
    """Old → new id of the questions the level's own tasks asked."""
    renames: dict[str, str] = {}
    for task in thread.tasks:
        if task.kind == "call":
            continue
        old = xxh3_128_hexdigest(task_ns(old_ns, task.old_node, task.old_id).encode())
        new = xxh3_128_hexdigest(task_ns(new_ns, task.node, ids[id(task)]).encode())
        if any(i.id == old for i in _interrupts(task)):
            renames[old] = new
    return renames


def _interrupts(task: StoredTask) -> tuple[Interrupt, ...]:
    found: tuple[Interrupt, ...] = ()
    for channel, value in task.writes:
        if channel == INTERRUPT and isinstance(value, tuple | list):
            found = tuple(cast("tuple[Interrupt, ...]", tuple(value)))  # pyright: ignore[reportUnknownArgumentType]
    return found


def _calls_asking(thread: StoredThread) -> list[Problem]:
    """Questions asked inside ``@task`` calls: they cannot move.

    A call's question id hashes its function's name, which is not stored.
    """
    problems: list[Problem] = []
    for task in thread.tasks:
        rec = _record(task)
        if task.kind == "call" and rec.resumable:
            asked = ", ".join(repr(i.value) for i in rec.interrupts)
            problems.append(
                Problem(
                    "task",
                    task.old_id,
                    f"a question asked inside an @task call ({asked}) cannot be moved by a "
                    "migration; finish the thread on the graph that asked it",
                )
            )
    return problems


def _record(task: StoredTask) -> TaskRecord:
    records, _ = read_records(PendingWrite("t", c, v) for c, v in task.writes)
    return records.get("t") or TaskRecord()


def _child(
    spec: GraphSpec,
    task: StoredTask,
    ids: Mapping[int, str],
    old_ns: str,
    where: CheckpointRef,
    parents: dict[str, str],
    plan: MigrationPlan,
) -> Generator[LoadCheckpoint, Any, list[Problem]]:
    """Move the subgraph a task's question waits in along with the task."""
    node = spec.nodes.get(task.node)
    if task.kind == "call" or node is None:
        return []
    sub: Any = node.subgraph or node.calls_graph
    keeps = getattr(sub, "checkpointer", None)
    if sub is None or keeps is False or getattr(sub, "spec", None) is None:
        return []
    if not _record(task).resumable:
        return []
    old = task_ns(old_ns, task.old_node, task.old_id)
    new = task_ns(where.checkpoint_ns, task.node, ids[id(task)])
    if keeps is True:
        old, new = stateful_ns(old), stateful_ns(new)
    thread = where.thread_id
    inner: CheckpointTuple | None = yield LoadCheckpoint(
        {"configurable": {"thread_id": thread, "checkpoint_ns": old}}
    )
    if inner is None:
        return []
    if old == new and same_graph(sub.spec, inner.checkpoint):
        moved: object = inner.metadata.get("interrupts")
        if inner.metadata.get("source") == MIGRATE and isinstance(moved, dict):
            plan.renamed.update(cast("dict[str, str]", moved))
        return []
    target = CheckpointRef(thread, new, inner.checkpoint["id"] if old == new else None)
    found = yield from _level(sub.spec, inner, target, parents, plan)
    where_ = f"in subgraph node {task.node!r} (namespace {new!r})"
    return [Problem(p.kind, p.name, f"{where_}: {p.detail}") for p in found]


def _pending(
    thread: StoredThread,
    ids: Mapping[int, str],
    unplaced: Mapping[str, list[tuple[str, object]]],
    renamed: Mapping[str, str],
) -> list[PendingWrite]:
    """The new checkpoint's pending writes: each task's under its new id."""
    pending: list[PendingWrite] = []
    for task in thread.tasks:
        tid = ids[id(task)]
        for channel, value in task.writes:
            if channel == INTERRUPT and isinstance(value, tuple | list):
                asked = cast("tuple[Interrupt, ...]", tuple(value))  # pyright: ignore[reportUnknownArgumentType]
                moved = tuple(i.moved(renamed[i.id]) if i.id in renamed else i for i in asked)
                pending.append(PendingWrite(tid, channel, moved))
            else:
                pending.append(PendingWrite(tid, channel, value))
    for tid, writes in unplaced.items():  # no node runs them: the check lists them
        pending += [PendingWrite(tid, c, v) for c, v in writes]
    pending += [PendingWrite(NULL_TASK_ID, c, v) for c, v in thread.updates]
    return pending


def _path(task: StoredTask) -> str:
    if task.kind == "pull":
        return repr((PULL, task.node))
    return repr((PUSH, task.index))


def _checking_stamp(spec: GraphSpec, stored: Checkpoint, thread: StoredThread) -> dict[str, object]:
    """The stamp the migrated values are checked against.

    The old reducers, renamed; those of converted keys taken as the running graph's.
    """
    old: object = stored.get(STAMP)
    if not isinstance(old, dict) or "reducers" not in old:
        return {"fingerprint": ""}
    reducers = dict(thread.reducers)
    now: Mapping[str, str] = spec.shape.reducers if spec.shape is not None else {}
    for key in thread.converted:
        reducers[key] = now.get(key, "")
    return {"fingerprint": "", "reducers": {k: v for k, v in reducers.items() if v}}


def _metadata(
    saved: CheckpointTuple,
    thread: StoredThread,
    parents: dict[str, str],
    plan: MigrationPlan,
    own: Mapping[str, str],
) -> CheckpointMetadata:
    meta: dict[str, object] = {k: v for k, v in saved.metadata.items() if k != "writes"}
    stamp: object = saved.checkpoint.get(STAMP)
    was: object = stamp.get("fingerprint") if isinstance(stamp, dict) else None  # pyright: ignore[reportUnknownMemberType]
    meta.update(
        source=MIGRATE,
        step=thread.step - 1,
        parents=dict(parents),
        migrations=list(plan.applied),
        migrated_from={"checkpoint_id": saved.checkpoint["id"], "fingerprint": was},
        interrupts=dict(own),
    )
    return cast("CheckpointMetadata", meta)
