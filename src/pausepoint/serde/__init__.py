"""Safe serialization of checkpoint data: typed JSON, an allowlist, no pickle.

See [`Serializer`][]. The stored format is documented in ``docs/format.md``.
"""

from pausepoint.serde.registry import TypeRegistry
from pausepoint.serde.schema import types_in_schema
from pausepoint.serde.serializer import (
    FORMAT,
    FRAMED,
    Serializer,
    SerializerProtocol,
    dumps,
    loads,
)
from pausepoint.serde.stored_error import StoredError

__all__ = [
    "FORMAT",
    "FRAMED",
    "Serializer",
    "SerializerProtocol",
    "StoredError",
    "TypeRegistry",
    "dumps",
    "loads",
    "types_in_schema",
]
