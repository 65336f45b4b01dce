"""Schema version 10: a step's write stored as a reference to the value row holding its bytes.

A node that appends to a message list writes the new messages (a pending write), and
the checkpoint stored after the step holds the list with them: its value row
(``_sql_values``) is a delta inserting the same bytes. A node that returns a 50 MB
value writes it, and the checkpoint's full value row holds the same 50 MB. Both were
stored twice. Now, when a write and the checkpoint after it are stored in one commit
(``put_after_writes``: the engine's save of a step's last writes with its checkpoint),
a write whose encoding is, byte for byte, the value's whole encoding or a stretch of
the bytes its delta inserts (``[`` and ``]`` around them, for a list) is stored as a
*reference*: its ``type`` is `REF` and its cell (deflated or sealed as any write's,
bound to the write's slot) holds the text ``"<version> <from> <to> <wrap> <digest>"``:
the value row's version (same thread, namespace and channel as the write); where the
write's bytes are in that version's encoding ``e``, counted back from its end:
``e[len(e) - from : len(e) - to]`` (an append is near the end: small numbers); ``l``
if they are wrapped in ``[]`` (else ``-``); and the xxh32 of the write's encoding
(8 hex digits), checked when it is read. The row's ``task_path`` is empty (only a
special write's path is ever read).

Decided by the bytes alone, after both are encoded; nothing is trusted: a delta whose
base was gone is stored as a full value under the same version, and a reference to
it reads the stretch from the joined value instead of the delta row alone. The value
row is written before the write (same transaction), so a reference never names a
row that is not there; ``prune`` keeps every row a remaining write references, with
its chain (``_sql_prune.collect_unreferenced_flow``); ``copy_thread``, ``delete_thread``
and ``rekey`` move, delete and re-seal the write's cell as any other. docs/format.md
describes the rows.

Since schema version 12 a framed write (large bytes, `REFERABLE`) may be a reference
too: to the framed value row holding the same encoding, whole (a node returning a
50 MB file stores it once, not twice). Its bytes say which form it is when read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from xxhash import xxh32_hexdigest

from pausepoint.checkpoint._dialect import Dialect, Flow, Row, Rows, Statement
from pausepoint.checkpoint._packing import PACK_BELOW
from pausepoint.checkpoint._sealing import write_binding
from pausepoint.checkpoint._shape import decoded as named
from pausepoint.checkpoint._sql_values import (
    DELTA,
    Appended,
    fetch_statement,
    joined,
    kind_of,
    opened,
)
from pausepoint.errors import CheckpointDecodeError
from pausepoint.serde import FORMAT, FRAMED

if TYPE_CHECKING:
    from pausepoint.checkpoint._sql_codec import SqlCodec

__all__ = [
    "REF",
    "REFERABLE",
    "REF_FROM",
    "Appended",
    "Reference",
    "refer",
    "reference_of",
    "resolve_flow",
]

REF = "ppref/1"
"""The ``type`` of a write stored as a reference to a value row."""
REFERABLE = (FORMAT, FRAMED)
"""The types of the writes that may be stored as references (`refer`)."""
REF_FROM = 256
"""Writes whose encoding is shorter than this are stored as they are (a reference
costs ~55 bytes)."""

_EXACT = """SELECT channel, version, type, value, base FROM pausepoint_blobs
    WHERE thread_id = ? AND checkpoint_ns = ? AND ({keys})"""
_ONE = "(channel = ? AND version = ?)"


@dataclass(frozen=True, slots=True)
class Reference:
    """Where a write's encoding is, as its row stores it (`text`).

    ``version``'s encoding ``e``, ``e[len(e) - back : len(e) - to]``, in ``[]`` when
    ``wrapped``; ``digest``: the write's xxh32 (8 hex digits).
    """

    version: str
    back: int
    to: int
    wrapped: bool
    digest: str

    def text(self) -> bytes:
        wrap = "l" if self.wrapped else "-"
        return f"{self.version} {self.back} {self.to} {wrap} {self.digest}".encode("ascii")


def _reference(blob: bytes, value: Appended) -> Reference | None:
    """The reference storing the write ``blob`` by the value row ``value``, if any."""
    whole = value.blob
    size = len(whole)
    if blob is whole or (len(blob) == size and blob == whole):
        return Reference(value.version, size, 0, False, xxh32_hexdigest(blob))
    if value.at is None or len(blob) >= size:
        return None  # a full row: only the whole value is there as it is
    wrapped = blob[:1] == b"[" and blob[-1:] == b"]"
    for inner, wrap in ((blob[1:-1], True), (blob, False)) if wrapped else ((blob, False),):
        start = whole.find(inner, value.at, size - 1)  # in what the delta inserts
        if start >= 0 and inner:
            back, to = size - start, size - start - len(inner)
            return Reference(value.version, back, to, wrap, xxh32_hexdigest(blob))
    return None


def refer(
    codec: SqlCodec, rows: list[Row], plain: Mapping[int, bytes], stored: Mapping[str, Appended]
) -> list[Row]:
    """``rows`` (``_sql._write_rows``) as stored: a write a value row holds as a reference.

    ``plain``: the rows left encoded (not yet deflated or sealed), by ``id(row)``;
    ``stored``: the values the checkpoint after them stored in rows, by channel. The
    others of ``plain`` are deflated or sealed here, as ``_write_rows`` does.
    """
    if not plain:
        return rows
    out: list[Row] = []
    for row in rows:
        blob = plain.get(id(row))
        if blob is None:
            out.append(row)
            continue
        value = stored.get(row[5])
        ref = None if value is None else _reference(blob, value)
        thread, ns, cid, task_id, idx, channel = row[:6]
        aad = b""
        if codec.sealer is not None:
            aad = write_binding(thread, ns, cid, task_id, idx, channel)
        if ref is None:
            out.append((*row[:7], codec.sealed(blob, aad), row[8]))
            continue
        cell = codec.sealed(ref.text(), aad)
        if codec.sealer is None and len(blob) < PACK_BELOW:
            packed = codec.sealed(blob, aad)  # a write that deflates well may be shorter
            if len(packed) <= len(cell):
                out.append((*row[:7], packed, row[8]))
                continue
        out.append((*row[:6], REF, cell, ""))  # no task path: only special writes' is read
    return out


def reference_of(
    codec: SqlCodec, thread: str, ns: str, cid: str, write: Sequence[Any]
) -> Reference:
    """The reference stored in a write row (``task_id, channel, type, value, idx``)."""
    task_id, channel, _, cell, idx = write
    what = f"write {idx} of task {task_id!r}"
    if not isinstance(cell, bytes | memoryview):
        raise CheckpointDecodeError(f"{what} is stored as {type(cell).__name__}, not as bytes")
    aad = b""
    if codec.sealer is not None:
        aad = write_binding(thread, ns, cid, task_id, idx, channel)
    data = codec.opened(bytes(cast("bytes", cell)), aad, what)
    try:
        version, back, to, wrap, digest = data.decode("ascii").rsplit(" ", 4)
        ref = Reference(version, int(back), int(to), wrap == "l", digest)
    except (UnicodeDecodeError, ValueError):
        raise CheckpointDecodeError(f"{what}: its reference is malformed") from None
    if not 0 <= ref.to <= ref.back or wrap not in ("l", "-") or len(digest) != 8:
        raise CheckpointDecodeError(f"{what}: its reference is malformed")
    return ref


def resolve_flow(dialect: Dialect, codec: SqlCodec, row: Row, writes: Rows) -> Flow[dict[int, Any]]:
    """The values of the writes of ``writes`` stored as references, by position.

    ``row``: the checkpoint's (thread, namespace and id first): errors name it
    (``_shape.decoded``). One statement reads the value rows named (a delta row holds
    the bytes); a value that must be joined (a full row, a chain) takes one more.
    """
    refs = named(row, lambda: _references(codec, row, writes))
    if not refs:
        return {}
    thread, ns = str(row[0]), str(row[1])
    key = (thread, ns)
    whole: dict[tuple[str, str], bytes] = {}
    for channel, version in {(c, r.version) for c, r in refs.values()}:
        held = codec.chains.held(key, {channel: version})
        if channel in held:
            whole[(channel, version)] = held[channel]
    rows: dict[tuple[str, str], tuple[Any, Any, Any]] = {}
    if missing := sorted({(c, r.version) for c, r in refs.values()} - whole.keys()):
        sql = _EXACT.format(keys=" OR ".join([_ONE] * len(missing)))
        params = [thread, ns, *[v for pair in missing for v in pair]]
        fetched = yield Statement(dialect.sql(sql), params, fetch=True)
        rows = {(str(r[0]), str(r[1])): (r[2], r[3], r[4]) for r in fetched}
    pieces: dict[int, bytes | None] = {
        n: named(row, lambda c=channel, r=ref: _piece(codec, key, c, r, whole, rows))
        for n, (channel, ref) in refs.items()
    }
    for channel, version in sorted(
        {(c, r.version) for n, (c, r) in refs.items() if pieces[n] is None}
    ):
        fetched = yield fetch_statement(dialect, thread, ns, {channel: version})
        chain = {r[1]: r for r in fetched}
        whole[(channel, version)] = named(
            row, lambda c=channel, v=version, rs=chain: joined(codec, key, rs, c, v)[0]
        )
    return {
        n: named(
            row,
            lambda p=pieces[n], c=channel, r=ref, w=writes[n]: _checked(
                codec, p if p is not None else _sliced(whole[(c, r.version)], c, r), r, w
            ),
        )
        for n, (channel, ref) in refs.items()
    }


def _references(codec: SqlCodec, row: Row, writes: Rows) -> dict[int, tuple[str, Reference]]:
    """The writes stored as references, by position: each one's channel and reference."""
    thread, ns, cid = str(row[0]), str(row[1]), str(row[2])
    return {
        n: (str(write[1]), reference_of(codec, thread, ns, cid, write))
        for n, write in enumerate(writes)
        if write[2] == REF
    }


