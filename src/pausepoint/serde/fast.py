r"""The ``fast`` extra: JSON written and read by ``orjson``, byte for byte the standard library's.

With ``pip install pausepoint[fast]`` a `Serializer` encodes JSON-native trees and
large plain-JSON values with orjson (written in Rust, several times faster than
``json``'s C encoder), and decodes large untagged payloads with it. The stored format
does not change: what orjson writes here is exactly what the standard library path
writes for the same value, and each place where the two would differ is found and
handed back to that path (``None`` from `orjson_text` or `orjson_plain`, `FALLBACK` from
`orjson_load`):

- non-ASCII text: orjson writes UTF-8, the format ``\uXXXX`` escapes; the escapes
  are added after (`_ascii`), by the standard library's own C function;
- DEL (0x7f): orjson writes it raw, ``json`` as ``\u007f``; replaced the same way;
- floats under 1e-4: orjson writes ``0.00001`` and ``1e-7``, ``json`` ``1e-05`` and
  ``1e-07``: such output is not used;
- ints beyond 64 bits, lone surrogates, nesting deeper than 255: orjson refuses them;
- when reading, an int beyond 64 bits (orjson reads it as a float: a value read with
  a float in it whose text has a number of 19 digits or more) and anything orjson
  refuses (nan, infinities, lone surrogates) go to the standard library, which then
  gives the value or the error it always gave.

``PAUSEPOINT_FAST=0`` in the environment, read when a `Serializer` is made, turns
the extra off (docs/format.md). ``tests/savers/test_fast.py`` checks the bytes
against the standard library's with Hypothesis; CI runs the serializer and saver
tests with and without the extra.
"""

from __future__ import annotations

import codecs
import functools
import gc
import json
import os
from itertools import compress, repeat
from math import isfinite
from operator import is_
from typing import TYPE_CHECKING, Any, Final

from pausepoint.serde.plain import TAG

if TYPE_CHECKING:
    from pausepoint.serde.plain import Json

try:
    import orjson
except ImportError:  # pragma: no cover - CI runs with the extra installed
    orjson = None

__all__ = [
    "ENV",
    "FALLBACK",
    "available",
    "orjson_enabled",
    "orjson_load",
    "orjson_plain",
    "orjson_text",
]

ENV: Final = "PAUSEPOINT_FAST"
"""The environment variable that turns the extra off when set to ``0``."""

FALLBACK: Final = object()
"""What `orjson_load` returns for a payload the standard library must decode."""

_ESCAPES = "pausepoint.json_ascii"


def _escape(exc: UnicodeError) -> tuple[str, int]:
    r"""A run of non-ASCII characters as ``json`` writes it: ``\uXXXX`` (pairs above U+FFFF)."""
    if not isinstance(exc, UnicodeEncodeError):  # pragma: no cover - registered for encoding
        raise exc
    run = exc.object[exc.start : exc.end]
    # The run holds no quote or backslash (they are ASCII): only the quotes are extra.
    return json.encoder.encode_basestring_ascii(run)[1:-1], exc.end


codecs.register_error(_ESCAPES, _escape)

_TAG_KEY = b'"' + TAG.encode("ascii") + b'":'
_SHORT_EXPONENTS = tuple(b"e-%d" % d for d in range(1, 10))
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_CONTAINERS = (b"{", b"[")
_LONG_NUMBER = b"0" * 19  # 19 digits: beyond what orjson reads exactly as an int (signed)

