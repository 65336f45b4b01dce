"""Turning a task into something a driver can execute: body, context and retry policy.

Most nodes never look at their config, never call a ``@task`` and never run a
subgraph, so those pieces are made on first use: a task's config dict, its
``@task`` call bookkeeping and what a nested graph inherits. Building all three
eagerly for every task was ~15% of a one-node superstep (benchmarks/,
chain-100/none, sampled with py-spy).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pausepoint.constants import PREVIOUS
from pausepoint.loop.calls import CallEvents, CallRequest, CallSite, Memo
from pausepoint.loop.fork import take_afresh
from pausepoint.loop.namespaces import unsaved_answer
from pausepoint.loop.node import Body, node_body
from pausepoint.loop.pending import TaskRecord
from pausepoint.loop.tasks import Task
from pausepoint.runtime import ExecutionInfo, Runtime, wall_clock
from pausepoint.task_context import NestInfo, TaskContext
from pausepoint.types import RetryPolicy

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import CheckpointRef
    from pausepoint.config import RunnableConfig
    from pausepoint.loop.persistence import Persistence
    from pausepoint.loop.run import RunOptions
    from pausepoint.loop.state import RunSetup, RunState
    from pausepoint.observing import RunTrace

__all__ = [
    "ExecTask",
    "StepFrame",
    "custom_writer",
    "streams_live",
    "task_entry",
]


class StepFrame:
    """What every task of one superstep shares, captured when the step starts.

    Captured, not read later: the run moves on (its resume map, its records)
    while the step's tasks still run.
    """

    __slots__ = (
        "_nest",
        "answers",
        "channels",
        "checkpoint_id",
        "kept_calls",
        "live",
        "records",
        "resuming",
        "run",
        "save_at",
        "spec",
        "state",
        "step",
        "writer",
    )

    def __init__(self, run: RunSetup, state: RunState, persist: Persistence) -> None:
        self.run = run
        # Read as a task asks (``fork.take_afresh``) or starts a subgraph (`nest`).
        self.state = state
        self.spec = run.spec
        self.channels = state.channels
        self.step = state.step
        self.checkpoint_id: str = state.checkpoint["id"]
        self.records: Mapping[str, TaskRecord] = state.records
        self.answers: Mapping[str, object] = state.resume.values if state.resume else {}
        self.resuming = state.resuming
        # Durability "exit": the step's ``@task`` call writes, kept for the run's exit.
        self.kept_calls: list[tuple[str, list[tuple[str, object]]]] | None = None
        self.save_at: CheckpointRef | None = None  # nothing to save to without a saver
        if persist.has_saver:
            self.save_at = persist.calls_config()
            if self.save_at is None:
                self.kept_calls = []
        self.writer = run.custom_writer
        self.live = run.live
        self._nest: NestInfo | None = None

    def nest(self) -> NestInfo:
        """What a graph run inside a task of this step inherits (made once per step)."""
        if self._nest is None:
            run, state = self.run, self.state
            opts = run.opts
            answers = self.answers
            resume = state.resume
            positions: Mapping[str, int] = resume.positions if resume else {}
            if not answers and not opts.has_saver and opts.nest is not None:
                # Nothing saved where its answers went: a subgraph below gets them all.
                answers, positions = opts.nest.resume_map, opts.nest.resume_positions
            self._nest = NestInfo(
                # A checkpointer=False level passes its parent's saver on (as LangGraph).
                saver=opts.nest.saver if opts.saver is None and opts.nest else opts.saver,
                thread_id=run.cfg.thread_id,
                durability=opts.durability,
                resume_map=answers,
                resume_positions=positions,
                resume_plain=resume.plain if resume else False,
                resuming=self.resuming,
                sink=opts.sink,
                stream_modes=opts.stream_modes,
                stream_subgraphs=opts.stream_subgraphs,
                parents={**run.parents, run.cfg.checkpoint_ns: self.checkpoint_id},
                replay=state.replay,
                afresh=state.afresh,
                **_passed_down(opts),
            )
        return self._nest


class ExecTask(TaskContext):
    """A task ready to run, and its context while it runs: one object per task.

    Each attempt (see `context`) starts with fresh interrupt and call counters
    from the answers saved so far. The config and the ``@task`` call site are made
    on first use and then shared by every attempt. (A separate context object per
    attempt cost ~2 % of a one-node superstep.)
    """

    __slots__ = ("attempt", "first_attempt_time", "frame", "retry", "task")

    def __init__(self, frame: StepFrame, task: Task) -> None:
        """Bind ``task`` to its step and to the answers it has received so far."""
        # TaskContext.__init__'s slots set here, not through a super() call with keywords
        # (a call less on every task; tests/test_task_context_slots.py checks none is
        # missed).
        self.name = task.name
        self.task_id = task.id
        self.checkpoint_ns = self.graph_ns = task.ns
        self._scratchpad = None
        rec = frame.records.get(task.id) if frame.records else None
        # Never changed in place (a scratchpad copies it): no list when there is nothing.
        self._resume = list(rec.resume) if rec is not None and rec.resume else ()
        self.stream_writer = frame.writer
        self.spawn = None
        self._config = self._nest = self._runtime = None
        self.open_calls = None
        self.frame = frame
        self.task = task
        self.retry: tuple[RetryPolicy, ...] = task.node.retry
        self.attempt = 0
        self.first_attempt_time: float | None = None

    def carried_answer(self, value: object, position: int) -> tuple[object] | None:
        """The answer this question has though no record holds it, or None.

        A fork's, carried to a question asked again afresh (taken once); or, in a
        subgraph that saves nothing, the parent's resume map's.
        """
        run = self.frame.run
        taken = take_afresh(self.frame.state, self.task.id, value, position)
        if taken is None and not run.opts.has_saver:
            return unsaved_answer(run.opts.nest, self.task.ns, position)
        if taken is not None:
            self._resume = [*self._resume, *taken]  # a retry of this attempt keeps it
        return taken

    def start(self, spawn: Callable[[CallRequest | Memo], Any]) -> Body:
        """A new attempt, given the driver's way to start ``@task`` calls: its body.

        This object is the attempt's context (what ``TASK`` holds while the body runs).
        """
        self.spawn = spawn
        self._scratchpad = None  # counters from zero, answers as saved
        frame = self.frame
        if (enter := frame.state.entering) is not None:  # in the task's own context
            enter(self)
        self.attempt += 1
        if self.attempt == 1:
            self.first_attempt_time = wall_clock()
        else:  # the runtime tells its attempt number: a new one
            self._runtime = None
        # The attempt's body: a fresh run of the node (a generator of calls for the driver).
        body = node_body(frame.spec, self.task, self._node_config, frame.channels)
        tap = frame.run.opts.messages
        return body if tap is None else tap.report(body, self)

    def _make_runtime(self) -> Runtime[Any]:
        run = self.frame.run
        run_id = run.cfg.raw.get("run_id")
        saved = self.frame.channels.get(PREVIOUS)
        info = ExecutionInfo(
            checkpoint_id=self.frame.checkpoint_id,
            checkpoint_ns=self.task.ns,
            task_id=self.task.id,
            thread_id=run.cfg.thread_id,
            run_id=None if run_id is None else str(run_id),
            node_attempt=self.attempt,
            node_first_attempt_time=self.first_attempt_time,
        )
        return Runtime(
            context=run.opts.context,
            stream_writer=self.frame.writer,
            previous=saved.get() if saved is not None and saved.is_available() else None,
            execution_info=info,
        )

    def _make_config(self) -> RunnableConfig:
        return task_config(self.frame.run, self.task, self.frame.step)

    def _make_nest(self) -> NestInfo:
        return self.frame.nest()

    def _make_calls(self) -> CallSite:
        frame = self.frame
        site = CallSite(
            self.task.id,
            frame.checkpoint_id,
            frame.run.cfg.checkpoint_ns,
            frame.step,
            frame.records,
            frame.answers,
            frame.save_at,
        )
        opts = frame.run.opts
        site.events = CallEvents.wanted(opts.sink, opts.ns, opts.stream_modes, frame.step)
        site.kept = frame.kept_calls
        return site

    def runs_inline(self) -> bool:
        """Whether LangGraph would run this task, alone in its step, in the caller's thread.

        Not when chunks are read live, nor once it made ``@task`` calls.
        """
        return not self.frame.live and self.open_calls is None

    def _node_config(self) -> RunnableConfig:
        return self.config


_LIVE_MODES = frozenset({"custom", "messages"})


def streams_live(opts: RunOptions, eager: bool) -> bool:
    """Whether a stream reads chunks that tasks make while they run.

    As LangGraph's: ``custom``, ``messages``, ``subgraphs=True``, or an entrypoint
    (``eager``). Then a driver never runs a lone task to its end before passing its chunks on.
    """
    if opts.sink is None:
        return False
    return eager or opts.stream_subgraphs or not opts.stream_modes.isdisjoint(_LIVE_MODES)


def custom_writer(opts: RunOptions) -> Callable[[Any], None]:
    """What ``get_stream_writer()`` returns in this run's tasks (made once per run)."""
    target, ns = opts.custom, opts.ns
    if target is None:
        return _ignore

    def write_custom(value: object) -> None:
        target(ns, value)

    return write_custom


