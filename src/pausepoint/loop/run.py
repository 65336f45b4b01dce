"""The superstep loop: one generator that runs a graph and yields effects.

One call of `run` is one ``invoke``/``stream`` of one graph (a subgraph
run inside a task is a run of its own). It loads the thread's checkpoint,
takes the input (new input, ``None`` to continue, or a ``Command``), then runs
supersteps until no task is left, an interrupt pauses it, or a node fails.
Drivers carry out its effects; see `pausepoint.loop.effects`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Sequence
from typing import Any

from pausepoint._asking import keep_first_deadlines
from pausepoint.channels import Channel
from pausepoint.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    empty_checkpoint,
)
from pausepoint.checkpoint.ids import new_stamp
from pausepoint.config import RunConfig, RunnableConfig
from pausepoint.constants import ASKED, ERROR, INTERRUPT, NO_WRITES, START
from pausepoint.errors import GraphInterrupt, GraphRecursionError, ParentCommand
from pausepoint.loop import begin, fork, lease, namespaces
from pausepoint.loop import emit as out
from pausepoint.loop.breakpoints import pauses_at
from pausepoint.loop.effects import (
    Emit,
    NextOutcome,
    Outcome,
    RunTasks,
    SaveWrites,
    Stopped,
)
from pausepoint.loop.lease import RunLease
from pausepoint.loop.node import input_outcome
from pausepoint.loop.pending import (
    ResumeMap,
    TaskRecord,
    is_own_interrupt,
    match_records,
    with_ids,
)
from pausepoint.loop.persistence import Persistence
from pausepoint.loop.prepare import ExecTask, StepFrame, custom_writer, prepare_for_execution
from pausepoint.loop.restore import restore
from pausepoint.loop.spec import GraphSpec, NodeProc
from pausepoint.loop.tasks import Task, count_steps_left, prepare_tasks, read_values
from pausepoint.loop.writes import VersionClock, apply_writes, finish_deferred
from pausepoint.task_context import NestInfo
from pausepoint.types import Durability, Interrupt

__all__ = ["RunOptions", "RunResult", "run"]

Effect = Any


@dataclasses.dataclass(slots=True)
class RunOptions:
    """How to run: parsed once by the public API, read-only in the loop.

    Not ``frozen``, as `RunConfig`: every invoke makes one.
    """

    config: RunConfig
    has_saver: bool
    durability: Durability
    stream_modes: frozenset[str]
    stream_subgraphs: bool
    ns: tuple[str, ...]
    nest: NestInfo | None
    interrupt_before: tuple[str, ...] | str
    interrupt_after: tuple[str, ...] | str
    sink: Callable[[tuple[str, ...], str, Any], None] | None
    saver: Any
    output_keys: tuple[str, ...] | None = None
    """Keys ``values``/``updates`` report (default: the output schema's; ``stream`` passes
    every state key, as LangGraph's does)."""
    lease: RunLease | None = None  # a root run's thread lease (single-writer threads)
    context: Any = None  # ``invoke(context=...)``: what ``Runtime.context`` is (not saved)
    messages: Any = None  # streaming "messages": the MessageTap its tasks report through


@dataclasses.dataclass(frozen=True, slots=True)
class RunResult:
    """What a run ends with: the output values and the interrupts that paused it."""

    values: Any
    interrupts: tuple[Interrupt, ...]
    paused: bool


class _Run:
    """The mutable state of one run; ``steps`` is the generator."""

    # ((step, epoch), the nodes that step runs): found by lease.ends_with_step, used once.
    next_pulls: tuple[tuple[int, int], list[NodeProc]] | None = None
    stopping = False  # the driver stopped the run (effects.Stopped): its step ends it

    def __init__(self, spec: GraphSpec, input: Any, opts: RunOptions) -> None:
        self.spec = spec
        self.input = input
        self.opts = opts
        self.cfg = opts.config
        # A new thread's empty state until restore() finds a saved one (start_fresh).
        self.checkpoint: Checkpoint = empty_checkpoint("", "")
        self.metadata: CheckpointMetadata = {"source": "input", "step": -2, "parents": {}}
        self.channels: dict[str, Channel] = {}
        self.records: dict[str, TaskRecord] = {}
        self.null_writes: list[tuple[str, Any]] = []
        self.resume: ResumeMap | None = None
        # Interrupt id → task ids holding it, when a Command's resume was checked
        # (pending.interrupt_owners); and the tasks this run's resume answers, with
        # their new answer lists (answers.plan_answers).
        self.owners: dict[str, list[str]] | None = None
        self.answered: dict[str, list[Any] | None] = {}
        self.resuming = False
        self.step = -1
        self.stop = 0
        self.tasks: list[Task] = []
        self.pausing = False
        self.historical = False
        # The checkpoint read with the lease's claim: (what was read, what it found).
        self.read_ahead: tuple[RunnableConfig, CheckpointTuple | None] | None = None
        # A replay: the point its subgraphs read their state before (namespaces.py);
        # for a subgraph run, the id it read its state before, if it did.
        self.replay = opts.nest.replay if opts.nest is not None else None
        self.replayed: str | None = None
        self.source_ns: str | None = None  # read from another namespace (begin.start_moved)
        self.restarted = False  # an update made its paused node ask again (fork.py)
        self.afresh = opts.nest.afresh if opts.nest is not None else None  # fork.answer_afresh
        self.parents = namespaces.parents_of(opts.nest, opts.config.configurable)
        self.out_keys = opts.output_keys or spec.output_keys
        modes = opts.stream_modes
        # Read on every step: looked up once here.
        self.streams_values = "values" in modes
        self.streams_updates = "updates" in modes
        self.streams_tasks = "tasks" in modes or "debug" in modes
        # Checkpoint events describe what history holds: none without a saver (as in
        # LangGraph), so only a saver makes the run's checkpoints visible.
        self.streams_checkpoints = opts.has_saver and ("checkpoints" in modes or "debug" in modes)
        self.checkpoint_visible = opts.has_saver
        # Channels the last step changed; None while unknown: every node is considered.
        self.updated: set[str] | None = None
        self.parent_config: RunnableConfig | None = None
        self.unreported = False  # a checkpoint made, its event not yet streamed
        # What checkpoints' metadata adds from the config (none is made if none is seen).
        self.run_metadata = opts.config.run_metadata() if self.checkpoint_visible else {}
        # Bumped whenever channels change outside a new checkpoint (null writes),
        # so current_tasks() never reuses tasks prepared from older values.
        self.epoch = 0
        self._prepared: tuple[tuple[str, int, int], list[Task]] | None = None
        self.clock = VersionClock()
        self.custom_writer = custom_writer(opts)
        # Every save decision: what is saved when, and with what (loop/persistence.py).
        self.persist = Persistence(
            opts.config,
            opts.saver if opts.has_saver else None,
            opts.durability,
            streams=bool(modes),
            lease=opts.lease,
        )

    # --- effects helpers ---------------------------------------------------------------

    def emit(self, mode: str, payload: Any) -> Emit:
        return Emit(self.opts.ns, mode, payload)

    def wants(self, mode: str) -> bool:
        return mode in self.opts.stream_modes

    def leave_step(self, source: str, last: bool = False) -> Generator[Effect, Any, None] | None:
        """Move past the current checkpoint; return the generator that saves the next.

        None when nobody can see the next (no saver, no checkpoint stream): an unseen
        checkpoint keeps the run's first id, since task ids hash the step too (a new
        id and timestamp were ~10 % of a step without a checkpointer; no generator is
        made for it either).
        """
        if self.records or self.null_writes:  # what the step left behind
            self.records, self.null_writes = {}, []
        self.persist.step_left()
        return self.save_checkpoint(source, last) if self.checkpoint_visible else None

    def save_checkpoint(self, source: str, last: bool) -> Generator[Effect, Any, None]:
        """Make the next checkpoint and hand it to the planner (see `leave_step`)."""
        self.checkpoint["id"], self.checkpoint["ts"] = new_stamp()
        self.metadata = {
            "source": source,  # type: ignore[typeddict-item]
            "step": self.step,
            "parents": dict(self.parents),
            **self.run_metadata,  # type: ignore[typeddict-item]
        }
        persist = self.persist
        waits = source == "input" and persist.pairs_input and begin.start_step_follows(self)
        parent = yield from persist.checkpoint_made(
            self.checkpoint, self.metadata, input_waits=waits, last=last
        )
        if self.streams_checkpoints:  # reported as the next step starts
            self.parent_config, self.unreported = persist.shown_parent(parent), True

    # --- the run ---------------------------------------------------------------------

    def steps(self) -> Generator[Effect, Any, RunResult]:
        if (held := self.opts.lease) is not None:
            yield from lease.claim(self, held)
        if self.opts.has_saver:
            yield from begin.load(self)
        else:
            begin.check_no_saver_input(self)
        if not self.channels:
            self.start_fresh()
        try:
            yield from begin.first(self)
            while (yield from self.tick()):
                pass
        except GraphInterrupt as exc:
            yield from self.persist.run_paused()
            if self.opts.nest is not None:
                raise
            yield from out.interrupted(self, exc)  # the root graph swallows interrupts
            yield from self.persist.release()
            return RunResult(self.output(), exc.interrupts, True)
        except BaseException as exc:
            if not isinstance(exc, GeneratorExit):  # closed: no effect can be yielded now
                yield from self.persist.run_failed()
            raise
        yield from self.persist.run_ended(self.opts.nest is not None)
        return RunResult(self.output(), (), False)

    def start_fresh(self) -> None:
        """Begin from no saved state: empty channels, and an id for the empty checkpoint.

        The id is needed now only if no checkpoint will be saved (task ids hash it);
        otherwise saving the input checkpoint gives it one.
        """
        self.channels = self.spec.fresh_channels({})
        if not self.checkpoint_visible:
            self.checkpoint["id"], self.checkpoint["ts"] = new_stamp()
            if self.opts.nest is not None:  # the same task ids on a resume: unsaved_answer
                self.checkpoint["id"] = namespaces.unsaved_id(self.cfg.checkpoint_ns)

    def restore(self, saved: CheckpointTuple | None) -> None:
        """Continue from ``saved`` (`pausepoint.loop.restore`), if there is one."""
        if saved is None:
            return
        loaded = restore(self.spec, saved)
        self.checkpoint, self.channels, self.step = loaded.checkpoint, loaded.channels, loaded.step
        self.records, self.null_writes = loaded.records, loaded.null_writes
        self.metadata = saved.metadata
        self.persist.restored(saved.config)
        self.parent_config = saved.parent_config

    # --- input -------------------------------------------------------------------------

    def current_tasks(self) -> list[Task]:
        """The tasks of the step that starts at the current checkpoint, prepared once.

        Resuming asks for them up to three times (checking the answer, binding it,
        running the step); each time would cost O(tasks).
        """
        key = (self.checkpoint["id"], self.step, self.epoch)
        if self._prepared is None or self._prepared[0] != key:
            ahead, self.next_pulls = self.next_pulls, None
            pulls = ahead[1] if ahead is not None and ahead[0] == (self.step, self.epoch) else None
            tasks = prepare_tasks(
                self.spec,
                self.checkpoint,
                self.channels,
                self.step,
                self.cfg.checkpoint_ns,
                self.updated,
                pulls,
            )
            self._prepared = (key, tasks)
        return self._prepared[1]

    # --- supersteps ----------------------------------------------------------------------

    def tick(self) -> Generator[Effect, Any, bool]:
        if self.step > self.stop:
            raise GraphRecursionError(
                f"Recursion limit of {self.cfg.recursion_limit} reached without hitting a "
                "stop condition. You can increase the limit by setting the `recursion_limit` "
                "config key."
            )
        self.tasks = self.current_tasks()
        count_steps_left(self.spec, self.tasks, self.stop - self.step)
        if self.unreported:
            yield from out.reached_checkpoint(self)
        if not self.tasks:
            return False
        # A fresh step (the usual case) has nothing that ran or paused here before.
        to_run, paused = (
            match_records(self.tasks, self.records, self.resume is not None, self.answered)
            if self.records
            else (self.tasks, [])
        )
        if self.streams_updates and len(to_run) < len(self.tasks):
            yield from out.cached_updates(self)
        if self.opts.interrupt_before and pauses_at(
            self.checkpoint, self.opts.interrupt_before, self.tasks
        ):
            raise GraphInterrupt(())
        interrupts = [i for t in paused for i in self.records[t.id].interrupts] if paused else []
        self.pausing = bool(paused)
        if to_run:
            interrupts += yield from self.execute(to_run)
        if interrupts and fork.answer_afresh(self, interrupts):
            yield from begin.bind_resume(self)
            return True  # the step again: the question re-asked has its answer now
        if interrupts or self.pausing:
            if self.streams_updates or self.streams_values:
                for t in paused:
                    yield from out.interrupts_found(self, self.records[t.id].interrupts)
            raise GraphInterrupt(tuple(interrupts))
        yield from self.after_tick()
        return True

    def execute(self, to_run: list[Task]) -> Generator[Effect, Any, list[Interrupt]]:
        if self.streams_tasks:
            yield from out.task_starts(self, to_run)
        interrupts: list[Interrupt] = []
        errors: list[BaseException] = []
        execs: list[ExecTask] = []
        if len(to_run) == 1 and to_run[0].name == START and to_run[0].is_pure_start():
            # The input step calls no user code: applied here, without a driver round
            # trip (a worker context, a queue hand-off) on every invoke.
            ran: Outcome | None = input_outcome(self.spec, to_run[0], self.channels)
        else:
            frame = StepFrame(self)
            # A driver may run a lone task in place and answer with its outcome at once.
            execs = (
                [prepare_for_execution(frame, to_run[0])]
                if len(to_run) == 1
                else [prepare_for_execution(frame, t) for t in to_run]
            )
            try:
                ran = yield RunTasks(execs, frame.live)
            except Stopped as stop:
                ran, self.stopping = stop.taken(), True
        reports = self.streams_updates or self.streams_tasks
        last = len(to_run) - 1
        for n in range(len(to_run)):
            outcome: Outcome
            if ran is not None:  # the lone task's outcome, already sent back
                outcome, ran = ran, None
            else:
                try:
                    outcome = yield _NEXT_OUTCOME
                except Stopped as stop:
                    outcome, self.stopping = stop.taken(), True
            if outcome.error is None and not reports:  # the usual case, without finish()
                hold = n == last and not (interrupts or errors or self.pausing)
                if (saving := self.keep_writes(outcome.task, outcome.writes, hold)) is not None:
                    yield saving
                continue
            # A lone task fails with no result event (LangGraph's) unless it is streamed
            # live or made @task calls: LangGraph runs it in the background then.
            lone = not last and (not execs or execs[0].runs_inline())
            yield from self.finish(outcome, interrupts, errors, hold=n == last, lone=lone)
        if self.stopping:  # every outcome is kept: now the run ends (failed() saves)
            raise Stopped
        if errors:
            raise errors[0]
        return interrupts

    def keep_writes(
        self, task: Task, writes: Sequence[tuple[str, Any]], hold: bool
    ) -> SaveWrites | None:
        """Keep a finished task's writes; return the effect that saves them now, if any.

        ``hold``: the step's last outcome, with nothing in the step paused or failed:
        its writes may wait for the step's checkpoint (``folds``).
        """
        task.writes = list(writes)
        if not self.persist.has_saver:
            return None
        saved = task.writes or [(NO_WRITES, None)]
        return self.persist.task_finished(task.id, saved, task.path_repr(), hold)

    def finish(
        self,
        outcome: Outcome,
        interrupts: list[Interrupt],
        errors: list[BaseException],
        *,
        hold: bool = False,
        lone: bool = False,
    ) -> Generator[Effect, Any, None]:
        """Save and report a task's outcome.

        ``hold``: the step's last outcome, whose writes may wait for the step's
        checkpoint (``folds``) if nothing in the step paused or failed. ``lone``: the
        step's only task, which made no ``@task`` calls: its failure ends the run with
        no result event (as LangGraph's).
        """
        task, err = outcome.task, outcome.error
        path = task.path_repr() if self.opts.has_saver else ""
        if err is None:
            hold = hold and not (interrupts or errors or self.pausing)
            if (saving := self.keep_writes(task, outcome.writes, hold)) is not None:
                yield saving
            if self.streams_updates or self.streams_tasks:
                yield from out.task_result(self, task, None, ())
        elif isinstance(err, GraphInterrupt):
            # An empty interrupt is a subgraph's static breakpoint: it pauses us too.
            self.pausing = True
            rec = self.records.setdefault(task.id, TaskRecord())
            found = keep_first_deadlines(rec.interrupts, with_ids(err.interrupts, task.ns))
            interrupts.extend(found)
            rec.interrupts = found
            saved: list[tuple[str, Any]] = [
                (INTERRUPT, found),
                *fork.taken_answer(self, task.id, rec),
            ]
            if err.position is not None and is_own_interrupt(found[0], task.ns):
                # Which question this is: its answer will be bound to it (answers.py).
                rec.asked = err.position
                saved.append((ASKED, err.position))
            if rec.error is not None:
                # A saved failure is cleared so the task reads as paused, not failed.
                rec.error = None
                saved.append((ERROR, None))
            # The step's last outcome pauses it, so this is the run's last write.
            yield from self.persist.save_writes(task.id, saved, path, last=hold)
            if self.opts.stream_modes and found:  # a breakpoint's task did not finish: no event
                yield from out.interrupts_found(self, found)
                yield from out.task_result(self, task, None, found)
        else:
            errors.append(err)
            if self.stopping and self.opts.durability == "exit":
                return  # a task cancelled by the stop: LangGraph keeps no error for it
            # A ParentCommand here goes on up: its own node sent it (one a subgraph
            # sent was this task's result already: node.command_from_below).
            if not isinstance(err, ParentCommand):
                # The INTERRUPT slot stays: a failed task re-runs on the next invoke
                # with its saved answers, and a new answer can still be sent to it.
                rec = self.records.setdefault(task.id, TaskRecord())
                rec.error = repr(err)
                kept = [(ERROR, rec.error), *fork.taken_answer(self, task.id, rec)]
                yield from self.persist.save_writes(task.id, kept, path)
                if not lone:
                    yield from out.task_result(self, task, err, ())

    def after_tick(self) -> Generator[Effect, Any, None]:
        ran = self.tasks
        live = None if self.updated is None else self.updated & self.spec.transient
        try:
            updated = apply_writes(self.checkpoint, self.channels, ran, live, self.clock)
        except Exception:
            # No checkpoint follows: writes left for it are saved on their own.
            yield from self.persist.step_failed()
            raise
        if self.spec.deferred and updated.isdisjoint(self.spec.triggered_by):
            # Nothing else would run: deferred nodes' turn (add_node(defer=True)).
            held = self.spec.deferred
            updated |= finish_deferred(self.checkpoint, self.channels, held, self.clock)
        self.updated = updated
        self.tasks = []  # applied: an interrupt_after pause must not apply them again
        if self.streams_values and not updated.isdisjoint(self.out_keys):
            yield self.emit("values", self.output())
        last = lease.ends_with_step(self, ran)  # the lease goes with this checkpoint
        if (saving := self.leave_step("loop", last)) is not None:
            yield from saving
        self.resume = None
        self.answered = {}
        self.resuming = False
        self.step += 1
        if self.opts.interrupt_after and pauses_at(self.checkpoint, self.opts.interrupt_after, ran):
            raise GraphInterrupt(())

    # --- the end -----------------------------------------------------------------------

    def output(self, keys: tuple[str, ...] | None = None) -> Any:
        """The values of ``keys`` (default: the output keys), or the output channel's."""
        if self.spec.output_channel is not None:
            chan = self.channels[self.spec.output_channel]
            return chan.get() if chan.is_available() else None
        return read_values(self.channels, self.out_keys if keys is None else keys)


_NEXT_OUTCOME = NextOutcome()


def run(spec: GraphSpec, input: Any, opts: RunOptions) -> Generator[Effect, Any, RunResult]:
    """The loop for one run of ``spec``; drive it with a driver from `pausepoint.drivers`."""
    return _Run(spec, input, opts).steps()
