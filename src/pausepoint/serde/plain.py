"""Shortcuts for large values: plain JSON found in C loops, bytes without a JSON pass.

A value made only of dicts with str keys, lists, str, int, float, bool and None (the
exact types, no subclasses) is its own tagged tree, so the C JSON encoder can write
it as it is; `is_plain_json` tells, looking at the value one level at a time
with C-level loops (``map``, ``chain``, ``compress``) instead of a Python call per
item: 50 MB of records (500,000 small dicts) are checked in about a tenth of the
time the encoder's walk takes to copy them into a tree.

A top-level ``bytes`` value is written as its tagged node directly (base64 needs no
JSON escaping) and read back the same way (`dump_bytes`, `load_bytes`):
the bytes written are exactly the serializer's, so the format does not change.
"""

from __future__ import annotations

import binascii
import math
import sys
from collections.abc import Callable, Iterable
from itertools import chain, compress, repeat
from operator import is_
from typing import Any, TypeAlias

from pausepoint._schema_dicts import JsonValue

__all__ = [
    "FLAT_VALUES",
    "Json",
    "PLAIN_FROM",
    "TAG",
    "MAX_LEVELS",
    "dump_bytes",
    "is_flat_json",
    "is_plain_json",
    "load_bytes",
]

Json: TypeAlias = JsonValue
"""A JSON value as the ``json`` module reads and writes it: the serializer's trees are
made of these, and so are the inbox API's and the CLI's outputs (one type with
`pausepoint._schema_dicts.JsonValue`, which JSON Schemas are made of)."""

TAG = "__pp__"
"""The key marking a tagged node. Part of the stored format (docs/format.md).

Defined here, where plain JSON is told from tagged values, and re-exported by
`pausepoint.serde.encoder`.
"""

PLAIN_FROM = 32
"""Containers with at least this many items are checked whole before being walked."""

MAX_LEVELS = 64
"""Deeper values take the encoder's walk (it also stops a cyclic value's check)."""

FLAT_VALUES = frozenset({str, int, bool, type(None)})


def is_flat_json(d: dict[object, object]) -> bool:
    """A small str-keyed dict of str/int/bool/None or empty dicts: JSON as it is.

    Checkpoint metadata and small states look like this; for them the typed tree
    is the dict itself, so the encoder's walk is skipped (less than half the cost for
    a step's metadata: benchmarks/README.md, "Figures behind the comments"). Floats
    are left to the walk (nan and infinities are tagged).
    """
    if len(d) > 16:
        return False
    for k, v in d.items():
        if type(k) is not str or k == TAG:
            return False
        kind = type(v)
        if kind not in FLAT_VALUES and not (kind is dict and not v):
            return False
    return True


_LEAVES = frozenset({str, int, float, bool, type(None)})
_ITEMS = _LEAVES | {dict, list}

# The unbound methods, typed: the loops below call them in C, once per container.
_values: Callable[[dict[object, object]], Iterable[object]] = dict[object, object].values
_has: Callable[[dict[object, object], object], bool] = dict[object, object].__contains__

_BYTES_HEAD = b'{"' + TAG.encode("ascii") + b'":"bytes","v":"'
_BYTES_TAIL = b'"}'


def is_plain_json(value: Any, *, ints: bool = False, finite: bool = False) -> bool:
    """Whether ``value`` is a dict or list the C JSON encoder writes as the serializer would.

    True when every container is an exact ``dict`` (str keys, none of them the tag
    key) or ``list`` and every other item an exact str, int, float, bool or None.
    Floats may still be nan or infinite and ints too long to write: the caller's
    encoder (``allow_nan=False``) raises ``ValueError`` for those, and the caller
    then takes the walk, which tags or explains them. False, too, for a container
    found twice in one level (shared or cyclic: the walk handles both) and for
    values deeper than `MAX_LEVELS`; so a cyclic value's check ends, each
    level holding each container at most once.

    With ``ints``, False too if an int may be too long to write as text (so a
    caller that does not encode the value still refuses what the encoder would);
    with ``finite``, if a float is nan or infinite (so the value is its own tree).
    """
    kind: type[Any] = type(value)  # pyright: ignore[reportUnknownVariableType]
    dicts: list[dict[object, object]] = [value] if kind is dict else []
    lists: list[list[object]] = [value] if kind is list else []
    for _ in range(MAX_LEVELS):
        if not _plain_keys(dicts):
            return False
        # Any: the containers among the items are picked out by type below (no casts here).
        items: list[Any] = list(chain(chain.from_iterable(map(_values, dicts)), *lists))
        kinds = list(map(type, items))
        found = set(kinds)
        if not _leaves_ok(items, kinds, found, ints=ints, finite=finite):
            return False
        if dict not in found and list not in found:
            return True
        # Containers holding containers are distinct, so a level is never larger than
        # the value (a cycle would double it); leaf-only ones may repeat: harmless.
        if not _distinct(dicts, lists):
            return False
        dicts = list(compress(items, map(is_, kinds, repeat(dict)))) if dict in found else []
        lists = list(compress(items, map(is_, kinds, repeat(list)))) if list in found else []
    return False


def _leaves_ok(
    items: list[object],
    kinds: list[type[object]],
    found: set[type[object]],
    *,
    ints: bool,
    finite: bool,
) -> bool:
    if not _ITEMS.issuperset(found):
        return False
    if ints and int in found and not _ints_fit(items, kinds):
        return False
    return not (finite and float in found and not _finite(items, kinds))


def _finite(items: list[Any], kinds: list[type[object]]) -> bool:
    return all(map(math.isfinite, compress(items, map(is_, kinds, repeat(float)))))


def _ints_fit(items: list[Any], kinds: list[type[object]]) -> bool:
    """Whether every int among ``items`` has few enough digits to be written as text."""
    limit = sys.get_int_max_str_digits()
    if not limit:
        return True
    # 3 bits a digit, fewer than the 3.32 it takes: a fitting int may be refused,
    # never the other way round (a refused one takes the encoder, which decides).
    widest = max(map(int.bit_length, compress(items, map(is_, kinds, repeat(int)))))
    return widest <= 3 * (limit - 1)


def _distinct(dicts: list[dict[object, object]], lists: list[list[object]]) -> bool:
    if len(dicts) + len(lists) == 1:
        return True
    return len(set(map(id, chain(dicts, lists)))) == len(dicts) + len(lists)


def _plain_keys(dicts: list[dict[object, object]]) -> bool:
    if not dicts:
        return True
    if any(map(_has, dicts, repeat(TAG))):
        return False
    return {str}.issuperset(map(type, chain.from_iterable(dicts)))


def dump_bytes(data: bytes) -> bytes:
    """The serializer's encoding of ``data``: its tagged node, base64 inside."""
    return b"".join((_BYTES_HEAD, binascii.b2a_base64(data, newline=False), _BYTES_TAIL))


def load_bytes(payload: bytes) -> bytes | None:
    """The bytes that ``payload`` encodes, if it is exactly what `dump_bytes` writes.

    ``None`` for anything else (another value, escapes, bad base64): the caller then
    decodes it as JSON, which gives the same value or the same error.
    """
    if len(payload) < len(_BYTES_HEAD) + len(_BYTES_TAIL):
        return None
    if not (payload.startswith(_BYTES_HEAD) and payload.endswith(_BYTES_TAIL)):
        return None
    body = memoryview(payload)[len(_BYTES_HEAD) : len(payload) - len(_BYTES_TAIL)]
    try:  # strict: only the base64 alphabet and correct padding, as JSON's path checks
        return binascii.a2b_base64(body, strict_mode=True)
    except binascii.Error:
        return None
