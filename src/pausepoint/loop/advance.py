"""Moving a run past its checkpoint: the next one is made and handed to the planner.

Called when the input is taken (`pausepoint.loop.begin.take_input`) and after
each step is applied (`pausepoint.loop.run`): the step's records go, the checkpoint
gets its new id and metadata, and `pausepoint.loop.persistence.Persistence`
decides whether it is saved now, with what, or later.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint.ids import new_stamp
from pausepoint.constants import START

if TYPE_CHECKING:
    from pausepoint.loop.effects import Effect
    from pausepoint.loop.persistence import Persistence
    from pausepoint.loop.state import RunSetup, RunState

__all__ = ["leave_step", "start_step_follows"]


def leave_step(
    run: RunSetup, state: RunState, persist: Persistence, source: str, last: bool = False
) -> Generator[Effect, object, None] | None:
    """Move past the current checkpoint; return the generator that saves the next.

    ``last``: no step follows (the lease goes with the checkpoint). None when nobody
    can see the next (no saver, no checkpoint stream): an unseen checkpoint keeps the
    run's first id, since task ids hash the step too (a new id and timestamp were
    ~10 % of a step without a checkpointer; no generator is made for it either).
    """
    if state.records or state.null_writes:  # what the step left behind
        state.records, state.null_writes = {}, []
    return _checkpoint(run, state, persist, source, last) if persist.has_saver else None


def _checkpoint(
    run: RunSetup, state: RunState, persist: Persistence, source: str, last: bool
) -> Generator[Effect, Any, None]:
    """Make the next checkpoint and tell the planner (see `leave_step`, which calls it)."""
    checkpoint = state.checkpoint
    checkpoint["id"], checkpoint["ts"] = new_stamp()
    if (shape := run.spec.shape) is not None:  # a new thread's first: stamped (deploys.md)
        checkpoint["graph"] = shape.stamp
    state.metadata = {
        "source": source,  # type: ignore[typeddict-item]
        "step": state.step,
        "parents": dict(run.parents),
        **run.run_metadata,  # type: ignore[typeddict-item]
    }
    waits = source == "input" and persist.pairs_input and start_step_follows(run, state)
    parent, save = persist.checkpoint_made(checkpoint, state.metadata, input_waits=waits, last=last)
    if save is not None:
        persist.saved(save, (yield save))
    if run.streams_checkpoints:  # reported as the next step starts
        state.parent_config, state.unreported = persist.shown_parent(parent), True


def start_step_follows(run: RunSetup, state: RunState) -> bool:
    """Whether the start step follows the input checkpoint just made, with nothing between.

    Asked when the saver could store both checkpoints at once (``Persistence.pairs_input``):
    in a root run, when the input changed only ``__start__`` and the start node has no
    conditional edge: the next step is that node alone, applied in the loop with no
    driver round trip, so no caller code and no other saver call comes between the two
    checkpoints unless the step fails or pauses (then the planner saves the input
    checkpoint first: ``Persistence.flush_waiting``).

    Only a new thread's: the waiting checkpoint holds the input and nothing else.
    An older state's values would be in it too, and a reducer that changes its old
    value in place (``a.update(b); return a``) would change them before they are
    stored (the differential test in tests/savers/test_sqlite.py shows it).
    """
    if run.opts.nest is not None or state.updated != {START}:
        return False
    if state.checkpoint["channel_values"].keys() != {START}:
        return False
    start = run.spec.nodes.get(START)
    return start is not None and not start.branches and not start.retry
