"""Load a stored checkpoint into live state: the one place that reads one back.

A run (`pausepoint.loop.run`), ``get_state`` (`pausepoint.loop.snapshot`) and
``update_state`` (`pausepoint.graph.update`) all start from a stored checkpoint
the same way, so they agree on what it means: the same channels, the same step
(hence the same task ids, which hash the step) and the same pending writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pausepoint.channels import Channel
from pausepoint.checkpoint.base import Checkpoint, CheckpointTuple, copy_checkpoint
from pausepoint.loop.pending import TaskRecord, read_records
from pausepoint.loop.spec import GraphSpec

__all__ = ["Restored", "next_step", "restore"]


@dataclasses.dataclass(slots=True)
class Restored:
    """A stored checkpoint, loaded: ready to prepare the tasks of its next step."""

    checkpoint: Checkpoint
    """A copy of the stored checkpoint: applying writes to it changes nothing stored."""
    channels: dict[str, Channel]
    step: int
    """The step that starts at the checkpoint (its own step plus one)."""
    records: dict[str, TaskRecord]
    """What each task of that step left: writes, interrupts, answers, errors."""
    null_writes: list[tuple[str, object]]
    """Writes that belong to no task (a ``Command(update=...)`` stored on resume).
    Not applied: each caller applies them when (and as far as) its rules say."""


def next_step(metadata: Mapping[str, Any]) -> int:
    """The step that starts at a checkpoint with this metadata.

    A checkpoint stored without a step (by another saver, or by hand) counts as
    step -1, so its tasks run in step 0: LangGraph 1.1.6's ``get_state`` reads
    it so (its run fails on it with ``KeyError: 'step'``). A run used -2 here
    until issue 19 and so gave such a checkpoint's tasks other ids than its
    snapshot showed.
    """
    return int(metadata.get("step", -1)) + 1


def restore(spec: GraphSpec, saved: CheckpointTuple) -> Restored:
    """Load ``saved`` for ``spec``: channels, step and pending writes (see `Restored`)."""
    checkpoint = copy_checkpoint(saved.checkpoint)
    if spec.shape is not None:  # what is written from here on is this graph's (deploys.md)
        checkpoint["graph"] = spec.shape.stamp
    records, null_writes = read_records(saved.pending_writes or [])
    return Restored(
        checkpoint,
        spec.fresh_channels(checkpoint["channel_values"]),
        next_step(saved.metadata),
        records,
        null_writes,
    )
