"""Turning a tagged JSON tree back into Python values, without running stored code.

Decoding is a JSON ``object_hook``: it sees every JSON object bottom-up, so the
payload of a tagged node is already decoded when the node is. A tag is looked up
in a fixed table of built-in decoders or, for user classes, in the
`TypeRegistry` by stable name. Nothing is ever
imported, and user classes are rebuilt without calling their ``__init__``.
"""

from __future__ import annotations

import base64
import datetime
import pathlib
import uuid
import zoneinfo
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Literal, NoReturn, cast

from pausepoint.errors import CheckpointDecodeError
from pausepoint.serde.encoder import TAG
from pausepoint.serde.frames import read_blob
from pausepoint.serde.registry import ClassCodec, TypeRegistry
from pausepoint.serde.stored_error import StoredError
from pausepoint.types import Command, Interrupt, Overwrite, Send, TimedOut, TimeoutAnswer

__all__ = ["make_object_hook"]


def _timedelta(p: list[int]) -> datetime.timedelta:
    days, seconds, micros = p
    return datetime.timedelta(days=days, seconds=seconds, microseconds=micros)


def _datetime(p: list[Any]) -> datetime.datetime:
    wall, fold, tz = p
    return datetime.datetime.fromisoformat(wall).replace(tzinfo=tz, fold=fold)


def _time(p: list[Any]) -> datetime.time:
    wall, fold, tz = p
    return datetime.time.fromisoformat(wall).replace(tzinfo=tz, fold=fold)


def _timezone(p: list[Any]) -> datetime.timezone:
    offset = _timedelta(p[0])
    return datetime.UTC if p[1] == "UTC" and not offset else datetime.timezone(offset, p[1])


def _float(p: str) -> float:
    if p not in ("nan", "inf", "-inf"):
        raise ValueError(f"{p!r} is not a non-finite float")
    return float(p)


def _command(p: list[Any]) -> Command[object]:
    graph, update, resume, goto = p
    return Command(graph=graph, update=update, resume=resume, goto=goto)


def _dict(pairs: list[list[object]]) -> dict[object, object]:
    return {k: v for k, v in pairs}  # a pair of the wrong size must fail


def _interrupt(p: list[object]) -> Interrupt:
    if len(p) == 2:  # LangGraph's form: a question with no terms
        return Interrupt(value=p[0], id=str(p[1]))
    value, iid, terms = p
    if not isinstance(terms, dict) or not terms or set(terms) - _TERMS:  # pyright: ignore[reportUnknownArgumentType]
        raise CheckpointDecodeError(
            f"stored interrupt {iid!r} has malformed terms {terms!r}: expected an object "
            f"with some of the keys {sorted(_TERMS)!r}"
        )
    known = cast(dict[str, object], terms)
    schema = known.get("schema")
    if schema is not None and not isinstance(schema, dict):
        raise CheckpointDecodeError(f"stored interrupt {iid!r} has a schema that is not an object")
    position = known.get("position")
    if position is not None and (type(position) is not int or position < 0):
        raise CheckpointDecodeError(
            f"stored interrupt {iid!r} has position {position!r}, not a whole number >= 0"
        )
    return Interrupt(
        value=value,
        id=str(iid),
        position=position,
        response_schema=cast(dict[str, object] | None, schema),
        deadline=_utc(known.get("deadline"), iid),
        on_timeout=_policy(known.get("on_timeout"), iid),
    )


_TERMS = frozenset({"schema", "deadline", "on_timeout", "position"})


def _utc(stored: Any, iid: object) -> datetime.datetime | None:
    if stored is None:
        return None
    try:
        moment = datetime.datetime.fromisoformat(stored)
    except (TypeError, ValueError):
        moment = None
    if moment is None or moment.utcoffset() is None:
        raise CheckpointDecodeError(
            f"stored interrupt {iid!r} has deadline {stored!r}, not an ISO 8601 time with an offset"
        )
    return moment.astimezone(datetime.UTC)


def _policy(stored: Any, iid: object) -> Literal["fail"] | TimeoutAnswer | None:
    if stored is None or stored == "fail":
        return stored
    if isinstance(stored, dict) and set(stored) == {"answer"}:  # pyright: ignore[reportUnknownArgumentType]
        return TimeoutAnswer(cast(dict[str, object], stored)["answer"])
    raise CheckpointDecodeError(
        f"stored interrupt {iid!r} has on_timeout {stored!r}: expected 'fail' or "
        '{"answer": value}'
    )


def _timed_out(p: list[Any]) -> TimedOut:
    deadline, policy, swept_at, sweep_id = p
    return TimedOut(
        deadline=_utc(deadline, "(timed out)") or _missing("deadline"),
        on_timeout=_policy(policy, "(timed out)") or _missing("on_timeout"),
        swept_at=_utc(swept_at, "(timed out)") or _missing("swept_at"),
        sweep_id=str(sweep_id),
    )


