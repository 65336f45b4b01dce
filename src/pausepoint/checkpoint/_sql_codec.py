"""``SqlCodec``: how the SQL savers encode and decode rows (values, metadata).

Moved out of ``_sql`` (which re-exports it); it also holds the saver's `Chains`, the
hint of which encodings it stored last (``_sql_values``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

from pausepoint.checkpoint._packing import pack, unpack
from pausepoint.checkpoint._reuse import Found, dumps_checkpoint
from pausepoint.checkpoint._sealing import (
    CLEAR_METADATA,
    SEALED_METADATA,
    Sealer,
    seal,
    unseal,
    write_binding,
)
from pausepoint.checkpoint._sql_values import Chains
from pausepoint.checkpoint.base import Checkpoint
from pausepoint.errors import CheckpointDecodeError, SerializationError
from pausepoint.serde import FORMAT, FRAMED, Serializer, SerializerProtocol
from pausepoint.serde.frames import MAGIC

__all__ = ["SqlCodec"]


class SqlCodec:
    """Serialization of rows: values through the saver's serde, metadata as JSON.

    With a ``sealer`` (a saver's ``encryption=``), every encoding is sealed to its row
    (``aad``, see `pausepoint.checkpoint._sealing`) and the metadata keeps only
    `CLEAR_METADATA` in clear. Without one, pausepoint's small encodings are stored
    deflated (`pausepoint.checkpoint._packing`); every reader inflates them.
    """

    __slots__ = ("_meta", "_packs", "chains", "sealer", "serde")

    def __init__(self, serde: SerializerProtocol | None, sealer: Sealer | None = None) -> None:
        self.sealer = sealer
        self.serde: SerializerProtocol = serde if serde is not None else Serializer()
        # Metadata must stay a JSON object (databases filter on it): always our format.
        self._meta = self.serde if isinstance(self.serde, Serializer) else Serializer()
        self.chains = Chains()
        # Only pausepoint's encodings (ASCII JSON) are deflated, and never under a seal.
        self._packs = sealer is None and isinstance(self.serde, Serializer)

    def dump(self, value: Any, label: str) -> tuple[str, bytes]:
        """``(type, bytes)`` of ``value``; ``label`` names it in error messages."""
        if isinstance(self.serde, Serializer):
            data = self.serde.dumps(value, label=label)
            return (FRAMED if data.startswith(MAGIC) else FORMAT), data
        return self.serde.dumps_typed(value)

    def dump_checkpoint(
        self, checkpoint: Checkpoint | Mapping[str, Any], found: Found | None
    ) -> tuple[str, bytes]:
        """``dump(checkpoint)``, reusing the encodings of large writes noted in ``found``."""
        if found and isinstance(self.serde, Serializer):
            try:
                blob = dumps_checkpoint(self.serde, checkpoint, found)
            except SerializationError:
                blob = None  # encoded whole below, which reports it as usual
            if blob is not None:
                return FORMAT, blob
        return self.dump(checkpoint, "checkpoint")

    @property
    def meta_serde(self) -> Serializer:
        """The serializer of metadata (pausepoint's, whatever the values' serde)."""
        return self._meta

    def sealed(self, blob: bytes, aad: bytes, deflate: bool = True) -> bytes:
        """``blob`` as stored in the row ``aad`` names: sealed when the saver encrypts.

        Else deflated when it is one of pausepoint's small encodings (`_packing.pack`)
        and ``deflate`` (a delta is not: a read joins hundreds of them).
        """
        if self._packs:
            return pack(blob) if deflate else blob
        return seal(self.sealer, blob, aad)

    def dump_metadata(self, metadata: Mapping[str, Any], aad: bytes) -> str:
        """Encode the metadata as a JSON object text (sealed but for `CLEAR_METADATA`)."""
        if self.sealer is None:
            return self._meta.dumps_mapping(metadata)
        clear = {k: v for k, v in metadata.items() if k in CLEAR_METADATA}
        rest = {k: v for k, v in metadata.items() if k not in CLEAR_METADATA}
        token = seal(self.sealer, self._meta.dumps_mapping(rest).encode(), aad)
        clear[SEALED_METADATA] = base64.b64encode(token).decode("ascii")
        return self._meta.dumps_mapping(clear)

    def opened(self, blob: bytes | memoryview, aad: bytes, what: str) -> bytes:
        """The encoding stored as ``blob``: opened if sealed, inflated if deflated.

        See `_sealing.unseal` and `_packing.unpack`.
        """
        return unpack(unseal(self.sealer, bytes(blob), aad, what), what)

    def load(self, type_: str, blob: bytes | memoryview, aad: bytes, what: str = "a value") -> Any:
        """Decode a stored value (a column of the wrong type is a corrupt row).

        ``aad``: the row it is stored in (a sealed value opens only there).
        """
        if not isinstance(type_, str) or not isinstance(blob, bytes | memoryview):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise CheckpointDecodeError(
                f"a value is stored as {type(type_).__name__}/{type(blob).__name__}, "
                "not as text/bytes; the row is corrupt"
            )
        data = unpack(unseal(self.sealer, bytes(blob), aad, what), what)
        return self.serde.loads_typed((type_, data))

    def load_write(self, thread: str, ns: str, cid: str, write: Sequence[Any]) -> Any:
        """A write row's value (``task_id, channel, type, value, idx``), opened in its slot."""
        task_id, channel, type_, blob, idx = write
        # No sealer: the binding is never read (``_sealing.unseal``), so none is made.
        aad = b""
        if self.sealer is not None:
            aad = write_binding(thread, ns, cid, task_id, idx, channel)
        return self.load(type_, blob, aad, f"write {idx} of task {task_id!r}")

    def decode(self, type_: str, data: bytes) -> Any:
        """Decode an encoding already opened (or never sealed)."""
        return self.serde.loads_typed((type_, data))

    def load_metadata(self, text: str | bytes, aad: bytes) -> dict[str, Any]:
        """Decode stored metadata (its sealed part opened in the row ``aad`` names)."""
        if not isinstance(text, str | bytes):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise CheckpointDecodeError(
                f"metadata is stored as {type(text).__name__}, not as JSON text; the row is corrupt"
            )
        metadata = self._meta.loads_mapping(text)
        token = metadata.pop(SEALED_METADATA, None)
        if token is None:
            unseal(self.sealer, b"", aad, "the metadata")  # refused unless plaintext is allowed
            return metadata
        try:
            data = base64.b64decode(token, validate=True) if isinstance(token, str) else b""
        except (binascii.Error, ValueError):
            data = b""
        if not data:
            raise CheckpointDecodeError(
                "the metadata's sealed part is malformed; the row is corrupt"
            )
        rest = self._meta.loads_mapping(unseal(self.sealer, data, aad, "the metadata"))
        return {**rest, **metadata}
