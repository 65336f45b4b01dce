"""Small helpers savers use: a config's keys, what ``list`` selects, a write's guard keywords.

Kept out of `pausepoint.checkpoint.base` (which re-exports ``config_keys`` and
``guard_kwargs``) so that module stays the saver contract.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from typing import Any, NamedTuple

from pausepoint.config import MAX_ID_BYTES, RunnableConfig, stored_id

__all__ = [
    "ListQuery",
    "config_keys",
    "guard_kwargs",
    "lease_scope_of",
    "method_takes",
    "path_kwarg",
    "takes_keyword",
]


def guard_kwargs(lease: str | None, if_head: bool = False, release: bool = False) -> dict[str, Any]:
    """The guard keywords of a write to pass on to another saver method: those set.

    So a subclass whose methods predate them (and never receives them) keeps
    working through these defaults.
    """
    guard: dict[str, Any] = {}
    if lease is not None:
        guard["lease"] = lease
    if if_head:
        guard["if_head"] = True
    if release:
        guard["release"] = True
    return guard


def takes_keyword(function: object, keyword: str) -> bool:
    """Whether ``function`` accepts ``keyword=`` (by name, or through ``**kwargs``).

    How a saver says it honours an optional keyword of pausepoint's own (``read=`` on
    ``acquire_lease``, ``lease=`` on an overridden ``put``). False for what cannot be
    introspected.
    """
    if not callable(function):
        return False
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == keyword or p.kind is p.VAR_KEYWORD for p in params)


@functools.cache
def method_takes(saver_type: type[Any], method: str, keyword: str) -> bool:
    """`takes_keyword` for a saver class's method (once per class, method and keyword)."""
    return takes_keyword(getattr(saver_type, method, None), keyword)


def path_kwarg(saver: object, method: str, task_path: str) -> dict[str, str]:
    """``{"task_path": task_path}`` if ``saver``'s ``method`` takes it, else ``{}``.

    For ``put_writes``/``aput_writes``: as LangGraph does, a saver written against the
    older ``put_writes(config, writes, task_id)`` is not passed the path (it would
    fail with a ``TypeError``). Passed by keyword, which a named parameter and a
    ``**kwargs`` take alike. Decided once per saver class (`method_takes`).
    """
    return {"task_path": task_path} if method_takes(type(saver), method, "task_path") else _NO_PATH


_NO_PATH: dict[str, str] = {}


def lease_scope_of(saver: object) -> str:
    """A saver's ``lease_scope``; its identity for a duck-typed saver that names none."""
    scope = getattr(saver, "lease_scope", None)
    return scope if isinstance(scope, str) else f"{id(saver):x}"


def config_keys(config: RunnableConfig) -> tuple[str, str, str | None]:
    """``(thread_id, checkpoint_ns, checkpoint_id)`` of a config; thread_id is required."""
    conf = config.get("configurable") or {}
    thread = conf.get("thread_id")
    if thread is None:
        raise ValueError(
            "the config has no 'thread_id': pass "
            "config={'configurable': {'thread_id': ...}} to use a checkpointer"
        )
    # Every saver call reads its config's keys: a short str id, the usual kind, is
    # checked in line (stored_id's rules), any other through stored_id.
    if type(thread) is not str or len(thread) > _SHORT or "\x00" in thread:
        thread = stored_id("thread_id", thread)
    checkpoint_id = conf.get("checkpoint_id")
    if checkpoint_id is not None and (
        type(checkpoint_id) is not str or len(checkpoint_id) > _SHORT or "\x00" in checkpoint_id
    ):
        checkpoint_id = stored_id("checkpoint_id", checkpoint_id)
    ns = conf.get("checkpoint_ns", "")
    return (thread, ns if type(ns) is str else str(ns), checkpoint_id)


_SHORT = MAX_ID_BYTES // 4  # characters: at most 4 bytes each in UTF-8


class ListQuery(NamedTuple):
    """What ``list(config, filter=..., before=...)`` selects, for savers that select in Python.

    The checkpoints of the config's thread, namespace and checkpoint id (each only
    if given) older than ``before``'s checkpoint id, whose metadata holds every item
    of ``filter``. (The SQL savers state the same in SQL.)
    """

    thread: str | None
    ns: str | None
    checkpoint_id: str | None
    before_id: str | None
    filter: Mapping[str, object] | None

    @classmethod
    def of(
        cls,
        config: RunnableConfig | None,
        filter: Mapping[str, object] | None,
        before: RunnableConfig | None,
    ) -> ListQuery:
        """The query of ``list``'s arguments."""
        conf = (config or {}).get("configurable") or {}
        thread = conf.get("thread_id")
        before_id = ((before or {}).get("configurable") or {}).get("checkpoint_id")
        return cls(
            None if thread is None else str(thread),
            conf.get("checkpoint_ns"),
            conf.get("checkpoint_id"),
            before_id,
            filter,
        )

    def admits(self, ns: str, checkpoint_id: str) -> bool:
        """Whether a checkpoint of the query's thread(s) is selected, metadata aside."""
        return (
            (self.ns is None or ns == self.ns)
            and (self.checkpoint_id is None or checkpoint_id == self.checkpoint_id)
            and (self.before_id is None or checkpoint_id < self.before_id)
        )

    def matches(self, metadata: Mapping[str, object]) -> bool:
        """Whether ``metadata`` holds every item of the filter."""
        return not self.filter or all(metadata.get(k) == v for k, v in self.filter.items())
