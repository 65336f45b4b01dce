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
from pausepoint.checkpoint.base import SaverProtocol
from pausepoint.checkpoint.ids import new_stamp
from pausepoint.config import RunConfig
from pausepoint.constants import ASKED, ASKED_SPAN, ERROR, INTERRUPT, NO_WRITES, START
from pausepoint.errors import GraphInterrupt, GraphRecursionError, ParentCommand
from pausepoint.loop import begin, fork, lease, namespaces
from pausepoint.loop import emit as out
from pausepoint.loop.advance import leave_step
from pausepoint.loop.breakpoints import pauses_at
from pausepoint.loop.effects import Effect, NextOutcome, Outcome, RunTasks, SaveWrites, Stopped
from pausepoint.loop.lease import RunLease
from pausepoint.loop.node import input_outcome
from pausepoint.loop.pending import (
    TaskRecord,
    as_stored,
    is_own_interrupt,
    match_records,
    with_ids,
)
from pausepoint.loop.persistence import Persistence
from pausepoint.loop.prepare import (
    ExecTask,
    StepFrame,
    custom_writer,
    streams_live,
    task_entry,
)
from pausepoint.loop.spec import GraphSpec
from pausepoint.loop.state import RunSetup, RunState, current_tasks, output
from pausepoint.loop.tasks import Task, count_steps_left
from pausepoint.loop.writes import apply_writes, finish_deferred
from pausepoint.observing import OBSERVING, RunStart, RunTrace
from pausepoint.task_context import NestInfo
from pausepoint.types import Durability, Interrupt

__all__ = ["RunOptions", "RunResult", "run"]


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
    saver: SaverProtocol | None
    output_keys: tuple[str, ...] | None = None
    """Keys ``values``/``updates`` report (default: the output schema's; ``stream`` passes
    every state key, as LangGraph's does)."""
    lease: RunLease | None = None  # a root run's thread lease (single-writer threads)
    context: Any = None  # ``invoke(context=...)``: what ``Runtime.context`` is (not saved)
    messages: Any = None  # streaming "messages": the MessageTap its tasks report through
    up: Callable[[tuple[str, ...], str, Any], None] | None = None
    """A nested run's second destination (`NestInfo.up`); ``sink`` is its own caller's."""
    up_modes: frozenset[str] = frozenset()
    own_modes: frozenset[str] | None = None
    """The modes the run's own caller reads (None: all of ``stream_modes``)."""
    custom: Callable[[tuple[str, ...], Any], None] | None = None
    """Where ``get_stream_writer()`` in the run's tasks writes (None: nowhere)."""


@dataclasses.dataclass(frozen=True, slots=True)
class RunResult:
    """What a run ends with: the output values and the interrupts that paused it."""

    values: Any
    interrupts: tuple[Interrupt, ...]
    paused: bool


