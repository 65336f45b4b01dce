"""Turning Python values into a JSON-native tree with type tags.

JSON-native values (str, int, bool, None, finite floats, lists and dicts with
string keys) pass through untouched: that is the fast path. Everything else
becomes a *tagged node* ``{"__pp__": tag, "v": payload}``; a user dict that
happens to use the key ``"__pp__"`` is written as a tagged ``dict`` so it can
never be mistaken for one.
"""

from __future__ import annotations

import base64
import datetime
import pathlib
import uuid
import zoneinfo
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pausepoint.serde.frames import BLOB_FROM, Ranges
from pausepoint.serde.plain import PLAIN_FROM, TAG, is_plain_json
from pausepoint.serde.registry import ClassCodec, TypeRegistry, type_name
from pausepoint.serde.stored_error import StoredError
from pausepoint.types import Command, Interrupt, Overwrite, Send, TimedOut, TimeoutAnswer

if TYPE_CHECKING:
    from pausepoint.serde.plain import Json

__all__ = ["TAG", "Encoder", "NeedsFrame", "Unencodable"]


class Unencodable(Exception):
    """Internal: a value of a type the serializer does not know."""

    def __init__(self, value: object) -> None:
        super().__init__(value)
        self.value = value


def _tagged(tag: str, payload: Json) -> dict[str, Json]:
    return {TAG: tag, "v": payload}


def _timedelta(td: datetime.timedelta) -> list[Json]:
    return [td.days, td.seconds, td.microseconds]


def _tzinfo(
    tz: datetime.tzinfo | None, utcoffset: datetime.timedelta | None
) -> datetime.tzinfo | None:
    if tz is None or type(tz) in (datetime.timezone, zoneinfo.ZoneInfo):
        return tz
    # Other tzinfo classes (pytz, dateutil) are stored as their fixed offset.
    return datetime.timezone(utcoffset or datetime.timedelta())


def _datetime(e: Encoder, dt: datetime.datetime) -> dict[str, Json]:
    # Wall time, fold and the tzinfo itself: an offset alone would lose the zone.
    tz = e.encode(_tzinfo(dt.tzinfo, dt.utcoffset()))
    return _tagged("datetime", [dt.replace(tzinfo=None).isoformat(), dt.fold, tz])


def _time(e: Encoder, t: datetime.time) -> dict[str, Json]:
    tz = e.encode(_tzinfo(t.tzinfo, t.utcoffset()))
    return _tagged("time", [t.replace(tzinfo=None).isoformat(), t.fold, tz])


def _timezone(_e: Encoder, tz: datetime.timezone) -> dict[str, Json]:
    return _tagged("timezone", [_timedelta(tz.utcoffset(None)), tz.tzname(None)])


def _interrupt(e: Encoder, x: Interrupt) -> dict[str, Json]:
    """``[value, id]``, and a third element with the question's terms when it has any.

    A known ``position`` is a term too: it is kept only on a question stored in a
    record other than its asking task's (a subgraph's question at its parent: the
    asking task's own record says it with its ``__asked__`` write,
    `pausepoint.loop.pending.as_stored`).
    """
    position = x.position
    if x.response_schema is None and x.deadline is None and x.on_timeout is None:
        if position is None:
            return _tagged("interrupt", [e.encode(x.value), x.id])  # LangGraph's form
        return _tagged("interrupt", [e.encode(x.value), x.id, {"position": position}])
    terms: dict[str, Json] = {}
    if position is not None:
        terms["position"] = position
    if x.response_schema is not None:
        terms["schema"] = e.encode(x.response_schema)  # JSON: itself, unless a key is TAG
    if x.deadline is not None:
        terms["deadline"] = _utc_iso(x.deadline)
    if x.on_timeout is not None:
        terms["on_timeout"] = _on_timeout(e, x.on_timeout)
    return _tagged("interrupt", [e.encode(x.value), x.id, terms])


def _utc_iso(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).isoformat()


