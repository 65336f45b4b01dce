"""The running task's context variable, and reading it.

Its own module, importing nothing of pausepoint at run time, so that
``interrupt()``, ``get_config()``, ``get_stream_writer()`` and ``@task`` calls can
import it at the top of theirs: an ``import`` statement inside those functions
cost about half of what an ``interrupt()`` that replays a saved answer costs
(benchmarks/README.md, "Figures behind the comments").
`pausepoint.task_context` defines what the variable holds.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pausepoint.task_context import TaskContext

__all__ = ["TASK", "current_task", "outside_run"]

TASK: ContextVar[TaskContext | None] = ContextVar("pausepoint_task", default=None)
"""The `TaskContext` of the node running here, if any."""


def current_task(what: str) -> TaskContext:
    """The running task's context, or a clear error naming ``what`` was called outside one."""
    task = TASK.get()
    if task is None:
        raise outside_run(what)
    return task


def outside_run(what: str) -> RuntimeError:
    """The error for ``what`` called outside a running node."""
    # LangGraph's text first (code written for it may match on it), then the fix.
    return RuntimeError(
        f"Called get_config outside of a runnable context: {what} was called outside a "
        "running graph node; call it from inside a node function while the graph runs "
        "(invoke, stream or their async forms)"
    )
