"""What an answer must look like: response schemas as JSON Schema, and an answer's problems.

A question may say what shape its answer takes (issue 20: ``interrupt(value,
response_schema=...)``): a TypedDict, a dataclass, a pydantic model, or a JSON Schema
dict. `json_schema_of` turns each into one JSON Schema, the form that is stored with
the question, shown to clients (an inbox builds its form from it) and checked against
in whatever process the answer arrives: the class need not be importable there.
`answer_problems` lists every way an answer misses it, each with where, what was
expected and what came.

Only the JSON Schema keywords that constrain plain JSON values are understood (see
``KEYWORDS``); a schema using any other fails when it is made, never silently
accepts answers it means to refuse.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import operator
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from typing_extensions import TypeIs, is_typeddict

from pausepoint._schema_dicts import JsonValue, check_schema, copy_json_object, resolve

__all__ = ["AnswerProblem", "JsonSchema", "answer_problems", "json_schema_of"]

JsonSchema = dict[str, Any]
"""A JSON Schema document (draft 2020-12 keywords), as a dict."""

_MAX_PROBLEMS = 100
_NOTHING = "nothing (no value is allowed here)"


@dataclasses.dataclass(frozen=True, slots=True)
class AnswerProblem:
    """One way an answer misses its question's response schema."""

    path: str
    """Where, from ``$`` (the whole answer): ``$.items[0].qty``."""
    expected: str
    """What the schema asks for there, in words: ``an integer``, ``at most 3 items``."""
    got: str
    """What the answer holds there (shortened), or ``nothing`` for a missing key."""

    def __str__(self) -> str:
        return f"{self.path}: expected {self.expected}, got {self.got}"


# --------------------------------------------------------------------------- schemas


def json_schema_of(schema: object) -> JsonSchema:
    """The JSON Schema of a response schema: a class or a JSON Schema dict.

    Args:
        schema: A TypedDict, a dataclass or a pydantic model class (or any type hint
            made of ``str``, ``int``, ``float``, ``bool``, ``None``, ``list``,
            ``dict[str, ...]``, ``tuple``, ``Literal``, an ``Enum``, unions and
            ``Annotated``), or a JSON Schema dict.

    Returns:
        A new dict: the schema to store, show and check answers against.

    Raises:
        TypeError: A type that has no JSON form (a ``datetime``, a ``set``, a
            recursive TypedDict or dataclass: describe those with pydantic or a
            JSON Schema dict), naming where it is.
        ValueError: A JSON Schema dict that is malformed or uses a keyword this
            module does not check, naming where it is.
    """
    if isinstance(schema, bool):  # JSON Schema's own: true takes anything, false nothing
        return {} if schema else {"not": {}}
    if isinstance(schema, Mapping):
        copied = copy_json_object(typing.cast("Mapping[object, object]", schema), "$")
        check_schema(copied, "$", copied)
        return copied
    pydantic_schema = _pydantic_schema(schema)
    if pydantic_schema is not None:
        check_schema(pydantic_schema, "$", pydantic_schema)
        return pydantic_schema
    return _of_hint(schema, "$", ())


def _pydantic_schema(schema: object) -> JsonSchema | None:
    method = getattr(schema, "model_json_schema", None) if isinstance(schema, type) else None
    if not callable(method):
        return None
    made = typing.cast("Mapping[object, object]", method())  # pydantic's: a dict[str, Any]
    return copy_json_object(made, "$")


def _of_hint(hint: object, where: str, seen: tuple[type[object], ...]) -> JsonSchema:
    if hint is Any or hint is object:
        return {}
    simple = _SIMPLE.get(hint)
    if simple is not None:
        return dict(simple)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    made = _of_special(hint, origin, args, where, seen)
    if made is None:
        made = _of_container(hint, origin, args, where, seen)
    if made is not None:
        return made
    if _is_record_class(hint):
        if hint in seen:
            raise TypeError(
                f"{hint.__qualname__} refers to itself (at {where}): describe a recursive "
                "answer with a pydantic model or a JSON Schema dict"
            )
        return _of_record(hint, where, (*seen, hint))
    if _pydantic_schema(hint) is not None:
        raise TypeError(
            f"a pydantic model inside another type (at {where}): use the model itself, "
            "or a pydantic model holding it, as the response schema"
        )
    raise TypeError(f"{hint!r} (at {where}) has no JSON form an answer could take")


def _is_record_class(hint: object) -> TypeIs[type[object]]:
    """A TypedDict or dataclass class (not an instance)."""
    return isinstance(hint, type) and (is_typeddict(hint) or dataclasses.is_dataclass(hint))


