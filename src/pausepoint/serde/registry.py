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
import keyword
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pausepoint.serde.messages import known_name, message_class

__all__ = ["ClassCodec", "Kind", "TypeRegistry", "stable_name", "type_name"]

Kind = Literal["enum", "dataclass", "namedtuple", "pydantic"]


def type_name(cls: type) -> str:
    """Return the default stable name of a class: ``module.QualName``."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _main_module() -> str | None:
    """The name other processes import the ``__main__`` module by, if there is one.

    ``python -m app.flows`` runs ``app.flows`` (its spec says so); ``python app.py``
    runs the file that ``import app`` finds when its directory is on the path (as
    ``pausepoint threads --graph app:builder`` run there arranges). A REPL or a
    notebook has no such name.
    """
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    name: str | None = getattr(spec, "name", None)
    if name and name != "__main__":
        return name.removesuffix(".__main__")
    file: str | None = getattr(main, "__file__", None)
    stem = Path(file).stem if file else ""
    return stem if stem.isidentifier() and not keyword.iskeyword(stem) else None


def stable_name(cls: type) -> str:
    """The name a class is stored under by default: ``module.QualName``.

    A class defined in a script run as ``python app.py`` has the module
    ``__main__``, a name no other process can resolve (there, the same class is
    ``app.Incident``): it is stored under its importable name instead, so the process
    that imports the script reads what the script wrote, and the other way round.
    """
    if cls.__module__ == "__main__" and (module := _main_module()) is not None:
        return f"{module}.{cls.__qualname__}"
    return type_name(cls)


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
    defaults: dict[str, Callable[[], object]]


def _same(value: object) -> object:
    return value


def _is_pydantic_model(cls: type[object]) -> bool:
    pydantic = sys.modules.get("pydantic")
    if pydantic is None:
        return False
    base: type = pydantic.BaseModel
    return issubclass(cls, base)


def _kind_of(cls: type[object]) -> Kind | None:
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
        model_fields: dict[str, object] = getattr(cls, "model_fields")  # noqa: B009
        return tuple(model_fields)
    return ()


def _defaults_of(cls: type, kind: Kind) -> dict[str, Callable[[], object]]:
    if kind != "dataclass":
        return {}
    out: dict[str, Callable[[], object]] = {}
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
        name = name or known_name(cls) or stable_name(cls)
        codec = ClassCodec(cls, name, kind, _fields_of(cls, kind), _defaults_of(cls, kind))
        with self._lock:
            taken = self._by_name.get(codec.name)
            # A class defined again under the same name (a re-run notebook cell, a
            # reloaded module) replaces the old one; a different class may not.
            # A script's class and the same class imported from the script
            # (``__main__.Incident``, ``app.Incident``) share a name: both stay writable.
            if taken is not None and stable_name(taken.cls) != stable_name(cls):
                raise TypeError(
                    f"cannot register {type_name(cls)!r} as {codec.name!r}: that name is "
                    f"already used by {type_name(taken.cls)!r}; pass register(cls, name=...)"
                )
            if taken is not None and taken.cls.__module__ == cls.__module__:
                self._by_type.pop(taken.cls, None)
            self._by_type[cls] = codec
            self._by_name[codec.name] = codec
        return codec

    def for_type(self, cls: type) -> ClassCodec | None:
        """Return the codec of exactly ``cls`` (subclasses must be registered themselves).

        LangChain's message classes need no registration (`pausepoint.serde.messages`).
        """
        codec = self._by_type.get(cls)
        if codec is None and known_name(cls) is not None:
            codec = self.register(cls)
        return codec

    def for_name(self, name: str) -> ClassCodec | None:
        """Return the codec registered under ``name``, or ``None``.

        Raises:
            CheckpointDecodeError: ``name`` is a LangChain message's, and langchain-core
                is not installed.
        """
        codec = self._by_name.get(name)
        if codec is None and (cls := message_class(name)) is not None:
            codec = self.register(cls)
        if codec is None and name.startswith("__main__."):
            codec = self._script_class(name.removeprefix("__main__."))
        return codec

    def _script_class(self, qualname: str) -> ClassCodec | None:
        """The one registered class of that qualified name, for a ``__main__.X`` payload.

        Rows written before script classes got importable names (see
        `stable_name`) name them ``__main__.X``; such a row is read with the
        registered class whose name ends in ``.X`` when exactly one does. Only
        registered classes are considered, so the allowlist still decides.
        """
        found = {c.name: c for c in self._by_name.values() if c.name.endswith(f".{qualname}")}
        return next(iter(found.values())) if len(found) == 1 else None

    def names(self) -> list[str]:
        """Every registered name, sorted (for error messages)."""
        return sorted(self._by_name)
