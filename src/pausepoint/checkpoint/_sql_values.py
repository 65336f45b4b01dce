"""Schema version 7: large channel values stored apart, once per version, appends as deltas.

A checkpoint row used to hold every channel value, so a thread whose message list
grows by one message a step stored the whole list again at every step (O(N²) bytes).
Now a *large* value of a state channel (its encoding at least `MOVE_FROM` bytes) is a
row of ``pausepoint_blobs``, keyed by ``(thread_id, checkpoint_ns, channel, version)``,
and the checkpoint holds its key: a value that did not change is the same row, written
once. The version text is ``"<channel version>:<digest of the encoding>"``, so a row
always holds one content (a value changed without a new version, as a declared
migration may do, gets a row of its own). The digest is xxh3-64 (16 hex digits) since
schema version 11, xxh3-128 (32) before; a saver that seals names rows by a keyed
digest instead (its rows are authenticated, so it checks none).

A value whose encoding extends the one stored last for the channel (the same bytes,
more of them before the closing one: a list that was appended to, a string that
grew) is stored as a *delta*: the bytes inserted, and the version it extends
(``base``). Reading fetches the rows of the chain's full value (its ``anchor``, one
statement), follows the bases back from the version wanted and joins the bytes:
``full[:-1] + deltas + full[-1:]``, checks them against the version's digest, then
decodes once. A full value is written again when the deltas since the last one add up
to `FULL_AFTER` (3) times its size, or after `MAX_DEPTH` of them, so reading any value
reads at most about four times its size.

Which encoding was stored last is remembered by the saver (`Chains`, per process,
bounded); it is a hint, never trusted: a delta row is inserted only if its base row
exists, in the same statement, and otherwise the full value is. The last encodings
themselves are held too (`HELD` bytes at most): a read of a version held (the digest
names its content) joins nothing, and a write compares its new encoding with the held
one; so are the rows of the chains read last (`ROWS_HELD`): an older version of the
same chain (a history, newest first) is joined without reading them again. Nothing
here depends on the engine telling the saver what changed: the bytes decide. Rows no
checkpoint needs any more are deleted by ``prune``
(``_sql_prune.collect_unreferenced_flow``). docs/format.md describes the rows.

Since schema version 12 a *framed* value (large bytes, `pausepoint.serde.frames`) gets
a row too, of type `FRAMED`: always a full value, never a delta nor the base of one
(its header holds its ranges' lengths, so no encoding extends another), read by its
row's type; the checkpoint then references it as any other and stays small.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

from xxhash import xxh3_64_hexdigest, xxh3_128_hexdigest, xxh3_128_intdigest

from pausepoint.checkpoint._dialect import Dialect, Flow, Row, Rows, Statement
from pausepoint.checkpoint._packing import PACK_BELOW, unpack
from pausepoint.checkpoint._reuse import Found, reused
from pausepoint.checkpoint._sealing import MARK, value_binding
from pausepoint.checkpoint._shape import decoded
from pausepoint.errors import CheckpointDecodeError
from pausepoint.serde import FORMAT, FRAMED, Serializer
from pausepoint.serde.frames import MAGIC

if TYPE_CHECKING:
    from pausepoint.checkpoint._sql_codec import SqlCodec

__all__ = [
    "FULL_AFTER",
    "MAX_DEPTH",
    "HELD",
    "MOVE_FROM",
    "REFS",
    "REFS_MARK",
    "DELTA",
    "Appended",
    "Chains",
    "Unless",
    "each",
    "fetch_statement",
    "fill",
    "fill_flow",
    "joined",
    "kind_of",
    "opened",
    "refs_of",
    "split",
]

MOVE_FROM = 4096
"""A channel value whose encoding is at least this long is stored in its own row."""
MAX_DEPTH = 1000
"""Deltas in a row at most before a full value is stored again."""
FULL_AFTER = 3
"""A full value is stored again once the deltas since the last one would add up to this
many times its size. Full copies then grow fourfold, so together they take about 4/3 of
the newest one (with twice, as before: 3/2), and a read of one chain fetches at most
four times its full value; a long chat's cold read had the instructions to spare
(benchmarks/README.md, "Full copies at four times the last")."""
REFS = "refs"
"""The stored checkpoint's key listing the channels whose value is a row's version."""
REFS_MARK = b'"refs":'
"""Bytes every stored checkpoint with references contains (its JSON key): the GC
decodes only those."""
DELTA = "delta"
"""The ``type`` of a delta row."""
_CHAINS = 4096
"""Channels whose last stored encoding a saver remembers (least recently used go)."""
HELD = 64 * 1024 * 1024
"""Bytes of encodings a saver keeps in memory at most (`Chains`)."""
ROWS_HELD = 16 * 1024 * 1024
"""Bytes of value rows a saver keeps in memory at most (`Chains.rows`): the rows of
the chains it read last, from which it joins an older version of the same chain (a
history, newest first) without reading them again."""

_COLUMNS = "thread_id, checkpoint_ns, channel, version, type, value, base, anchor"
_INSERT_FULL = (
    f"INSERT INTO pausepoint_blobs ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, NULL, ?) "
    "ON CONFLICT DO NOTHING"
)
# The delta only if its base is stored; its anchor is the base's (whatever a hint says).
_INSERT_DELTA = f"""INSERT INTO pausepoint_blobs ({_COLUMNS})
    SELECT ?, ?, ?, ?, '{DELTA}', ?, b.version, b.anchor FROM pausepoint_blobs b
    WHERE b.thread_id = ? AND b.checkpoint_ns = ? AND b.channel = ? AND b.version = ?
    ON CONFLICT DO NOTHING"""
_STORED = """SELECT 1 FROM pausepoint_blobs WHERE thread_id = ? AND checkpoint_ns = ?
    AND channel = ? AND version = ?"""
SHIP_FROM = 64 * 1024
"""PostgreSQL: a full value at least this long is sent only if its row is not there
(a round trip to ask costs less than sending it); SQLite's are always given."""
_FETCH = """SELECT channel, version, type, value, base FROM pausepoint_blobs
    WHERE thread_id = ? AND checkpoint_ns = ? AND ({keys})"""
