"""Static breakpoints: whether ``interrupt_before`` / ``interrupt_after`` pause a step."""

from __future__ import annotations

from collections.abc import Sequence

from pausepoint.checkpoint.base import Checkpoint
from pausepoint.constants import INTERRUPT
from pausepoint.loop.tasks import Task

__all__ = ["changed_since_pause", "pauses_at"]


def pauses_at(checkpoint: Checkpoint, nodes: tuple[str, ...] | str, tasks: Sequence[Task]) -> bool:
    """Whether a breakpoint on ``nodes`` (names, or ``"*"``: every visible node) pauses.

    It does when one of ``tasks`` (the step's, for ``interrupt_before``; the ones that
    ran, for ``interrupt_after``) is such a node, and some channel changed since the
    last pause, so a resumed run never pauses at the same place again.
    """
    if not nodes or not changed_since_pause(checkpoint):
        return False
    if nodes == "*":
        return any(not t.node.hidden for t in tasks)
    return any(t.name in nodes for t in tasks)


def changed_since_pause(checkpoint: Checkpoint) -> bool:
    """Whether some channel changed since the thread last paused at a breakpoint."""
    seen = checkpoint["versions_seen"].get(INTERRUPT, {})
    return any(v > seen.get(c, 0) for c, v in checkpoint["channel_versions"].items())