def _missing(what: str) -> NoReturn:
    raise CheckpointDecodeError(f"a stored timed-out answer lacks its {what}")


def _error(p: list[object]) -> StoredError:
    return StoredError(str(p[0]), str(p[1]))


# Any: each function takes the payload its tag was written with; a payload of another
# shape fails inside it, and `Serializer.loads` reports that as a decode error.
_BUILTINS: dict[str, Callable[[Any], object]] = {
    "tuple": tuple,
    "set": set,
    "frozenset": frozenset,
    "dict": _dict,
    "float": _float,
    "bytes": lambda p: base64.b64decode(p, validate=True),
    "bytearray": lambda p: bytearray(base64.b64decode(p, validate=True)),
    "blob": lambda p: read_blob("blob", p),
    "blobarray": lambda p: read_blob("blobarray", p),
    "datetime": _datetime,
    "date": datetime.date.fromisoformat,
    "time": _time,
    "timedelta": _timedelta,
    "timezone": _timezone,
    "zoneinfo": zoneinfo.ZoneInfo,
    "uuid": lambda p: uuid.UUID(hex=p),
    "decimal": Decimal,
    "path": pathlib.Path,
    "pureposixpath": pathlib.PurePosixPath,
    "purewindowspath": pathlib.PureWindowsPath,
    "interrupt": _interrupt,
    "timedout": _timed_out,
    "send": lambda p: Send(str(p[0]), p[1]),
    "overwrite": Overwrite,
    "command": _command,
    "error": _error,
}

_CLASS_KINDS = frozenset({"enum", "dataclass", "namedtuple", "pydantic"})


def _build_dataclass(codec: ClassCodec, values: dict[str, object]) -> object:
    extra = set(values) - set(codec.fields)
    if extra:
        raise CheckpointDecodeError(
            f"stored {codec.name!r} has fields {sorted(extra)!r} that the registered class "
            "does not have; the class changed since the value was saved"
        )
    obj = object.__new__(codec.cls)
    for name in codec.fields:
        if name in values:
            value = values[name]
        elif name in codec.defaults:
            value = codec.defaults[name]()
        else:
            raise CheckpointDecodeError(
                f"stored {codec.name!r} lacks field {name!r}, which has no default"
            )
        # object.__setattr__ works for frozen and slotted dataclasses alike.
        object.__setattr__(obj, name, value)
    return obj


def _build(codec: ClassCodec, payload: object) -> object:
    kind = codec.kind
    if kind == "enum":
        return codec.cls(payload)
    if kind == "namedtuple":
        make = cast(Callable[[object], object], getattr(codec.cls, "_make"))  # noqa: B009
        return make(payload)
    if not isinstance(payload, dict):
        raise CheckpointDecodeError(f"stored {codec.name!r} fields are not an object")
    values = cast(dict[str, object], payload)
    if kind == "dataclass":
        return _build_dataclass(codec, values)
    construct = cast(Callable[..., object], getattr(codec.cls, "model_construct"))  # noqa: B009
    return construct(**values)


def _class_value(registry: TypeRegistry, kind: str, payload: Any) -> object:
    name, data = payload
    codec = registry.for_name(name) if isinstance(name, str) else None
    if codec is None or codec.kind != kind:
        raise _not_allowed(registry, kind, name)
    return _build(codec, data)


def _not_allowed(registry: TypeRegistry, kind: str, name: object) -> CheckpointDecodeError:
    """The error for a stored class name the allowlist lacks, with the call that fixes it."""
    known = ", ".join(registry.names()) or "none"
    cls = name.rpartition(".")[2] if isinstance(name, str) else "YourClass"
    return CheckpointDecodeError(
        f"the stored value names {kind} type {name!r}, which is not in this serializer's "
        f"allowlist (registered: {known}); nothing was imported or run. If it is your "
        f"class {cls}, register it under the stored name on the saver's serializer before "
        f"reading: saver.serde.register({cls}, name={name!r}) (or declare it in the "
        "graph's state schema and compile the graph with this saver)",
        unknown_type=name if isinstance(name, str) else None,
    )


def make_object_hook(registry: TypeRegistry) -> Callable[[dict[str, object]], object]:
    """Return the JSON ``object_hook`` that rebuilds tagged nodes using ``registry``."""

    def hook(obj: dict[str, object]) -> object:
        if TAG not in obj:
            return obj
        if len(obj) != 2 or "v" not in obj:
            raise CheckpointDecodeError(f"malformed tagged node with keys {sorted(obj)!r}")
        tag, payload = obj[TAG], obj["v"]
        if not isinstance(tag, str):
            raise CheckpointDecodeError(f"tag {tag!r} is not a string")
        builtin = _BUILTINS.get(tag)
        if builtin is not None:
            return builtin(payload)
        if tag in _CLASS_KINDS:
            return _class_value(registry, tag, payload)
        raise CheckpointDecodeError(
            f"unknown tag {tag!r}: the payload was not written by pausepoint"
        )

    return hook