_KEY = """(channel = ? AND anchor = (SELECT a.anchor FROM pausepoint_blobs a
    WHERE a.thread_id = ? AND a.checkpoint_ns = ? AND a.channel = ? AND a.version = ?))"""
"""The rows of the values a checkpoint references: each one's full value and deltas
(and those of other branches from the same full value: a fork's)."""


@dataclass(slots=True)
class _Link:
    """What a saver remembers of the encoding it stored last for one channel."""

    version: str
    size: int
    head: int | None
    """The digest of the encoding without its last byte: taken only when `Chains`
    lets ``blob`` go (while held, a new encoding is compared with it directly)."""
    last: bytes
    depth: int
    """Deltas since the last full value."""
    chain: int
    """Bytes of those deltas."""
    full: int
    """Size of that full value."""
    blob: bytes | None = None
    """The encoding itself, while `Chains` holds it (see `Chains.held`)."""
    stored: bytes | None = None
    """Its full row's cell as last stored (deflated or sealed), held with ``blob`` when
    under `PACK_BELOW`: an unchanged value's row is not deflated or sealed again."""
    framed: bool = False
    """A framed value's (`FRAMED`): never the base of a delta."""


class Chains:
    """The last stored encoding of recently written or read channels, per saver.

    What a saver remembers is a hint for writing (never trusted, see `_store`) and,
    for the `HELD` most recently used bytes, the encoding itself: reading a
    checkpoint whose reference names that version (its digest included) takes it
    from here instead of joining its rows again. A version names one content, so
    what is held is what the rows hold.
    """

    __slots__ = ("_chains", "_chains_held", "_held", "_links", "_lock")

    def __init__(self) -> None:
        self._links: OrderedDict[tuple[str, str, str], _Link] = OrderedDict()
        self._lock = threading.Lock()
        self._held = 0
        self._chains: OrderedDict[tuple[str, str, str], tuple[dict[object, Row], int]]
        self._chains = OrderedDict()
        self._chains_held = 0

    def get(self, key: tuple[str, str, str]) -> _Link | None:
        with self._lock:
            return self._links.get(key)

    def held(self, key: tuple[str, str], refs: Mapping[str, str]) -> dict[str, bytes]:
        """The encodings held of ``refs`` (channel → version) in namespace ``key``."""
        out: dict[str, bytes] = {}
        with self._lock:
            for channel, version in refs.items():
                link = self._links.get((*key, channel))
                if link is not None and link.blob is not None and link.version == version:
                    out[channel] = link.blob
                    self._links.move_to_end((*key, channel))
        return out

    def rows(self, key: tuple[str, str], refs: Mapping[str, str]) -> dict[str, dict[object, Row]]:
        """The rows held of the chains holding ``refs`` (channel → version), by channel.

        Rows name their content (a version's digest), so rows read once join the same
        encodings later, whatever was written or deleted since.
        """
        out: dict[str, dict[object, Row]] = {}
        with self._lock:
            for channel, version in refs.items():
                got = self._chains.get((*key, channel))
                if got is not None and version in got[0]:
                    out[channel] = got[0]
                    self._chains.move_to_end((*key, channel))
        return out

    def keep_rows(self, key: tuple[str, str, str], rows: dict[object, Row]) -> None:
        """Hold the rows of a chain just read (`ROWS_HELD` bytes at most, least recent go)."""
        size = sum(len(row[3]) if type(row[3]) is bytes else 64 for row in rows.values())
        if size > ROWS_HELD // 2:
            return
        with self._lock:
            old = self._chains.pop(key, None)
            if old is not None:
                self._chains_held -= old[1]
            self._chains[key] = (rows, size)
            self._chains_held += size
            while self._chains_held > ROWS_HELD:
                _, (_, gone) = self._chains.popitem(last=False)
                self._chains_held -= gone

    def note(self, key: tuple[str, str, str], link: _Link) -> None:
        with self._lock:
            old = self._links.get(key)
            if old is not None:
                self._held -= _size(old)
            self._links[key] = link
            self._links.move_to_end(key)
            self._held += _size(link)
            if len(self._links) > _CHAINS:
                _, gone = self._links.popitem(last=False)
                self._held -= _size(gone)
            if self._held > HELD:
                self._release()

    def _release(self) -> None:
        """Drop the least recently used encodings until at most `HELD` bytes are held."""
        for link in self._links.values():
            if self._held <= HELD:
                return
            self._held -= _size(link)
            blob = link.blob
            if blob is not None and link.head is None and not link.framed:
                link.head = xxh3_128_intdigest(memoryview(blob)[:-1])
            link.blob = link.stored = None


