"""What one run knows: its read-only setup and its changing state (issue 19).

A run (`pausepoint.loop.run`) is three objects: a `RunSetup` (the graph, the
options, what is streamed: fixed when the run starts), a `RunState` (the
checkpoint, channels, step, tasks and answers: what each step changes), and a
`pausepoint.loop.persistence.Persistence` planner (what is saved when). The
functions of `begin`, `fork`, `emit` and `lease` take them explicitly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint.base import empty_checkpoint
from pausepoint.loop.effects import Emit
from pausepoint.loop.restore import restore
from pausepoint.loop.tasks import Task, prepare_tasks, read_values
from pausepoint.loop.writes import VersionClock

if TYPE_CHECKING:
    from pausepoint.channels import Channel
    from pausepoint.checkpoint.base import (
        Checkpoint,
        CheckpointMetadata,
        CheckpointRef,
        CheckpointTuple,
    )
    from pausepoint.config import RunConfig, RunnableConfig
    from pausepoint.loop.namespaces import Afresh, ReplayPoint
    from pausepoint.loop.pending import ResumeMap, TaskRecord
    from pausepoint.loop.prepare import ExecTask
    from pausepoint.loop.run import RunOptions
    from pausepoint.loop.spec import GraphSpec, NodeProc
    from pausepoint.observing import RunTrace

__all__ = ["RunSetup", "RunState", "current_tasks", "output", "restore_saved"]


@dataclasses.dataclass(slots=True)
class RunSetup:
    """What a run is given and decides once: read-only while it runs.

    Not ``frozen``, as `pausepoint.config.RunConfig`: every invoke makes one.
    """

    spec: GraphSpec
    opts: RunOptions
    cfg: RunConfig
    input: Any
    out_keys: tuple[str, ...]
    """Keys ``values``/``updates`` report."""
    parents: Mapping[str, str]
    """The ``parents`` of the run's checkpoints' metadata (`namespaces.parents_of`)."""
    run_metadata: dict[str, object]
    """What checkpoints' metadata adds from the config (none is made if none is seen)."""
    custom_writer: Callable[[Any], None]
    # Read on every step: looked up once.
    streams_values: bool
    streams_updates: bool
    streams_tasks: bool
    streams_checkpoints: bool
    """Checkpoint events describe what history holds: none without a saver (as in
    LangGraph), so only a saver makes the run's checkpoints visible."""
    live: bool
    """Whether the stream reads chunks tasks make while they run (`prepare.streams_live`)."""

    def emit(self, mode: str, payload: object) -> Emit:
        """A stream chunk of this run's namespace."""
        return Emit(self.opts.ns, mode, payload)

    def wants(self, mode: str) -> bool:
        """Whether the caller streams ``mode``."""
        return mode in self.opts.stream_modes


