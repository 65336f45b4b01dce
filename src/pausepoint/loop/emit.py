"""Stream payloads: what ``updates``, ``tasks``, ``checkpoints`` and ``debug`` report.

Pure functions of the run's state, called only when a mode is being streamed.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint.base import as_config
from pausepoint.checkpoint.ids import now_iso
from pausepoint.constants import INTERRUPT
from pausepoint.loop.effects import Emit
from pausepoint.loop.snapshot import folded_writes, keeps_state, subgraph_config
from pausepoint.loop.state import current_tasks, output
from pausepoint.loop.tasks import Task, task_input
from pausepoint.loop.writes import preview_writes
from pausepoint.types import Interrupt

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import CheckpointRef
    from pausepoint.config import RunnableConfig
    from pausepoint.errors import GraphInterrupt
    from pausepoint.loop.pending import TaskRecord
    from pausepoint.loop.persistence import Persistence
    from pausepoint.loop.state import RunSetup, RunState

__all__ = [
    "cached_updates",
    "interrupted",
    "reached_checkpoint",
    "resumed_checkpoint",
    "still_paused",
    "task_result",
    "task_starts",
    "update_of",
]


def interrupts_found(
    run: RunSetup, state: RunState, found: tuple[Interrupt, ...]
) -> Generator[Emit, object, None]:
    """Report a task's interrupts in ``updates`` and ``values`` as they happen."""
    if not found:
        return
    if run.wants("updates"):
        yield run.emit("updates", {INTERRUPT: found})
    if run.wants("values"):
        values: Any = output(run, state)
        # A one-value state (``StateGraph(list)``) shows the interrupts alone, as LangGraph.
        shown: dict[str, object] = (
            {**values, INTERRUPT: found} if isinstance(values, dict) else {INTERRUPT: found}
        )
        yield run.emit("values", shown)


def update_of(run: RunSetup, task: Task) -> object:
    """A task's writes to output keys, as ``updates`` shows them; ``None`` if it wrote none.

    ``{key: value}``; or, when it wrote one of those keys more than once (a list of
    ``Command``s, ``Command(update=[(k, v1), (k, v2)])``), every write in order as a
    list of ``{key: value}``, so that none is hidden (as LangGraph shows them).
    """
    single = run.spec.output_channel
    if single is not None:  # an entrypoint (or a one-value state): the bare values
        found = [v for k, v in task.writes if k == single]
        return (found[0] if len(found) == 1 else found) if found else None
    keys = run.out_keys
    written = [(k, v) for k, v in task.writes if k in keys]
    if not written:
        return None
    if len({k for k, _ in written}) < len(written):
        return [{k: v} for k, v in written]
    return dict(written)


def cached_updates(run: RunSetup, state: RunState) -> Generator[Emit, object, None]:
    """``updates`` for tasks whose writes were restored from the checkpoint."""
    if not run.wants("updates"):
        return
    for task in state.tasks:
        if task.writes and not task.node.hidden:
            yield run.emit(
                "updates",
                {task.name: update_of(run, task), "__metadata__": {"cached": True}},
            )


def task_starts(
    run: RunSetup, state: RunState, tasks: Sequence[Task]
) -> Generator[Emit, object, None]:
    """``tasks`` / ``debug`` events for tasks about to run."""
    if not (run.wants("tasks") or run.wants("debug")):
        return
    for task in tasks:
        if task.node.hidden:
            continue
        given = task_input(run.spec, task, state.channels)
        payload = {"id": task.id, "name": task.name, "input": given, "triggers": task.triggers}
        yield from _task_event(run, state, "task", payload)


def task_result(
    run: RunSetup,
    state: RunState,
    task: Task,
    error: BaseException | None,
    interrupts: Sequence[Interrupt],
) -> Generator[Emit, object, None]:
    """``updates`` (on success) and ``tasks``/``debug`` result events for a finished task."""
    if error is None and not interrupts and run.wants("updates") and not task.node.hidden:
        yield run.emit("updates", {task.name: update_of(run, task)})
    if not (run.wants("tasks") or run.wants("debug")) or task.node.hidden:
        return
    payload = {
        "id": task.id,
        "name": task.name,
        "error": error,  # the exception itself, as LangGraph's events carry it
        "result": folded_writes(task.writes, run.spec.stream_keys),
        "interrupts": [{"value": i.value, "id": i.id} for i in interrupts],
    }
    yield from _task_event(run, state, "task_result", payload)


def still_paused(
    run: RunSetup, state: RunState, task: Task, interrupts: tuple[Interrupt, ...]
) -> Generator[Emit, object, None]:
    """Report a task a resume leaves paused, without running it (DESIGN §4.6).

    The stream shows what LangGraph's run of it again shows: its interrupts in
    ``updates`` / ``values`` and a result carrying them (``tasks`` / ``debug``).
    """
    if run.streams_updates or run.streams_values:
        yield from interrupts_found(run, state, interrupts)
    if run.streams_tasks:
        yield from task_result(run, state, task, None, interrupts)


