"""The allowlist of user classes the serializer may write and read back.

Only classes registered here are ever constructed when a payload is decoded, and
they are found by the stable name stored in the payload, never by importing it.
Four kinds of class can be registered: ``Enum``, dataclass, ``NamedTuple`` and
Pydantic v2 models (Pydantic is never imported here; a class is recognised as a
model only when ``pydantic`` is already loaded and the class derives from it).
LangChain's message classes are allowed without registration, from a fixed table.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import sys
import threading
from collections.abc import Iterable
from typing import Any, Literal

from pausepoint.serde import messages

__all__ = ["ClassCodec", "Kind", "TypeRegistry", "type_name"]

Kind = Literal["enum", "dataclass", "namedtuple", "pydantic"]


def type_name(cls: type) -> str:
    """Return the default stable name of a class: ``module.QualName``."""
    return f"{cls.__module__}.{cls.__qualname__}"


@dataclasses.dataclass(frozen=True, slots=True)
class ClassCodec:
    """How one registered class is written and read back.

    Attributes:
        cls: The registered class.
        name: The stable name stored in payloads.
        kind: Which of the four supported kinds the class is.
        fields: Field names (dataclass, NamedTuple, Pydantic); empty for enums.
        defaults: For dataclasses, the fields that may be missing from an older
            payload, with a function giving their default value.

    """

    cls: type[Any]
    name: str
    kind: Kind
    fields: tuple[str, ...]
    defaults: dict[str, Any]


def _same(value: Any) -> Any:
    return value


def _is_pydantic_model(cls: type[Any]) -> bool:
    pydantic = sys.modules.get("pydantic")
    if pydantic is None:
        return False
    base: type = pydantic.BaseModel
    return issubclass(cls, base)


def _kind_of(cls: type[Any]) -> Kind | None:
    if issubclass(cls, enum.Enum):
        return "enum"
    if dataclasses.is_dataclass(cls):
        return "dataclass"
    if getattr(cls, "_fields", None) is not None and issubclass(cls, tuple):
        return "namedtuple"
    if _is_pydantic_model(cls):
        return "pydantic"
    return None


def _fields_of(cls: type, kind: Kind) -> tuple[str, ...]:
    if kind == "dataclass":
        return tuple(f.name for f in dataclasses.fields(cls))
    if kind == "namedtuple":
        names: tuple[str, ...] = getattr(cls, "_fields")  # noqa: B009
        return names
    if kind == "pydantic":
        model_fields: dict[str, Any] = getattr(cls, "model_fields")  # noqa: B009
        return tuple(model_fields)
    return ()


def _defaults_of(cls: type, kind: Kind) -> dict[str, Any]:
    if kind != "dataclass":
        return {}
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = functools.partial(_same, f.default)
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory
    return out


class TypeRegistry:
    """Registered classes, by type (for writing) and by stable name (for reading)."""

    __slots__ = ("_by_name", "_by_type", "_lock")

    def __init__(self, types: Iterable[type | tuple[type, str]] = ()) -> None:
        self._by_type: dict[type, ClassCodec] = {}
        self._by_name: dict[str, ClassCodec] = {}
        self._lock = threading.Lock()
        for item in types:
            if isinstance(item, tuple):
                self.register(item[0], name=item[1])
            else:
                self.register(item)

    def register(self, cls: type, *, name: str | None = None) -> ClassCodec:
        """Allow ``cls`` to be written and read back under ``name``.

        Raises:
            TypeError: ``cls`` is not an Enum, dataclass, NamedTuple or Pydantic
                model, or ``name`` is already taken by another class.

        """
        kind = _kind_of(cls)
        if kind is None:
            raise TypeError(
                f"cannot register {type_name(cls)!r}: only Enum classes, dataclasses, "
                "NamedTuples and Pydantic v2 models can be registered; convert other "
                "values to one of these or to plain data before storing them"
            )
        name = name or messages.known_name(cls) or type_name(cls)
        codec = ClassCodec(cls, name, kind, _fields_of(cls, kind), _defaults_of(cls, kind))
        with self._lock:
            taken = self._by_name.get(codec.name)
            # A class defined again under the same name (a re-run notebook cell, a
            # reloaded module) replaces the old one; a different class may not.
            if taken is not None and type_name(taken.cls) != type_name(cls):
                raise TypeError(
                    f"cannot register {type_name(cls)!r} as {codec.name!r}: that name is "
                    f"already used by {type_name(taken.cls)!r}; pass register(cls, name=...)"
                )
            if taken is not None:
                self._by_type.pop(taken.cls, None)
            self._by_type[cls] = codec
            self._by_name[codec.name] = codec
        return codec

    def for_type(self, cls: type) -> ClassCodec | None:
        """Return the codec of exactly ``cls`` (subclasses must be registered themselves).

        LangChain's message classes need no registration (:mod:`pausepoint.serde.messages`).
        """
        codec = self._by_type.get(cls)
        if codec is None and messages.known_name(cls) is not None:
            codec = self.register(cls)
        return codec

    def for_name(self, name: str) -> ClassCodec | None:
        """Return the codec registered under ``name``, or ``None``.

        Raises:
            CheckpointDecodeError: ``name`` is a LangChain message's, and langchain-core
                is not installed.
        """
        codec = self._by_name.get(name)
        if codec is None and (cls := messages.message_class(name)) is not None:
            codec = self.register(cls)
        return codec

    def names(self) -> list[str]:
        """Every registered name, sorted (for error messages)."""
        return sorted(self._by_name)