# orjson passes these to `_refuse` instead of writing them as it would.
_OPTIONS: Final = (
    0
    if orjson is None
    else orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
_JSON_TYPES = frozenset({dict, list, str, int, float, bool, type(None)})
_LOOK_BELOW = 32  # items: a list this small has its items' types looked at first
_GROUP = 1024  # items looked at together by `_only_json_types` (1024-4096: alike)


def available() -> bool:
    """Whether ``orjson`` is installed."""
    return orjson is not None


def orjson_enabled() -> bool:
    """Whether a serializer made now uses orjson: installed, not turned off, and agreeing.

    Agreeing: the installed orjson writes and reads a probe of edge cases (every
    decade of floats, escapes, non-ASCII, 64-bit ints) as this module expects, so a
    future orjson that writes otherwise is not used rather than trusted.
    """
    return orjson is not None and os.environ.get(ENV, "1").strip() != "0" and _agrees()


def _probe() -> list[Json]:
    floats: list[Json] = [float(f"{m}e{e}") for e in range(-4, 308) for m in (1, 1.5, 9.75)]
    floats += [-0.0, 0.0, 5e-324, 1e-10, 2.5e-300, 1 / 3, -(2**53) + 0.5]
    ints: list[Json] = [0, -1, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1]
    texts: list[Json] = ['\x00\x1f\x7f\b\f\n\r\t"\\/', "caf\xe9 \u2028 \U0001f680", ""]
    return [{"floats": floats, "ints": ints, "texts": texts, "": [None, True, False]}]


@functools.cache
def _agrees() -> bool:
    if orjson is None:  # pragma: no cover
        return False
    probe = _probe()
    want = json.dumps(probe, separators=(",", ":"), allow_nan=False).encode("ascii")
    tiny = [1e-4 / 3, 1e-7, -1.5e-9]  # written otherwise: must be refused
    return (
        orjson_text(probe) == want
        and orjson_plain(probe) == want
        and orjson.loads(want) == probe
        and orjson_load(b"[0.5,18446744073709551616]") is FALLBACK
        and orjson_load(b"[-9223372036854775809]") in (FALLBACK, [-(2**63) - 1])
        and all(orjson_text([x]) is None for x in tiny)
    )


def _short_exponent(out: bytes) -> bool:
    """Whether ``out`` may hold a float orjson wrote as ``1e-7`` where ``json`` writes ``1e-07``.

    May answer yes for text inside a string (``"re-1"``): that output is then not
    used, which costs time, never correctness. Output without a ``-`` (found by
    ``memchr``, ~15x faster than looking for ``e-``) has none.
    """
    if b"-" not in out or b"e-" not in out:
        return False
    for probe in _SHORT_EXPONENTS:
        at = out.find(probe)
        while at >= 0:
            if not out[at + 3 : at + 4].isdigit():
                return True
            at = out.find(probe, at + 3)
    return False


def _ascii(out: bytes) -> bytes | None:
    """The bytes ``json`` writes for what orjson wrote as ``out``; ``None`` where unsure."""
    if b"0.0000" in out or _short_exponent(out):
        return None  # a float under 1e-4, written otherwise than by repr()
    return _escaped(out)


def _escaped(out: bytes) -> bytes:
    """``out`` with DEL and non-ASCII escaped as ``json`` escapes them."""
    if b"\x7f" in out:  # only ever inside a string: orjson escapes no DEL
        out = out.replace(b"\x7f", b"\\u007f")
    if not out.isascii():  # non-ASCII is only ever inside strings, as UTF-8
        out = out.decode("utf-8").encode("ascii", _ESCAPES)
    return out


def orjson_text(tree: Json) -> bytes | None:
    """The compact ASCII JSON of a JSON-native tree, as ``json`` writes it; ``None``: use ``json``.

    ``tree`` holds only exact dicts (str keys), lists, str, int, float, bool and
    None, as the serializer's encoder makes; floats are finite.
    """
    if orjson is None:  # pragma: no cover - only orjson_enabled() callers reach here
        return None
    try:
        out = orjson.dumps(tree)
    except orjson.JSONEncodeError:  # an int beyond 64 bits, a lone surrogate, depth
        return None
    return _ascii(out)


def _refuse(value: object) -> object:
    raise TypeError(type(value).__name__)


def orjson_plain(value: dict[Any, Any] | list[Any]) -> bytes | None:
    """``value``'s encoding if it is plain JSON (its own tagged tree), else ``None``.

    Plain JSON: exact dicts with str keys other than the tag key, lists, str, int,
    finite floats, bool and None, as `pausepoint.serde.plain.is_plain_json` says, for
    less: orjson (told to refuse subclasses, dataclasses and date/times) has already
    refused non-str and str-subclass keys and every type but the few it writes
    natively that the format tags (tuples, enums, UUIDs), and a cyclic value; the tag
    key is found in its output; what is left is a look at each item's exact type.

    A small list with an item of another type (the ``Interrupt`` in the list a pause
    writes, a tuple) is left to the walk at once: orjson would only
    write or refuse it before the walk writes it again (+22 % for such a list, run O).
    """
    if orjson is None:  # pragma: no cover - only orjson_enabled() callers reach here
        return None
    small = type(value) is list and len(value) < _LOOK_BELOW  # dicts: ~2k instructions more
    if small and not _JSON_TYPES.issuperset(map(type, value)):
        return None
    try:
        out = orjson.dumps(value, default=_refuse, option=_OPTIONS)
    except orjson.JSONEncodeError:
        return None
    if _TAG_KEY in out or not _only_json_types(value, out):
        return None
    return _escaped(out)


def _only_json_types(value: dict[Any, Any] | list[Any], out: bytes) -> bool:
    """Whether every item in ``value`` is of an exact JSON type, its floats as ``json`` writes them.

    orjson wrote ``value`` as ``out`` without error, so it holds no cycle and its
    dicts have exact str keys. A group of items at a time: their exact types, then
    their children, which ``gc.get_referents`` lists in C (a list's items, a dict's
    values; str, int, float, bool and None have none), once every item is known to be
    one of those types. Groups of at most `_GROUP` items, children first: each object
    is looked at again while it is still in the CPU's cache (a whole level at a time,
    50 MB of records took ~1.6x as long: reading millions of scattered objects, more
    than the loops, is the cost). Floats are looked at once some are found.
    """
    nulls: bool | None = None  # whether `out` holds a null: looked for once floats are found
    todo: list[list[Any]] = []  # groups of a level too large for one, yet to look at
    group: list[Any] = [value]
    while True:  # one loop, no calls per group: small values pay for each (callgrind)
        found = set(map(type, group))
        if not _JSON_TYPES.issuperset(found):
            return False
        if float in found:
            if nulls is None:
                if b"0.0000" in out or _short_exponent(out):
                    return False  # a float under 1e-4, written otherwise than by repr()
                nulls = b"null" in out
            if nulls and not _finite(group):
                return False
        if dict in found or list in found:
            group = gc.get_referents(*group)
            if len(group) > _GROUP:
                todo += [group[at : at + _GROUP] for at in range(0, len(group), _GROUP)]
                group = todo.pop()
            continue
        if not todo:
            return True
        group = todo.pop()


def _finite(group: list[Any]) -> bool:
    """Whether the floats among ``group`` are finite (orjson writes nan and infinities as null)."""
    return all(map(isfinite, compress(group, map(is_, map(type, group), repeat(float)))))


def orjson_load(data: bytes) -> Any:
    """The value of the untagged JSON ``data``, or `FALLBACK`: decode it with ``json``.

    Equal to what ``json`` reads, and of the same types: whatever orjson refuses goes
    to ``json``, and so does a value with a float in it whose text has a number of 19
    digits or more (orjson reads an int beyond 64 bits as a float). A value without
    floats needs no such look at its text (`_floatless`): its numbers were all read as
    ints, exactly. The look costs ~9 instructions a byte, three times what orjson
    takes to read a chat's messages (benchmarks/README.md, chain42).
    """
    if orjson is None:  # pragma: no cover - only orjson_enabled() callers reach here
        return FALLBACK
    if data[:1] not in _CONTAINERS:  # a str alone: json's scanner is as fast
        return FALLBACK
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return FALLBACK
    if _floatless(value) or _LONG_NUMBER not in data.translate(_DIGITS):
        return value
    return FALLBACK


def _floatless(value: object) -> bool:
    """Whether ``value``, as orjson reads JSON (dicts, lists, scalars), holds no float.

    A group of items at a time, their children listed in C by ``gc.get_referents``,
    as `_only_json_types` does; the first float found ends the look. The two loops
    are kept apart on purpose: sharing them (a generator of groups, or a helper that
    gives the next group) added 3,200-3,700 instructions (+8 %) to writing a list of
    three small nested dicts (a step's messages take this path), for no change a
    cold read or 50 MB of records could tell from noise (benchmarks/README.md,
    serde43).
    """
    todo: list[list[Any]] = []
    group: list[Any] = [value]
    while True:
        found = set(map(type, group))
        if float in found:
            return False
        if dict in found or list in found:
            group = gc.get_referents(*group)
            if len(group) > _GROUP:
                todo += [group[at : at + _GROUP] for at in range(0, len(group), _GROUP)]
                group = todo.pop()
            continue
        if not todo:
            return True
        group = todo.pop()