def _size(link: _Link) -> int:
    """Bytes `Chains` holds for ``link``."""
    blob, stored = link.blob, link.stored
    return (0 if blob is None else len(blob)) + (0 if stored is None else len(stored))


def _movable(channel: str, value: object) -> bool:
    """A state channel's value that may be large: not internal, not a small scalar."""
    if channel.startswith("__") and channel != "__root__":
        return False
    if ":" in channel:  # branch:to:<node>, join:<a>+<b>:<node>
        return False
    kind = type(value)
    if kind is str:
        return len(cast("str", value)) >= MOVE_FROM // 6
    return kind not in (int, float, bool, type(None))


@dataclass(frozen=True, slots=True)
class Appended:
    """A value `split` stored in a row: what a write of the same step may refer to.

    ``at``: where the bytes a delta row inserts start in ``blob`` (None: a full row
    was written, or was there already).
    """

    version: str
    blob: bytes
    at: int | None


def split(
    codec: SqlCodec,
    chains: Chains,
    dialect: Dialect,
    thread: str,
    ns: str,
    checkpoint: Mapping[str, Any],
    found: Found | None,
    appended: dict[str, Appended] | None = None,
) -> tuple[Mapping[str, Any], list[Statement | Unless]]:
    """The checkpoint to store in its row, and the statements storing its large values.

    The statements go before the checkpoint's row (a crash between them leaves rows no
    checkpoint references, never a checkpoint missing one). A serializer other than
    pausepoint's, or a checkpoint with no large state value, is stored whole, as before.
    ``appended``: gets each value stored in a row, by channel (`_write_refs`).
    """
    values = checkpoint.get("channel_values")
    if not isinstance(codec.serde, Serializer) or type(values) is not dict:
        return checkpoint, []
    versions = cast("Mapping[str, object]", checkpoint.get("channel_versions") or {})
    channels = cast("dict[str, object]", values)
    moved: dict[str, str] = {}
    statements: list[Statement | Unless] = []
    for channel, value in channels.items():
        if not _movable(channel, value):
            continue
        blob = reused(found, value) if found else None
        type_ = FORMAT
        if blob is None:  # framed (large bytes) too: a full row of its own (schema 12)
            type_, blob = codec.dump(value, f"channel {channel!r}")
        if len(blob) < MOVE_FROM:
            continue
        digest = xxh3_64_hexdigest(blob) if codec.sealer is None else codec.sealer.digest(blob)
        version = f"{versions.get(channel, '')}:{digest}"
        made, at = _store(codec, dialect, (thread, ns, channel), version, blob, type_)
        statements.extend(made)
        moved[channel] = version
        if appended is not None:
            appended[channel] = Appended(version, blob, at)
    if not moved:
        return checkpoint, []
    stored = dict(checkpoint)
    stored["channel_values"] = {**channels, **moved}
    stored[REFS] = list(moved)
    return stored, statements