def _of_special(
    hint: object,
    origin: object,
    args: tuple[object, ...],
    where: str,
    seen: tuple[type[object], ...],
) -> JsonSchema | None:
    """An Annotated, Literal, union or Enum hint's schema; None for any other hint."""
    if origin is typing.Annotated:
        return _of_hint(args[0], where, seen)
    if origin is Literal:
        return {"enum": [_json_literal(a, where) for a in args]}
    if origin is typing.Union or origin is types.UnionType:
        return {"anyOf": [_of_hint(a, where, seen) for a in args]}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [_json_literal(m.value, where) for m in hint]}
    return None


def _of_container(
    hint: object,
    origin: object,
    args: tuple[object, ...],
    where: str,
    seen: tuple[type[object], ...],
) -> JsonSchema | None:
    """A list, tuple or dict hint's schema; None for any other hint."""
    if origin in _LISTS or hint in _LISTS:
        if not args:
            return {"type": "array"}
        return {"type": "array", "items": _of_hint(args[0], f"{where}[]", seen)}
    if origin is tuple or hint is tuple:
        return _of_tuple(args, where, seen)
    if origin in _MAPPINGS or hint in _MAPPINGS:
        return _of_mapping(args, where, seen)
    return None


_LISTS: tuple[object, ...] = (list, Sequence)
_MAPPINGS: tuple[object, ...] = (dict, Mapping)
_SIMPLE: dict[object, JsonSchema] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    None: {"type": "null"},
    type(None): {"type": "null"},
}


def _json_literal(value: object, where: str) -> JsonValue:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"the choice {value!r} (at {where}) is not a JSON value")


def _of_tuple(args: tuple[object, ...], where: str, seen: tuple[type[object], ...]) -> JsonSchema:
    if not args:
        return {"type": "array"}
    if len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": _of_hint(args[0], f"{where}[]", seen)}
    items = [_of_hint(a, f"{where}[{i}]", seen) for i, a in enumerate(args)]
    return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}


def _of_mapping(args: tuple[object, ...], where: str, seen: tuple[type[object], ...]) -> JsonSchema:
    if not args:
        return {"type": "object"}
    if args[0] is not str:
        raise TypeError(f"a mapping with {args[0]!r} keys (at {where}): JSON keys are strings")
    return {"type": "object", "additionalProperties": _of_hint(args[1], f"{where}.*", seen)}


