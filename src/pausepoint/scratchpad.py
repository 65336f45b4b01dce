"""A task's working memory for ``interrupt()`` and ``@task`` calls: the `Scratchpad`.

It lives in the running task's context (`pausepoint.task_context.TaskContext`),
made on first use: a task that never interrupts or calls a ``@task`` pays nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from pausepoint.running import TASK, current_task

__all__ = ["TASK", "Scratchpad", "current_task"]


class Scratchpad:
    """Per-task working memory for ``interrupt()``.

    ``resume`` holds the answers this task has received so far, in the order its
    ``interrupt()`` calls asked for them; the counter is created on first use,
    so a task that never interrupts pays nothing.
    """

    __slots__ = ("_calls", "_counter", "_graphs", "resume")

    def __init__(self, resume: list[object] | None = None) -> None:
        self.resume: list[object] = resume if resume is not None else []
        self._counter: Callable[[], int] | None = None
        self._calls: Callable[[], int] | None = None
        # Made now, not on first use: a node may start graph runs from several threads.
        self._graphs: Callable[[], int] = itertools.count().__next__

    def next_call_index(self) -> int:
        """The position of this ``@task`` call among the task's calls (0 for the first)."""
        if self._calls is None:
            self._calls = itertools.count().__next__
        return self._calls()

    def next_graph_index(self) -> int:
        """The position of this graph run among those the task started (0 for the first).

        It names the run's checkpoint namespace (`pausepoint.loop.namespaces.nested_ns`).
        """
        return self._graphs()

    def next_interrupt_index(self) -> int:
        """The index of this ``interrupt()`` call within the task (0 for the first)."""
        if self._counter is None:
            self._counter = itertools.count().__next__
        return self._counter()