@dataclass(frozen=True, slots=True)
class Unless:
    """Run ``otherwise`` unless ``first`` returns a row (``each`` runs it).

    ``otherwise`` may be a function making the statement: called only when it runs
    (a full value deflated or sealed only when it is stored).
    """

    first: Statement
    otherwise: Statement | Callable[[], Statement]


def _store(
    codec: SqlCodec,
    dialect: Dialect,
    key: tuple[str, str, str],
    version: str,
    blob: bytes,
    type_: str = FORMAT,
) -> tuple[list[Statement | Unless], int | None]:
    """The statements storing ``blob`` (of ``type_``) as ``version``: a delta when it may be one.

    And where the delta's bytes start in ``blob`` (None: no delta).
    Sealed (when the saver encrypts), each row is bound to its key and its base: a
    delta opens only as the delta of that base.
    """
    chains = codec.chains
    link = chains.get(key)

    def full(cell: bytes | None = None) -> Statement:
        if cell is None:
            cell = codec.sealed(blob, value_binding(*key, version, None))
        return Statement(dialect.sql(_INSERT_FULL), (*key, version, type_, cell, version))

    framed = type_ == FRAMED
    if link is None or link.version == version:
        # Unchanged (or not known): the full row, ignored if it is there. Never trusted
        # to be there: the thread may have been deleted since, by any process.
        if dialect.name == "postgres" and len(blob) >= SHIP_FROM:
            if link is None:
                size = len(blob)
                link = _Link(version, size, None, blob[-1:], 0, 0, size, blob, None, framed)
                chains.note(key, link)
            stored = Statement(dialect.sql(_STORED), (*key, version), fetch=True)
            return [Unless(stored, full)], None
        cell = link.stored if link is not None else None
        statement = full(cell)
        if link is None or (cell is None and link.blob is not None):
            kept: bytes | None = statement.params[4] if len(blob) < PACK_BELOW else None
            if link is None:
                size = len(blob)
                link = _Link(version, size, None, blob[-1:], 0, 0, size, blob, kept, framed)
            else:
                link = replace(link, stored=kept)
            chains.note(key, link)
        return [statement], None
    base = link.size - 1
    delta = len(blob) - link.size
    extends = (
        not framed
        and not link.framed
        and delta > 0
        and blob[-1:] == link.last
        and link.depth < MAX_DEPTH
        and link.chain + delta < FULL_AFTER * link.full
        and _extends(link, blob, base)
    )
    if not extends:
        statement = full()
        kept = statement.params[4] if len(blob) < PACK_BELOW else None
        size = len(blob)
        chains.note(key, _Link(version, size, None, blob[-1:], 0, 0, size, blob, kept, framed))
        return [statement], None
    depth, chain = link.depth + 1, link.chain + delta
    chains.note(key, _Link(version, len(blob), None, blob[-1:], depth, chain, link.full, blob))
    aad = value_binding(*key, version, link.version)
    inserted = codec.sealed(blob[base:-1], aad, deflate=False)  # read by the hundred
    delta_params = (*key, version, inserted, *key, link.version)
    if dialect.returning:  # the full value only if the delta was not stored
        returning = dialect.sql(_INSERT_DELTA + " RETURNING 1")
        return [Unless(Statement(returning, delta_params, fetch=True), full)], base
    return [Statement(dialect.sql(_INSERT_DELTA), delta_params), full()], base


