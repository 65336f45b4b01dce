"""How ``CompactingMemorySaver`` keeps a checkpoint's channel values (see `compact`).

Each value: itself if immutable, else its encoding (made once per version, or
reused), kept whole, shared with the parent's if the bytes are equal, or as what
it gained over the parent's (`pausepoint.checkpoint._grown`).
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import is_

from pausepoint.checkpoint._grown import GROWN, expand, grow
from pausepoint.checkpoint._kept import FLAT_ITEMS, FROZEN, Encoded, RawBytes, Stored, encode
from pausepoint.checkpoint._labels import channel_label
from pausepoint.checkpoint._reuse import Found, reused
from pausepoint.checkpoint.base import ChannelVersions
from pausepoint.serde import Serializer

__all__ = ["keep_values", "whole_if_known"]


def keep_values(
    serde: Serializer,
    values: Mapping[str, object],
    versions: ChannelVersions,
    known: dict[str, Encoded] | None,
    found: Found | None = None,
    parent: Stored | None = None,
) -> tuple[list[object], dict[str, Encoded]]:
    """What a checkpoint keeps of each channel value, and the encodings made or reused.

    Immutable values are kept as they are (see ``is_frozen``; bytes too, see
    ``RawBytes``); others are encoded, unless ``known`` (the namespace's last put)
    had the very same object at the same channel version, or ``found`` holds its
    encoding as a write of this call, or the value is a list of str/int/bool/None
    that extends the one encoded last (see ``_list_entry``). An encoding equal to
    the one kept before for the channel shares it; one that extends it is kept as
    what it gained (see `grow`). Before: the parent's, in ``known`` if that
    describes the parent (``parent`` None), else read from ``parent``, so chains
    follow the history (a prune keeping the newest keeps only their ancestors').
    """
    encoded: dict[str, Encoded] = {}
    kept: list[object] = []
    value: object
    for chan, value in values.items():
        if type(value) in FROZEN:
            kept.append(value)
            continue
        if type(value) is bytes:
            kept.append(RawBytes((value,)))  # pyright: ignore[reportArgumentType]
            continue
        version = versions.get(chan)
        hit = known.get(chan) if known is not None else None
        entry: Encoded
        if hit is not None and hit[0] is value and hit[1] == version:
            entry = hit
        else:
            snapshot = None
            if found and (blob := reused(found, value)) is not None:
                pass
            elif type(value) is list:
                blob, snapshot = _list_entry(serde, chan, value, hit)  # pyright: ignore[reportUnknownArgumentType]
            else:
                blob = encode(serde, value, channel_label(chan))
            if parent is not None:  # a fork: grow from the parent's, not the last put's
                before = _kept_before(parent, chan)
            else:
                before = (hit[2], hit[4]) if hit is not None else None
            entry = (value, version, blob, snapshot, grow(blob, before))  # pyright: ignore[reportUnknownVariableType]
        encoded[chan] = entry
        kept.append(entry[4])
    return kept, encoded


def _list_entry(
    serde: Serializer, chan: str, value: list[object], hit: Encoded | None
) -> tuple[bytes, tuple[object, ...] | None]:
    """A list's encoding: if it extends the last one encoded, only what was appended.

    A list that grows by a few items a step (an ``operator.add`` channel) would be
    encoded whole at every checkpoint. When its items are all str, int, bool or
    None they are immutable, so the saver keeps a snapshot of them; if the new
    list's first items are the very objects of that snapshot (compared by
    identity, in C), the old encoding still holds for them and only the appended
    items are encoded and type-checked: ~100 µs a step at 5,000 items instead of
    ~750 µs (benchmarks/' list-10000/memory). Returns the encoding and the
    snapshot (None: items that may change).
    """
    dumps = serde.dumps
    label = channel_label(chan)
    before = hit[3] if hit is not None else None
    if before is not None and len(value) >= len(before) and all(map(is_, value, before)):
        assert hit is not None
        added = value[len(before) :]
        if FLAT_ITEMS.issuperset(map(type, added)):
            if not added:
                blob = hit[2]
            elif not before:
                blob = dumps(added, label=label)
            else:  # "[a,b]" and "[c]" make "[a,b,c]"
                blob = b"".join((hit[2][:-1], b",", dumps(added, label=label)[1:]))
            return blob, tuple(value)
    elif FLAT_ITEMS.issuperset(map(type, value)):
        return dumps(value, label=label), tuple(value)
    return encode(serde, value, label), None


def _kept_before(parent: Stored | None, chan: str) -> tuple[bytes, object] | None:
    """The whole encoding ``parent`` keeps for ``chan``, and its kept form, if encoded."""
    if parent is None:
        return None
    names = parent.values[0]
    if chan not in names:
        return None
    kept = parent.values[names.index(chan) + 1]
    if type(kept) in GROWN:
        return expand(kept), kept  # pyright: ignore[reportArgumentType]
    return (kept, kept) if isinstance(kept, bytes) else None


def whole_if_known(
    keys: tuple[str, ...], kept: list[object], known: dict[str, Encoded]
) -> list[object]:
    """``kept`` with each `Grown` the thread's last put holds whole replaced by those bytes.

    Reading the head of a busy thread (``get_state``, a resume) then decodes its
    growing lists from one buffer, as before they were kept as deltas.
    """
    if not any(type(v) in GROWN for v in kept):
        return kept
    out = list(kept)
    for n, (chan, value) in enumerate(zip(keys, kept, strict=True)):
        if type(value) in GROWN and (entry := known.get(chan)) is not None and entry[4] is value:
            out[n] = entry[2]
    return out