class _Run:
    """One run: its setup, its state, its persistence planner; ``steps`` is the generator."""

    __slots__ = ("persist", "setup", "state")

    def __init__(self, spec: GraphSpec, input: Any, opts: RunOptions) -> None:
        self.setup = _setup(spec, input, opts)
        nest = opts.nest
        self.state = RunState(
            nest.replay if nest is not None else None, nest.afresh if nest is not None else None
        )
        if opts.messages is not None:
            self.state.entering = task_entry(opts.messages, None)
        # Every save decision: what is saved when, and with what (loop/persistence.py).
        self.persist = Persistence(
            opts.config,
            opts.saver if opts.has_saver else None,
            opts.durability,
            streams=not opts.stream_modes <= _SAVED_FIRST,
            lease=opts.lease,
        )

    # --- the run ---------------------------------------------------------------------

    def steps(self) -> Generator[Effect, object, RunResult]:
        run, state, persist = self.setup, self.state, self.persist
        opts = run.opts
        if (held := opts.lease) is not None:
            yield from lease.claim(run, state, persist, held)
        if opts.has_saver:
            yield from begin.load(run, state, persist)
        else:
            begin.check_no_saver_input(run)
        if not state.channels:
            _start_fresh(run, state)
        try:
            yield from begin.first(run, state, persist)
            while (yield from self.tick()):
                pass
        except GraphInterrupt as exc:
            yield from persist.run_paused()
            if opts.nest is not None:
                raise
            yield from out.interrupted(run, state, exc)  # the root graph swallows interrupts
            yield from persist.release()
            return RunResult(output(run, state), exc.interrupts, True)
        except BaseException as exc:
            if not isinstance(exc, GeneratorExit):  # closed: no effect can be yielded now
                yield from persist.run_failed()
            raise
        yield from persist.run_ended(opts.nest is not None)
        return RunResult(output(run, state), (), False)

    # --- supersteps ----------------------------------------------------------------------

    def tick(self) -> Generator[Effect, object, bool]:
        run, state = self.setup, self.state
        if state.step > state.stop:
            raise GraphRecursionError(
                f"Recursion limit of {run.cfg.recursion_limit} reached without hitting a "
                "stop condition. You can increase the limit by setting the `recursion_limit` "
                "config key."
            )
        state.tasks = tasks = current_tasks(run, state)
        if run.spec.managed:  # a node reads RemainingSteps / IsLastStep
            count_steps_left(tasks, state.stop - state.step)
        if state.unreported:
            yield from out.reached_checkpoint(run, state, self.persist)
        if not tasks:
            return False
        if (trace := state.trace) is not None:
            trace.step_started(state.step, state.checkpoint["id"])
        # A fresh step (the usual case) has nothing that ran or paused here before.
        records = state.records
        to_run, paused = (
            match_records(tasks, records, state.resume is not None, state.answered)
            if records
            else (tasks, [])
        )
        before = run.opts.interrupt_before
        if before and pauses_at(state.checkpoint, before, tasks):
            raise GraphInterrupt(())
        # Every task of the step is reported as it starts, also one whose saved writes
        # are reused or that stays paused; then the reused writes (LangGraph's order).
        if run.streams_tasks:
            yield from out.task_starts(run, state, tasks)
        if run.streams_updates and len(to_run) < len(tasks):
            yield from out.cached_updates(run, state)
        interrupts = [i for t in paused for i in records[t.id].interrupts] if paused else []
        state.pausing = bool(paused)
        if to_run:
            interrupts += yield from self.execute(to_run, trace)
        if interrupts or state.pausing:
            return (yield from self.pause(interrupts, paused))
        yield from self.after_tick(trace)
        return True

    def pause(
        self, interrupts: list[Interrupt], paused: list[Task]
    ) -> Generator[Effect, object, bool]:
        """A task of the step paused, or stays paused: the run pauses (raises).

        Unless the question asked again has its answer already (a fork's): then the
        step runs again (True).
        """
        run, state = self.setup, self.state
        if interrupts and fork.answer_afresh(state, interrupts):
            yield from begin.bind_resume(run, state, self.persist)
            return True  # the step again: the question re-asked has its answer now
        for t in paused:  # not run again (§4.6), reported as a run that asks again
            yield from out.still_paused(run, state, t, state.records[t.id].interrupts)
        raise GraphInterrupt(tuple(interrupts))

    def execute(
        self, to_run: list[Task], trace: RunTrace | None
    ) -> Generator[Effect, Any, list[Interrupt]]:
        """Run the step's tasks (``trace``: the run's, read once per step by `tick`)."""
        run, state = self.setup, self.state
        interrupts: list[Interrupt] = []
        errors: list[BaseException] = []
        execs: list[ExecTask] = []
        frame: StepFrame | None = None
        if len(to_run) == 1 and to_run[0].name == START and to_run[0].is_pure_start():
            # The input step calls no user code: applied here, without a driver round
            # trip (a worker context, a queue hand-off) on every invoke.
            ran: Outcome | None = input_outcome(run.spec, to_run[0], state.channels)
        else:
            frame = StepFrame(run, state, self.persist)
            # A driver may run a lone task in place and answer with its outcome at once.
            execs = (
                [ExecTask(frame, to_run[0])]
                if len(to_run) == 1
                else [ExecTask(frame, t) for t in to_run]
            )
            if trace is not None:
                _tasks_started(trace, to_run)
            try:
                ran = yield RunTasks(execs, frame.live)
            except Stopped as stop:
                ran, state.stopping = stop.taken(), True
        reports = run.streams_updates or run.streams_tasks
        has_saver = self.persist.has_saver
        last = len(to_run) - 1
        for n in range(len(to_run)):
            outcome: Outcome
            if ran is not None:  # the lone task's outcome, already sent back
                outcome, ran = ran, None
            else:
                outcome = yield from _next_outcome(state)
            if trace is not None:
                trace.task_ended(outcome.task.id, outcome.error)
            if outcome.error is None and not reports:  # the usual case, without finish()
                if not has_saver:  # keep_writes() with nothing to save (a call less a step)
                    outcome.task.writes = list(outcome.writes)
                    continue
                hold = n == last and not (interrupts or errors or state.pausing)
                if (saving := self.keep_writes(outcome.task, outcome.writes, hold)) is not None:
                    yield saving
                continue
            # A lone task fails with no result event (LangGraph's) unless it is streamed
            # live or made @task calls: LangGraph runs it in the background then.
            lone = not last and (not execs or execs[0].runs_inline())
            yield from self.finish(outcome, interrupts, errors, hold=n == last, lone=lone)
        if errors or state.stopping or (frame is not None and frame.kept_calls):
            _end_step(self.persist, frame, state.stopping, errors)
        return interrupts

    def keep_writes(
        self, task: Task, writes: Sequence[tuple[str, object]], hold: bool
    ) -> SaveWrites | None:
        """Keep a finished task's writes; return the effect that saves them now, if any.

        ``hold``: the step's last outcome, with nothing in the step paused or failed:
        its writes may wait for the step's checkpoint (``Persistence.folds``).
        """
        task.writes = list(writes)
        persist = self.persist
        if not persist.has_saver:
            return None
        saved = task.writes or [(NO_WRITES, None)]
        return persist.task_finished(task.id, saved, task.path_repr(), hold)

    def finish(
        self,
        outcome: Outcome,
        interrupts: list[Interrupt],
        errors: list[BaseException],
        *,
        hold: bool = False,
        lone: bool = False,
    ) -> Generator[Effect, object, None]:
        """Save and report a task's outcome.

        ``hold``: the step's last outcome, whose writes may wait for the step's
        checkpoint (``Persistence.folds``) if nothing in the step paused or failed.
        ``lone``: the step's only task, which made no ``@task`` calls: its failure ends
        the run with no result event (as LangGraph's).
        """
        run, state, persist = self.setup, self.state, self.persist
        task, err = outcome.task, outcome.error
        path = task.path_repr() if persist.has_saver else ""
        if err is None:
            hold = hold and not (interrupts or errors or state.pausing)
            if (saving := self.keep_writes(task, outcome.writes, hold)) is not None:
                yield saving
            if run.streams_updates or run.streams_tasks:
                yield from out.task_result(run, state, task, None, ())
        elif isinstance(err, GraphInterrupt):
            # An empty interrupt is a subgraph's static breakpoint: it pauses us too.
            state.pausing = True
            rec = state.records.setdefault(task.id, TaskRecord())
            found = keep_first_deadlines(rec.interrupts, with_ids(err.interrupts, task.ns))
            interrupts.extend(found)
            rec.interrupts = found
            own = err.position is not None and is_own_interrupt(found[0], task.ns)
            saved: list[tuple[str, object]] = [
                (INTERRUPT, as_stored(found, err.position) if own else found),
                *fork.taken_answer(state, task.id, rec),
            ]
            if own:
                # Which question this is: its answer will be bound to it (answers.py).
                rec.asked = err.position
                saved.append((ASKED, err.position))
                if (trace := state.trace) is not None and (at := trace.task_asked(task.id)):
                    saved.append((ASKED_SPAN, at))  # hidden: for the answer's link
            if rec.error is not None:
                # A saved failure is cleared so the task reads as paused, not failed.
                rec.error = None
                saved.append((ERROR, None))
            # The step's last outcome pauses it, so this is the run's last write.
            yield from persist.save_writes(task.id, saved, path, last=hold)
            if run.opts.stream_modes and found:  # a breakpoint's task did not finish: no event
                yield from out.interrupts_found(run, state, found)
                yield from out.task_result(run, state, task, None, found)
        else:
            errors.append(err)
            if state.stopping and run.opts.durability == "exit":
                return  # a task cancelled by the stop: LangGraph keeps no error for it
            # A ParentCommand here goes on up: its own node sent it (one a subgraph
            # sent was this task's result already: node.command_from_below).
            if not isinstance(err, ParentCommand):
                # The INTERRUPT slot stays: a failed task re-runs on the next invoke
                # with its saved answers, and a new answer can still be sent to it.
                rec = state.records.setdefault(task.id, TaskRecord())
                rec.error = repr(err)
                kept = [(ERROR, rec.error), *fork.taken_answer(state, task.id, rec)]
                yield from persist.save_writes(task.id, kept, path)
                if not lone:
                    yield from out.task_result(run, state, task, err, ())

    def after_tick(self, trace: RunTrace | None) -> Generator[Effect, object, None]:
        run, state, persist = self.setup, self.state, self.persist
        spec, checkpoint, channels = run.spec, state.checkpoint, state.channels
        ran = state.tasks
        live = None if state.updated is None else state.updated & spec.transient
        try:
            updated = apply_writes(checkpoint, channels, ran, live, state.clock)
        except Exception:
            # No checkpoint follows: writes left for it are saved on their own.
            yield from persist.step_failed()
            raise
        if spec.deferred and updated.isdisjoint(spec.triggered_by):
            # Nothing else would run: deferred nodes' turn (add_node(defer=True)).
            updated |= finish_deferred(checkpoint, channels, spec.deferred, state.clock)
        state.updated = updated
        state.tasks = []  # applied: an interrupt_after pause must not apply them again
        shown = run.streams_values and not updated.isdisjoint(run.out_keys)
        if shown and not persist.folds:
            yield run.emit("values", output(run, state))
        # The lease goes with this checkpoint if it is the run's last write.
        last = persist.leased and lease.ends_with_step(run, state, persist, ran)
        # (Without a saver and with nothing the step left behind, leave_step does nothing.)
        if (persist.has_saver or state.records or state.null_writes) and (
            saving := leave_step(run, state, persist, "loop", last)
        ) is not None:
            yield from saving
        if shown and persist.folds:  # the step's writes waited for its checkpoint: saved now
            yield run.emit("values", output(run, state))
        state.resume = None
        state.answered = {}
        state.resuming = False
        state.step += 1
        if trace is not None:
            trace.step_ended()
        after = run.opts.interrupt_after
        if after and pauses_at(state.checkpoint, after, ran):
            raise GraphInterrupt(())


