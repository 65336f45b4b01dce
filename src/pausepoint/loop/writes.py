"""Applying a superstep's writes to the channels, in a deterministic order.

The writes of all tasks of a step are applied together after the step, sorted
by task path (not by completion order), so a run's result never depends on
which thread finished first.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Protocol

from pausepoint.channels import MISSING, AfterFinish, Channel
from pausepoint.checkpoint.base import ChannelVersions, Checkpoint, Version
from pausepoint.constants import ERROR, INTERRUPT, NO_WRITES, PUSH, RESUME, RETURN, SCHEDULED
from pausepoint.errors import InvalidUpdateError

__all__ = [
    "InputWrites",
    "TaskPath",
    "VersionClock",
    "WriteSource",
    "apply_writes",
    "check_update",
    "finish_deferred",
    "preview_writes",
    "rejected_writes",
]

_NOT_CHANNELS = frozenset({NO_WRITES, PUSH, RESUME, INTERRUPT, RETURN, ERROR, SCHEDULED})

TaskPath = tuple[str, str | int] | tuple[str, int, bool]
"""Where a task comes from: ``(PULL, node)``, or a ``Send``'s ``(PUSH, index, False)``
(LangGraph's shape: the False says "not a ``@task`` call"). Not part of the task's id."""

_by_path: Callable[[WriteSource], TaskPath] = attrgetter("path")
"""The sort key of write sources, read in C (a key function per task was ~2 calls each)."""


class WriteSource(Protocol):
    """Anything with a name, triggers and writes: a task, or the input pseudo-task."""

    @property
    def name(self) -> str: ...  # noqa: D102

    @property
    def triggers(self) -> tuple[str, ...]: ...  # noqa: D102

    @property
    def writes(self) -> Sequence[tuple[str, object]]: ...  # noqa: D102

    @property
    def path(self) -> TaskPath:
        """Where the writes come from: sources are applied in the order of their paths.

        Pull tasks come by node name, then ``Send`` tasks by index (an int: 10 after 9).
        """
        ...


class VersionClock:
    """The highest version in one checkpoint's ``channel_versions``, kept as writes apply.

    A new version is ``max + 1``; finding the max with ``max()`` on every step made a
    step's cost grow with the number of channels ever written (~4% of a step of
    benchmarks/' chain-100). Only `apply_writes` changes versions, so the
    clock stays right for as long as the checkpoint keeps the same versions dict.
    """

    __slots__ = ("top", "versions")

    def __init__(self) -> None:
        self.versions: ChannelVersions | None = None
        """The versions dict ``top`` is the highest of."""
        self.top = 0

    def next(self, versions: ChannelVersions) -> int:
        """The version to give channels changed now."""
        if versions is not self.versions:
            self.versions = versions
            self.top = max(versions.values(), default=0)
        return self.top + 1


def apply_writes(
    checkpoint: Checkpoint,
    channels: Mapping[str, Channel],
    sources: Iterable[WriteSource],
    live: Collection[str] | None = None,
    clock: VersionClock | None = None,
) -> set[str]:
    """Apply writes to ``channels`` and versions to ``checkpoint``; return updated channels.

    Marks each task's triggers as seen, consumes barrier channels, folds every
    channel's writes in one ``update`` call, and (when a task ran) lets channels
    that got no write move on (ephemeral triggers clear). ``live``, when given,
    names the only channels that can still hold a one-step value (those the
    previous step wrote), so that clearing them does not scan every channel.
    ``clock`` (kept by a run across its steps) saves looking for the top version.
    """
    ordered = list(sources)
    if len(ordered) > 1:
        ordered.sort(key=_by_path)
    versions = checkpoint["channel_versions"]
    seen = checkpoint["versions_seen"]
    changed: list[str] = []
    by_channel, ran = _collect(ordered, seen, versions, channels, changed)
    updated: set[str] = set()
    for chan, values in by_channel.items():
        channel = channels[chan]
        if channel.update(values):
            changed.append(chan)
            if channel.value is not MISSING if channel.plain else channel.is_available():
                updated.add(chan)
    if ran:
        for chan in channels if live is None else live:
            channel = channels[chan]
            if chan in updated:
                continue
            if channel.ephemeral:  # update(()) in line: a value written last step goes
                if channel.value is not MISSING:
                    channel.value = MISSING
                    changed.append(chan)
            elif (
                channel.value is not MISSING if channel.plain else channel.is_available()
            ) and channel.update(()):
                changed.append(chan)
    if changed:
        _record(checkpoint, channels, changed, clock)
    checkpoint["updated_channels"] = sorted(updated) if len(updated) > 1 else list(updated)
    return updated


def finish_deferred(
    checkpoint: Checkpoint,
    channels: Mapping[str, Channel],
    deferred: Iterable[str],
    clock: VersionClock | None = None,
) -> set[str]:
    """Release the deferred nodes' waiting triggers; return the channels now available.

    Called after a step that leaves no other node to run (as LangGraph's "tentatively
    the last superstep"): a deferred node then runs once, after everything else.
    """
    released = [c for c in deferred if _finish(channels[c])]
    if released:
        _record(checkpoint, channels, released, clock)
    return set(released)


def _finish(channel: Channel) -> bool:
    return isinstance(channel, AfterFinish) and channel.finish()


def preview_writes(
    channels: Mapping[str, Channel], sources: Iterable[WriteSource], keys: Collection[str]
) -> set[str]:
    """Apply writes to ``channels`` only, to read ``keys`` as a step would leave them.

    For the output of a run that pauses with some tasks done: no versions, no
    ``versions_seen`` marks and no consumed triggers, which nobody reads afterwards
    (the whole of `apply_writes` made a resume of one of K paused tasks cost
    O(K) dicts for nothing). A one-step value in ``keys`` that got no write clears,
    as it would in the step. Returns the channels updated.
    """
    ordered = sorted(sources, key=_by_path)
    by_channel: dict[str, list[object]] = {}
    for src in ordered:
        for chan, value in src.writes:
            if chan in channels and chan not in _NOT_CHANNELS:
                by_channel.setdefault(chan, []).append(value)
    updated: set[str] = set()
    for chan, values in by_channel.items():
        channel = channels[chan]
        if channel.update(values) and channel.is_available():
            updated.add(chan)
    for chan in keys:
        channel = channels.get(chan)
        if channel is not None and chan not in updated and channel.is_available():
            channel.update(())
    return updated


def rejected_writes(
    channels: Mapping[str, Channel],
    writes: Iterable[tuple[str, object]],
    keys: Collection[str] | None = None,
) -> dict[str, Exception]:
    """Try ``writes`` on copies of the channels they touch; return each rejection.

    The result maps a channel to the exception its ``update`` raised (a reducer
    may raise anything). Only ``keys`` are tried when given. Each channel is tried
    as `apply_writes` would update it (all its writes in one call), on a
    copy holding a deep copy of its value: a reducer that changes its old value
    in place (``a.extend(b)``) must not change the state the caller applies later.
    """
    by_channel: dict[str, list[object]] = {}
    for chan, value in writes:
        if chan in channels and chan not in _NOT_CHANNELS and (keys is None or chan in keys):
            by_channel.setdefault(chan, []).append(value)
    errors: dict[str, Exception] = {}
    for chan, values in by_channel.items():
        channel = channels[chan]
        trial = channel.spawn(_deep_copy(channel.checkpoint()))
        try:
            trial.update(values)
        except Exception as exc:  # whatever the reducer raised is the answer
            errors[chan] = exc
    return errors


def check_update(
    channels: Mapping[str, Channel],
    stored: Sequence[tuple[str, object]],
    writes: Sequence[tuple[str, object]],
    what: str,
) -> None:
    """Raise ``InvalidUpdateError`` if a channel would reject ``writes`` (nothing changes).

    ``stored`` are writes already waiting to be applied with them in the same
    update (an earlier ``Command(update=...)`` to the same checkpoint): a channel
    takes both at once. Only the channels ``writes`` touch are tried. Called
    before an update is stored, so that a value a reducer cannot take is refused
    at once instead of failing every later run of the thread.
    """
    keys = {chan for chan, _ in writes}
    errors = rejected_writes(channels, [*stored, *writes] if stored else writes, keys)
    if errors:
        raise rejected_update_error(what, errors)


def rejected_update_error(what: str, errors: Mapping[str, Exception]) -> InvalidUpdateError:
    """The error for an update some channels reject: each key and its reducer's message."""
    problems = "; ".join(f"key {k!r}: {type(e).__name__}: {e}" for k, e in errors.items())
    # A channel's own InvalidUpdateError already says what to do; a reducer's does not.
    fix = (
        ""
        if all(isinstance(e, InvalidUpdateError) for e in errors.values())
        else " Send a value the key's reducer accepts."
    )
    err = InvalidUpdateError(
        f"{what} was refused, the state cannot take it ({problems}). Nothing was "
        f"written: the thread is unchanged.{fix}"
    )
    err.__cause__ = next(iter(errors.values()))
    return err


def _deep_copy(value: object) -> object:
    try:
        return copy.deepcopy(value)
    except Exception:  # a value deepcopy cannot copy: a trial on a shallow copy still tells
        return copy.copy(value)


def _collect(
    ordered: Sequence[WriteSource],
    seen: dict[str, ChannelVersions],
    versions: Mapping[str, Version],
    channels: Mapping[str, Channel],
    changed: list[str],
) -> tuple[dict[str, list[object]], bool]:
    """One pass over the sources: mark triggers seen, consume them, group writes.

    ``versions_seen`` entries are replaced, never changed in place (see
    `pausepoint.checkpoint.base`).

    Returns the writes by channel, and whether any source was a task that ran
    (had triggers). Channels changed by being consumed (barriers) go to ``changed``.
    """
    consumed: set[str] = set()
    by_channel: dict[str, list[object]] = {}
    ran = False
    for src in ordered:
        triggers = src.triggers
        mine = seen.get(src.name, _NONE_SEEN)
        # A new dict, never a change in place: a saver may keep the old one
        # (CompactingMemorySaver shares unchanged entries between checkpoints).
        marks: ChannelVersions = {}
        if triggers:
            ran = True
            for chan in triggers:  # (consuming changes no version: one pass for both)
                if chan in versions:
                    marks[chan] = versions[chan]
                channel = channels.get(chan)
                if channel is not None and channel.consumes and chan not in consumed:
                    consumed.add(chan)
                    if channel.consume():
                        changed.append(chan)
        if marks:
            seen[src.name] = {**mine, **marks} if mine else marks
        elif mine is _NONE_SEEN:  # every source gets an entry, if only an empty one
            seen[src.name] = {}
        for chan, value in src.writes:
            if chan in channels and chan not in _NOT_CHANNELS:
                by_channel.setdefault(chan, []).append(value)
    return by_channel, ran


_NONE_SEEN: Mapping[str, Version] = {}
"""What a node that saw nothing yet has seen (shared: never changed)."""


def _record(
    checkpoint: Checkpoint,
    channels: Mapping[str, Channel],
    changed: list[str],
    clock: VersionClock | None,
) -> None:
    """Give changed channels the next version and keep the stored values in step.

    Keeping ``channel_values`` current here means saving a checkpoint never has
    to read every channel again. ``clock``: the run's (see `VersionClock`), or None.
    """
    versions = checkpoint["channel_versions"]
    if clock is not None and clock.versions is versions:  # clock.next(), in line
        version = clock.top = clock.top + 1
    elif clock is not None:
        version = clock.top = clock.next(versions)
    else:  # a throwaway clock needs no update
        version = VersionClock().next(versions)
    values = checkpoint["channel_values"]
    for chan in changed:
        versions[chan] = version
        channel = channels[chan]
        value = channel.value if channel.plain else channel.checkpoint()
        if value is MISSING:
            values.pop(chan, None)
        else:
            values[chan] = value


class InputWrites:
    """Writes that belong to no task: graph input, ``Command`` updates, state updates."""

    __slots__ = ("name", "triggers", "writes")

    path: TaskPath = ("", "")  # before every task

    def __init__(self, name: str, writes: Sequence[tuple[str, object]]) -> None:
        self.name = name
        self.triggers: tuple[str, ...] = ()
        self.writes = writes
