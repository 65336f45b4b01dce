"""State schemas: which keys a graph has, how each key folds updates, and coercion.

A schema is a TypedDict (total or not), a dataclass, or a Pydantic v2 model (when
pydantic is installed; it is never imported otherwise). ``Annotated[T, reducer]``
gives a key a reducer channel; other keys keep their last value.
"""

# Schemas are user types inspected at run time; pyright cannot know their members.
# pyright: reportUnknownArgumentType=false, reportUnknownVariableType=false
# pyright: reportUnknownMemberType=false

from __future__ import annotations

import dataclasses
import sys
import typing
from collections.abc import Callable, Mapping
from typing import Any, get_type_hints

import typing_extensions

from pausepoint.channels import BinaryOperatorAggregate, Channel, LastValue

__all__ = ["SchemaInfo", "update_as_pairs"]


@dataclasses.dataclass(frozen=True, slots=True)
class SchemaInfo:
    """What the engine needs to know about one schema."""

    schema: Any
    keys: tuple[str, ...]
    channels: Mapping[str, Channel]
    kind: str  # "typeddict" | "dataclass" | "pydantic" | "dict"
    is_dict: bool = dataclasses.field(init=False)
    """Whether values of this schema are plain dicts (a TypedDict, or ``dict``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_dict", self.kind in ("typeddict", "dict"))

    @classmethod
    def of(cls, schema: Any) -> SchemaInfo:
        """Analyse ``schema``; raise ``TypeError`` for a type that is not a schema."""
        kind = _kind(schema)
        hints = _hints(schema) if kind != "dict" else {}
        channels = {key: _channel_for(key, hint) for key, hint in hints.items()}
        return cls(schema, tuple(hints), channels, kind)

    def coerce(self, values: Mapping[str, Any]) -> Any:
        """Build the value a node receives: the schema's type filled with ``values``.

        Raises:
            Exception: What the schema's constructor raises (pydantic's
                ``ValidationError``, a dataclass's ``TypeError``), as LangGraph lets
                it propagate, with a note naming the schema.
        """
        if self.is_dict:
            return dict(values)
        try:
            return self.schema(**values)
        except Exception as exc:  # invalid state for a dataclass or model
            exc.add_note(
                f"(pausepoint) the state a node reads does not fit {self.schema.__name__}: "
                "check the graph's input and the updates nodes return"
            )
            raise

    def input_pairs(self, value: Any) -> list[tuple[str, Any]]:
        """The ``(key, value)`` writes of a graph input given as dict or schema object."""
        pairs = update_as_pairs(value)
        if self.kind == "dict":
            return pairs
        return [(k, v) for k, v in pairs if k in self.channels]


def _kind(schema: Any) -> str:
    if schema is dict or schema is None:
        return "dict"
    if typing_extensions.is_typeddict(schema):
        return "typeddict"
    if dataclasses.is_dataclass(schema):
        return "dataclass"
    if _is_pydantic_class(schema):
        return "pydantic"
    if isinstance(schema, type) and getattr(schema, "__annotations__", None):
        return "typeddict"  # a plain annotated class: read like a TypedDict
    raise TypeError(
        f"{schema!r} is not a state schema: use a TypedDict, a dataclass or a pydantic model"
    )


def _is_pydantic_class(schema: Any) -> bool:
    pydantic = sys.modules.get("pydantic")
    return (
        pydantic is not None and isinstance(schema, type) and issubclass(schema, pydantic.BaseModel)
    )


def _hints(schema: Any) -> dict[str, Any]:
    if _is_pydantic_class(schema):
        return {name: f.rebuild_annotation() for name, f in schema.model_fields.items()}
    hints = get_type_hints(schema, include_extras=True)
    if dataclasses.is_dataclass(schema):
        names = [f.name for f in dataclasses.fields(schema)]
        return {name: hints.get(name, Any) for name in names}
    return {k: v for k, v in hints.items() if not k.startswith("__")}


def _channel_for(key: str, hint: Any) -> Channel:
    reducer = _reducer(hint)
    if reducer is None:
        return LastValue(key)
    base = typing.get_args(hint)[0]
    return BinaryOperatorAggregate(key, reducer, base)


def _reducer(hint: Any) -> Callable[[Any, Any], Any] | None:
    # Unwrap Required[...] / NotRequired[...] / ReadOnly[...] around Annotated.
    while typing.get_origin(hint) in _WRAPPERS:
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) is not typing.Annotated:
        return None
    for meta in reversed(hint.__metadata__):
        if callable(meta) and _takes_two(meta):
            return meta
    return None


def _takes_two(fn: Callable[..., Any]) -> bool:
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True  # builtins like operator.add have no signature: trust them
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(positional) == 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


_WRAPPERS = {typing.Required, typing.NotRequired}
if sys.version_info >= (3, 13):  # pragma: no cover - version dependent
    _WRAPPERS.add(typing.ReadOnly)  # type: ignore[attr-defined]


def update_as_pairs(update: Any) -> list[tuple[str, Any]]:
    """A node's (or input's) update as ``(key, value)`` pairs.

    Accepts a dict, a list of ``(key, value)`` tuples, a dataclass or a pydantic
    model instance (its set fields). ``None`` is no update. Anything else becomes
    ``("__root__", value)``, which only a root-typed graph could take.
    """
    if update is None:
        return []
    if isinstance(update, dict):
        return list(update.items())  # pyright: ignore[reportUnknownArgumentType]
    if isinstance(update, (list, tuple)) and all(
        isinstance(t, tuple) and len(t) == 2 and isinstance(t[0], str)  # pyright: ignore[reportUnknownArgumentType]
        for t in update  # pyright: ignore[reportUnknownVariableType]
    ):
        return list(update)  # pyright: ignore[reportUnknownArgumentType]
    if dataclasses.is_dataclass(update) and not isinstance(update, type):
        return [(f.name, getattr(update, f.name)) for f in dataclasses.fields(update)]
    if _is_pydantic_class(type(update)):
        model: Any = update
        fields_set: set[str] = model.model_fields_set
        names: list[str] = list(type(model).model_fields)
        return [
            (name, getattr(model, name))
            for name in names
            if name in fields_set or getattr(model, name) is not None
        ]
    return [("__root__", update)]