def _setup(spec: GraphSpec, input: Any, opts: RunOptions) -> RunSetup:
    """What the run decides once, from its graph and options."""
    modes = opts.stream_modes
    return RunSetup(
        spec=spec,
        opts=opts,
        cfg=opts.config,
        input=input,
        out_keys=opts.output_keys or spec.output_keys,
        parents=namespaces.parents_of(opts.nest, opts.config.configurable),
        run_metadata=opts.config.run_metadata() if opts.has_saver else {},
        custom_writer=custom_writer(opts),
        streams_values="values" in modes,
        streams_updates="updates" in modes,
        streams_tasks="tasks" in modes or "debug" in modes,
        streams_checkpoints=opts.has_saver and ("checkpoints" in modes or "debug" in modes),
        live=streams_live(opts, spec.eager),
    )


def _start_fresh(run: RunSetup, state: RunState) -> None:
    """Begin from no saved state: empty channels, and an id for the empty checkpoint.

    The id is needed now only if no checkpoint will be saved (task ids hash it);
    otherwise saving the input checkpoint gives it one.
    """
    state.channels = run.spec.fresh_channels({})
    if not run.opts.has_saver:
        state.checkpoint["id"], state.checkpoint["ts"] = new_stamp()
        if run.opts.nest is not None:  # the same task ids on a resume: unsaved_answer
            state.checkpoint["id"] = namespaces.unsaved_id(run.cfg.checkpoint_ns)