def _extends(link: _Link, blob: bytes, base: int) -> bool:
    """Whether ``blob`` starts with the ``base`` bytes of the encoding ``link`` stored."""
    held = link.blob
    if held is not None:
        return blob.startswith(memoryview(held)[:-1])
    return link.head is not None and xxh3_128_intdigest(memoryview(blob)[:base]) == link.head


def each(statements: list[Statement | Unless]) -> Flow[None]:
    """A flow running ``statements`` (a list cannot be delegated to: rows are sent)."""
    for statement in statements:
        if isinstance(statement, Unless):
            if not (yield statement.first):
                otherwise = statement.otherwise
                yield otherwise if isinstance(otherwise, Statement) else otherwise()
        else:
            _ = yield statement  # the rows sent back are not needed


def fetch_statement(dialect: Dialect, thread: str, ns: str, refs: Mapping[str, str]) -> Statement:
    """The statement reading the rows of ``refs`` (channel → version): each one's chain."""
    keys = " OR ".join([_KEY] * len(refs))
    params = [thread, ns]
    for channel, version in refs.items():
        params += (channel, thread, ns, channel, version)
    return Statement(dialect.sql(_FETCH.format(keys=keys)), params, fetch=True)


def refs_of(checkpoint: object) -> dict[str, str] | None:
    """The stored checkpoint's references (channel → version), None if it has none."""
    if type(checkpoint) is not dict:
        return None
    stored = cast("dict[str, Any]", checkpoint)
    names = stored.get(REFS)
    if names is None:
        return None
    values = stored.get("channel_values")
    if type(names) is not list or type(values) is not dict:
        raise CheckpointDecodeError("the checkpoint's value references are malformed")
    refs: dict[str, str] = {}
    for name in cast("list[object]", names):
        version = cast("dict[object, object]", values).get(name)
        if type(name) is not str or type(version) is not str:
            raise CheckpointDecodeError("the checkpoint's value references are malformed")
        refs[name] = version
    return refs


def fill_flow(
    dialect: Dialect, codec: SqlCodec, row: Row, checkpoint: dict[str, Any], refs: Mapping[str, str]
) -> Flow[None]:
    """Put the values ``refs`` names into ``checkpoint`` (the stored one of ``row``).

    From the encodings `Chains` holds, or joined from the rows it holds, or from the
    rows read (one statement for the rest). Errors name the checkpoint.
    """
    key = (str(row[0]), str(row[1]))
    chains = codec.chains
    held = chains.held(key, refs)  # encodings this saver wrote or read last
    kept = chains.rows(key, {c: v for c, v in refs.items() if c not in held})
    missing = {c: v for c, v in refs.items() if c not in held and c not in kept}
    rows = (yield fetch_statement(dialect, row[0], row[1], missing)) if missing else []
    decoded(row, lambda: fill(codec, chains, key, checkpoint, refs, rows, held, kept))


def fill(
    codec: SqlCodec,
    chains: Chains,
    key: tuple[str, str],
    checkpoint: dict[str, Any],
    refs: Mapping[str, str],
    rows: Rows,
    held: Mapping[str, bytes],
    kept: Mapping[str, dict[object, Row]],
) -> None:
    """Put the referenced values into ``checkpoint`` (decoded from ``rows``), in place.

    ``held``: the encodings `Chains.held` had, ``kept``: the chains' rows `Chains.rows`
    had (neither was read). A row of the wrong shape fails here as
    ``CheckpointDecodeError``, or as the ``TypeError`` of joining what is not bytes
    (the caller names the checkpoint).
    """
    values = cast("dict[str, object]", checkpoint["channel_values"])
    for channel, version in refs.items():
        blob = held.get(channel)
        if blob is not None:
            values[channel] = codec.decode(kind_of(blob), blob)
            continue
        chain_rows = kept.get(channel)
        read = chain_rows is None
        if chain_rows is None:
            chain_rows = {row[1]: row for row in rows if row[0] == channel}
        blob, depth, chain, sealed, type_ = joined(codec, key, chain_rows, channel, version)
        if not sealed and not _named_by(blob, version.rpartition(":")[2]):
            raise CheckpointDecodeError(
                f"channel {channel!r}: stored value {version!r} does not match its digest "
                "(a row of pausepoint_blobs is damaged)"
            )
        values[channel] = codec.decode(type_, blob)  # the row's type: refused if not its form
        full = len(blob) - chain
        framed = type_ == FRAMED
        link = _Link(version, len(blob), None, blob[-1:], depth, chain, full, blob, None, framed)
        chains.note((*key, channel), link)
        if read:
            chains.keep_rows((*key, channel), chain_rows)
    del checkpoint[REFS]


