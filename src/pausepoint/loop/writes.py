"""Applying a superstep's writes to the channels, in a deterministic order.

The writes of all tasks of a step are applied together after the step, sorted
by task path (not by completion order), so a run's result never depends on
which thread finished first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol

from pausepoint.channels import MISSING, Channel
from pausepoint.checkpoint.base import Checkpoint
from pausepoint.constants import ERROR, INTERRUPT, NO_WRITES, PUSH, RESUME, RETURN, SCHEDULED

__all__ = ["WriteSource", "apply_writes"]

_NOT_CHANNELS = frozenset({NO_WRITES, PUSH, RESUME, INTERRUPT, RETURN, ERROR, SCHEDULED})


class WriteSource(Protocol):
    """Anything with a name, triggers and writes: a task, or the input pseudo-task."""

    @property
    def name(self) -> str: ...  # noqa: D102

    @property
    def triggers(self) -> tuple[str, ...]: ...  # noqa: D102

    @property
    def writes(self) -> Sequence[tuple[str, Any]]: ...  # noqa: D102

    @property
    def sort_key(self) -> tuple[str, str]: ...  # noqa: D102


def apply_writes(
    checkpoint: Checkpoint,
    channels: Mapping[str, Channel],
    sources: Iterable[WriteSource],
    live: Collection[str] | None = None,
) -> set[str]:
    """Apply writes to ``channels`` and versions to ``checkpoint``; return updated channels.

    Marks each task's triggers as seen, consumes barrier channels, folds every
    channel's writes in one ``update`` call, and (when a task ran) lets channels
    that got no write move on (ephemeral triggers clear). ``live``, when given,
    names the only channels that can still hold a one-step value (those the
    previous step wrote), so that clearing them does not scan every channel.
    """
    ordered = list(sources)
    if len(ordered) > 1:
        ordered.sort(key=lambda s: s.sort_key)
    versions = checkpoint["channel_versions"]
    _mark_seen(checkpoint, ordered)
    next_version = max(versions.values(), default=0) + 1
    changed: list[str] = []
    consumed: set[str] = set()
    for src in ordered:
        for chan in src.triggers:
            if chan not in consumed and chan in channels:
                consumed.add(chan)
                if channels[chan].consume():
                    changed.append(chan)
    by_channel = _group(ordered, channels)
    updated: set[str] = set()
    for chan, values in by_channel.items():
        if channels[chan].update(values):
            changed.append(chan)
            if channels[chan].is_available():
                updated.add(chan)
    if any(s.triggers for s in ordered):
        for chan in channels if live is None else live:
            channel = channels[chan]
            if chan not in updated and channel.is_available() and channel.update(()):
                changed.append(chan)
    _record(checkpoint, channels, changed, next_version)
    checkpoint["updated_channels"] = sorted(updated)
    return updated


def _record(
    checkpoint: Checkpoint, channels: Mapping[str, Channel], changed: list[str], version: int
) -> None:
    """Bump the versions of changed channels and keep the stored values in step.

    Keeping ``channel_values`` current here means saving a checkpoint never has
    to read every channel again.
    """
    versions = checkpoint["channel_versions"]
    values = checkpoint["channel_values"]
    for chan in changed:
        versions[chan] = version
        value = channels[chan].checkpoint()
        if value is MISSING:
            values.pop(chan, None)
        else:
            values[chan] = value


def _mark_seen(checkpoint: Checkpoint, ordered: Sequence[WriteSource]) -> None:
    versions = checkpoint["channel_versions"]
    seen = checkpoint["versions_seen"]
    for src in ordered:
        mine = seen.setdefault(src.name, {})
        for chan in src.triggers:
            if chan in versions:
                mine[chan] = versions[chan]


def _group(
    ordered: Sequence[WriteSource], channels: Mapping[str, Channel]
) -> defaultdict[str, list[Any]]:
    by_channel: defaultdict[str, list[Any]] = defaultdict(list)
    for src in ordered:
        for chan, value in src.writes:
            if chan not in _NOT_CHANNELS and chan in channels:
                by_channel[chan].append(value)
    return by_channel


class InputWrites:
    """Writes that belong to no task: graph input, ``Command`` updates, state updates."""

    __slots__ = ("name", "triggers", "writes")

    sort_key = ("", "")

    def __init__(self, name: str, writes: Sequence[tuple[str, Any]]) -> None:
        self.name = name
        self.triggers: tuple[str, ...] = ()
        self.writes = writes
