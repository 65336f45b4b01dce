"""The JSON the server sends: any value made JSON-able, and one-line JSON text.

`jsonable` turns what a graph holds or streams into plain JSON values the way
LangGraph's server shows them: an `Interrupt` as ``{"value", "id"}``, LangChain
messages (anything with ``model_dump``) as their dicts, dataclasses as dicts of their
fields, datetimes in ISO 8601, tuples and sets as lists. `dumps` writes it as ONE
line (SSE ``data:`` and the clients' decoders need that), without spaces.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
import math
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from pausepoint.types import Interrupt

__all__ = ["dumps", "jsonable"]

JSON = Any
"""A JSON value: None, bool, int, float, str, list of JSON, dict of str to JSON."""


def jsonable(value: object) -> JSON:
    """``value`` as plain JSON values (see the module docstring); never raises.

    What has no JSON form of its own (an arbitrary object) becomes its ``repr``
    text, and a non-finite float becomes None: JSON has no NaN, and the browser
    clients' ``JSON.parse`` rejects it.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        items = cast("Mapping[object, object]", value).items()
        return {_key(k): jsonable(v) for k, v in items}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in cast("Iterable[object]", value)]
    return _object(value)


def dumps(value: object) -> str:
    """``jsonable(value)`` as one line of JSON text (no newline, compact)."""
    return json.dumps(jsonable(value), separators=(",", ":"), ensure_ascii=False)


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, enum.Enum):
        return str(key.value)
    return str(key)


def _iso(value: datetime.date | datetime.time) -> str:
    return value.isoformat()


def _enum(value: enum.Enum) -> JSON:
    return jsonable(value.value)


def _b64(value: bytes | bytearray) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")


_SCALARS: tuple[tuple[type | tuple[type, ...], Callable[[Any], JSON]], ...] = (
    ((datetime.datetime, datetime.date, datetime.time), _iso),
    (uuid.UUID, str),
    (enum.Enum, _enum),
    ((bytes, bytearray), _b64),
)


def _object(value: object) -> JSON:
    if isinstance(value, Interrupt):
        return {"value": jsonable(value.value), "id": value.id}
    for kind, convert in _SCALARS:
        if isinstance(value, kind):
            return convert(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return jsonable(dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return repr(value)