def _sliced(blob: bytes, channel: str, ref: Reference) -> bytes:
    """The stretch of the encoding ``blob`` that ``ref`` names."""
    if len(blob) < ref.back:
        raise CheckpointDecodeError(
            f"channel {channel!r}: stored value {ref.version!r} is shorter than a write references"
        )
    return blob[len(blob) - ref.back : len(blob) - ref.to]


def _piece(
    codec: SqlCodec,
    key: tuple[str, str],
    channel: str,
    ref: Reference,
    whole: dict[tuple[str, str], bytes],
    rows: Mapping[tuple[str, str], tuple[Any, Any, Any]],
) -> bytes | None:
    """The stretch ``ref`` names; None if the value must be joined first."""
    version = ref.version
    blob = whole.get((channel, version))
    if blob is None:
        row = rows.get((channel, version))
        if row is None:
            raise CheckpointDecodeError(
                f"channel {channel!r}: stored value {version!r}, which a write references, "
                "is missing from pausepoint_blobs"
            )
        type_, value, base = row
        if base is not None:
            if type_ != DELTA:
                raise CheckpointDecodeError(
                    f"channel {channel!r}: stored value {version!r} has an unknown type {type_!r}"
                )
            delta, _ = opened(codec, key, channel, version, value, base)
            # The delta's bytes end one byte before the encoding's (its closing one).
            if ref.to < 1 or ref.back > len(delta) + 1:
                return None
            return delta[len(delta) + 1 - ref.back : len(delta) + 1 - ref.to]
        if type_ not in REFERABLE:
            raise CheckpointDecodeError(
                f"channel {channel!r}: stored value {version!r} has type {type_!r}"
            )
        blob, _ = opened(codec, key, channel, version, value, None)
        whole[(channel, version)] = blob
    return _sliced(blob, channel, ref)


def _checked(codec: SqlCodec, piece: bytes, ref: Reference, write: Sequence[Any]) -> Any:
    """The write's value: ``piece`` (wrapped as ``ref`` says), checked by its digest."""
    blob = b"[" + piece + b"]" if ref.wrapped else bytes(piece)
    if xxh32_hexdigest(blob) != ref.digest:
        raise CheckpointDecodeError(
            f"write {write[4]} of task {write[0]!r} does not match its digest "
            "(a row of pausepoint_blobs or pausepoint_writes is damaged)"
        )
    return codec.decode(kind_of(blob), blob)
