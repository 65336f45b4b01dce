"""Encoding a large value once when a write and the checkpoint after it both hold it.

A node that returns a large value writes it (a pending write) and, as the channel's
new value, it is in the checkpoint stored after the step: the same object, saved
in one call (one ``commit``). Encoding it twice doubled the cost of a 50 MB
value. Savers note the encodings of large writes in a `Found` map, by the
identity of the value, for the duration of that one call, and the checkpoint's
encoding reuses them (`dumps_checkpoint`). Within one call no user code runs
between the two encodings, so the same object still has the same content.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, cast

from pausepoint.serde import Serializer
from pausepoint.serde.encoder import TAG
from pausepoint.serde.frames import is_framed

__all__ = ["REUSE_FROM", "Found", "dumps_checkpoint", "remember", "reused"]

REUSE_FROM = 64 * 1024
"""Encodings at least this long are noted; smaller ones cost little to redo."""

Found = dict[int, tuple[object, bytes]]
"""Encodings of large values by ``id(value)``, each with its value (kept alive)."""


def remember(found: Found | None, value: Any, blob: bytes) -> None:
    """Note ``blob`` as the encoding of ``value`` if it is large (and JSON, not framed)."""
    if found is not None and len(blob) >= REUSE_FROM and not is_framed(blob):
        found[id(value)] = (value, blob)


def reused(found: Found, value: object) -> bytes | None:
    """The noted encoding of this very object, if any."""
    hit = found.get(id(value))
    return hit[1] if hit is not None and hit[0] is value else None


def _plain_keys(d: Iterable[object]) -> bool:
    return all(type(k) is str and k != TAG for k in d)


def dumps_checkpoint(
    serde: Serializer, checkpoint: Mapping[str, object], found: Found
) -> bytes | None:
    """``serde.dumps(checkpoint)``, with the channel values in ``found`` spliced in.

    The bytes are those the serializer writes for the whole checkpoint: a dict with
    str keys (none the tag key) is encoded as a JSON object of its encoded items.
    ``None`` when no channel value was noted, or the checkpoint is not such a dict:
    the caller then encodes it whole (also to report a value that cannot be stored,
    with its usual message).
    """
    values = checkpoint.get("channel_values")
    if not found or type(values) is not dict or type(checkpoint) is not dict:
        return None
    channels = cast(dict[str, object], values)  # str keys: checked below
    if not any(reused(found, v) is not None for v in channels.values()):
        return None
    fields = cast(dict[str, object], checkpoint)
    if not _plain_keys(fields) or not _plain_keys(channels):
        return None
    parts: list[bytes] = []
    for key, value in fields.items():
        if key == "channel_values":
            encoded = _object(serde, channels, found)
        else:
            encoded = serde.dumps(value, label=f"checkpoint[{key!r}]")
        if encoded is None or is_framed(encoded):
            return None  # large bytes: encoded whole, framed (copying them is cheap)
        parts.append(_key(key) + encoded)
    return b"{" + b",".join(parts) + b"}"


def _object(serde: Serializer, channels: dict[str, object], found: Found) -> bytes | None:
    parts: list[bytes] = []
    for name, value in channels.items():
        encoded = reused(found, value) or serde.dumps(value, label=f"channel {name!r}")
        if is_framed(encoded):
            return None
        parts.append(_key(name) + encoded)
    return b"{" + b",".join(parts) + b"}"


def _key(name: str) -> bytes:
    return json.encoder.encode_basestring_ascii(name).encode("ascii") + b":"
