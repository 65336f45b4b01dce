"""When a run saves what: the persistence planner (issue 19).

The loop tells the planner what happened — a task finished with writes, a step
was applied and its checkpoint made, the run paused, failed or ended — and the
planner answers with the effects that save it (`SaveWrites`, `SaveCheckpoint`,
`ReleaseThread`), or with nothing when the save waits: for the step's checkpoint
(its last task's writes go with it), for the run's exit (durability ``"exit"``),
or for the start step (a new run's input checkpoint goes with it). Every save
decision lives here, so batching can be tested by feeding events in by hand
(tests/test_persistence_planner.py), without a graph.

Durability:

- ``"sync"``/``"async"``: each finished task's writes are saved at once, each
  checkpoint as it is made (the driver decides whether it waits for the saver).
- ``"exit"``: nothing is saved while the run goes; the last checkpoint and its
  step's writes (``@task`` calls' included) are saved when it pauses, fails or
  ends (a per-task subgraph that ends saves nothing: its parent task's writes
  carry its result; a stateful one saves its end, its next run's start).

Each save is one ``StepCommit`` (`pausepoint.checkpoint.base`): a step's last
writes go with its checkpoint for every saver (the default ``commit`` makes the
same calls, in the same order, as saving them apart). Where one commit costs
about what one of its parts would (the saver's ``batches``: a SQL saver, each
commit a round trip) a new run's input checkpoint goes with its first step's,
and a lease's release with a step's checkpoint.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint.base import CheckpointPut, CheckpointRef, TaskWrites, copy_checkpoint
from pausepoint.constants import NS_END
from pausepoint.loop.effects import Effect, ReleaseThread, SaveCheckpoint, SaveWrites

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import Checkpoint, CheckpointMetadata, SaverProtocol
    from pausepoint.config import RunConfig
    from pausepoint.loop.lease import RunLease
    from pausepoint.types import Durability

__all__ = ["Persistence"]

Writes = list[tuple[str, object]]


class Persistence:
    """The save decisions of one run: events in, save effects out.

    Args:
        cfg: the run's parsed config (its thread and namespace).
        saver: the run's checkpointer, or None; only its ``batches`` is read.
        durability: ``"sync"``, ``"async"`` or ``"exit"``.
        streams: whether the run reports chunks between a task's end and its step's
            checkpoint (then no write waits for the checkpoint: caller code runs
            between the two, and what a chunk reports is saved before it).
        lease: the thread's lease a root run takes, if any.
    """

    __slots__ = (
        "_checkpoint",
        "_exit",
        "_lease",
        "_metadata",
        "_pairs",
        "_pairs_saver",
        "dirty",
        "folds",
        "has_saver",
        "head",
        "held",
        "leased",
        "persisted",
        "saves_now",
        "thread",
        "unsaved",
        "waiting",
    )

    def __init__(
        self,
        cfg: RunConfig,
        saver: SaverProtocol | None,
        durability: Durability,
        *,
        streams: bool = False,
        lease: RunLease | None = None,
    ) -> None:
        # Where the run's checkpoints go: its thread and namespace (a thread is
        # required with a saver, graph/compiled.py checks it; "" without one).
        self.thread = CheckpointRef(cfg.thread_id or "", cfg.checkpoint_ns)
        self._lease = lease
        self.has_saver = saver is not None
        self._exit = durability == "exit"
        self.saves_now = self.has_saver and not self._exit
        """Whether checkpoints and writes are saved as the run goes (not at its exit)."""
        # The last task of a step may leave its writes to be saved with the step's
        # checkpoint, in one commit (a transaction less per step on SQLite/PostgreSQL,
        # a call and a lock less on InMemorySaver), when nothing is streamed in between:
        # then no caller code runs there.
        self.folds = self.saves_now and not streams
        # Two checkpoints in one commit, a lease let go with a step's checkpoint: only
        # where a commit is a round trip (the look-ahead and copy cost more elsewhere).
        self._pairs_saver = saver is not None and saver.batches
        self._pairs = self._pairs_saver and self.folds
        self.head: CheckpointRef | None = None
        """The run's current checkpoint: what its writes are saved against."""
        self.persisted: CheckpointRef | None = None
        """The newest checkpoint that is in the saver (``head`` may not be yet: "exit")."""
        self.dirty = False  # the current checkpoint is not saved yet ("exit")
        self.unsaved: list[tuple[str, Writes]] = []  # writes kept for the exit ("exit")
        self.held: TaskWrites | None = None  # a step's last writes, for its checkpoint
        # A new run's input checkpoint, not saved yet: it goes with the start step's
        # checkpoint in one saver call (see `checkpoint_made`).
        self.waiting: SaveCheckpoint | None = None
        self.leased = False  # the run holds its thread's lease
        # The run's newest checkpoint while it is not saved ("exit"): saved at the end.
        self._checkpoint: Checkpoint | None = None
        self._metadata: CheckpointMetadata | None = None

    # --- what the run asks ---------------------------------------------------------------

    @property
    def pairs_input(self) -> bool:
        """Whether an input checkpoint may wait for the start step's (ask the graph then)."""
        return self._pairs

    @property
    def releases_with_step(self) -> bool:
        """Whether a step's checkpoint may carry the lease's release (then ask the graph).

        For a saver that stores a checkpoint and lets the lease go in one round trip;
        an in-process saver (InMemorySaver) releases for less than the look-ahead costs.
        """
        return self.leased and self.saves_now and self._pairs_saver

    def calls_config(self) -> CheckpointRef | None:
        """Where a task's ``@task`` call results are saved as they finish (None: not now)."""
        return self.head if self.saves_now else None

    def shown_parent(self, parent: CheckpointRef) -> CheckpointRef | None:
        """The parent a checkpoint just made shows in events; ``parent``: its saved parent.

        With durability ``"exit"`` nothing was saved yet: the event names the last
        checkpoint that was (the one the checkpoint saved at exit will name), so that no
        event points at a checkpoint history never holds (docs/differences.md).
        """
        return parent if self.saves_now else self.persisted

    # --- events ----------------------------------------------------------------------

    def restored(self, at: CheckpointRef) -> None:
        """The run continues from the saved checkpoint ``at``."""
        self.head = at
        self.persisted = at

    def lease_taken(self) -> None:
        """The run took its thread's lease (`pausepoint.loop.lease.claim`)."""
        self.leased = True

    def task_finished(
        self, task_id: str, writes: Writes, path: str, hold: bool
    ) -> SaveWrites | None:
        """A task finished with ``writes``: the effect that saves them now, or None.

        ``hold``: the step's last outcome, with nothing in the step paused or failed:
        its writes may go with the step's checkpoint (``folds``). A plain method, so
        the per-task hot path yields the effect without making a generator for it.
        """
        if hold and self.folds and self.head is not None:
            self.held = TaskWrites(task_id, writes, path)
            return None
        return self.writes_effect(task_id, writes, path)

    def writes_effect(self, task_id: str, writes: Writes, path: str = "") -> SaveWrites | None:
        """The effect that saves a task's writes now, or None (kept for the exit, no saver)."""
        if not self.has_saver:
            return None
        if self.saves_now and self.head is not None:
            return SaveWrites(self.head, writes, task_id, path)
        self.unsaved.append((task_id, writes))
        return None

    def calls_kept(self, kept: list[tuple[str, Writes]]) -> None:
        """A step's ``@task`` calls' writes, kept for the exit (durability ``"exit"``).

        Saved with the step's other writes if the run pauses or fails in it (a
        finished call is not run again on resume); dropped with them when the
        step's checkpoint is made (its tasks' writes hold their effect).
        """
        self.unsaved.extend(kept)

    def save_writes(
        self, task_id: str, writes: Writes, path: str = "", last: bool = False
    ) -> Generator[Effect, object, None]:
        """Writes to keep now (an interrupt, an error, an answer, a command's update).

        ``last``: the run's last write: the lease goes with it.
        """
        if self.waiting is not None:  # a write never goes before its checkpoint
            yield from self.flush_waiting()
        effect = self.writes_effect(task_id, writes, path)
        if effect is not None:
            if last and self.leased:
                effect.release = True
            yield effect
            self.leased = self.leased and not effect.release

    def checkpoint_made(
        self,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        *,
        input_waits: bool = False,
        last: bool = False,
    ) -> tuple[CheckpointRef, SaveCheckpoint | None]:
        """A new checkpoint was made (input, or a step applied): save it if due.

        ``input_waits``: an input checkpoint the start step follows alone, with no
        caller code in between (`pausepoint.loop.begin.start_step_follows`); it
        waits to be saved with that step's, in one call, where the saver can
        (`pairs_input`). ``last``: no step follows, the lease goes with it.
        Returns the parent the checkpoint is saved under, and the `SaveCheckpoint`
        to yield now (its reply goes to `saved`), or None when the save waits.
        A plain method, as `task_finished` is: the loop yields the effect itself,
        without a generator made (and a frame on the save's stack) for it once a
        step. Writes kept for the exit are dropped: they were the old checkpoint's,
        and the new one holds their effect.
        """
        if self.unsaved:
            self.unsaved = []
        parent = self.head or self.thread
        if not self.saves_now:
            self.head = self.thread.at(checkpoint["id"])
            self.dirty = self.has_saver
            self._checkpoint, self._metadata = checkpoint, metadata
            return parent, None
        # The saver copies what it keeps (its contract), so no copy is made here.
        held, self.held = self.held, None
        save = SaveCheckpoint(parent, checkpoint, metadata, {}, () if held is None else (held,))
        save.release = last
        if input_waits and self._pairs:
            # The start step changes the run's checkpoint dicts in place: a copy waits.
            self.waiting = SaveCheckpoint(parent, copy_checkpoint(checkpoint), metadata, {})
            self.head = self.persisted = self.thread.at(checkpoint["id"])
            self.dirty = False
            return parent, None
        if (waiting := self.waiting) is not None:
            self.waiting = None
            save.config = waiting.config
            save.first = CheckpointPut(waiting.checkpoint, waiting.metadata, {})
        return parent, save

    def saved(self, save: SaveCheckpoint, at: CheckpointRef) -> None:
        """The checkpoint `checkpoint_made` gave to save is stored, at ``at``."""
        self.head = self.persisted = at  # (``dirty`` is never set while saving as it goes)
        if save.release:
            self.leased = False  # done: let go with it

    def forked(
        self, parent: CheckpointRef, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> Generator[Effect, Any, None]:
        """An old checkpoint was copied into a fork (`pausepoint.loop.fork`): saved now.

        Whatever the durability: what the run saves later (at exit too) follows it.
        """
        self.head = self.persisted = yield SaveCheckpoint(parent, checkpoint, metadata, {})

    def step_failed(self) -> Generator[Effect, object, None]:
        """Applying a step failed: writes left for its checkpoint are saved on their own."""
        yield from self.flush_waiting()
        held, self.held = self.held, None
        if held is not None and self.head is not None:
            yield SaveWrites(self.head, held.writes, held.task_id, held.task_path)

    def run_paused(self) -> Generator[Effect, object, None]:
        """An interrupt paused the run: save what waits (all of it, with ``"exit"``)."""
        yield from self.flush_waiting()
        if self._exit:
            yield from self._flush_exit()

    def run_failed(self) -> Generator[Effect, object, None]:
        """The run failed: save what it still owes (waiting input, held writes, "exit")."""
        yield from self.step_failed()
        if self._exit:
            yield from self._flush_exit()
        yield from self.release()

    def run_ended(self, nested: bool) -> Generator[Effect, object, None]:
        """The run ran out of tasks: with ``"exit"``, a root run saves its end now.

        A nested run of a per-task subgraph that finishes saves nothing: its parent's
        task writes carry the result (the chapter's rule for nested graphs). A
        stateful subgraph's (``checkpointer=True``: no task id in its namespace) saves
        its end, as LangGraph does: its next run goes on from it.
        """
        if self._exit and (not nested or NS_END not in self.thread.checkpoint_ns):
            yield from self._flush_exit()
        yield from self.release()

    def release(self) -> Generator[Effect, object, None]:
        """Let the thread's lease go (once), if the run holds it."""
        if self.leased and self._lease is not None:
            self.leased = False
            lease = self._lease
            yield ReleaseThread(lease.thread_id, lease.owner, lease.run)

    # --- flushing ----------------------------------------------------------------------

    def flush_waiting(self) -> Generator[Effect, object, None]:
        """Save the input checkpoint on its own: the start step's will not follow it now."""
        waiting, self.waiting = self.waiting, None
        if waiting is not None:
            yield waiting

    def _flush_exit(self) -> Generator[Effect, Any, None]:
        """Durability "exit": write the last checkpoint (if new) and its writes now."""
        config = self.head
        if self.dirty and self._checkpoint is not None and self._metadata is not None:
            parent = self.persisted or self.thread
            config = yield SaveCheckpoint(parent, self._checkpoint, self._metadata, {})
            self.persisted = config
            self.dirty = False
        if config is not None:
            for task_id, writes in self.unsaved:
                yield SaveWrites(config, writes, task_id, "")
        self.unsaved = []
