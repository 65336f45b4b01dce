"""Schema version 9: small encodings stored deflated, marked by `PACKED`.

What a chat turn stores is mostly small rows: two checkpoints' JSON (versions,
``versions_seen``, the graph stamp, value references: ~660 bytes each) and the tasks'
pending writes (the messages again, the answer, the question). SQLite stores them as
they are, and PostgreSQL compresses a value only from ~2 KB on (TOAST), so none of
them was compressed. Now such an encoding, shorter than `PACK_BELOW`, is stored as
`PACKED` followed by its raw deflate (zlib, stdlib) with the preset dictionary
`DICTIONARY` (the format's own keys and names) when that is shorter; anything else,
and every row written before version 9, is stored and read as before.

Not deflated: large encodings (inflating a 1 MB full copy of a list costs a cold read
several milliseconds) and the deltas of a growing value (a cold read of a long chat
joins up to ~300 of them, and each inflate costs ~10 us: the join would cost a third
more instructions; benchmarks/README.md, "Storage growth").

The marker cannot start a row of any other kind: pausepoint's JSON is ASCII, a framed
payload starts with NUL, ``pp``, 1 and a sealed one with NUL, ``pp``, 0xe5. A saver that
encrypts does not deflate what it seals (the length of a compressed ciphertext tells
something of its content); it reads deflated rows, opened first (``pausepoint rekey``
of a database written before encryption). docs/format.md describes the rows.
"""

from __future__ import annotations

import zlib

from pausepoint.errors import CheckpointDecodeError

__all__ = ["DICTIONARY", "PACKED", "PACK_BELOW", "PACK_FROM", "pack", "unpack"]

PACKED = b"\x00ppZ"
"""The first bytes of a deflated encoding (then raw deflate, no header or checksum)."""
PACK_BELOW = 64 * 1024
"""Encodings at least this long are stored as they are (their inflating would cost a
cold read more than their bytes)."""
PACK_FROM = 64
"""Encodings shorter than this are stored as they are (nothing to gain)."""
DICTIONARY = (
    b'{"__pp__":"pydantic","v":["langchain_core.messages.'
    b'{"__pp__":"tuple","v":[{"__pp__":"interrupt","v":["'
    b'"add_messages""operator.add"'
    b'"updated_channels":["branch:to:'
    b'"graph":{"fingerprint":"'
    b'"reducers":{"messages":"'
    b'"refs":["messages"]}'
    b'"__interrupt__":{"__start__":'
    b'"versions_seen":{"__input__":{},"__start__":{"__start__":1},'
    b'"channel_versions":{"__start__":'
    b'+00:00","channel_values":{"messages":"'
    b'[{"role":"assistant","content":"'
    b'[{"role":"user","content":"'
    b'{"v":1,"id":"1f'
    b'","ts":"20'
    b'"branch:to:'
)
"""The preset dictionary of every deflated encoding: the checkpoint's keys, reserved
names and tags, the usual state key of a chat, most used last. Part of the format: a
change needs another marker."""
_LEVEL = 6
_MEM_LEVEL = 4
"""zlib's hash table of 2**(4+7) entries instead of the default 2**15: a small row's
deflate costs half the instructions (~60k instead of ~120k: most went into clearing
the table), and the output is as short (rows of a chat and of short threads, and
10-66 KB lists: within 0.3 %, benchmarks/README.md). The inflater is the same."""
_WBITS = -15
"""Raw deflate: the marker says what it is, the row's decoder checks what it holds."""


def pack(data: bytes) -> bytes:
    """``data`` as stored: deflated behind `PACKED` when it is small and that is shorter.

    Only pausepoint's own encodings (ASCII JSON) are given; one that starts with NUL
    (framed, sealed, already packed) is returned as it is.
    """
    size = len(data)
    if size < PACK_FROM or size >= PACK_BELOW or data[:1] == b"\x00":
        return data
    packer = zlib.compressobj(_LEVEL, zlib.DEFLATED, _WBITS, _MEM_LEVEL, zdict=DICTIONARY)
    packed = packer.compress(data) + packer.flush()
    if len(packed) + len(PACKED) >= size:
        return data
    return PACKED + packed


def unpack(data: bytes, what: str) -> bytes:
    """The encoding stored as ``data``: inflated if `pack` deflated it, else ``data``.

    Raises:
        CheckpointDecodeError: the deflated bytes are damaged, or inflate to more
            than `pack` ever deflates (``what`` names the row's slot).
    """
    if data[:4] != PACKED:
        return data
    unpacker = zlib.decompressobj(_WBITS, zdict=DICTIONARY)
    try:
        out = unpacker.decompress(memoryview(data)[4:], PACK_BELOW)
    except zlib.error as exc:
        raise CheckpointDecodeError(f"{what} is damaged: its deflated bytes ({exc})") from None
    if not unpacker.eof or unpacker.unconsumed_tail or unpacker.unused_data:
        raise CheckpointDecodeError(
            f"{what} is damaged: its deflated bytes are truncated or too long"
        )
    return out