def _passed_down(opts: RunOptions) -> dict[str, Any]:
    """Where the chunks of a graph run inside one of this run's tasks go up to.

    To this run's own stream (which passes on what its ``up`` wants too, as
    LangGraph's sync stream does) when it streams with ``subgraphs=True``; else
    wherever this run's go (LangGraph's tasks inherit their run's stream config).
    """
    if opts.stream_subgraphs and opts.sink is not None:
        up, modes = opts.sink, opts.stream_modes
    else:
        up, modes = opts.up, opts.up_modes
    return {"up": up, "up_modes": modes, "custom": opts.custom}


def task_entry(tap: Any, trace: RunTrace | None) -> Callable[[ExecTask], None] | None:
    """What each attempt of a run's tasks does first, in the task's own context.

    The messages tap's ``enter`` (``RunOptions.messages``: streaming "messages"),
    then the task's span made current (an observed run). Decided once per run: with
    neither (the usual case) an attempt pays one ``is None`` check for both.
    """
    if trace is None:
        return None if tap is None else tap.enter

    def enter(task: ExecTask) -> None:
        if tap is not None:
            tap.enter(task)
        trace.task_entered(task.task.id)

    return enter


def _ignore(_value: object) -> None:
    return None


def task_config(run: RunSetup, task: Task, step: int) -> RunnableConfig:
    """The config a node receives (``config`` argument and ``get_config()``)."""
    cfg = run.cfg
    conf = {**cfg.configurable, "checkpoint_ns": task.ns, "thread_id": cfg.thread_id}
    conf.pop("checkpoint_id", None)
    metadata = {
        **cfg.metadata,
        "langgraph_step": step,
        "langgraph_node": task.name,
        "langgraph_triggers": task.triggers,
        "langgraph_path": task.path,
        "langgraph_checkpoint_ns": task.ns,
    }
    if cfg.thread_id is not None:
        metadata["thread_id"] = cfg.thread_id
    config: RunnableConfig = {"configurable": conf, "metadata": metadata, "tags": list(cfg.tags)}
    if "recursion_limit" in cfg.raw:  # as LangGraph: only a limit the caller set shows
        config["recursion_limit"] = cfg.recursion_limit
    return config
