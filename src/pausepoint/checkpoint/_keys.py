"""Small helpers every saver uses: a config's keys, and the guard keywords of a write.

Kept out of `pausepoint.checkpoint.base` (which re-exports them) so that module
stays the saver contract.
"""

from __future__ import annotations

from typing import Any

from pausepoint.config import RunnableConfig, stored_id

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
    checkpoint_id = conf.get("checkpoint_id")
    return (
        stored_id("thread_id", thread),
        str(conf.get("checkpoint_ns", "")),
        None if checkpoint_id is None else stored_id("checkpoint_id", checkpoint_id),
    )
