"""Encodings ``CompactingMemorySaver`` keeps as the version before them plus what they gained.

A list channel that grows by appending (an ``operator.add`` list, ``add_messages``
appending) was kept whole at every checkpoint: a chat of 1,000 turns held 1 GB for
~1 MB of messages. Now a new encoding that shares most of its bytes, from the start,
with the one kept for the channel in the parent checkpoint is kept as a `Grown`: a
reference to that kept form (never copied, never changed), how much of it it keeps,
and the bytes after that. Decided by the bytes, not by the reducer: with ``h``
bytes of head and ``f`` of foot (a JSON encoding: ``h=0, f=1``, the closing ``]``
or ``"``; a `Marshalled` list: ``h=5``, its type and item count, ``f=0``), ``keep``
is where ``N[h:]`` and ``P[h:len(P)-f]`` first differ (`_common`), and ``N`` is then
``N[:h] + P[h:keep] + N[keep:len(N)-f] + N[len(N)-f:]``, exactly: reading it back
gives the very bytes a whole copy would. A JSON list appended to differs only
after ``P``'s body; a ``marshal`` list a little before (``FLAG_REF`` bits of its
newest items follow their reference counts), so its links hold that item again.

Reading a `Grown` joins its chain (one pass over the pieces, one copy of the bytes)
and decodes once. A chain is cut, and the next version kept whole, when it reaches
`CHAIN_MAX` links or its gains pass `GAIN_MAX` times its root's size, so a read is
bounded by ~3x the value's bytes and `CHAIN_MAX` steps, and the whole copies of a
growing value are ~1.5x its final size in all (sizes 1, 3, 9, ...). Values under
`GROWN_FROM` bytes are kept whole: a link costs ~150 bytes of its own.
"""

from __future__ import annotations

import sys

__all__ = [
    "CHAIN_MAX",
    "GAIN_MAX",
    "GROWN",
    "GROWN_FROM",
    "Grown",
    "GrownMarshalled",
    "expand",
    "grow",
]

GROWN_FROM = 4096
"""Encodings shorter than this are kept whole (as before)."""

CHAIN_MAX = 1000
"""Links in a chain at most: the next version is kept whole."""

GAIN_MAX = 2
"""A chain's gains up to this many times its root's size; then a whole copy again."""

_LIST = ord("[")
"""``marshal``'s type code of a list (its top bit is ``FLAG_REF``)."""


class Grown:
    """A kept encoding: ``base`` (a kept encoding, whole or `Grown`) and what it gained.

    The encoding it stands for is ``head + body(base)[:keep] + gained + foot``, where
    the body of a whole encoding is its bytes without its head and foot (see the
    module docstring); ``depth`` counts the links down to the whole one, ``gain`` the
    bytes gained since, ``root`` that one's size. Immutable, like the bytes it holds:
    many checkpoints (and later links) may share one.
    """

    __slots__ = ("base", "depth", "foot", "gain", "gained", "head", "keep", "root")

    def __init__(
        self,
        base: object,
        head: bytes,
        keep: int,
        gained: bytes,
        foot: bytes,
        depth: int,
        gain: int,
        root: int,
    ) -> None:
        self.base = base
        self.head = head
        self.keep = keep
        self.gained = gained
        self.foot = foot
        self.depth = depth
        self.gain = gain
        self.root = root


class GrownMarshalled(Grown):
    """A `Grown` whose whole encoding is a `Marshalled` list (read with ``marshal``)."""

    __slots__ = ()


GROWN = frozenset({Grown, GrownMarshalled})


def _cut(marshalled: bool) -> tuple[int, int]:
    """Head and foot lengths of an encoding that may grow: ``marshal`` list or JSON."""
    return (5, 0) if marshalled else (0, 1)


