"""The functional API: ``@entrypoint`` and ``@task`` (LangGraph 1.1.6-compatible).

An entrypoint is a function run as a one-node graph: it can call ``interrupt()``,
and it keeps a value between invocations of a thread (``previous``). A task is a
function whose calls, made from an entrypoint or from any graph node, run in
parallel and are *durable*: each call's result is saved when it finishes, so
when the caller runs again after an interrupt (or a crash) the call returns the
saved result instead of running again. This is how work before ``interrupt()``
— a model call, a payment, an e-mail — happens once.

Calls are matched to saved results by their order within the caller, so the
caller must make the same calls in the same order every time it runs;
pausepoint raises [`NondeterministicTaskError`][pausepoint.errors.NondeterministicTaskError] when a
re-run calls a different task at a recorded position.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from pausepoint.running import current_task
from pausepoint.types import CachePolicy, Checkpointer, RetryPolicy

if TYPE_CHECKING:
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.loop.migration_ops import Migration

__all__ = ["entrypoint", "task"]

R = TypeVar("R")
S = TypeVar("S")


class _TaskFunction:
    """A ``@task``-decorated function: calling it inside a node returns a future."""

    def __init__(
        self, fn: Callable[..., object], retry: tuple[RetryPolicy, ...], name: str | None
    ) -> None:
        self.func = fn
        self.retry = retry
        self.name = name or getattr(fn, "__name__", type(fn).__name__)
        self.is_async = inspect.iscoroutinefunction(fn)
        self._run = _with_runtime(fn, self.is_async) if _takes_runtime(fn) else fn
        functools.update_wrapper(self, fn)

    # Any: a future, sync or async (``.result()`` or ``await``), as LangGraph's task call.
    def __call__(self, *args: object, **kwargs: object) -> Any:
        ctx = current_task(f"task {self.name!r}")
        return ctx.call(self.name, self._run, args, kwargs, self.is_async, self.retry)


def _takes_runtime(fn: Callable[..., object]) -> bool:
    try:
        return "runtime" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _with_runtime(fn: Callable[..., Any], is_async: bool) -> Callable[..., object]:
    """``fn`` given the call's runtime as ``runtime=`` (read when the call runs)."""
    from pausepoint.runtime import get_runtime

    if is_async:

        async def arun(*args: object, **kwargs: object) -> object:
            return await fn(*args, **{"runtime": get_runtime(), **kwargs})

        return arun

    def run(*args: object, **kwargs: object) -> object:
        return fn(*args, **{"runtime": get_runtime(), **kwargs})

    return run


@overload
def task(
    __func_or_none__: Callable[..., object],
    *,
    name: str | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: CachePolicy | None = None,
) -> _TaskFunction: ...
@overload
def task(
    __func_or_none__: None = None,
    *,
    name: str | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: CachePolicy | None = None,
) -> Callable[[Callable[..., object]], _TaskFunction]: ...
def task(
    __func_or_none__: Callable[..., object] | None = None,
    *,
    name: str | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: CachePolicy | None = None,
) -> _TaskFunction | Callable[[Callable[..., object]], _TaskFunction]:
    """Make a function a durable task (usable as ``@task`` or ``@task(retry_policy=...)``).

    Calling it inside an entrypoint or a graph node starts it and returns a future:
    ``.result()`` in sync code, ``await`` in async code. Its result is saved when it
    finishes; a re-run of the caller gets the saved result back without running it.

    Args:
        name: The task's name in streams and saved results (default: the function's).
        retry_policy: How to retry the task when it fails.
        cache_policy: Not supported: anything but ``None`` raises
            ``NotImplementedError`` (pausepoint has no cache yet).
    """
    from pausepoint.graph.validate import check_cache

    check_cache("task(cache_policy=...)", cache_policy)
    if isinstance(retry_policy, RetryPolicy):
        retry: tuple[RetryPolicy, ...] = (retry_policy,)
    else:
        retry = tuple(retry_policy or ())

    def wrap(fn: Callable[..., object]) -> _TaskFunction:
        return _TaskFunction(fn, retry, name)

    return wrap(__func_or_none__) if __func_or_none__ is not None else wrap


class entrypoint:
    """Turn a function into a graph with one node: ``@entrypoint(checkpointer=...)``.

    The function takes the input as its first argument and may ask for ``previous``
    (what the last invocation of the thread saved), ``config`` and ``writer`` by
    keyword. What it returns is the output and, unless it returns
    ``entrypoint.final(value=..., save=...)``, also what the next invocation gets
    as ``previous``. The result has ``invoke``/``stream``/``get_state``/... like any
    compiled graph.

    Args:
        checkpointer: A saver, needed for ``interrupt()`` and ``previous``.
        retry_policy: How to retry the function when it fails.
        store: Not supported: anything but ``None`` raises ``NotImplementedError``.
        cache: Not supported: anything but ``None`` raises ``NotImplementedError``.
        context_schema: The type of the run's ``context=``; the function reads it as
            ``runtime.context`` (a ``runtime`` parameter, or ``get_runtime()``).
        cache_policy: Not supported: anything but ``None`` raises ``NotImplementedError``.
    """

    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class final(Generic[R, S]):
        """Return ``value`` to the caller but save ``save`` for the next ``previous``."""

        value: R
        save: S

    def __init__(
        self,
        checkpointer: Checkpointer = None,
        store: object = None,
        cache: object = None,
        context_schema: object = None,
        cache_policy: object = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        migrations: Sequence[Migration] = (),
    ) -> None:
        from pausepoint.graph.validate import check_cache, check_checkpointer, check_store

        check_checkpointer(checkpointer)
        check_store(store)
        check_cache("entrypoint(cache=...)", cache)
        check_cache("entrypoint(cache_policy=...)", cache_policy)
        self.checkpointer = checkpointer
        self.context_schema = context_schema
        self.migrations = tuple(migrations)  # pausepoint's own: docs/deploys.md
        if isinstance(retry_policy, RetryPolicy):
            self.retry: tuple[RetryPolicy, ...] = (retry_policy,)
        else:
            self.retry = tuple(retry_policy or ())

    def __call__(self, func: Callable[..., object]) -> CompiledStateGraph:
        """Build the graph of ``func``."""
        from pausepoint.graph.entry import build_entrypoint

        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            raise TypeError(
                f"entrypoint {func.__name__!r} is a generator; entrypoints must return a "
                "value (use get_stream_writer() or a `writer` parameter to stream)"
            )
        if not inspect.signature(func).parameters:
            raise TypeError(
                f"entrypoint {func.__name__!r} takes no arguments; it needs one for the input"
            )
        return build_entrypoint(
            func,
            self.checkpointer,
            self.retry,
            self.context_schema,
            entrypoint.final,
            self.migrations,
        )
