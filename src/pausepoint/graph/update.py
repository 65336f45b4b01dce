"""``update_state`` / ``bulk_update_state``: write values as if nodes had returned them.

Each superstep of updates makes one new checkpoint (source ``update``), a child
of the one the config names (or of the newest). History is never rewritten, so
updating an old checkpoint forks the thread. Interrupts still waiting at the
updated checkpoint stay pending on the new one (with the new task's id), so a
person can edit the state of a paused run and then answer it.

Values are checked before anything is saved: each superstep's writes are tried on
copies of the channels they touch, and a value a reducer rejects raises
``InvalidUpdateError`` with nothing written.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Generator, Sequence
from typing import Any

from xxhash import xxh3_128_hexdigest

from pausepoint.channels import MISSING, Channel
from pausepoint.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    copy_checkpoint,
    empty_checkpoint,
)
from pausepoint.checkpoint.ids import new_stamp
from pausepoint.config import RunnableConfig
from pausepoint.constants import ASKED, END, INPUT, INTERRUPT, RESUME, START
from pausepoint.errors import InvalidUpdateError
from pausepoint.loop.effects import Call, LoadCheckpoint, SaveCheckpoint, SaveWrites
from pausepoint.loop.node import node_body
from pausepoint.loop.pending import TaskRecord, read_records
from pausepoint.loop.spec import GraphSpec
from pausepoint.loop.tasks import Task, prepare_tasks, task_id, task_ns
from pausepoint.loop.writes import InputWrites, apply_writes, check_update, rejected_writes
from pausepoint.types import Interrupt, StateUpdate

__all__ = ["update_effects"]


@dataclasses.dataclass(slots=True)
class _Base:
    """The checkpoint an update starts from."""

    checkpoint: Checkpoint
    channels: dict[str, Channel]
    step: int
    config: RunnableConfig
    paused: list[tuple[Task, TaskRecord]]


@dataclasses.dataclass(frozen=True, slots=True)
class _Planned:
    """One superstep of updates, worked out and ready to save."""

    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    carried: list[tuple[str, list[tuple[str, Any]]]]
    """``(task_id, writes)`` of the interrupts kept pending on the new checkpoint."""


def update_effects(
    spec: GraphSpec, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
) -> Generator[Any, Any, RunnableConfig]:
    """The effects of ``bulk_update_state``; returns the last new checkpoint's config.

    Every superstep is worked out (and its values checked against the channels)
    before the first is saved: an update refused anywhere writes nothing at all.
    """
    conf = dict(config.get("configurable") or {})
    conf.setdefault("checkpoint_ns", "")
    saved: CheckpointTuple | None = yield LoadCheckpoint({"configurable": conf})
    base = _base(spec, saved, conf, apply_pending="checkpoint_id" not in conf)
    parent = base.config
    what = "update_state" if len(supersteps) == 1 else "bulk_update_state"
    planned: list[_Planned] = []
    for n, updates in enumerate(supersteps):
        if n:  # the superstep before is not saved yet: keep its values from this one's
            prev = planned[-1].checkpoint
            prev["channel_values"] = copy.deepcopy(prev["channel_values"])
        planned.append(_plan(spec, base, updates, what))
    for plan in planned:
        parent = yield SaveCheckpoint(parent, plan.checkpoint, plan.metadata, {})
        for tid, writes in plan.carried:
            yield SaveWrites(parent, writes, tid, "")
    return parent


def _plan(spec: GraphSpec, base: _Base, updates: Sequence[StateUpdate], what: str) -> _Planned:
    """Apply one superstep of updates to ``base``; the checkpoint it makes, not saved yet."""
    if not updates:
        raise InvalidUpdateError("bulk_update_state got an empty superstep")
    sources = [_update_task(spec, base, u) for u in updates]
    ordered = sorted(sources, key=lambda s: s.path)  # as apply_writes will apply them
    check_update(base.channels, (), [w for s in ordered for w in s.writes], what)
    apply_writes(base.checkpoint, base.channels, sources)
    base.checkpoint["id"], base.checkpoint["ts"] = new_stamp()
    base.checkpoint["channel_values"] = {
        k: v for k, c in base.channels.items() if (v := c.checkpoint()) is not MISSING
    }
    metadata: CheckpointMetadata = {"source": "update", "step": base.step, "parents": {}}
    ns = str((base.config.get("configurable") or {}).get("checkpoint_ns", ""))
    carried = _carry_paused(spec, base, {s.name for s in sources}, ns)
    conf = {**(base.config.get("configurable") or {}), "checkpoint_id": base.checkpoint["id"]}
    base.config = {"configurable": conf}  # what saving it will return
    base.step += 1
    base.paused = []
    return _Planned(copy_checkpoint(base.checkpoint), metadata, carried)


def _base(
    spec: GraphSpec, saved: CheckpointTuple | None, conf: dict[str, Any], apply_pending: bool
) -> _Base:
    if saved is None:
        checkpoint = empty_checkpoint(*new_stamp())
        channels = spec.fresh_channels({})
        return _Base(checkpoint, channels, 0, {"configurable": conf}, [])
    checkpoint = copy_checkpoint(saved.checkpoint)
    channels = spec.fresh_channels(checkpoint["channel_values"])
    step = int(saved.metadata.get("step", -1)) + 1
    records, null_writes = read_records(saved.pending_writes or [])
    if null_writes:
        # A stored update its channel rejects (stored by a pausepoint that did not
        # check updates) can never be applied: the new checkpoint leaves it out,
        # which is how update_state repairs such a thread (LangGraph's does too).
        if rejected := rejected_writes(channels, null_writes):
            null_writes = [w for w in null_writes if w[0] not in rejected]
        apply_writes(checkpoint, channels, [InputWrites(INPUT, null_writes)])
    tasks = prepare_tasks(spec, checkpoint, channels, step, conf["checkpoint_ns"])
    paused = [(t, records[t.id]) for t in tasks if t.id in records and records[t.id].paused]
    if apply_pending:
        done = [t for t in tasks if t.id in records and records[t.id].done]
        for t in done:
            t.writes = list(records[t.id].writes)
        if done:
            _drop_rejected(channels, done)
            apply_writes(checkpoint, channels, done)
    return _Base(checkpoint, channels, step, saved.config, paused)


def _drop_rejected(channels: dict[str, Channel], done: list[Task]) -> None:
    """Leave out finished tasks' writes their channels reject (the run failed on them).

    A node that returned a value its reducer cannot take had its writes saved before
    the step failed to apply them: without this, update_state could not repair the
    thread, as LangGraph's can.
    """
    ordered = sorted(done, key=lambda t: t.path)  # as apply_writes applies them
    rejected = rejected_writes(channels, [w for t in ordered for w in t.writes])
    for t in done if rejected else ():
        t.writes = [w for w in t.writes if w[0] not in rejected]


def _update_task(spec: GraphSpec, base: _Base, update: StateUpdate) -> Task:
    node = _pick_node(spec, base.checkpoint, update.as_node)
    writes = _node_writes(spec, node, update.values, base)
    ns = str((base.config.get("configurable") or {}).get("checkpoint_ns", ""))
    tid = task_id(base.checkpoint["id"], ns, base.step, node, "__update__", node)
    # Triggers that are not channels: the step counts as run (ephemeral edge
    # triggers clear) without marking any channel as seen, as in LangGraph.
    return Task(tid, node, ("__update__", node), None, (INTERRUPT,), spec.nodes[node], "", writes)


def _pick_node(spec: GraphSpec, checkpoint: Checkpoint, as_node: str | None) -> str:
    if as_node is not None:
        if as_node == END:
            raise InvalidUpdateError("update_state(as_node=END) is not supported yet")
        if as_node not in spec.nodes:
            raise InvalidUpdateError(f"Node {as_node} does not exist")
        return as_node
    user_nodes = [n for n in spec.nodes if n != START]
    if len(user_nodes) == 1:
        return user_nodes[0]
    seen = checkpoint["versions_seen"]
    ranked = sorted(
        ((max(v.values(), default=0), n) for n, v in seen.items() if n in spec.nodes and v),
        reverse=True,
    )
    if not ranked:
        if not checkpoint["channel_versions"]:
            return START
        raise InvalidUpdateError("Ambiguous update, specify as_node")
    if len(ranked) > 1 and ranked[0][0] == ranked[1][0]:
        raise InvalidUpdateError("Ambiguous update, specify as_node")
    return ranked[0][1]


def _node_writes(spec: GraphSpec, node: str, values: Any, base: _Base) -> list[tuple[str, Any]]:
    proc = spec.nodes[node]
    conf = dict(base.config.get("configurable") or {})
    ns = str(conf.get("checkpoint_ns", ""))
    if node == START:
        task = Task("", START, ("", START), values, (), dataclasses.replace(proc, fn=None), "", [])
    else:
        proc = dataclasses.replace(
            proc,
            fn=_Const(values),
            is_async=False,
            accepts_config=False,
            subgraph=None,
            inject=frozenset(),
        )
        tid = task_id(base.checkpoint["id"], ns, base.step, node, "__update__", node)
        task = Task(tid, node, ("", node), None, (), proc, task_ns(ns, node, tid), [])
    config: RunnableConfig = {"configurable": conf}
    body = node_body(spec, task, lambda: config, base.channels)
    try:
        step = next(body)
        while isinstance(step, Call):
            step = body.send(step.sync(*step.args, **step.kwargs))
        return step
    finally:
        body.close()


def _carry_paused(
    spec: GraphSpec, base: _Base, updated: set[str], ns: str
) -> list[tuple[str, list[tuple[str, Any]]]]:
    """Keep interrupts pending across an update (unless the update stood in for the node).

    Returns ``(task_id, writes)`` to save against the new checkpoint.
    """
    if not base.paused:
        return []
    step = base.step + 1
    new_tasks = {
        (t.name, t.path): t for t in prepare_tasks(spec, base.checkpoint, base.channels, step, ns)
    }
    carried: list[tuple[str, list[tuple[str, Any]]]] = []
    for old, rec in base.paused:
        new = new_tasks.get((old.name, old.path))
        if new is None or old.name in updated:
            continue
        own = xxh3_128_hexdigest(new.ns.encode())
        interrupts = tuple(Interrupt(i.value, own, position=i.position) for i in rec.interrupts)
        writes: list[tuple[str, Any]] = [(INTERRUPT, interrupts)]
        if rec.asked is not None:  # the question keeps its position (loop/answers.py)
            writes.append((ASKED, rec.asked))
        if rec.resume:
            writes.append((RESUME, list(rec.resume)))
        carried.append((new.id, writes))
    return carried


class _Const:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self, *_: Any) -> Any:
        return self.value
