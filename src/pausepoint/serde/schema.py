"""Finding the classes a state schema declares, to allow them in the serializer.

``types_in_schema(State)`` walks the type hints of a TypedDict, dataclass,
NamedTuple or Pydantic model (through ``Annotated``, ``list[...]``, ``X | None``,
``dict[K, V]`` and so on, and into the fields of the classes it finds) and
returns every Enum, dataclass, NamedTuple and Pydantic model class in them.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import typing

import typing_extensions

__all__ = ["types_in_schema"]


def _is_registrable(tp: type[object]) -> bool:
    if issubclass(tp, enum.Enum) or dataclasses.is_dataclass(tp):
        return True
    if getattr(tp, "_fields", None) is not None and issubclass(tp, tuple):
        return True
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and issubclass(tp, pydantic.BaseModel)


def _hints(tp: type[object]) -> list[object]:
    try:
        return list(typing.get_type_hints(tp, include_extras=True).values())
    except Exception:  # unresolvable forward references: keep what we can read
        annotations: dict[str, object] = getattr(tp, "__annotations__", {})
        return [a for a in annotations.values() if not isinstance(a, str)]


def types_in_schema(schema: object) -> list[type[object]]:
    """Return the Enum, dataclass, NamedTuple and Pydantic classes ``schema`` refers to.

    Args:
        schema: A state schema (TypedDict, dataclass, Pydantic model, ...) or any
            type expression.

    Returns:
        The classes found, each once, in discovery order.
    """
    found: list[type[object]] = []
    seen: set[int] = set()
    stack: list[object] = [schema]
    while stack:
        tp = stack.pop()
        if id(tp) in seen:
            continue
        seen.add(id(tp))
        stack.extend(typing.get_args(tp))
        origin = typing.get_origin(tp)
        if origin is not None:
            stack.append(origin)
            continue
        if not isinstance(tp, type):
            continue
        if _is_registrable(tp):
            found.append(tp)
        if _is_registrable(tp) or typing_extensions.is_typeddict(tp):
            stack.extend(_hints(tp))
    return found
