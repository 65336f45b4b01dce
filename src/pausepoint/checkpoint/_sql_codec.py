"""``SqlCodec``: how the SQL savers encode and decode rows (values, metadata).

Moved out of ``_sql`` (which re-exports it); it also holds the saver's `Chains`, the
hint of which encodings it stored last (``_sql_values``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pausepoint.checkpoint._reuse import Found, dumps_checkpoint
from pausepoint.checkpoint._sql_values import Chains
from pausepoint.checkpoint.base import Checkpoint
from pausepoint.errors import CheckpointDecodeError, SerializationError
from pausepoint.serde import FORMAT, FRAMED, Serializer, SerializerProtocol
from pausepoint.serde.frames import MAGIC

__all__ = ["SqlCodec"]


class SqlCodec:
    """Serialization of rows: values through the saver's serde, metadata as JSON."""

    __slots__ = ("_meta", "chains", "serde")

    def __init__(self, serde: SerializerProtocol | None) -> None:
        self.serde: SerializerProtocol = serde if serde is not None else Serializer()
        # Metadata must stay a JSON object (databases filter on it): always our format.
        self._meta = self.serde if isinstance(self.serde, Serializer) else Serializer()
        self.chains = Chains()

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

    def dump_metadata(self, metadata: Mapping[str, Any]) -> str:
        """Encode the metadata as a JSON object text."""
        return self._meta.dumps_mapping(metadata)

    def load(self, type_: str, blob: bytes | memoryview) -> Any:
        """Decode a stored value (a column of the wrong type is a corrupt row)."""
        if not isinstance(type_, str) or not isinstance(blob, bytes | memoryview):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise CheckpointDecodeError(
                f"a value is stored as {type(type_).__name__}/{type(blob).__name__}, "
                "not as text/bytes; the row is corrupt"
            )
        return self.serde.loads_typed((type_, bytes(blob)))

    def load_metadata(self, text: str | bytes) -> dict[str, Any]:
        """Decode stored metadata."""
        if not isinstance(text, str | bytes):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise CheckpointDecodeError(
                f"metadata is stored as {type(text).__name__}, not as JSON text; the row is corrupt"
            )
        return self._meta.loads_mapping(text)
