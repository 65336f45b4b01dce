"""The run's runtime: its static context and per-task facts, handed to nodes that ask.

A node declared ``def node(state, runtime: Runtime[Ctx])`` receives a
[`Runtime`][] (by the parameter's name, as in LangGraph); so do conditional
edges, ``@entrypoint`` functions and ``@task`` functions with a ``runtime``
parameter, and [`get_runtime`][] returns the same object inside any of them.

The context is what the caller passed as ``invoke(..., context=...)``: run
dependencies such as a user id or a database handle. It is not saved in
checkpoints (nor is it in LangGraph): a run resumed after an interrupt sees the
context its own call passes, so pass it again with ``Command(resume=...)``.
Subgraphs see their parent's context.
"""

from __future__ import annotations

import dataclasses
import time
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

from pausepoint.running import TASK, outside_run

if TYPE_CHECKING:
    from pausepoint.types import StreamWriter

__all__ = ["ExecutionInfo", "Runtime", "get_runtime"]

ContextT = TypeVar("ContextT", default=None)


@dataclasses.dataclass(frozen=True, slots=True)
class ExecutionInfo:
    """Read-only facts about the running task (``runtime.execution_info``)."""

    checkpoint_id: str
    """The checkpoint the task's step started from."""
    checkpoint_ns: str
    """The task's checkpoint namespace (``node:task_id``, ``|``-joined in subgraphs)."""
    task_id: str
    """The task's id (stable across re-runs of the same step)."""
    thread_id: str | None = None
    """The thread's id; ``None`` when the config names none."""
    run_id: str | None = None
    """The config's ``run_id`` as a string; ``None`` when it gives none."""
    node_attempt: int = 1
    """Which attempt this is under the node's retry policy (1 for the first)."""
    node_first_attempt_time: float | None = None
    """When the first attempt started (``time.time()``)."""

    def patch(self, **overrides: object) -> ExecutionInfo:
        """A copy with the given fields replaced."""
        return dataclasses.replace(self, **overrides)


def wall_clock() -> float:
    """Now, in seconds since the epoch (for ``node_first_attempt_time``).

    The loop's only clock read besides checkpoint stamps (`pausepoint.checkpoint.ids`).
    """
    return time.time()


def _no_op_writer(_value: object) -> None:
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class Runtime(Generic[ContextT]):
    """What a node gets as its ``runtime`` parameter (LangGraph's fields).

    Attributes:
        context: The ``context=`` given to the run (coerced to the graph's
            ``context_schema`` when that is a dataclass or pydantic model and a dict
            was given); ``None`` when none was given.
        store: Always ``None``: pausepoint has no long-term memory store.
        stream_writer: Sends a value to ``stream_mode="custom"`` (a no-op when
            nobody streams it), as ``get_stream_writer()``.
        previous: In an ``@entrypoint``, what the thread's last invocation saved;
            otherwise ``None``.
        execution_info: Facts about the running task ([`ExecutionInfo`][]).
        server_info: Always ``None`` (LangGraph fills it on its hosted server only).
    """

    context: ContextT = dataclasses.field(default=None)  # type: ignore[assignment]
    store: None = None
    stream_writer: StreamWriter = _no_op_writer
    previous: Any = None
    execution_info: ExecutionInfo | None = None
    server_info: None = None

    def merge(self, other: Runtime[ContextT]) -> Runtime[ContextT]:
        """``other``'s fields where it sets them, this runtime's elsewhere."""
        return Runtime(
            context=other.context or self.context,
            stream_writer=self.stream_writer
            if other.stream_writer is _no_op_writer
            else other.stream_writer,
            previous=self.previous if other.previous is None else other.previous,
            execution_info=other.execution_info or self.execution_info,
            server_info=other.server_info or self.server_info,
        )

    def override(self, **overrides: object) -> Runtime[ContextT]:
        """A copy with the given fields replaced."""
        return dataclasses.replace(self, **overrides)


def get_runtime(context_schema: type[ContextT] | None = None) -> Runtime[ContextT]:
    """The running node's [`Runtime`][] (the one its ``runtime`` parameter gets).

    Args:
        context_schema: Unused; it types the result for type checkers
            (``get_runtime(Ctx).context`` is a ``Ctx``).

    Raises:
        RuntimeError: Outside a running node (LangGraph's message, then the fix).
    """
    task = TASK.get()
    if task is None:
        raise outside_run("get_runtime()")
    return task.runtime


def coerce_context(schema: Callable[..., object] | None, context: object) -> object:
    """``context`` as the graph's ``context_schema`` when a dict was given for a class.

    A dict given for a dataclass or pydantic model schema is turned into one (as
    LangGraph does, so its ``TypeError``/``ValidationError`` for a wrong key is
    raised before the run starts); anything else is passed as it is.
    """
    if context is None or schema is None or not isinstance(context, dict):
        return context
    given = typing.cast("dict[str, object]", context)  # once per invoke, not per step
    return schema(**given) if _is_class_schema(schema) else given


def _is_class_schema(schema: object) -> bool:
    return dataclasses.is_dataclass(schema) or hasattr(schema, "model_fields")