def _on_timeout(e: Encoder, policy: object) -> Json:
    if isinstance(policy, TimeoutAnswer):
        return {"answer": e.encode(policy.value)}
    if policy != "fail":
        raise Unencodable(policy)
    return "fail"


def _timed_out(e: Encoder, x: TimedOut) -> dict[str, Json]:
    policy = _on_timeout(e, x.on_timeout)
    return _tagged("timedout", [_utc_iso(x.deadline), policy, _utc_iso(x.swept_at), x.sweep_id])


def _exception(exc: BaseException) -> dict[str, Json]:
    if isinstance(exc, StoredError):
        return _tagged("error", [exc.type_name, exc.message])
    return _tagged("error", [type_name(type(exc)), str(exc)])


def _bytes(e: Encoder, data: bytes | bytearray) -> dict[str, Json]:
    # Large ones go raw after the JSON when the payload is framed (serde/frames.py).
    if e.frames and len(data) >= BLOB_FROM:
        if e.ranges is None:
            raise NeedsFrame  # the caller encodes again with a collector of its own
        tag = "blob" if type(data) is bytes else "blobarray"
        return {TAG: tag, "v": e.ranges.add(data)}
    tag = "bytes" if type(data) is bytes else "bytearray"
    return _tagged(tag, base64.b64encode(data).decode("ascii"))


# Any: each function takes the one type it is filed under (``type(x)`` picks it).
_Builtin = Callable[["Encoder", Any], "Json"]

_BUILTINS: dict[type, _Builtin] = {
    tuple: lambda e, x: _tagged("tuple", [e.encode(v) for v in x]),
    set: lambda e, x: _tagged("set", [e.encode(v) for v in x]),
    frozenset: lambda e, x: _tagged("frozenset", [e.encode(v) for v in x]),
    bytes: _bytes,
    bytearray: _bytes,
    datetime.datetime: _datetime,
    datetime.date: lambda _e, x: _tagged("date", x.isoformat()),
    datetime.time: _time,
    datetime.timedelta: lambda _e, x: _tagged("timedelta", _timedelta(x)),
    datetime.timezone: _timezone,
    zoneinfo.ZoneInfo: lambda _e, x: _tagged("zoneinfo", x.key),
    uuid.UUID: lambda _e, x: _tagged("uuid", x.hex),
    Decimal: lambda _e, x: _tagged("decimal", str(x)),
    type(pathlib.Path()): lambda _e, x: _tagged("path", str(x)),
    pathlib.PurePosixPath: lambda _e, x: _tagged("pureposixpath", str(x)),
    pathlib.PureWindowsPath: lambda _e, x: _tagged("purewindowspath", str(x)),
    Interrupt: _interrupt,
    TimedOut: _timed_out,
    Send: lambda e, x: _tagged("send", [x.node, e.encode(x.arg)]),
    Overwrite: lambda e, x: _tagged("overwrite", e.encode(x.value)),
    Command: lambda e, x: _tagged(
        "command", [x.graph, e.encode(x.update), e.encode(x.resume), e.encode(x.goto)]
    ),
    StoredError: lambda _e, x: _exception(x),
}


_PLAIN: frozenset[type[object]] = frozenset({str, int, bool, type(None)})
"""Types stored as themselves, with no tag and no further walk."""

# Attributes of pausepoint's own types that may hold user values (for error paths).
_OWN_FIELDS: dict[type[object], tuple[str, ...]] = {
    Interrupt: ("value",),
    Overwrite: ("value",),
    Send: ("arg",),
    Command: ("update", "resume", "goto"),
}


class NeedsFrame(Exception):
    """Internal: a value holds large bytes, and the encoder has no `Ranges` to put them in."""


