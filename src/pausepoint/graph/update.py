"""``update_state`` / ``bulk_update_state``: write values as if nodes had returned them.

Each superstep of updates makes one new checkpoint (source ``update``), a child
of the one the config names (or of the newest). History is never rewritten:
updating an old checkpoint forks the thread, and the checkpoint updated is left
as it was (LangGraph also files the update under the matching task of that
checkpoint; see docs/differences.md). Interrupts still waiting at the updated
checkpoint stay pending on the new one (with the new task's id), so a person can
edit the state of a paused run and then answer it.

Without ``as_node`` the update is put on the node that ran last, as in
LangGraph; on a checkpoint where no node has run yet that is ``START``, so the
nodes the input started (a paused one included) stay due. ``"__input__"``,
``"__copy__"`` and ``END`` are described in `pausepoint.graph.update_steps`.

Values are checked before anything is saved: every superstep is worked out on
copies (each one's writes tried on the channels they touch) before the first is
saved, so an update refused anywhere raises ``InvalidUpdateError`` with nothing
written.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Generator, Sequence
from typing import Any, Final, Literal

from xxhash import xxh3_128_hexdigest

from pausepoint.channels import MISSING, Channel
from pausepoint.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    copy_checkpoint,
    empty_checkpoint,
)
from pausepoint.checkpoint.ids import new_stamp
from pausepoint.config import RunnableConfig
from pausepoint.constants import ASKED, INPUT, INTERRUPT, RESUME, START
from pausepoint.errors import InvalidUpdateError
from pausepoint.graph.update_steps import COPY, Superstep, parse_supersteps
from pausepoint.loop.compat_check import same_graph, written_by
from pausepoint.loop.effects import Call, LoadCheckpoint, SaveCheckpoint, SaveWrites
from pausepoint.loop.migrate import fitted
from pausepoint.loop.node import node_body
from pausepoint.loop.pending import TaskRecord, as_stored
from pausepoint.loop.restore import next_step, restore
from pausepoint.loop.spec import GraphSpec
from pausepoint.loop.tasks import Task, prepare_tasks, task_id, task_ns
from pausepoint.loop.writes import (
    InputWrites,
    apply_writes,
    check_update,
    finish_deferred,
    rejected_writes,
)
from pausepoint.types import StateUpdate

__all__ = ["update_effects"]

Carried = list[tuple[str, list[tuple[str, object]]]]
"""``(task_id, writes)`` of the interrupts kept pending on a new checkpoint."""

Pending = Literal["none", "done", "all"]
"""Which of a checkpoint's tasks an update builds on: none, the finished ones, or all
(the finished with their writes, the others with none: the step is over)."""


@dataclasses.dataclass(slots=True)
class _Base:
    """The state an update applies to, and where it comes from."""

    checkpoint: Checkpoint
    channels: dict[str, Channel]
    step: int
    """The new checkpoint's step (the old one's plus one)."""
    config: RunnableConfig
    paused: list[tuple[Task, TaskRecord]]
    parents: dict[str, str]
    exists: bool
    """False on a thread with no checkpoint yet."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Planned:
    """One superstep of updates, worked out and ready to save."""

    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    config: RunnableConfig
    """What saving it will return."""
    parent: RunnableConfig | None
    """Its parent's config; None: the checkpoint of the superstep before (or the updated)."""
    carried: Carried

    def as_saved(self, before: RunnableConfig) -> CheckpointTuple:
        """It as the next superstep reads it (``before``: the config it is saved after).

        Its values are copied: a reducer that changes a value in place must not
        change what this one will save.
        """
        checkpoint = copy_checkpoint(self.checkpoint)
        checkpoint["channel_values"] = copy.deepcopy(checkpoint["channel_values"])
        writes = [PendingWrite(tid, chan, v) for tid, ws in self.carried for chan, v in ws]
        parent = self.parent or before
        return CheckpointTuple(self.config, checkpoint, self.metadata, parent, writes)


_Effect = LoadCheckpoint | SaveCheckpoint | SaveWrites | Call
"""What working out and saving an update yields: saver effects, and the `Call` of an
async conditional edge (the driver awaits it, or runs it on an event loop of its own)."""