def expand(kept: Grown) -> bytes:
    """The whole encoding a `Grown` stands for (plain bytes, whichever its kind).

    One pass down the chain: each link's body is the first ``keep`` bytes of its
    base's and its gains, so a link's gains are used as far as the link above
    keeps them (``need``: bytes of the body still wanted from here down). Then one
    copy, joining the pieces.
    """
    h, f = _cut(type(kept) is GrownMarshalled)
    pieces: list[bytes | memoryview] = [kept.foot]
    append = pieces.append
    need = sys.maxsize
    node: object = kept
    while isinstance(node, Grown):
        keep = node.keep - h
        if need > keep:
            gained = node.gained
            n = need - keep  # a short slice copied: cheaper than a view to join
            append(gained if n >= len(gained) else gained[:n])
            need = keep
        node = node.base
    whole: bytes = node  # pyright: ignore[reportAssignmentType]
    append(memoryview(whole)[h : min(len(whole) - f, h + need)])
    append(kept.head)
    pieces.reverse()
    return b"".join(pieces)


def grow(blob: bytes, before: tuple[bytes, object] | None) -> object:
    """What a checkpoint keeps for the encoding ``blob``, given the previous version's.

    ``blob``: plain bytes (JSON) or a ``Marshalled`` (the only subclass of bytes the
    saver keeps). ``before``: the whole encoding kept for the channel before (its
    bytes, and its kept form: those bytes themselves, or a `Grown`); None if there
    is none. Returns the kept form of ``before`` if ``blob`` is the same bytes of the
    same kind (one copy for both), a new `Grown` if ``blob`` shares most of its
    bytes with them, from the start, else ``blob`` itself.
    """
    if before is None or not _same_kind(blob, before[1]):
        return blob
    full, kept = before
    if len(blob) == len(full) and blob == full:
        return kept
    link = _link(blob, full, kept) if len(full) >= GROWN_FROM else None
    return blob if link is None else link


def _same_kind(blob: bytes, kept: object) -> bool:
    """Whether ``kept`` is an encoding of the kind ``blob`` is (JSON or ``marshal``)."""
    kind = type(kept)
    if kind is Grown or kind is bytes:
        return type(blob) is bytes
    return (kind is GrownMarshalled or isinstance(kept, bytes)) and type(blob) is not bytes


def _link(blob: bytes, full: bytes, kept: object) -> Grown | None:
    """``blob`` as a link after ``kept`` (whose whole bytes are ``full``), if that pays.

    It pays when ``blob``'s body starts with at least half of ``full``'s and the
    chain is short enough; else None (``blob`` is then kept whole).
    """
    marshalled = type(blob) is not bytes
    if marshalled and (blob[0] & 0x7F != _LIST or full[0] & 0x7F != _LIST):
        return None
    h, f = _cut(marshalled)
    end = len(blob) - f
    keep = _common(blob, full, h, min(len(full) - f, end))
    if 2 * (keep - h) < len(full):
        return None
    gained = blob[keep:end]
    if isinstance(kept, Grown):
        depth, gain, root = kept.depth + 1, kept.gain + len(gained), kept.root
    else:
        depth, gain, root = 1, len(gained), len(full)
    if depth > CHAIN_MAX or gain > GAIN_MAX * root:
        return None  # a whole copy: the chain after it starts from this one
    made = GrownMarshalled if marshalled else Grown
    return made(kept, blob[:h], keep, gained, blob[end:], depth, gain, root)


_SPAN = 1024
"""The first stretch before the end where `_common` looks for a difference."""


def _common(blob: bytes, full: bytes, start: int, stop: int) -> int:
    """The end of what ``blob`` and ``full`` share from ``start`` (at most ``stop``).

    Compared in C (``startswith`` on a view: ``memcmp``): the whole stretch first
    (an append: one comparison), then stretches ending ever further before
    ``stop``, then a binary search in the last one that differed. A ``marshal``
    list that grew differs near its end (``FLAG_REF`` bits follow reference counts
    of its newest items), so this is ~3 comparisons of the whole and a few small.
    """
    view = memoryview(full)
    if stop <= start or blob.startswith(view[start:stop], start):
        return max(stop, start)
    hi, span = stop, _SPAN
    lo = stop - span
    while lo > start and not blob.startswith(view[start:lo], start):
        hi, span = lo, span * 4
        lo = stop - span
    lo = max(lo, start)  # blob[start:lo] == full[start:lo]; they differ before hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if blob.startswith(view[lo:mid], lo):
            lo = mid
        else:
            hi = mid
    return lo