_NEXT_OUTCOME = NextOutcome()


def _tasks_started(trace: RunTrace, tasks: list[Task]) -> None:
    for t in tasks:
        trace.task_started(t.name, t.id)


def _next_outcome(state: RunState) -> Generator[Effect, Any, Outcome]:
    """The next task outcome a driver sends (a stopped run's, taken as it is)."""
    try:
        return (yield _NEXT_OUTCOME)
    except Stopped as stop:
        state.stopping = True
        return stop.taken()


_SAVED_FIRST = frozenset({"values"})
"""Stream modes that report nothing between a task's end and its step's checkpoint:
streaming only these, a step's last writes wait to be saved with its checkpoint
(``Persistence.folds``), and the step's values are reported once both are saved."""


def run(spec: GraphSpec, input: Any, opts: RunOptions) -> Generator[Effect, object, RunResult]:
    """The loop for one run of ``spec``; drive it with a driver from `pausepoint.drivers`."""
    if (watch := OBSERVING.observer) is None:
        return _Run(spec, input, opts).steps()
    it = _Run(spec, input, opts)
    cfg = opts.config
    start = RunStart(spec.name, cfg.thread_id, cfg.checkpoint_ns, opts.nest is not None)
    # Told in the caller's context (a subgraph's: its parent task's), where the run starts.
    if (trace := watch.run_started(start)) is None:
        return it.steps()
    it.state.trace = trace
    it.state.entering = task_entry(opts.messages, trace)
    return _observed(it, trace)


def _observed(it: _Run, trace: RunTrace) -> Generator[Effect, object, RunResult]:
    """``it``'s steps, and how the run ended told to its trace."""
    try:
        result = yield from it.steps()
    except GraphInterrupt as exc:  # a subgraph's pause, on its way up: not a failure
        trace.ended(it.state.checkpoint["id"], len(exc.interrupts), None)
        raise
    except BaseException as exc:
        trace.ended(it.state.checkpoint["id"], None, exc)
        raise
    trace.ended(it.state.checkpoint["id"], len(result.interrupts) if result.paused else None, None)
    return result


def _end_step(
    persist: Persistence, frame: StepFrame | None, stopping: bool, errors: list[BaseException]
) -> None:
    """Every outcome of the step is kept: end the run if it was stopped or a task failed.

    Durability ``"exit"``: the step's ``@task`` call writes wait for the run's exit.
    A stop ends the run (``failed()`` saves); else the first task error is raised.
    """
    if frame is not None and frame.kept_calls:
        persist.calls_kept(frame.kept_calls)
    if stopping:
        raise Stopped
    if errors:
        raise errors[0]
