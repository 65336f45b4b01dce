"""What ``CompactingMemorySaver`` keeps: stored checkpoints, and values in immutable forms.

A value that cannot change (a number, a string, an interrupt or a list holding only
such values) is kept without encoding and read back as a new object where the
caller could change it; anything else is kept as its encoding (see
`pausepoint.checkpoint.compact`).
"""

from __future__ import annotations

import marshal
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pausepoint.checkpoint._grown import Grown, GrownMarshalled, expand
from pausepoint.checkpoint._labels import write_label
from pausepoint.checkpoint._reuse import Found, remember
from pausepoint.checkpoint.base import ChannelVersions, Checkpoint
from pausepoint.checkpoint.ids import is_stamp, stamp_time
from pausepoint.errors import SerializationError
from pausepoint.serde import Serializer
from pausepoint.serde.plain import PLAIN_FROM, is_plain_json
from pausepoint.types import Interrupt

__all__ = [
    "EMPTY",
    "FLAT_ITEMS",
    "FROZEN",
    "THAWED",
    "Encoded",
    "FrozenList",
    "Marshalled",
    "Interrupts",
    "Seen",
    "Meta",
    "Versions",
    "RawBytes",
    "Recent",
    "Stored",
    "is_frozen",
    "is_frozen_interrupt",
    "encode",
    "freeze",
    "pack_seen",
    "pack_versions",
    "plain_metadata",
    "thaw",
]


Versions = ChannelVersions | tuple[tuple[str, ...], tuple[int, ...], tuple[type[int], ...]]
"""``channel_versions`` as kept: a plain copy, or (small, shared) ``(keys, values, types)``."""

Seen = dict[str, ChannelVersions] | tuple[tuple[str, ...], tuple[ChannelVersions, ...]]
"""``versions_seen`` as kept: a plain copy, or (small, shared) ``(nodes, entries)``."""


class Stored:
    """One stored checkpoint, as flat slots (a paused thread holds ~3 of them).

    ``values`` is ``(names, value, value, ...)``. A put keeps plain copies of the
    version maps; once the thread goes idle they are compacted
    (``CompactingMemorySaver._compact``): small maps become shared ``(keys, values)`` tuples.
    The ``versions_seen`` entries are shared, never copied (read-only by the saver
    contract, `pausepoint.checkpoint.base`). The id is the key in the
    namespace's dict and the same string object as ``id``; a parent found in that
    dict shares its id string too. ``ts`` is None when `stamp_time` (in
    `pausepoint.checkpoint.ids`) makes it again from the id.
    """

    __slots__ = (
        "graph",
        "id",
        "metadata",
        "parent_id",
        "seen",
        "ts",
        "updated",
        "v",
        "values",
        "versions",
        "writes",
    )

    def __init__(
        self,
        checkpoint: Checkpoint,
        values: tuple[Any, ...],
        versions: Versions,
        seen: Seen,
        updated: tuple[str, ...] | None,
        metadata: Meta,
    ) -> None:
        self.id = checkpoint["id"]
        self.v = checkpoint["v"]
        ts = checkpoint["ts"]
        self.ts = None if is_stamp(self.id, ts) else ts  # None: made again from the id
        self.versions = versions
        self.seen = seen
        self.updated = updated
        self.graph = checkpoint.get("graph")  # the graph's stamp: read-only, shared
        # (names, value, value, ...): each an encoding (bytes), or itself if immutable
        self.values = values
        self.metadata = metadata
        self.parent_id: str | None = None
        # (task_id, idx) -> (channel, kept value) in insertion order; None until written.
        self.writes: dict[tuple[str, int], tuple[str, object]] | None = None

    def checkpoint(self, values: dict[str, object]) -> Checkpoint:
        """A new checkpoint dict for a reader: every part of it may be changed freely."""
        seen, versions = self.seen, self.versions
        made: Checkpoint = {
            "v": self.v,
            "id": self.id,
            "ts": self.ts if self.ts is not None else stamp_time(self.id) or "",
            "channel_values": values,
            "channel_versions": (
                dict(versions)
                if isinstance(versions, dict)
                else dict(zip(versions[0], versions[1], strict=True))
            ),
            "versions_seen": (
                {k: dict(v) for k, v in seen.items()}
                if isinstance(seen, dict)
                else dict(zip(seen[0], map(dict, seen[1]), strict=True))
            ),
            "updated_channels": None if self.updated is None else list(self.updated),
        }
        if self.graph is not None:
            made["graph"] = self.graph
        return made


Encoded = tuple[object, int | None, bytes, tuple[object, ...] | None, object]
"""A channel value, its version, its whole encoding, for a list of immutable items a
snapshot of them (see ``CompactingMemorySaver._list_entry``), and what checkpoints
keep of it: the encoding itself, or a `Grown` (see `pausepoint.checkpoint._grown`)."""