def update_effects(
    spec: GraphSpec,
    config: RunnableConfig,
    supersteps: Sequence[Sequence[StateUpdate]],
    others: Sequence[GraphSpec] = (),
) -> Generator[_Effect, Any, RunnableConfig]:
    """The effects of ``bulk_update_state``; returns the last new checkpoint's config.

    Every superstep is worked out (and its values checked against the channels)
    before the first is saved: an update refused anywhere writes nothing at all.
    ``others``: the other graphs that may have written the namespace (`written_by`).
    """
    conf = dict(config.get("configurable") or {})
    conf.setdefault("checkpoint_ns", "")
    saved: CheckpointTuple | None = yield LoadCheckpoint({"configurable": conf})
    if saved is not None:
        spec = written_by(spec, others, saved.checkpoint)
    steps = parse_supersteps(supersteps, spec.nodes)
    if saved is not None and not same_graph(spec, saved.checkpoint):
        # Another graph wrote it: moved by declared migrations, or refused (deploys.md).
        saved = yield from fitted(spec, saved, movable="checkpoint_id" not in conf)
    first: RunnableConfig = saved.config if saved is not None else {"configurable": conf}
    # The thread's current state is updated as the next run would see it; a
    # checkpoint named by id, as it was stored.
    head = "checkpoint_id" not in conf
    planned: list[_Planned] = []
    for step in steps:
        plan = yield from _plan(spec, saved, conf, step, head)
        planned.append(plan)
        saved, head = plan.as_saved(saved.config if saved else first), True
    parent = first
    for plan in planned:
        parent = yield SaveCheckpoint(plan.parent or parent, plan.checkpoint, plan.metadata, {})
        for tid, writes in plan.carried:
            yield SaveWrites(parent, writes, tid, "")
    return _with_map(parent, planned[-1].metadata if planned else None)


def _with_map(config: RunnableConfig, metadata: CheckpointMetadata | None) -> RunnableConfig:
    """A subgraph checkpoint's config with its ``checkpoint_map``.

    The map names the root's and each level's checkpoint down to it, so the root
    graph given this config addresses this checkpoint.
    """
    conf = dict(config.get("configurable") or {})
    ns = str(conf.get("checkpoint_ns") or "")
    if not ns or metadata is None:
        return config
    parents = dict(metadata.get("parents") or {})  # pyright: ignore[reportUnknownArgumentType]
    conf["checkpoint_map"] = {**parents, ns: conf.get("checkpoint_id")}
    return {**config, "configurable": conf}


def _plan(
    spec: GraphSpec,
    saved: CheckpointTuple | None,
    conf: dict[str, object],
    step: Superstep,
    head: bool,
) -> Generator[Call, Any, _Planned]:
    """Work out one superstep on ``saved``; the checkpoint it makes, not saved yet."""
    match step.kind:
        case "copy":
            return _copy(saved, conf, step.where)
        case "end":
            return _finish(spec, _base(spec, saved, conf, "all"), "update", set())
        case "input":
            return _input(spec, _base(spec, saved, conf, "done" if head else "none"), step)
        case "nodes":
            base = _base(spec, saved, conf, "done" if head else "none")
            return (yield from _nodes(spec, base, step))


def _nodes(spec: GraphSpec, base: _Base, step: Superstep) -> Generator[Call, Any, _Planned]:
    """Node updates: each as if its node had returned the values."""
    sources: list[Task] = []
    for update in step.updates:
        sources.append((yield from _update_task(spec, base, update)))
    ordered = sorted(sources, key=lambda s: s.path)  # as apply_writes will apply them
    check_update(base.channels, (), [w for s in ordered for w in s.writes], _what(step))
    updated = apply_writes(base.checkpoint, base.channels, sources)
    if spec.deferred and updated.isdisjoint(spec.triggered_by):
        # As after a run's step: nothing else would run, so a deferred node's waiting
        # trigger is released (a deferred join both sides of which were written here).
        finish_deferred(base.checkpoint, base.channels, spec.deferred)
    return _finish(spec, base, "update", {s.name for s in sources})


def _input(spec: GraphSpec, base: _Base, step: Superstep) -> _Planned:
    """``"__input__"``: the values become the run input, for ``__start__`` to take."""
    values = step.updates[0].values
    _check_input(spec, values, step.where)
    state = [(k, v) for k, v in spec.input.input_pairs(values) if k in base.channels]
    check_update(base.channels, (), state, _what(step))
    apply_writes(base.checkpoint, base.channels, [InputWrites(INPUT, [(START, values)])])
    # A new thread's input checkpoint is step -1, as a run's is (and LangGraph's).
    return _finish(spec, base, "input", set(), step=base.step if base.exists else -1)


