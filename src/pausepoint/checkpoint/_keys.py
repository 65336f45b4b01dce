"""Small helpers every saver uses: a config's keys, and the guard keywords of a write.

Kept out of `pausepoint.checkpoint.base` (which re-exports them) so that module
stays the saver contract.
"""

from __future__ import annotations

from typing import Any

from pausepoint.config import MAX_ID_BYTES, RunnableConfig, stored_id

__all__ = ["config_keys", "guard_kwargs"]


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