def _of_record(cls: type[object], where: str, seen: tuple[type[object], ...]) -> JsonSchema:
    hints = typing.get_type_hints(cls, include_extras=True)
    if dataclasses.is_dataclass(cls):
        fields = [f for f in dataclasses.fields(cls) if f.init]
        names = [f.name for f in fields]
        required = [
            f.name
            for f in fields
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
    else:
        names = list(hints)
        required = [k for k in names if _required_key(cls, k, hints[k])]
    out: JsonSchema = {
        "title": cls.__name__,
        "type": "object",
        "properties": {
            n: _of_hint(_unwrap_required(hints[n]), f"{where}.{n}", seen) for n in names
        },
        "additionalProperties": False,
    }
    if required:
        out["required"] = required
    return out


def _required_key(cls: type[object], key: str, hint: object) -> bool:
    """Whether a TypedDict needs ``key``: ``Required``/``NotRequired`` first, then ``total``.

    Read from the evaluated hint too: under ``from __future__ import annotations`` the
    class's ``__required_keys__`` cannot see a ``NotRequired`` written as text.
    """
    marker = getattr(typing.get_origin(hint), "_name", None)
    if marker == "Required":
        return True
    if marker == "NotRequired":
        return False
    return key in getattr(cls, "__required_keys__", (key,))


def _unwrap_required(hint: object) -> object:
    # Required[X] / NotRequired[X] / ReadOnly[X]: the key's presence is in __required_keys__.
    origin = typing.get_origin(hint)
    if origin is not None and getattr(origin, "_name", None) in (
        "Required",
        "NotRequired",
        "ReadOnly",
    ):
        return _unwrap_required(typing.get_args(hint)[0])
    return hint


# --------------------------------------------------------------------------- answers


def answer_problems(answer: object, schema: JsonSchema) -> list[AnswerProblem]:
    """Every way ``answer`` misses ``schema`` (at most 100); empty when it fits.

    Args:
        answer: The answer as sent: JSON-like values (dicts with string keys, lists or
            tuples, str, int, float, bool, None); a dataclass or pydantic model
            instance is read as its fields.
        schema: A JSON Schema from [`json_schema_of`][pausepoint.response_schema.json_schema_of].
    """
    found: list[AnswerProblem] = []
    _problems(_plain(answer), schema, "$", schema, found)
    return found[:_MAX_PROBLEMS]


def _plain(value: object) -> object:
    """A model or dataclass instance as its fields, an Enum member as its value."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and _is_instance(value):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and _is_instance(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    return value


def _is_instance(value: object) -> bool:
    return not isinstance(value, type)  # a class has model_dump or fields too


def _problems(
    value: object,
    schema: JsonSchema | bool,
    path: str,
    root: JsonSchema,
    found: list[AnswerProblem],
) -> None:
    if len(found) >= _MAX_PROBLEMS or schema is True:
        return
    if schema is False:
        found.append(AnswerProblem(path, _NOTHING, _shown(value)))
        return
    if "$ref" in schema:
        # check_schema resolved the pointer and refused one that points at neither an
        # object nor a boolean: what it points at reads as a schema.
        target = typing.cast("JsonSchema | bool", resolve(schema["$ref"], root, path))
        _problems(value, target, path, root, found)
    if "type" in schema and not _has_type(value, schema["type"]):
        found.append(AnswerProblem(path, _describe(schema, root), _shown(value)))
        return  # the type's own keywords would only repeat it
    _value_problems(value, schema, path, root, found)
    if isinstance(value, dict):
        _object_problems(typing.cast("dict[object, object]", value), schema, path, root, found)
    elif isinstance(value, list | tuple):
        _array_problems(list(typing.cast("Sequence[object]", value)), schema, path, root, found)
    elif isinstance(value, str):
        _string_problems(value, schema, path, found)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _number_problems(value, schema, path, found)


def _value_problems(
    value: object, schema: JsonSchema, path: str, root: JsonSchema, found: list[AnswerProblem]
) -> None:
    """The keywords that hold for a value of any type: const, enum, the combinations."""
    if "const" in schema and not _same(value, schema["const"]):
        found.append(AnswerProblem(path, f"exactly {_json(schema['const'])}", _shown(value)))
    if "enum" in schema and not any(_same(value, v) for v in schema["enum"]):
        found.append(AnswerProblem(path, _one_of(schema["enum"]), _shown(value)))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            _choices(value, schema, key, path, root, found)
    for sub in schema.get("allOf", ()):
        _problems(value, sub, path, root, found)
    if "not" in schema and _fits(value, schema["not"], root):
        never = schema["not"] in (True, {})  # json_schema_of(False): no answer fits
        words = _NOTHING if never else f"not {_describe(schema['not'], root)}"
        found.append(AnswerProblem(path, words, _shown(value)))


def _choices(
    value: object,
    schema: JsonSchema,
    key: str,
    path: str,
    root: JsonSchema,
    found: list[AnswerProblem],
) -> None:
    fitting = sum(1 for sub in schema[key] if _fits(value, sub, root))
    if fitting == 0:
        options = " or ".join(_describe(sub, root) for sub in schema[key])
        found.append(AnswerProblem(path, options, _shown(value)))
    elif key == "oneOf" and fitting > 1:
        found.append(AnswerProblem(path, f"exactly one of {len(schema[key])} forms", _shown(value)))


def _object_problems(
    value: dict[object, object],
    schema: JsonSchema,
    path: str,
    root: JsonSchema,
    found: list[AnswerProblem],
) -> None:
    props: dict[str, JsonSchema | bool] = schema.get("properties", {})
    for key in schema.get("required", ()):
        if key not in value:
            found.append(
                AnswerProblem(f"{path}.{key}", _describe(props.get(key, True), root), "nothing")
            )
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        here = f"{path}.{key}"
        if not isinstance(key, str):
            found.append(AnswerProblem(here, "a string key", _shown(key)))
        elif key in props:
            _problems(item, props[key], here, root, found)
        elif extra is False:
            known = ", ".join(repr(k) for k in props) or "none"
            found.append(AnswerProblem(here, f"no such key (known keys: {known})", _shown(item)))
        else:
            _problems(item, extra, here, root, found)
    _count(len(value), schema, "Properties", "key", path, found)


def _array_problems(
    value: list[object], schema: JsonSchema, path: str, root: JsonSchema, found: list[AnswerProblem]
) -> None:
    prefix: list[JsonSchema | bool] = schema.get("prefixItems", [])
    for i, item in enumerate(value):
        sub = prefix[i] if i < len(prefix) else schema.get("items", True)
        _problems(item, sub, f"{path}[{i}]", root, found)
    _count(len(value), schema, "Items", "item", path, found)
    if schema.get("uniqueItems") and any(
        _same(a, b) for i, a in enumerate(value) for b in value[i + 1 :]
    ):
        found.append(AnswerProblem(path, "items that are all different", _shown(value)))


def _string_problems(value: str, schema: JsonSchema, path: str, found: list[AnswerProblem]) -> None:
    _count(len(value), schema, "Length", "character", path, found)
    pattern = schema.get("pattern")
    if pattern is not None and re.search(pattern, value) is None:
        found.append(AnswerProblem(path, f"text matching {pattern!r}", _shown(value)))


_BOUNDS: tuple[tuple[str, Callable[[float, float], bool], str], ...] = (
    ("minimum", operator.ge, "at least"),
    ("maximum", operator.le, "at most"),
    ("exclusiveMinimum", operator.gt, "more than"),
    ("exclusiveMaximum", operator.lt, "less than"),
)


def _number_problems(
    value: float, schema: JsonSchema, path: str, found: list[AnswerProblem]
) -> None:
    for key, holds, words in _BOUNDS:
        if key in schema and not holds(value, schema[key]):
            found.append(AnswerProblem(path, f"a number {words} {schema[key]}", _shown(value)))
    step = schema.get("multipleOf")
    if step is not None and not _is_multiple(value, step):
        found.append(AnswerProblem(path, f"a multiple of {step}", _shown(value)))


def _count(
    n: int, schema: JsonSchema, suffix: str, unit: str, path: str, found: list[AnswerProblem]
) -> None:
    low, high = schema.get(f"min{suffix}"), schema.get(f"max{suffix}")
    if low is not None and n < low:
        found.append(AnswerProblem(path, f"at least {_plural(low, unit)}", _plural(n, unit)))
    if high is not None and n > high:
        found.append(AnswerProblem(path, f"at most {_plural(high, unit)}", _plural(n, unit)))


def _fits(value: object, schema: JsonSchema | bool, root: JsonSchema) -> bool:
    probe: list[AnswerProblem] = []
    _problems(value, schema, "$", root, probe)
    return not probe


def _has_type(value: object, wanted: str | list[str]) -> bool:
    return any(_is_type(value, name) for name in ([wanted] if isinstance(wanted, str) else wanted))


def _is_type(value: object, name: str) -> bool:
    return _IS_TYPE[name](value)


def _is_integer(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value) and value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


_IS_TYPE: dict[str, Callable[[object], bool]] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": _is_integer,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list | tuple),
    "object": lambda v: isinstance(v, dict),
}


def _same(a: object, b: object) -> bool:
    """JSON equality: ``1 == 1.0`` but ``True != 1``; lists and objects compared deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    if isinstance(a, list | tuple | dict) or isinstance(b, list | tuple | dict):
        return False
    return a == b


def _is_multiple(value: float, step: float) -> bool:
    # As JSON Schema validators commonly do (and the jsonschema package): exact, so a
    # float like 0.3 is not a multiple of 0.1; give integer steps for exact answers.
    if isinstance(step, float):
        quotient = value / step
        return math.isfinite(quotient) and int(quotient) == quotient
    return value % step == 0


def _json(value: object) -> str:
    import json

    return json.dumps(value, sort_keys=True, default=repr)


def _shown(value: object) -> str:
    text = _json(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def _one_of(values: list[JsonValue]) -> str:
    return "one of " + ", ".join(_json(v) for v in values)


_ARTICLES = {
    "string": "a string", "integer": "an integer", "number": "a number",
    "boolean": "true or false", "null": "null", "array": "a list", "object": "an object",
}  # fmt: skip


def _describe(schema: JsonSchema | bool, root: JsonSchema) -> str:
    """A schema in a few words, for an ``expected`` text."""
    if isinstance(schema, bool):
        return "any value" if schema else "nothing"
    if "$ref" in schema:
        target = resolve(schema["$ref"], root, "$")
        return _describe(target, root) if isinstance(target, dict | bool) else "a value"
    if "const" in schema:
        return f"exactly {_json(schema['const'])}"
    if "enum" in schema:
        return _one_of(schema["enum"])
    return _describe_type(schema, root)


def _describe_type(schema: JsonSchema, root: JsonSchema) -> str:
    wanted = schema.get("type")
    if wanted is not None:
        names: list[str] = [wanted] if isinstance(wanted, str) else wanted
        text = " or ".join(_ARTICLES[n] for n in names)
        title = schema.get("title")
        return f"{text} ({title})" if title and "object" in names else text
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_describe(sub, root) for sub in schema[key])
    return "a value of the schema's form"
