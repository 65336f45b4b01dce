"""Large bytes stored raw after the JSON: the framed form of a payload.

A file's contents in base64 inside JSON costs a third more space, an encoding pass
when written and, when read, a scan of the whole JSON string, a check and a decoding
pass (50 MB of bytes: 3.5x LangGraph's write time and 5.6x its read time on SQLite,
benchmarks/README.md run K). So a value holding bytes of at least `BLOB_FROM` is
written *framed*: the JSON text, where each such bytes value is a small tagged node
naming a range, followed by the bytes themselves, as they are::

    MAGIC  (4 bytes: NUL "pp" 0x01)
    length of the JSON text (8 bytes, big-endian)
    JSON text, ASCII; a large bytes value is {"__pp__": "blob", "v": [offset, length]}
        (``"blobarray"`` for a bytearray), offsets counted from the first byte after it
    the bytes, one range after another

No JSON text starts with NUL, so the first byte tells the two forms apart, and rows
written before this form existed read as before. Savers store framed payloads under
the type `FRAMED` rather than ``"ppjson/1"``, so a reader that knows only the JSON
form refuses them by type, not with a JSON error. Reading checks the header and every
range against the payload's size before slicing: a truncated or crafted payload
fails with `CheckpointDecodeError`.

While a value is encoded, its ranges are collected by an encoder made for that value
(`pausepoint.serde.encoder.Encoder`), and only when it holds large bytes; while one is
decoded, its tail is in a context variable: one `Serializer` serves threads and
asyncio tasks at once.
"""

from __future__ import annotations

import contextvars
from collections.abc import Generator
from contextlib import contextmanager
from typing import TYPE_CHECKING, cast

from pausepoint.errors import CheckpointDecodeError

if TYPE_CHECKING:
    from pausepoint.serde.plain import Json

__all__ = [
    "BLOB_FROM",
    "FRAMED",
    "MAGIC",
    "Ranges",
    "frame",
    "is_framed",
    "read_blob",
    "reading",
    "unframe",
]

MAGIC = b"\x00pp\x01"
"""The first bytes of a framed payload (a NUL: no JSON text starts with one)."""

FRAMED = "ppjson+blobs/1"
"""The type string savers store framed payloads under (JSON ones: ``"ppjson/1"``)."""

BLOB_FROM = 64 * 1024
"""Bytes values at least this long are stored raw after the JSON; smaller ones in base64."""

_HEADER = len(MAGIC) + 8
_KINDS = {"blob": bytes, "blobarray": bytearray}


class Ranges:
    """The bytes values set aside while one payload is encoded, in order."""

    __slots__ = ("parts", "size")

    def __init__(self) -> None:
        self.parts: list[bytes | bytearray] = []
        self.size = 0

    def add(self, data: bytes | bytearray) -> list[Json]:
        """Set ``data`` aside; its ``[offset, length]`` in the payload's tail."""
        where: list[Json] = [self.size, len(data)]
        self.parts.append(data)
        self.size += len(data)
        return where


_READING: contextvars.ContextVar[memoryview | None] = contextvars.ContextVar(
    "pausepoint_blob_tail", default=None
)


def frame(text: bytes, ranges: Ranges) -> bytes:
    """The framed payload: header, ``text``, then the bytes ``ranges`` set aside."""
    return b"".join((MAGIC, len(text).to_bytes(8, "big"), text, *ranges.parts))


def is_framed(data: bytes | bytearray | memoryview) -> bool:
    """Whether ``data`` starts as a framed payload does."""
    return data[: len(MAGIC)] == MAGIC


def unframe(data: bytes) -> tuple[str, memoryview]:
    """The JSON text of a framed payload and its tail (the bytes the ranges point into).

    Raises:
        CheckpointDecodeError: The header is cut short or its length runs past the end.
    """
    if len(data) < _HEADER or not is_framed(data):
        raise CheckpointDecodeError("a framed payload is cut short before its header ends")
    size = int.from_bytes(data[len(MAGIC) : _HEADER], "big")
    if size > len(data) - _HEADER:
        raise CheckpointDecodeError(
            f"a framed payload declares {size} bytes of JSON but holds "
            f"{len(data) - _HEADER}; it is truncated or corrupt"
        )
    view = memoryview(data)
    text = bytes(view[_HEADER : _HEADER + size]).decode("ascii")
    return text, view[_HEADER + size :]


@contextmanager
def reading(tail: memoryview) -> Generator[None]:
    """Decode with blob nodes read from ``tail`` (see `read_blob`)."""
    token = _READING.set(tail)
    try:
        yield
    finally:
        _READING.reset(token)


def _range(tag: str, where: object) -> tuple[int, int]:
    if type(where) is list and len(cast(list[object], where)) == 2:
        offset, length = cast(list[object], where)
        if type(offset) is int and type(length) is int and offset >= 0 and length >= 0:
            return offset, length
    raise CheckpointDecodeError(f"a {tag!r} node's range {where!r} is not [offset, length]")


def read_blob(tag: str, where: object) -> bytes | bytearray:
    """The bytes a ``blob``/``blobarray`` node names, checked against the payload's tail.

    Raises:
        CheckpointDecodeError: Outside a framed payload, or a range that is not two
            non-negative ints inside the tail.
    """
    tail = _READING.get()
    if tail is None:
        raise CheckpointDecodeError(f"a {tag!r} node outside a framed payload")
    offset, length = _range(tag, where)
    if offset + length > len(tail):
        raise CheckpointDecodeError(
            f"a {tag!r} node's range [{offset}, {length}] runs past the payload's "
            f"{len(tail)} bytes; it is truncated or corrupt"
        )
    return _KINDS[tag](tail[offset : offset + length])