class Recent:
    """What a thread put lately, while it is among the most recently put threads.

    ``encoded``: checkpoint_ns -> channel -> `Encoded` (value object, channel version,
    whole encoding, ..., kept form), the last put's values that are not kept as
    they are: a value no step wrote since is the same object at the same version,
    encoded once (holding it keeps its identity from being reused); the next
    version's encoding is compared with the whole one (see ``_grown``), which also
    serves reads of the head without joining a chain. The version matters: a node
    may change its input list in place and return it, the same object with new
    content.
    ``last``: checkpoint_ns -> the id of the checkpoint ``encoded`` describes.
    ``fresh``: the checkpoints put since the thread became recent, not yet compacted
    (``CompactingMemorySaver._compact``).
    """

    __slots__ = ("encoded", "fresh", "last")

    def __init__(self) -> None:
        self.encoded: dict[str, dict[str, Encoded]] = {}
        self.last: dict[str, str] = {}
        self.fresh: list[Stored] = []


FROZEN = frozenset({str, int, float, bool, type(None)})

FLAT_ITEMS = frozenset({str, int, bool, type(None)})
"""Items of a list the serializer writes as plain JSON (floats may be tagged)."""


Meta = bytes | tuple[tuple[str, object], ...]
"""Kept metadata: its encoding, or (see ``plain_metadata``) its items."""

EMPTY = object()
"""Stands for an empty dict in kept metadata items (``parents`` is usually one)."""


def plain_metadata(metadata: Mapping[str, object]) -> tuple[tuple[str, object], ...] | None:
    """The items of metadata whose values are immutable (or empty dicts), else None.

    What a step's metadata is made of (source, step, parents, run metadata of str and
    numbers): kept as items while the thread is busy, without encoding (~0.6 µs
    instead of ~2.6 µs a put), and encoded when it goes idle (``_compact``).
    """
    items: list[tuple[str, object]] = []
    for key, value in metadata.items():
        kind = type(value)
        if type(key) is not str:  # pyright: ignore[reportUnnecessaryComparison]
            return None
        if kind in FROZEN:
            items.append((key, value))
        elif kind is dict and not value:
            items.append((key, EMPTY))
        else:
            return None
    return tuple(items)


def is_frozen(value: object) -> bool:
    """Immutable, so kept as it is: no copy needed, and nothing to decode on reads.

    Checked before encoding: a counter, a name or an edge trigger's ``None`` is
    stored and read back without the serializer (they can always be encoded), which
    is most values and writes of a typical step, and smaller than their encoding.
    Bytes are not in the list: a kept ``bytes`` is an encoding.
    """
    return type(value) in FROZEN


def is_frozen_interrupt(value: object) -> bool:
    # A question with terms (schema, deadline; a subgraph's question at its parent: its
    # position, `pausepoint.loop.pending.as_stored`) is encoded: the pairs keep no terms.
    return (
        type(value) is Interrupt
        and type(value.id) is str
        and is_frozen(value.value)
        and value.response_schema is None
        and value.deadline is None
        and value.on_timeout is None
        and value.position is None
    )


class Interrupts(tuple[tuple[object, str], ...]):
    """A kept ``INTERRUPT`` write whose values are immutable: ``(value, id)`` pairs.

    Read back as new `Interrupt` objects (they are mutable), with no decoding.
    """

    __slots__ = ()


class FrozenList(tuple[object, ...]):
    """A kept write that is a list of immutable values (an answer, a reducer's items).

    Read back as a new list, with no encoding either way.
    """

    __slots__ = ()


class RawBytes(tuple[bytes]):
    """A kept ``bytes`` value (immutable, so not copied): a plain kept bytes is an encoding.

    Read back as the bytes themselves, with no encoding either way (a 50 MB file's
    contents cost nothing to keep, where its encoding took ~1 s).
    """

    __slots__ = ()


class Marshalled(bytes):
    """A kept plain-JSON value as ``marshal`` bytes: copied and read back in C.

    Only for values `pausepoint.serde.plain.is_plain_json` accepts (exact dict,
    list, str, int, float, bool, None, so ``marshal`` copies them exactly), made and
    read by this process alone: never stored elsewhere, never read from outside.
    50 MB of records: ~0.1 s to keep, where encoding them as JSON took ~1 s.
    """

    __slots__ = ()


THAWED = frozenset({bytes, Interrupts, FrozenList, RawBytes, Marshalled, Grown, GrownMarshalled})
"""Kept forms that stand for something else (see `thaw`)."""


