"""State schemas: which keys a graph has, how each key folds updates, and coercion.

A schema is a TypedDict (total or not), a dataclass, or a Pydantic v2 model (when
pydantic is installed; it is never imported otherwise). ``Annotated[T, reducer]``
gives a key a reducer channel; other keys keep their last value.

A type with no keys (``int``, ``dict``, ``Annotated[list, operator.add]``) makes
the whole state one value, as in LangGraph: one ``__root__`` channel, which nodes
read and return bare (kind ``"root"``).
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

from pausepoint._updates import is_pydantic_class as _is_pydantic_class
from pausepoint._updates import update_as_pairs
from pausepoint.channels import BinaryOperatorAggregate, Channel, LastValue
from pausepoint.constants import ROOT
from pausepoint.managed import ManagedValue

__all__ = ["SchemaInfo", "declared_types", "refuse_managed_io", "update_as_pairs"]


@dataclasses.dataclass(frozen=True, slots=True)
class SchemaInfo:
    """What the engine needs to know about one schema."""

    schema: Any
    keys: tuple[str, ...]
    channels: Mapping[str, Channel]
    kind: str  # "typeddict" | "dataclass" | "pydantic" | "dict" | "root"
    managed: Mapping[str, type[ManagedValue]] = dataclasses.field(
        default_factory=dict[str, type[ManagedValue]]
    )
    """Managed keys (``RemainingSteps``...): given to nodes, never channels or stored."""
    is_dict: bool = dataclasses.field(init=False)
    """Whether values of this schema are plain dicts (a TypedDict, or any keys)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_dict", self.kind in ("typeddict", "dict"))

    @classmethod
    def of(cls, schema: object) -> SchemaInfo:
        """Analyse ``schema``; raise ``TypeError`` for a type that is not a schema."""
        kind = _kind(schema)
        if kind == "root":
            return cls(schema, (ROOT,), {ROOT: _channel_for(ROOT, schema)}, kind)
        hints = _hints(schema) if kind != "dict" else {}
        managed = {k: m for k, hint in hints.items() if (m := _managed(hint)) is not None}
        keys = tuple(k for k in hints if k not in managed)
        channels = {key: _channel_for(key, hints[key]) for key in keys}
        return cls(schema, keys, channels, kind, managed)

    def with_managed(self, values: dict[str, object], steps_left: int | None) -> dict[str, object]:
        """``values`` plus this schema's managed values for a step (when it is known)."""
        if self.managed and steps_left is not None:
            for key, manager in self.managed.items():
                values[key] = manager.value(steps_left)
        return values

    def coerce(self, values: Mapping[str, object]) -> Any:
        """Build the value a node receives: the schema's type filled with ``values``.

        Raises:
            Exception: What the schema's constructor raises (pydantic's
                ``ValidationError``, a dataclass's ``TypeError``), as LangGraph lets
                it propagate, with a note naming the schema.
        """
        if self.is_dict:
            return dict(values)
        if self.kind == "root":
            return values.get(ROOT)
        try:
            return self.schema(**values)
        except Exception as exc:  # invalid state for a dataclass or model
            exc.add_note(
                f"(pausepoint) the state a node reads does not fit {self.schema.__name__}: "
                "check the graph's input and the updates nodes return"
            )
            raise

    def input_pairs(self, value: object) -> list[tuple[str, Any]]:
        """The ``(key, value)`` writes of a graph input given as dict or schema object."""
        if self.kind == "root":
            return [] if value is None else [(ROOT, value)]
        pairs = update_as_pairs(value)
        if self.kind == "dict":
            return pairs
        return [(k, v) for k, v in pairs if k in self.channels]


def declared_types(info: SchemaInfo) -> dict[str, object]:
    """The declared type of each key of a schema (none for a dict or one-value state)."""
    if info.kind == "root":
        return {ROOT: info.schema}
    if info.kind == "dict":
        return {}
    return {k: v for k, v in _hints(info.schema).items() if k in info.channels}


def _kind(schema: object) -> str:
    if schema is None:  # the functional API's state: any keys, as written
        return "dict"
    if typing_extensions.is_typeddict(schema):
        return "typeddict"
    if dataclasses.is_dataclass(schema):
        return "dataclass"
    if _is_pydantic_class(schema):
        return "pydantic"
    if isinstance(schema, type) and getattr(schema, "__annotations__", None):
        return "typeddict"  # a plain annotated class: read like a TypedDict
    if _is_value_type(schema):
        return "root"
    raise TypeError(
        f"{schema!r} is not a state schema: use a TypedDict, a dataclass, a pydantic "
        "model, or a type for a one-value state (list, Annotated[list, operator.add])"
    )


def _is_value_type(schema: object) -> bool:
    """A type without keys: a class with no annotations, a generic alias, ``Annotated``."""
    if typing.get_origin(schema) is not None:  # list[str], Annotated[list, add], ...
        return True
    return isinstance(schema, type) and not getattr(schema, "__annotations__", None)


def _hints(schema: Any) -> dict[str, object]:
    if _is_pydantic_class(schema):
        return {name: f.rebuild_annotation() for name, f in schema.model_fields.items()}
    hints = get_type_hints(schema, include_extras=True)
    if dataclasses.is_dataclass(schema):
        names = [f.name for f in dataclasses.fields(schema)]
        return {name: hints.get(name, Any) for name in names}
    return {k: v for k, v in hints.items() if not k.startswith("__")}


def refuse_managed_io(schema: object, state_schema: object) -> None:
    """Refuse managed keys in an input or output schema (as LangGraph does).

    A managed value is computed by the run for each step: it can be neither given
    as input nor returned. The state schema itself may declare them.

    Raises:
        ValueError: ``schema`` (not the state schema) declares managed keys.
    """
    try:
        if schema is state_schema or _kind(schema) in ("root", "dict"):
            return
    except TypeError:  # not a schema: compile() says so, with the graph's other problems
        return
    names = [k for k, hint in _hints(schema).items() if _managed(hint) is not None]
    if names:
        raise ValueError(
            f"Invalid managed channels detected in {getattr(schema, '__name__', '')}: "
            f"{', '.join(names)}. Managed channels are not permitted in Input/Output schema."
        )


def _channel_for(key: str, hint: object) -> Channel:
    reducer = _reducer(hint)
    if reducer is None:
        return LastValue(key)
    base = typing.get_args(hint)[0]
    return BinaryOperatorAggregate(key, reducer, base)


def _managed(hint: Any) -> type[ManagedValue] | None:
    """The managed value a key declares (``Annotated[int, RemainingStepsManager]``)."""
    while typing.get_origin(hint) in _WRAPPERS:
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) is not typing.Annotated:
        return None
    last = hint.__metadata__[-1]
    return last if isinstance(last, type) and issubclass(last, ManagedValue) else None


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


def _takes_two(fn: Callable[..., object]) -> bool:
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True  # builtins like operator.add have no signature: trust them
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    # Two positional parameters, as LangGraph counts them (add_messages's have
    # defaults), or two required ones followed by optional ones.
    return (
        len(positional) == 2
        or len(required) == 2
        or any(p.kind is p.VAR_POSITIONAL for p in params)
    )


_WRAPPERS = {typing.Required, typing.NotRequired}
if sys.version_info >= (3, 13):  # pragma: no cover - version dependent
    _WRAPPERS.add(typing.ReadOnly)  # type: ignore[attr-defined]