def _check_input(spec: GraphSpec, values: object, where: str) -> None:
    """Refuse what ``invoke`` would refuse as input (a dict-typed state takes a dict)."""
    if spec.input.kind != "typeddict" or isinstance(values, dict):
        return
    # A dataclass or pydantic model instance also goes, as in invoke.
    if dataclasses.is_dataclass(values) or hasattr(type(values), "model_fields"):  # pyright: ignore[reportUnknownArgumentType]
        return
    raise InvalidUpdateError(
        f"as_node={INPUT!r} writes the values as a new run input, which for this graph is "
        f"a dict of state values; got a {type(values).__name__}{where}"
    )


def _copy(saved: CheckpointTuple | None, conf: dict[str, object], where: str) -> _Planned:
    """``"__copy__"``: the checkpoint again, as its sibling, without its tasks' writes.

    So its tasks run again from the copy (LangGraph: the copy's step is one more).
    """
    if saved is None:
        cid, thread = conf.get("checkpoint_id"), conf.get("thread_id")
        named = f"checkpoint {cid!r} of thread {thread!r}" if cid else f"thread {thread!r}"
        raise InvalidUpdateError(
            f"as_node={COPY!r} copies a checkpoint, but there is no checkpoint to copy: "
            f"{named} has none{where}"
        )
    checkpoint = copy_checkpoint(saved.checkpoint)
    checkpoint["id"], checkpoint["ts"] = new_stamp()
    checkpoint["updated_channels"] = None  # as _finish's
    thread = dict(saved.config.get("configurable") or {})
    metadata: CheckpointMetadata = {
        "source": "fork",
        "step": next_step(saved.metadata),
        "parents": dict(saved.metadata.get("parents") or {}),
    }
    parent = saved.parent_config or {
        "configurable": {k: v for k, v in thread.items() if k != "checkpoint_id"}
    }
    config: RunnableConfig = {"configurable": {**thread, "checkpoint_id": checkpoint["id"]}}
    return _Planned(checkpoint, metadata, config, parent, [])


def _finish(
    spec: GraphSpec,
    base: _Base,
    source: Literal["input", "update"],
    updated: set[str],
    step: int | None = None,
) -> _Planned:
    """The new checkpoint of ``base``'s updated channels, with its paused tasks carried.

    ``updated`` names the nodes the update stood in for: their interrupts are not
    carried. ``step`` is the new checkpoint's (default: ``base.step``).
    """
    step = base.step if step is None else step
    checkpoint = base.checkpoint
    checkpoint["id"], checkpoint["ts"] = new_stamp()
    # As LangGraph's: no record of changed channels, so the next run's first step
    # lists its nodes in graph order (loop/tasks.py).
    checkpoint["updated_channels"] = None
    checkpoint["channel_values"] = {
        k: v for k, c in base.channels.items() if (v := c.checkpoint()) is not MISSING
    }
    metadata: CheckpointMetadata = {"source": source, "step": step, "parents": base.parents}
    carried = _carry_paused(spec, base, updated, step + 1)
    conf = {**(base.config.get("configurable") or {}), "checkpoint_id": checkpoint["id"]}
    return _Planned(copy_checkpoint(checkpoint), metadata, {"configurable": conf}, None, carried)


def _what(step: Superstep) -> str:
    """How a refused update's error names the call (``where`` is set for several)."""
    return f"bulk_update_state{step.where}" if step.where else "update_state"


def _base(
    spec: GraphSpec, saved: CheckpointTuple | None, conf: dict[str, Any], pending: Pending
) -> _Base:
    if saved is None:
        checkpoint = empty_checkpoint(*new_stamp())
        channels = spec.fresh_channels({})
        return _Base(checkpoint, channels, 0, {"configurable": conf}, [], {}, False)
    loaded = restore(spec, saved)
    checkpoint, channels, step = loaded.checkpoint, loaded.channels, loaded.step
    records, null_writes = loaded.records, loaded.null_writes
    if null_writes:
        # A stored update its channel rejects (stored by a pausepoint that did not
        # check updates) can never be applied: the new checkpoint leaves it out,
        # which is how update_state repairs such a thread (LangGraph's does too).
        if rejected := rejected_writes(channels, null_writes):
            null_writes = [w for w in null_writes if w[0] not in rejected]
        apply_writes(checkpoint, channels, [InputWrites(INPUT, null_writes)])
    tasks = prepare_tasks(spec, checkpoint, channels, step, conf["checkpoint_ns"])
    paused = [(t, records[t.id]) for t in tasks if t.id in records and records[t.id].paused]
    parents = dict(saved.metadata.get("parents") or {})
    base = _Base(checkpoint, channels, step, saved.config, paused, parents, True)
    if pending != "none":
        _apply_tasks(base, tasks, records, everyone=pending == "all")
    return base


