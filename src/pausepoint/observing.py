"""The hook a tracer plugs into: what the loop tells an observer, and when.

The core never imports a tracing library. It reads one attribute,
``OBSERVING.observer``, when a run starts; with None there (the default) a run does nothing
more for tracing than that one ``is None`` check, and each later call site checks
the run's own ``trace`` (None too). `pausepoint.otel` installs an observer that
makes OpenTelemetry spans; any object with these methods will do.

Every call is made from the loop (a sans-IO generator, both drivers alike),
except `TaskTrace.enter`, made in the running task's own context (its thread or
asyncio task) at the start of each attempt, so that what the task's code starts
(a subgraph's run, a ``@task`` call, the user's own spans) finds the task's
span current. An observer must not raise: an error in one would end the run.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

__all__ = [
    "OBSERVING",
    "Observer",
    "ObserverSlot",
    "RunStart",
    "RunTrace",
    "TaskTrace",
    "set_observer",
]


@dataclasses.dataclass(frozen=True, slots=True)
class RunStart:
    """What a run is, as its observer is told when it starts."""

    graph: str
    """The graph's name (``compile(name=...)``, "LangGraph" by default)."""
    thread_id: str | None
    checkpoint_ns: str
    """``""`` for a root run; a subgraph's namespace for a nested one."""
    nested: bool
    """A subgraph's run, inside a task of its parent graph."""


class TaskTrace(Protocol):
    """One task's (a node's or a ``@task`` call's) observation, across its attempts."""

    def enter(self) -> None:
        """An attempt starts, in the task's own context (thread or asyncio task)."""
        ...

    def ended(self, error: BaseException | None) -> None:
        """The task ended: ``error`` is None, its exception, or an interrupt signal."""
        ...

    def asked(self) -> str | None:
        """The task asked a question: what to store with it (a W3C ``traceparent``)."""
        ...


class RunTrace(Protocol):
    """One run's observation: its steps, its tasks, how it ended."""

    def step_started(self, step: int, checkpoint_id: str) -> None:
        """A superstep with tasks starts from checkpoint ``checkpoint_id``."""
        ...

    def step_ended(self) -> None:
        """The superstep's writes are applied (and saved, as durability says)."""
        ...

    def task_started(self, name: str, task_id: str) -> None:
        """A node's task is about to run (called before the driver starts it)."""
        ...

    def task_entered(self, task_id: str) -> None:
        """`TaskTrace.enter` for a node's task: in the task's own context."""
        ...

    def task_ended(self, task_id: str, error: BaseException | None) -> None:
        """The loop received the task's outcome (``error``: see `TaskTrace.ended`)."""
        ...

    def task_asked(self, task_id: str) -> str | None:
        """`TaskTrace.asked` for a node's task."""
        ...

    def answered(self, asked: str | None) -> None:
        """The run answers a question whose asking task stored ``asked`` (None: nothing)."""
        ...

    def ended(
        self, checkpoint_id: str, interrupts: int | None, error: BaseException | None
    ) -> None:
        """The run ended at ``checkpoint_id``.

        Finished: ``interrupts`` None, no error; paused: on ``interrupts`` questions (0:
        a breakpoint); failed: with ``error`` (an exception, or a stop: a cancelled
        ``ainvoke``, a stream closed early).
        """
        ...


class Observer(Protocol):
    """What `set_observer` takes: it starts the observation of runs and ``@task`` calls."""

    def run_started(self, start: RunStart) -> RunTrace | None:
        """A run starts (in the caller's context); None: do not observe it."""
        ...

    def call_started(self, name: str, call_id: str, answers: str | None) -> TaskTrace | None:
        """A ``@task`` call is about to start, in its caller's context.

        ``answers``: what its question's asker stored (`TaskTrace.asked`) when the call
        runs to take its answer, else None.
        """
        ...


class ObserverSlot:
    """Where the installed observer is kept (`OBSERVING`): read once per run by the loop."""

    __slots__ = ("observer",)

    def __init__(self) -> None:
        self.observer: Observer | None = None
        """The observer runs report to; None (the default): none, no cost but the check."""


OBSERVING = ObserverSlot()
"""The one slot the loop reads (``OBSERVING.observer``); change it with `set_observer`."""


def set_observer(new: Observer | None) -> Observer | None:
    """Install ``new`` (None: remove it) for runs started from now on; return the old one."""
    old, OBSERVING.observer = OBSERVING.observer, new
    return old