def freeze(
    serde: Serializer,
    channel: str,
    value: Any,
    task_id: str,
    task_path: str,
    found: Found | None,
) -> object:
    """What a write keeps: the value itself if immutable, else its encoding.

    ``found`` notes a large encoding for the checkpoint stored in the same call.
    """
    if is_frozen(value):
        return value
    if type(value) is bytes:  # immutable too; a kept bytes is an encoding
        return RawBytes((value,))
    if type(value) is list and FROZEN.issuperset(map(type, value)):  # pyright: ignore[reportUnknownArgumentType]
        return FrozenList(value)  # pyright: ignore[reportUnknownArgumentType]
    if type(value) is tuple and value and all(is_frozen_interrupt(i) for i in value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        asked: tuple[Interrupt, ...] = value  # pyright: ignore[reportUnknownVariableType]
        return Interrupts((i.value, i.id) for i in asked)
    try:  # the label is built only for an error: it parses the task path
        blob = encode(serde, value, channel)
    except SerializationError:
        serde.dumps(value, label=write_label(channel, value, task_id, task_path))
        raise
    remember(found, value, blob)
    return blob


def encode(serde: Serializer, value: Any, label: str) -> bytes:
    """What is kept of a mutable value: large plain JSON as `Marshalled`, else its encoding.

    Small values are encoded (the serializer's fast paths; checking them costs more
    than it saves), and so is anything that is not plain JSON.
    """
    if _large(value) and is_plain_json(value, ints=True):
        return Marshalled(marshal.dumps(value))
    return serde.dumps(value, label=label)


def _large(value: Any) -> bool:
    """A dict or list with ``PLAIN_FROM`` items or more, or a child that has (a hint)."""
    kind: type[Any] = type(value)  # pyright: ignore[reportUnknownVariableType]
    if kind is not dict and kind is not list:
        return False
    if len(value) >= PLAIN_FROM:
        return True
    items: Iterable[Any] = value.values() if kind is dict else value
    return any((type(v) is dict or type(v) is list) and len(v) >= PLAIN_FROM for v in items)


def thaw(serde: Serializer, kept: Any) -> object:
    """The value a kept form stands for (a new object wherever it could be changed)."""
    kind: type[Any] = type(kept)  # pyright: ignore[reportUnknownVariableType]
    if kind is bytes:
        return serde.loads(kept)
    if kind is Grown:
        return serde.loads(expand(kept))
    if kind is Interrupts:
        if len(kept) == 1:  # the usual case, without a generator
            ((value, iid),) = kept
            return (Interrupt(value, iid),)
        return tuple(Interrupt(value, iid) for value, iid in kept)
    thawed = _THAW.get(kind)
    return kept if thawed is None else thawed(kept)


_THAW: dict[type[object], Callable[[Any], object]] = {
    FrozenList: list,
    RawBytes: operator.itemgetter(0),
    Marshalled: marshal.loads,
    GrownMarshalled: lambda kept: marshal.loads(expand(kept)),
}


PACKED_UP_TO = 16
"""Version maps with at most this many keys are packed and shared (``Stored``).

Packing and sharing costs time per put in proportion to the keys (tuples, hashes);
a plain copy of a dict is one fast C call. Small maps are what many paused threads
of a typical graph hold; a graph of 100 nodes keeps its copies (as before).
"""

_SEEN = object()
"""Marks a ``versions_seen`` entry's key in the shared table."""

_SEEN_MAP = object()
"""Marks a whole packed ``versions_seen``'s key in the shared table."""


def pack_versions(shared: dict[Any, Any], versions: Versions) -> Versions:
    """A small version map as a shared ``(keys, values, types)`` tuple (large: as it is)."""
    if not isinstance(versions, dict) or len(versions) > PACKED_UP_TO:
        return versions
    share = shared.setdefault
    keys = tuple(versions)
    vals = tuple(versions.values())
    # The types are part of the key: 1 == 1.0 == True, but they are not the same.
    packed = (share(keys, keys), vals, tuple(map(type, vals)))
    return share(packed, packed)


def pack_seen(shared: dict[Any, Any], seen: Seen, entries: dict[int, ChannelVersions]) -> Seen:
    """``versions_seen`` with its entries shared, one object per content.

    ``entries``: id of an entry -> its shared one, for the duration of one compaction.
    """
    if not isinstance(seen, dict) or len(seen) > PACKED_UP_TO:
        return seen
    share = shared.setdefault
    out: list[ChannelVersions] = []
    for entry in seen.values():
        found = entries.get(id(entry))
        if found is None:
            vals = tuple(entry.values())
            key = (_SEEN, tuple(entry), vals, tuple(map(type, vals)))
            found = entries[id(entry)] = share(key, entry)
        out.append(found)
    keys = tuple(seen)
    packed = (share(keys, keys), tuple(out))
    # Shared entries are alive while the table holds this pair, so their ids
    # stand for them in the key (dicts cannot be hashed).
    return share((_SEEN_MAP, packed[0], *map(id, out)), packed)
