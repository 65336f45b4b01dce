"""Encryption at rest as the savers see it: the `Sealer` protocol and what binds a row.

The core imports no cipher. A saver given ``encryption=`` (a `Sealer`, such as
[`pausepoint.crypto.KeyRing`][]) seals each stored encoding with the row it belongs
to as associated data (`binding`), so a ciphertext copied to another row (another
thread, checkpoint, task, slot or value version) fails to open. A sealed encoding
starts with `MARK`; a saver without a sealer that meets one says so instead of
decoding ciphertext, and one with a sealer refuses an unsealed encoding unless the
sealer allows plaintext (a database being migrated). docs/security.md describes it.
"""

from __future__ import annotations

import struct
from typing import Protocol

from pausepoint.errors import CheckpointDecodeError

__all__ = [
    "CLEAR_METADATA",
    "MARK",
    "SEALED_METADATA",
    "Sealer",
    "binding",
    "checkpoint_binding",
    "metadata_binding",
    "seal",
    "unseal",
    "value_binding",
    "write_binding",
]

MARK = b"\x00pp\xe5"
"""The first bytes of every sealed encoding (pausepoint's JSON is ASCII, and its framed
encodings start ``\\x00pp\\x01``: neither starts like this)."""
SEALED_METADATA = "__pausepoint_sealed__"
"""The metadata key holding the sealed rest of the metadata (base64)."""
CLEAR_METADATA = frozenset({"source", "step", "parents", "graph_id"})
"""Metadata the savers keep in clear when sealing: what the engine and the waiting
questions' index look up (how a checkpoint was made, its step, its parents'
checkpoint ids, the graph's name for ``list_pending(graph=...)``)."""

_LEN = struct.Struct(">I")


class Sealer(Protocol):
    """Authenticated encryption with associated data, as a saver's ``encryption=``.

    ``seal`` and ``open`` are inverse for the same associated data; ``open`` raises
    (any exception) when the token was not sealed with that associated data by one of
    its keys. Implementations must be safe to call from several threads at once.
    """

    @property
    def allow_plaintext(self) -> bool:
        """Whether encodings stored unsealed are read (while migrating a database)."""
        ...

    def seal(self, plaintext: bytes, aad: bytes) -> bytes:
        """Encrypt ``plaintext`` bound to ``aad``."""
        ...

    def open(self, token: bytes, aad: bytes) -> bytes:
        """Decrypt what `seal` returned for the same ``aad``; raise if it is not that."""
        ...

    def current(self, token: bytes) -> bool:
        """Whether ``token`` is sealed with the key `seal` uses now (``rekey`` skips it)."""
        ...

    def digest(self, data: bytes) -> str:
        """A keyed digest of ``data`` (hex): names a stored value without revealing it."""
        ...


def binding(kind: str, *parts: object) -> bytes:
    """The associated data of one row's slot: its kind and coordinates, length-prefixed."""
    out = [b"pausepoint/1", _LEN.pack(len(kind)), kind.encode()]
    for part in parts:
        data = str(part).encode("utf-8", "surrogatepass")
        out += (_LEN.pack(len(data)), data)
    return b"".join(out)


def checkpoint_binding(thread: str, ns: str, checkpoint_id: str) -> bytes:
    """A checkpoint row's encoding."""
    return binding("checkpoint", thread, ns, checkpoint_id)


def metadata_binding(thread: str, ns: str, checkpoint_id: str) -> bytes:
    """A checkpoint row's sealed metadata."""
    return binding("metadata", thread, ns, checkpoint_id)


def write_binding(
    thread: str, ns: str, checkpoint_id: str, task_id: str, idx: int, channel: str
) -> bytes:
    """A pending write: its checkpoint, task, index and channel."""
    return binding("write", thread, ns, checkpoint_id, task_id, idx, channel)


def value_binding(thread: str, ns: str, channel: str, version: str, base: str | None) -> bytes:
    """A row of ``pausepoint_blobs``: a channel's value version (a delta: and its base)."""
    return binding("value", thread, ns, channel, version, "" if base is None else base)


def seal(sealer: Sealer | None, data: bytes, aad: bytes) -> bytes:
    """``data`` as stored: sealed when there is a sealer."""
    if sealer is None:
        return data
    return MARK + sealer.seal(data, aad)


def unseal(sealer: Sealer | None, data: bytes, aad: bytes, what: str) -> bytes:
    """The encoding stored as ``data`` (``what`` names it in errors).

    Raises:
        CheckpointDecodeError: sealed with no sealer to open it, sealed for another
            row or with no key the sealer has, or unsealed while plaintext is refused.
    """
    if data[:4] == MARK:
        if sealer is None:
            raise CheckpointDecodeError(
                f"{what} is encrypted and this saver has no keys; "
                "pass the saver encryption=KeyRing(...) (docs/security.md)"
            )
        try:
            return sealer.open(data[4:], aad)
        except Exception as exc:
            raise CheckpointDecodeError(
                f"{what} cannot be decrypted: none of the keys opens it, or it was moved "
                "from another row (each ciphertext is bound to its thread, namespace, "
                "checkpoint and slot); the row is corrupt or tampered with "
                f"({type(exc).__name__}{': ' + str(exc) if str(exc) else ''})"
            ) from None
    if sealer is not None and not sealer.allow_plaintext:
        raise CheckpointDecodeError(
            f"{what} is stored unencrypted and this saver refuses plaintext rows; "
            "pass KeyRing(..., allow_plaintext=True) while migrating the database, then "
            "run `pausepoint rekey` (docs/security.md)"
        )
    return data