def _task_event(
    run: RunSetup, state: RunState, kind: str, payload: Mapping[str, object]
) -> Generator[Emit, object, None]:
    if run.wants("tasks"):
        yield run.emit("tasks", payload)
    if run.wants("debug"):
        yield run.emit(
            "debug", {"step": state.step, "timestamp": now_iso(), "type": kind, "payload": payload}
        )


def reached_checkpoint(
    run: RunSetup, state: RunState, persist: Persistence
) -> Generator[Emit, object, None]:
    """``checkpoints`` / ``debug`` event for the checkpoint the next step starts from.

    Reported when that step starts, as LangGraph does: a run paused by
    ``interrupt_after`` reports its last checkpoint when it is resumed, and a run
    stopped by the recursion limit does not report it.
    """
    state.unreported = False
    yield from resumed_checkpoint(run, state, persist)


def resumed_checkpoint(
    run: RunSetup, state: RunState, persist: Persistence
) -> Generator[Emit, object, None]:
    """``checkpoints`` / ``debug`` event for the checkpoint a resumed run starts from."""
    if not run.streams_checkpoints or persist.head is None:
        return
    described = [_task_item(run, t, state.records.get(t.id)) for t in current_tasks(run, state)]
    yield from _checkpoint_event(
        run, state, persist, state.parent_config, described, state.step - 1
    )


def _checkpoint_event(
    run: RunSetup,
    state: RunState,
    persist: Persistence,
    parent: CheckpointRef | RunnableConfig | None,
    tasks: list[dict[str, object]],
    step: int,
) -> Generator[Emit, object, None]:
    """Emit one checkpoint's event; configs name their ancestors as history's do."""
    parents: dict[str, str] = dict(state.metadata.get("parents") or {})
    head = persist.head
    assert head is not None
    payload = {
        "config": _public(head, parents),
        "parent_config": _public(parent, parents) if parent and _has_id(parent) else None,
        "values": output(run, state, run.spec.stream_keys),
        "metadata": dict(state.metadata),
        "next": [t["name"] for t in tasks],
        "tasks": tasks,
    }
    if run.wants("checkpoints"):
        yield run.emit("checkpoints", payload)
    if run.wants("debug"):
        event = {"step": step, "timestamp": state.checkpoint["ts"], "type": "checkpoint"}
        yield run.emit("debug", {**event, "payload": payload})


def _public(at: CheckpointRef | RunnableConfig, parents: dict[str, str]) -> RunnableConfig:
    """A checkpoint's config as events show it: a subgraph's adds ``checkpoint_map``.

    The map names the checkpoint of every graph above (``parents``, from the
    checkpoint's metadata) and this one, as a snapshot's config does, so that a
    config taken from an event addresses the same checkpoint as history's.
    """
    conf = dict(as_config(at).get("configurable") or {})
    if parents:
        conf["checkpoint_map"] = {**parents, conf.get("checkpoint_ns", ""): conf["checkpoint_id"]}
    return {"configurable": conf}


def _task_item(run: RunSetup, task: Task, rec: TaskRecord | None) -> dict[str, object]:
    """A task as a checkpoint event lists it; ``rec``: what it left at that checkpoint.

    ``state`` names a subgraph task's own checkpoints, as ``PregelTask.state`` does in
    history; a subgraph compiled with ``checkpointer=False`` keeps none.
    """
    item: dict[str, object] = {"id": task.id, "name": task.name}
    if rec is not None and rec.done:
        item["result"] = folded_writes(rec.writes, run.out_keys)
    shown = rec.interrupts if rec is not None and rec.resumable else ()
    item["interrupts"] = tuple({"value": i.value, "id": i.id} for i in shown)
    item["state"] = subgraph_config(run.cfg.thread_id, task) if keeps_state(task) else None
    return item


def _has_id(at: CheckpointRef | RunnableConfig) -> bool:
    return bool((as_config(at).get("configurable") or {}).get("checkpoint_id"))


def interrupted(
    run: RunSetup, state: RunState, exc: GraphInterrupt
) -> Generator[Emit, object, None]:
    """The events of a root run that pauses (its output then carries the interrupts)."""
    if state.tasks and any(t.writes for t in state.tasks):
        # The output shows what finished siblings wrote (as LangGraph's does);
        # applied to the channels only, so the checkpoint stays as saved.
        done = [t for t in state.tasks if t.writes]
        updated = preview_writes(state.channels, done, run.out_keys)
        if run.streams_values and not updated.isdisjoint(run.out_keys):
            yield run.emit("values", output(run, state))
    if not exc.interrupts and run.wants("updates"):
        yield run.emit("updates", {INTERRUPT: ()})