def kind_of(blob: bytes) -> str:
    """The type of an encoding held or sliced (not read from its row): as ``SqlCodec.dump``."""
    return FRAMED if blob[:4] == MAGIC else FORMAT


def _named_by(blob: bytes, digest: str) -> bool:
    """Whether ``digest`` (a row version's last part) is ``blob``'s: xxh3-64, or -128 before."""
    if len(digest) == 16:
        return xxh3_64_hexdigest(blob) == digest
    return len(digest) == 32 and xxh3_128_hexdigest(blob) == digest


def opened(
    codec: SqlCodec, key: tuple[str, str], channel: str, at: object, value: Any, base: Any
) -> tuple[bytes, bool]:
    """A row's bytes, opened if sealed; and whether they were (authenticated: no digest)."""
    data = value if type(value) is bytes else bytes(value)
    what = f"stored value {at!r} of channel {channel!r}"
    if codec.sealer is None and data[:4] != MARK:
        return unpack(data, what), False  # the common case: no binding to build
    aad = value_binding(*key, channel, str(at), None if base is None else str(base))
    return codec.opened(data, aad, what), data[:4] == MARK


def joined(
    codec: SqlCodec, key: tuple[str, str], rows: Mapping[object, Row], channel: str, version: str
) -> tuple[bytes, int, int, bool, str]:
    """The encoding of ``version``: its full value's bytes with the deltas since joined.

    ``rows``: the channel's rows as `fetch_statement` reads them (``channel, version,
    type, value, base``), by version. Then the deltas joined and their bytes; whether
    every row was sealed (each opened in its own slot, so the join is authentic without
    the digest, which a sealing saver keys); the full row's type (`FRAMED` only alone).
    """
    deltas: list[Any] = []
    sealed = True
    plain = codec.sealer is None
    get = rows.get
    at: object = version
    for _ in range(MAX_DEPTH + 2):
        row = get(at)
        if row is None:
            raise CheckpointDecodeError(
                f"channel {channel!r}: stored value {at!r} is missing from pausepoint_blobs"
            )
        _, _, type_, value, base = row
        if base is None:
            if type_ not in (FORMAT, FRAMED) or not value or (type_ == FRAMED and deltas):
                raise CheckpointDecodeError(
                    f"channel {channel!r}: stored value {at!r} has type {type_!r} or is empty"
                )
            full, was_sealed = opened(codec, key, channel, at, value, None)
            sealed = sealed and was_sealed
            if not deltas:
                return full, 0, 0, sealed, type_
            deltas.reverse()
            chain = sum(map(len, deltas))
            joined = b"".join((memoryview(full)[:-1], *deltas, full[-1:]))
            return joined, len(deltas), chain, sealed, FORMAT
        if type_ != DELTA:
            raise CheckpointDecodeError(
                f"channel {channel!r}: stored value {at!r} has an unknown type {type_!r}"
            )
        if plain and type(value) is bytes and value[:1] != b"\x00":
            deltas.append(value)  # neither sealed nor deflated: read by the hundred
            sealed = False
        else:
            delta, was_sealed = opened(codec, key, channel, at, value, base)
            sealed = sealed and was_sealed
            deltas.append(delta)
        at = base
    raise CheckpointDecodeError(f"channel {channel!r}: stored value {version!r} has no full value")