class RunState:
    """The state a run changes as it goes: plain data, no behaviour.

    A new thread's empty state until a saved one is restored (``begin.load``).
    """

    __slots__ = (
        "afresh",
        "answered",
        "channels",
        "checkpoint",
        "clock",
        "entering",
        "epoch",
        "historical",
        "metadata",
        "next_pulls",
        "null_writes",
        "owners",
        "parent_config",
        "pausing",
        "prepared",
        "read_ahead",
        "records",
        "replay",
        "replayed",
        "restarted",
        "resume",
        "resuming",
        "source_ns",
        "step",
        "stop",
        "stopping",
        "tasks",
        "trace",
        "unreported",
        "updated",
        "updated_by_name",
    )

    def __init__(self, replay: ReplayPoint | None = None, afresh: Afresh | None = None) -> None:
        self.checkpoint: Checkpoint = empty_checkpoint("", "")
        self.metadata: CheckpointMetadata = {"source": "input", "step": -2, "parents": {}}
        self.channels: dict[str, Channel] = {}
        self.records: dict[str, TaskRecord] = {}
        self.null_writes: list[tuple[str, object]] = []
        self.step = -1
        self.stop = 0  # the first step past the recursion limit
        self.tasks: list[Task] = []
        # Channels the last step changed; None while unknown: every node is considered.
        self.updated: set[str] | None = None
        # While it is unknown: whether the loaded checkpoint recorded what its step
        # changed. LangGraph then orders the step's pull tasks by name (tasks.py).
        self.updated_by_name = False
        # Bumped whenever channels change outside a new checkpoint (null writes),
        # so current_tasks() never reuses tasks prepared from older values.
        self.epoch = 0
        self.clock = VersionClock()
        self.prepared: tuple[tuple[str, int, int], list[Task]] | None = None
        # ((step, epoch), the nodes that step runs): found by lease.ends_with_step, used once.
        self.next_pulls: tuple[tuple[int, int], list[NodeProc]] | None = None
        # --- answers
        self.resume: ResumeMap | None = None
        # Interrupt id → task ids holding it, when a Command's resume was checked
        # (pending.interrupt_owners); and the tasks this run's resume answers, with
        # their new answer lists (answers.plan_answers).
        self.owners: dict[str, list[str]] | None = None
        self.answered: dict[str, list[object] | None] = {}
        self.resuming = False
        self.pausing = False  # a task of the step paused
        self.stopping = False  # the driver stopped the run (effects.Stopped): its step ends it
        # --- where it was read from
        self.historical = False  # a root run given an old checkpoint: a replay or a fork
        # The checkpoint read with the lease's claim: (what was read, what it found).
        self.read_ahead: tuple[CheckpointRef, CheckpointTuple | None] | None = None
        # A replay: the point its subgraphs read their state before (namespaces.py);
        # for a subgraph run, the id it read its state before, if it did.
        self.replay = replay
        self.replayed: str | None = None
        self.source_ns: str | None = None  # read from another namespace (begin.start_moved)
        self.restarted = False  # an update made its paused node ask again (fork.py)
        self.afresh = afresh  # an answer a fork carries (fork.answer_afresh)
        # --- checkpoint events
        # The current checkpoint's parent: the saver's config, or the run's own ref.
        self.parent_config: CheckpointRef | RunnableConfig | None = None
        self.unreported = False  # a checkpoint made, its event not yet streamed
        # --- observation (pausepoint.observing): None unless an observer is installed
        self.trace: RunTrace | None = None
        # What each task attempt does first in its own context (prepare.task_entry).
        self.entering: Callable[[ExecTask], None] | None = None


def restore_saved(run: RunSetup, state: RunState, saved: CheckpointTuple) -> None:
    """Continue from ``saved`` (`pausepoint.loop.restore`): its checkpoint, channels, records."""
    loaded = restore(run.spec, saved)
    state.checkpoint, state.channels, state.step = loaded.checkpoint, loaded.channels, loaded.step
    state.records, state.null_writes = loaded.records, loaded.null_writes
    state.updated_by_name = bool(saved.checkpoint.get("updated_channels"))
    state.metadata = saved.metadata
    state.parent_config = saved.parent_config


def current_tasks(run: RunSetup, state: RunState) -> list[Task]:
    """The tasks of the step that starts at the current checkpoint, prepared once.

    Resuming asks for them up to three times (checking the answer, binding it,
    running the step); each time would cost O(tasks).
    """
    key = (state.checkpoint["id"], state.step, state.epoch)
    prepared = state.prepared
    if prepared is None or prepared[0] != key:
        ahead, state.next_pulls = state.next_pulls, None
        pulls = ahead[1] if ahead is not None and ahead[0] == (state.step, state.epoch) else None
        tasks = prepare_tasks(
            run.spec,
            state.checkpoint,
            state.channels,
            state.step,
            run.cfg.checkpoint_ns,
            state.updated,
            pulls,
            state.updated_by_name,
        )
        state.prepared = prepared = (key, tasks)
    return prepared[1]


def output(run: RunSetup, state: RunState, keys: tuple[str, ...] | None = None) -> object:
    """The values of ``keys`` (default: the output keys), or the output channel's."""
    if run.spec.output_channel is not None:
        chan = state.channels[run.spec.output_channel]
        return chan.get() if chan.is_available() else None
    return read_values(state.channels, run.out_keys if keys is None else keys)
