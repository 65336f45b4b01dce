"""State inspection as effect generators: what ``get_state`` reads, and what it shows.

Like the run loop, `read_state` does no I/O: it yields
`LoadCheckpoint` effects and is sent back checkpoint
tuples, so the sync and the async driver (``run_effects``) both carry it out, each
with its own colour of saver methods, and ``get_state``/``aget_state`` share every
line but that call. History is a stream of stored checkpoints, whichever saver
method (``list`` or ``alist``) yields them: each becomes a snapshot with
`history_snapshot`, which needs no I/O.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any, TypeVar

from pausepoint.checkpoint.base import CheckpointTuple
from pausepoint.config import RunnableConfig
from pausepoint.constants import NULL_TASK_ID, RESUME
from pausepoint.errors import (
    CheckpointDecodeError,
    GraphMismatchError,
    MigrationError,
    PausepointError,
)
from pausepoint.loop.compat_check import deep_problems, same_graph, written_by
from pausepoint.loop.effects import LoadCheckpoint
from pausepoint.loop.migrate import MigrationPlan, declares, plan_migration
from pausepoint.loop.namespaces import stateful_ns
from pausepoint.loop.snapshot import build_snapshot, keeps_state, snapshot_tasks, subgraph_config
from pausepoint.loop.spec import GraphSpec
from pausepoint.loop.writes import rejected_writes
from pausepoint.types import StateSnapshot

__all__ = ["history_snapshot", "read_state", "showable"]

T = TypeVar("T")


def read_state(
    spec: GraphSpec,
    config: RunnableConfig,
    subgraphs: bool,
    others: Sequence[GraphSpec] = (),
    moved: MigrationPlan | None = None,
) -> Generator[LoadCheckpoint, Any, StateSnapshot]:
    """The snapshot of the checkpoint ``config`` names, or of the thread's newest.

    The newest is shown as the next run will see it: finished tasks' writes
    applied, and only the interrupts still waiting for an answer. A named
    checkpoint is shown as it was stored, with every interrupt raised at it (the
    ones to answer again by forking there, DESIGN §4.3). With ``subgraphs``, each
    subgraph task carries its own snapshot (read recursively); without, the
    config that names it. ``others``: the other graphs that may have written the
    namespace (`written_by` picks the one that did).

    A thread another graph wrote that the graph's declared migrations move is shown
    as the move would leave it (nothing is written: the next run saves the move).
    ``moved``: that move, when a graph above made it (its subgraphs' checkpoints).
    """
    conf = config.get("configurable") or {}
    view = None if moved is None else moved.view(str(conf.get("checkpoint_ns", "")))
    saved: CheckpointTuple | None = view or (yield LoadCheckpoint(config))
    if saved is None:
        return StateSnapshot({}, (), config, None, None, None, (), ())
    spec = written_by(spec, others, saved.checkpoint)
    if not same_graph(spec, saved.checkpoint) and "checkpoint_id" not in conf:
        moved = yield from _moved(spec, saved)
        saved = saved if moved is None else moved.root
    shown = _readable(saved, lambda: showable(spec, saved))
    subs = _readable(saved, lambda: _subgraph_tasks(spec, shown))
    states: dict[str, RunnableConfig | StateSnapshot] = {tid: cfg for tid, (_, cfg) in subs.items()}
    if subgraphs:
        for tid, (graphs, cfg) in subs.items():
            sub, alike = graphs[0], _alike(graphs)
            states[tid] = yield from read_state(sub.spec, _lookup(sub, cfg), True, alike, moved)
    apply = "checkpoint_id" not in (config.get("configurable") or {})
    # Another graph wrote it: what it cannot honour, in its subgraphs too (deploys.md).
    deep = None if same_graph(spec, saved.checkpoint) else (yield from deep_problems(spec, saved))
    return _readable(
        saved,
        lambda: build_snapshot(spec, shown, apply_pending=apply, task_states=states, problems=deep),
    )


def _moved(
    spec: GraphSpec, saved: CheckpointTuple
) -> Generator[LoadCheckpoint, Any, MigrationPlan | None]:
    """The move the graph's migrations would make of ``saved``; None if there is none."""
    if not declares(spec):
        return None
    try:
        return (yield from plan_migration(spec, saved))
    except (GraphMismatchError, MigrationError):  # shown unmoved, with what is wrong
        return None


def history_snapshot(
    spec: GraphSpec, saved: CheckpointTuple, others: Sequence[GraphSpec] = ()
) -> StateSnapshot:
    """One stored checkpoint as ``get_state_history`` shows it.

    As it was stored, like ``get_state`` of a config naming it: with every interrupt
    raised at it, so ``next(s for s in history if s.interrupts)`` finds where a
    question was asked. ``others``: as `read_state`'s.
    """
    spec = written_by(spec, others, saved.checkpoint)

    def build() -> StateSnapshot:
        shown = showable(spec, saved)
        states = {tid: cfg for tid, (_, cfg) in _subgraph_tasks(spec, shown).items()}
        return build_snapshot(spec, shown, apply_pending=False, task_states=states)

    return _readable(saved, build)


def _readable(saved: CheckpointTuple, make: Callable[[], T]) -> T:
    """``make()``, a stored value the graph cannot take raised as ``CheckpointDecodeError``.

    A row can decode and have the checkpoint structure yet hold values this graph
    cannot use (``None`` where a reducer folds lists, a ``Send`` channel holding a
    string): building the snapshot then fails inside a channel. Nothing here runs
    the user's nodes, so such a failure is the stored data's, and the error names
    the checkpoint instead of surfacing as a raw ``TypeError`` from deep inside.
    """
    try:
        return make()
    except PausepointError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        conf = saved.config.get("configurable") or {}
        raise CheckpointDecodeError(
            f"checkpoint {conf.get('checkpoint_id')!r} of thread {conf.get('thread_id')!r} "
            f"holds values this graph cannot read ({type(exc).__name__}: {exc}); the row "
            "is corrupt, or was written by a different graph"
        ) from exc


def showable(spec: GraphSpec, saved: CheckpointTuple) -> CheckpointTuple:
    """``saved`` without stored updates its state cannot take (a warning says which).

    Such an update (a ``Command(update=...)`` value a reducer rejects) was stored by
    a pausepoint that did not check updates before storing them. Applying it fails,
    so a snapshot including it could not be built at all: the snapshot shows the
    state without it, and a ``RuntimeWarning`` names it and says how to repair the
    thread (``update_state`` writes a new checkpoint that leaves it out). Costs a
    scan of the pending writes; the check runs only if some belong to no task.
    """
    pending = saved.pending_writes
    if not pending:
        return saved
    null = [(chan, value) for tid, chan, value in pending if tid == NULL_TASK_ID and chan != RESUME]
    if not null:
        return saved
    rejected = rejected_writes(spec.fresh_channels(saved.checkpoint["channel_values"]), null)
    if not rejected:
        return saved
    warnings.warn(_left_out(saved, rejected), RuntimeWarning, stacklevel=2)
    kept = [w for w in pending if w[0] != NULL_TASK_ID or w[1] not in rejected]
    return saved._replace(pending_writes=kept)


def _left_out(saved: CheckpointTuple, rejected: Mapping[str, Exception]) -> str:
    conf = saved.config.get("configurable") or {}
    problems = "; ".join(f"key {k!r}: {type(e).__name__}: {e}" for k, e in rejected.items())
    return (
        f"checkpoint {conf.get('checkpoint_id')!r} of thread {conf.get('thread_id')!r} holds "
        f"a stored update its state cannot take ({problems}), stored by an older pausepoint "
        "that did not check updates. The snapshot shows the state without it. Runs of this "
        "thread fail until it is repaired: graph.update_state(config, values) writes a new "
        "checkpoint that leaves the rejected update out."
    )


def _subgraph_tasks(
    spec: GraphSpec, saved: CheckpointTuple
) -> dict[str, tuple[tuple[Any, ...], RunnableConfig]]:
    """Subgraph tasks of the step that starts at ``saved``: their graphs and configs.

    The graphs a task may run (`NodeProc.graphs`), the one its first run's namespace
    is read with by default first.
    """
    if not any(n.subgraph or n.calls_graph for n in spec.nodes.values()):
        return {}
    thread: str | None = (saved.config.get("configurable") or {}).get("thread_id")
    return {
        task.id: (task.node.graphs, subgraph_config(thread, task))
        for task in snapshot_tasks(spec, saved)
        if keeps_state(task)  # a checkpointer=False subgraph keeps no state to show
    }


def _alike(graphs: tuple[Any, ...]) -> list[GraphSpec]:
    """The specs of ``graphs[1:]`` whose checkpoints live where ``graphs[0]``'s do.

    A stateful subgraph's (``checkpointer=True``) namespace has no task ids: one
    that is not could not have written the one looked in.
    """
    stateful = getattr(graphs[0], "checkpointer", None) is True
    return [g.spec for g in graphs[1:] if (getattr(g, "checkpointer", None) is True) == stateful]


def _lookup(sub: object, config: RunnableConfig) -> RunnableConfig:
    """The config a subgraph task's checkpoints are found by (stateful: no task ids)."""
    if getattr(sub, "checkpointer", None) is not True:
        return config
    conf = dict(config.get("configurable") or {})
    conf["checkpoint_ns"] = stateful_ns(str(conf.get("checkpoint_ns") or ""))
    return {"configurable": conf}
