"""Checks that a decoded row has the structure the engine relies on.

Decoding proves a row is well-formed JSON of known types; it does not prove that a
checkpoint's ``channel_versions`` hold ints or that an ``__interrupt__`` write holds
interrupts. A crafted or damaged row that decodes would otherwise fail deep in the
engine with a raw ``TypeError`` (``'>' not supported between 'list' and 'int'``);
these checks turn it into a ``CheckpointDecodeError`` saying what is wrong, before
anything uses the row. Each check is a few ``isinstance`` calls per entry, in plain
loops rather than generator expressions or helper calls: every read of a thread runs
them, once per channel and per node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from pausepoint.checkpoint.base import CHECKPOINT_FORMAT, PendingWrite
from pausepoint.errors import CheckpointDecodeError

__all__ = ["check_checkpoint", "check_metadata", "check_writes", "decoded"]

T = TypeVar("T")

_REQUIRED = ("v", "id", "ts", "channel_values", "channel_versions", "versions_seen")
_REQUIRED_KEYS = frozenset(_REQUIRED)


def _corrupt(what: str) -> CheckpointDecodeError:
    return CheckpointDecodeError(f"{what}; the row is corrupt")


def _check_versions(versions: object, what: str) -> None:
    if not isinstance(versions, dict):
        raise _corrupt(f"its {what} is a {type(versions).__name__}, not a dict")
    for channel, version in cast(dict[object, object], versions).items():
        if type(channel) is not str or type(version) is not int:
            raise _corrupt(f"its {what} maps {channel!r} to {version!r}, not to an int version")


def _check_seen(seen: object) -> None:
    if not isinstance(seen, dict):
        raise _corrupt(f"its versions_seen is a {type(seen).__name__}, not a dict")
    for node, versions in cast(dict[object, object], seen).items():
        if type(node) is not str:
            raise _corrupt(f"its versions_seen has the key {node!r}, not a node name")
        _check_versions(versions, f"versions_seen[{node!r}]")


def _check_fields(checkpoint: dict[str, object], checkpoint_id: str) -> None:
    if checkpoint["id"] != checkpoint_id:
        raise _corrupt(f"it holds the checkpoint {checkpoint['id']!r}")
    values = checkpoint["channel_values"]
    if not isinstance(values, dict):
        raise _corrupt("its channel_values is not a dict keyed by channel name")
    for key in cast(dict[object, object], values):
        if type(key) is not str:
            raise _corrupt("its channel_values is not a dict keyed by channel name")
    _check_versions(checkpoint["channel_versions"], "channel_versions")
    _check_seen(checkpoint["versions_seen"])
    if type(checkpoint["ts"]) is not str:
        raise _corrupt(f"its ts is {checkpoint['ts']!r}, not a timestamp text")
    updated = checkpoint.get("updated_channels")
    if updated is None:
        return
    if not isinstance(updated, list):
        raise _corrupt(f"its updated_channels is {updated!r}, not a list of channel names")
    for channel in cast(list[object], updated):
        if type(channel) is not str:
            raise _corrupt(f"its updated_channels is {updated!r}, not a list of channel names")


def check_checkpoint(checkpoint: object, checkpoint_id: str) -> None:
    """Check that a decoded checkpoint has the ``Checkpoint`` structure.

    Raises:
        CheckpointDecodeError: It does not; the message says what is wrong, or that a
            newer pausepoint wrote it.

    """
    if not isinstance(checkpoint, dict):
        raise _corrupt(f"it holds a {type(checkpoint).__name__}, not a checkpoint record")
    record = cast(dict[str, object], checkpoint)
    if not record.keys() >= _REQUIRED_KEYS:
        missing = ", ".join(repr(k) for k in _REQUIRED if k not in record)
        raise _corrupt(f"its checkpoint record lacks {missing}")
    version = record["v"]
    if type(version) is not int or version > CHECKPOINT_FORMAT:
        raise CheckpointDecodeError(
            f"it has format version {version!r}, but this pausepoint reads versions up "
            f"to {CHECKPOINT_FORMAT}; upgrade pausepoint to read it"
        )
    _check_fields(record, checkpoint_id)


def check_metadata(metadata: Mapping[str, object]) -> None:
    """Check the types of the metadata keys the engine reads (others are the user's).

    Raises:
        CheckpointDecodeError: ``step``, ``source`` or ``parents`` has the wrong type.

    """
    step = metadata.get("step", 0)
    source = metadata.get("source", "")
    parents = metadata.get("parents", {})
    if type(step) is not int or type(source) is not str:
        raise _corrupt(f"its metadata has step {step!r} and source {source!r}")
    if not isinstance(parents, dict):
        raise _corrupt(f"its metadata has parents {parents!r}, not a dict of ids")
    for ns, checkpoint_id in cast(dict[object, object], parents).items():
        if type(ns) is not str or type(checkpoint_id) is not str:
            raise _corrupt(f"its metadata has parents {parents!r}, not a dict of ids")


def check_writes(writes: Iterable[PendingWrite]) -> None:
    """Check that pending writes have text task ids and channels.

    Their values are the engine's business, not the saver's (the saver contract
    stores any value under any channel): a snapshot that cannot use one says so
    (``pausepoint.loop.inspection``).

    Raises:
        CheckpointDecodeError: A task id or channel is not text.

    """
    for task_id, channel, _ in writes:
        if type(task_id) is not str or type(channel) is not str:
            raise _corrupt(f"a pending write has task id {task_id!r} and channel {channel!r}")


def decoded(row: Sequence[Any], decode: Callable[[], T]) -> T:
    """``decode()``, any failure to decode the row raised as ``CheckpointDecodeError``.

    A corrupt or crafted row must not surface as a raw ``TypeError``/``KeyError``/
    ``MemoryError`` (or stop other threads from being read): the error names the
    thread and checkpoint instead.
    """
    where = f"checkpoint {row[2]!r} of thread {row[0]!r}"
    try:
        return decode()
    except CheckpointDecodeError as exc:
        if where in str(exc):
            raise
        raise exc.with_message(f"{where}: {exc}") from exc
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise CheckpointDecodeError(
            f"{where} cannot be decoded ({type(exc).__name__}: {exc}); the row is corrupt"
        ) from exc
    except (MemoryError, RecursionError) as exc:
        raise CheckpointDecodeError(
            f"{where} is too large or too deeply nested to decode ({type(exc).__name__})"
        ) from exc
