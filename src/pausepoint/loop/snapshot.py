"""State snapshots: what ``get_state`` and ``get_state_history`` report (pure)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from pausepoint.channels import Channel
from pausepoint.checkpoint.base import CheckpointTuple
from pausepoint.config import RunnableConfig
from pausepoint.constants import END, INPUT, ROOT
from pausepoint.errors import GraphMismatchError
from pausepoint.loop.answers import stored_answers
from pausepoint.loop.compat_check import (
    Mismatch,
    Problem,
    find_mismatch,
    mismatch_error,
    same_graph,
    step_tasks,
)
from pausepoint.loop.pending import TaskRecord
from pausepoint.loop.restore import restore
from pausepoint.loop.spec import GraphSpec
from pausepoint.loop.tasks import Task, prepare_tasks, read_values
from pausepoint.loop.writes import InputWrites, apply_writes
from pausepoint.types import Interrupt, PregelTask, StateSnapshot

__all__ = ["build_snapshot", "folded_writes", "keeps_state", "snapshot_tasks"]


def snapshot_tasks(spec: GraphSpec, saved: CheckpointTuple) -> list[Task]:
    """The tasks of the step that starts at ``saved``."""
    return step_tasks(spec, saved, restore(spec, saved))


def build_snapshot(
    spec: GraphSpec,
    saved: CheckpointTuple,
    *,
    apply_pending: bool,
    task_states: Mapping[str, RunnableConfig | StateSnapshot] | None = None,
    problems: Sequence[Problem] | None = None,
) -> StateSnapshot:
    """The snapshot of ``saved``: as the next run sees it, or as it was stored.

    With ``apply_pending`` (the thread's current state), finished tasks' writes are
    applied and only interrupts still waiting for an answer are listed (DESIGN
    §4.3); a question whose answer is stored but not yet used is in its task's
    ``answered`` (§4.1). Without (a checkpoint named by id, a history entry), the
    checkpoint is shown as stored, with every interrupt raised at it, answered
    since or not, as LangGraph shows it: that is the checkpoint to fork from to
    answer one again (§4.2).

    A checkpoint another graph wrote that this one cannot honour (docs/deploys.md)
    still shows its tasks, those of missing nodes too, with their questions: each
    task that has not finished carries the ``GraphMismatchError`` as its ``error``.
    ``problems``: what a deeper check found (subgraphs included); by default, what
    this checkpoint alone shows.
    """
    loaded = restore(spec, saved)
    checkpoint, channels, records = loaded.checkpoint, loaded.channels, loaded.records
    ns = (saved.config.get("configurable") or {}).get("checkpoint_ns", "")
    mismatch = None if same_graph(spec, saved.checkpoint) else find_mismatch(spec, saved, loaded)
    if mismatch is None:
        tasks = prepare_tasks(spec, checkpoint, channels, loaded.step, ns)
    else:
        tasks = mismatch.tasks
    refused = _refused(saved, mismatch, problems)
    if null_writes := loaded.null_writes:
        apply_writes(checkpoint, channels, [InputWrites(INPUT, null_writes)])
    done: list[Task] = []
    for task in tasks:
        rec = records.get(task.id)
        if rec is not None and rec.done and apply_pending:
            task.writes = list(rec.writes)
            done.append(task)
    if done:
        apply_writes(checkpoint, channels, done)
    states = task_states or {}
    out: list[PregelTask] = []
    for task in tasks:
        rec = records.get(task.id)
        interrupts = _listed(rec, current=apply_pending)
        error = rec.error if rec is not None and rec.error and not rec.done else None
        if refused is not None and mismatch is not None and task.id in mismatch.pending:
            error = refused
        result = _result(spec, rec.writes) if rec is not None and rec.done else None
        pregel = PregelTask(
            task.id, task.name, task.path, error, interrupts, states.get(task.id), result
        )
        if rec is not None:  # pausepoint's own attribute, outside LangGraph's fields
            pregel.answered = stored_answers(rec)
        out.append(pregel)
    parents = dict(saved.metadata.get("parents") or {})
    return StateSnapshot(
        values=_values(spec, channels),
        next=tuple(t.name for t in tasks if not t.writes),
        config=_with_map(saved.config, parents),
        metadata=saved.metadata,
        created_at=saved.checkpoint["ts"],
        parent_config=_with_map(saved.parent_config, parents) if saved.parent_config else None,
        tasks=tuple(out),
        interrupts=tuple(i for t in out for i in t.interrupts),
    )


def _refused(
    saved: CheckpointTuple, mismatch: Mismatch | None, problems: Sequence[Problem] | None
) -> GraphMismatchError | None:
    """The error a run of ``saved`` would raise, if it differs from the graph and cannot run."""
    if mismatch is None:
        return None
    found = list(mismatch.problems if problems is None else problems)
    return mismatch_error(saved, found) if found else None


def _listed(rec: TaskRecord | None, *, current: bool) -> tuple[Interrupt, ...]:
    """A task's interrupts in a snapshot: still waiting (current state), or all raised."""
    if rec is None:
        return ()
    return rec.interrupts if rec.waiting or not current else ()


def _values(spec: GraphSpec, channels: Mapping[str, Channel]) -> object:
    if spec.output_channel is not None:
        chan = channels[spec.output_channel]
        return chan.get() if chan.is_available() else None
    return read_values(channels, spec.state_keys)


def folded_writes(writes: Sequence[tuple[str, object]], keys: Collection[str]) -> dict[str, object]:
    """Writes to ``keys`` as a task result shows them (LangGraph's form).

    ``{key: value}``; a key written several times: ``{key: {"$writes": [v1, v2, ...]}}``.
    """
    result: dict[str, object] = {}
    many: dict[str, list[object]] = {}
    for key, value in writes:
        if key not in keys:
            continue
        if key in many:
            many[key].append(value)
        elif key in result:
            many[key] = [result[key], value]
            result[key] = {"$writes": many[key]}
        else:
            result[key] = value
    return result


def _result(spec: GraphSpec, writes: Sequence[tuple[str, object]]) -> object:
    # Every state key the task wrote, as LangGraph's snapshots show it: not only the
    # output schema's (a subgraph with input/output schemas wrote its inputs too).
    # A finished task that wrote no state key shows ``{}`` (LangGraph's too).
    found = folded_writes(writes, spec.state_key_set)
    if spec.output_channel == END:  # an @entrypoint: what it returned, as LangGraph shows
        return found.get(END)
    if spec.root and found:  # a one-value state: the value itself, as LangGraph shows it
        return found[ROOT]
    return found


def _with_map(config: RunnableConfig, parents: dict[str, str]) -> RunnableConfig:
    """A subgraph checkpoint's config names its ancestors' checkpoints too."""
    if not parents:
        return config
    conf = dict(config.get("configurable") or {})
    conf["checkpoint_map"] = {**parents, conf.get("checkpoint_ns", ""): conf.get("checkpoint_id")}
    return {**config, "configurable": conf}


def keeps_state(task: Task) -> bool:
    """Whether a task runs a subgraph that keeps checkpoints (not ``checkpointer=False``)."""
    sub = task.node.subgraph or task.node.calls_graph
    return sub is not None and getattr(sub, "checkpointer", None) is not False


def subgraph_config(thread_id: str | None, task: Task) -> RunnableConfig:
    """The config that names a subgraph task's own state."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": task.ns}}
