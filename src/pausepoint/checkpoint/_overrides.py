"""Which write a saver class implements, and what a subclass overriding LangGraph's gets.

A saver implements ``commit`` (the engine's one write) or LangGraph's ``put`` and
``put_writes``; `BaseCheckpointSaver` makes the other writes of whichever it has
(`own_commit` tells which). A subclass of a saver that has ``commit`` but overrides
``put`` or ``put_writes`` itself (a spy counting writes, a test failing one) would
never be called: the engine commits. On LangGraph every write goes through those
methods, so such a subclass is committed through them instead
(`commit_by_calls`): its overrides see every checkpoint and write of a run. Decided
once per class, when it is defined (``__init_subclass__``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint._commit import At, StepCommit, arun_parts, commit_by_parts, run_parts
from pausepoint.checkpoint._keys import takes_keyword

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import BaseCheckpointSaver

__all__ = ["commit_by_calls", "commits_async", "honour_overrides", "no_writes"]

_WRITES = ("put", "put_writes")
_ASYNC_WRITES = ("aput", "aput_writes")


def commit_by_calls(saver: object, step: StepCommit[At]) -> At:
    """``commit`` of a subclass that overrides ``put``/``put_writes``: calls to them."""
    return run_parts(saver, step)


async def acommit_by_calls(self: object, step: StepCommit[At]) -> At:
    """``acommit`` of a subclass that overrides ``aput``/``aput_writes``: calls to them."""
    return await arun_parts(self, step)


def honour_overrides(cls: type[BaseCheckpointSaver]) -> None:
    """Record the ``commit`` ``cls`` implements; commit through its overrides if it has any.

    A class that overrides ``put``/``put_writes`` but not ``commit``, below one that
    has its own, gets a ``commit`` made of calls to them; one that overrides
    ``aput``/``aput_writes`` but not ``acommit`` gets such an ``acommit``. Calls are
    not all or nothing, so ``batches`` is false; and ``supports_leases`` is false if an
    override takes no ``lease=`` (the engine then passes it none), unless the class
    sets them itself.
    """
    own = cls.__dict__
    if "commit" in own:
        cls.own_commit = own["commit"]
    elif _overrides(own, _WRITES) and cls.commit is not commit_by_parts:
        cls.commit = commit_by_calls
        _calls_only(cls, own, _WRITES)
    if "acommit" not in own and _overrides(own, _ASYNC_WRITES):
        cls.acommit = acommit_by_calls
        _calls_only(cls, own, _ASYNC_WRITES)


def _overrides(own: Any, names: tuple[str, ...]) -> bool:
    return any(name in own for name in names)


def _calls_only(cls: type[BaseCheckpointSaver], own: Any, names: tuple[str, ...]) -> None:
    if "batches" not in own:
        cls.batches = False
    fenced = all(takes_keyword(own[name], "lease") for name in names if name in own)
    if "supports_leases" not in own and not fenced:
        cls.supports_leases = False


def commits_async(saver: BaseCheckpointSaver, base_acommit: Callable[..., Any]) -> bool:
    """Whether ``saver`` has its own ``commit`` and ``acommit`` (its async writes call it)."""
    cls = type(saver)
    acommit = cls.acommit
    return cls.commit is not commit_by_parts and acommit not in (base_acommit, acommit_by_calls)


def no_writes(saver: BaseCheckpointSaver, method: str) -> NotImplementedError:
    """The error of a write method of a saver that implements no write."""
    return NotImplementedError(
        f"{type(saver).__qualname__!r} implements neither commit() nor put() and "
        f"put_writes(), so it cannot {method}(): a saver derived from BaseCheckpointSaver "
        "implements commit(StepCommit), the engine's one write, or LangGraph's put() and "
        "put_writes(); the other write methods default to those (see pausepoint.checkpoint.base)"
    )