class Encoder:
    """Walks a value and returns its JSON-native, tagged form.

    With ``frames``, bytes of `BLOB_FROM` or more become ``blob`` nodes whose bytes go
    to ``ranges`` (a framed payload, serde/frames.py); without ``ranges`` such a value
    raises `NeedsFrame`, so the common case — no large bytes — sets nothing up.
    Without ``frames`` (metadata, `Serializer.to_tree`) every bytes value is base64.
    """

    __slots__ = ("_registry", "frames", "ranges")

    def __init__(
        self, registry: TypeRegistry, *, frames: bool = False, ranges: Ranges | None = None
    ) -> None:
        self._registry = registry
        self.frames = frames
        self.ranges = ranges

    def encode(self, x: Any) -> Json:
        """Return the tagged JSON-native tree of ``x``.

        Raises:
            Unencodable: Some value inside ``x`` has an unsupported type.

        """
        t: type[Any] = type(x)  # pyright: ignore[reportUnknownVariableType]
        if t is str or t is int or t is bool or x is None:
            return x
        if t is float:
            # x - x is 0.0 for every finite float, nan for nan and ±inf.
            return x if x - x == 0.0 else _tagged("float", repr(x))
        if t is dict:
            return self._dict(x)
        if t is list:
            if len(x) < PLAIN_FROM or not is_plain_json(x, finite=True):  # else: see _dict
                encode = self.encode
                x = [v if type(v) in _PLAIN else encode(v) for v in x]
            return x
        builtin = _BUILTINS.get(t)
        if builtin is not None:
            return builtin(self, x)
        return self._custom(x)

    def _dict(self, d: dict[Any, Any]) -> Json:
        if len(d) >= PLAIN_FROM and is_plain_json(d, finite=True):
            # Plain JSON is its own tree: a large part is checked whole, in C loops,
            # not copied item by item (50 MB of records: the walk took ~3x longer).
            return d
        encode = self.encode
        out: dict[str, Json] = {}
        for k, v in d.items():
            if type(k) is not str or k == TAG:
                return _tagged("dict", [[encode(k2), encode(v2)] for k2, v2 in d.items()])
            # Leaves are copied inline: a call per leaf would double the cost.
            out[k] = v if type(v) in _PLAIN else encode(v)
        return out

    def _custom(self, x: object) -> Json:
        codec = self._registry.for_type(type(x))
        if codec is not None:
            return _tagged(codec.kind, [codec.name, self._class_payload(codec, x)])
        if isinstance(x, BaseException):
            return _exception(x)
        raise Unencodable(x)

    def _class_payload(self, codec: ClassCodec, x: Any) -> Json:
        if codec.kind == "enum":
            return self.encode(x.value)
        if codec.kind == "namedtuple":
            return [self.encode(v) for v in x]
        values = {name: getattr(x, name) for name in codec.fields}
        extra = getattr(x, "__pydantic_extra__", None) if codec.kind == "pydantic" else None
        if extra:  # a model with extra="allow" (LangChain messages are): keep those too
            values.update(extra)
        return self._dict(values)

    def locate(self, x: object, path: str = "") -> tuple[str, object] | None:
        """Find the first unsupported value in ``x``: ``(path, value)``, or ``None``.

        The slow twin of `encode`, used only to explain a failure.
        """
        kids = self._children(x)
        if kids is None:
            try:
                self.encode(x)
            except Unencodable as exc:
                return path, exc.value
            return None
        for segment, child in kids:
            found = self.locate(child, path + segment)
            if found is not None:
                return found
        return None

    def _children(self, x: Any) -> Iterator[tuple[str, object]] | None:
        t: type[Any] = type(x)  # pyright: ignore[reportUnknownVariableType]
        if t is dict:
            return (pair for k, v in x.items() for pair in ((f" (key {k!r})", k), (f"[{k!r}]", v)))
        if t in (list, tuple, set, frozenset):
            return ((f"[{i}]", v) for i, v in enumerate(x))
        fields = _OWN_FIELDS.get(t)
        if fields is None:
            codec = self._registry.for_type(t)
            fields = codec.fields if codec is not None else ()
        if fields:
            return ((f".{name}", getattr(x, name)) for name in fields)
        return None