def _apply_tasks(
    base: _Base, tasks: list[Task], records: dict[str, TaskRecord], everyone: bool
) -> None:
    """Apply what the finished tasks wrote; with ``everyone``, end the others with nothing."""
    done = [t for t in tasks if t.id in records and records[t.id].done]
    for t in done:
        t.writes = list(records[t.id].writes)
    if done:
        _drop_rejected(base.channels, done)
    ending = tasks if everyone else done
    if ending:
        apply_writes(base.checkpoint, base.channels, ending)
    if everyone:
        base.paused = []


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


def _update_task(spec: GraphSpec, base: _Base, update: StateUpdate) -> Generator[Call, Any, Task]:
    node = _pick_node(spec, base.checkpoint, update.as_node)
    writes = yield from _node_writes(spec, node, update.values, base)
    ns = str((base.config.get("configurable") or {}).get("checkpoint_ns", ""))
    tid = task_id(base.checkpoint["id"], ns, base.step, node, "__update__", node)
    # Triggers that are not channels: the step counts as run (ephemeral edge
    # triggers clear) without marking any channel as seen, as in LangGraph. One path
    # for every update of a superstep: the (stable) sort by path keeps the caller's
    # order, so a reducer key folds the updates as listed, as LangGraph applies them.
    return Task(tid, node, _UPDATE_PATH, None, (INTERRUPT,), spec.nodes[node], "", writes)


_UPDATE_PATH: Final = ("__update__", "")


def _pick_node(spec: GraphSpec, checkpoint: Checkpoint, as_node: str | None) -> str:
    """``as_node``, or the node that ran last (as LangGraph picks it)."""
    if as_node is not None:
        return as_node  # a node of the graph (update_steps checked it)
    if len(spec.nodes) == 1:  # an @entrypoint: its one node, run or not (as LangGraph)
        return next(iter(spec.nodes))
    seen = checkpoint["versions_seen"]
    ranked = sorted(
        ((max(v.values(), default=0), n) for n, v in seen.items() if n in spec.nodes and v),
        reverse=True,
    )
    if not ranked:
        # No node has run: the update stands in for the input, so the nodes the
        # input triggers stay due (a paused one is not marked done).
        return START
    if len(ranked) > 1 and ranked[0][0] == ranked[1][0]:
        tied = sorted(n for v, n in ranked if v == ranked[0][0])
        raise InvalidUpdateError(
            f"Ambiguous update, specify as_node: nodes {tied!r} ran last, in the same step"
        )
    return ranked[0][1]


def _node_writes(
    spec: GraphSpec, node: str, values: object, base: _Base
) -> Generator[Call, Any, list[tuple[str, Any]]]:
    """The writes of ``node`` returning ``values``: its state updates and its edges.

    Its conditional edges run here; an async one is handed to the driver (so
    ``aupdate_state`` awaits it), a sync one is called in place.
    """
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
            inline = step.async_ is None
            result = step.sync(*step.args, **step.kwargs) if inline else (yield step)
            step = body.send(result)
        return step
    finally:
        body.close()


def _carry_paused(spec: GraphSpec, base: _Base, updated: set[str], step: int) -> Carried:
    """Keep interrupts pending across an update (unless the update stood in for the node).

    Returns ``(task_id, writes)`` to save against the new checkpoint, whose tasks
    run in ``step``.
    """
    if not base.paused:
        return []
    ns = str((base.config.get("configurable") or {}).get("checkpoint_ns", ""))
    new_tasks = {
        (t.name, t.path): t for t in prepare_tasks(spec, base.checkpoint, base.channels, step, ns)
    }
    carried: Carried = []
    for old, rec in base.paused:
        new = new_tasks.get((old.name, old.path))
        if new is None or old.name in updated:
            continue
        own = xxh3_128_hexdigest(new.ns.encode())
        interrupts = tuple(i.moved(own) for i in rec.interrupts)
        writes: list[tuple[str, object]] = [(INTERRUPT, as_stored(interrupts, rec.asked))]
        if rec.asked is not None:  # the question keeps its position (loop/answers.py)
            writes.append((ASKED, rec.asked))
        if rec.resume:
            writes.append((RESUME, list(rec.resume)))
        carried.append((new.id, writes))
    return carried


class _Const:
    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __call__(self, *_: object) -> object:
        return self.value
