"""JSON Schema dicts as `pausepoint.response_schema` takes them: copied, checked, resolved.

Only the keywords that constrain plain JSON values are understood (``KEYWORDS``);
``NOTES`` only describe. A schema using any other keyword is refused when it is made.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping
from typing import TypeAlias

__all__ = [
    "BOUNDED",
    "KEYWORDS",
    "NOTES",
    "TYPES",
    "JsonObject",
    "JsonValue",
    "check_schema",
    "copy_json",
    "copy_json_object",
    "resolve",
]

JsonValue: TypeAlias = "str | int | float | bool | list[JsonValue] | dict[str, JsonValue] | None"
"""A JSON value as `json.loads` makes it (lists, dicts with string keys, scalars)."""
JsonObject: TypeAlias = "dict[str, JsonValue]"
"""A JSON object: a schema dict before it is checked, or the root a ``$ref`` points into."""

# Keywords that only describe: kept, never checked.
NOTES = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "default", "examples"}
    | {"deprecated", "readOnly", "writeOnly", "format", "discriminator"}
)
# Keywords checked by _problems, and where they hold subschemas.
_ONE_SCHEMA = frozenset({"items", "not", "additionalProperties"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions"})
BOUNDED = frozenset(
    {"minProperties", "maxProperties", "minItems", "maxItems", "minLength", "maxLength"}
    | {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)
KEYWORDS = (
    _ONE_SCHEMA
    | _SCHEMA_LISTS
    | _SCHEMA_MAPS
    | BOUNDED
    | {"type", "enum", "const", "required", "uniqueItems", "pattern", "$ref"}
)
TYPES = frozenset({"string", "integer", "number", "boolean", "null", "array", "object"})


def copy_json(value: object, where: str) -> JsonValue:
    """A deep copy of a JSON value; ``ValueError`` naming where it is not one."""
    if isinstance(value, Mapping):
        return copy_json_object(typing.cast("Mapping[object, object]", value), where)
    if isinstance(value, list | tuple):
        return [copy_json(v, f"{where}[{i}]") for i, v in enumerate(value)]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise ValueError(f"{value!r} at {where} is not a JSON value")


def copy_json_object(value: Mapping[object, object], where: str) -> JsonObject:
    """A deep copy of a JSON object; ``ValueError`` naming where it is not one."""
    out: JsonObject = {}
    for k, v in value.items():
        if not isinstance(k, str):
            raise ValueError(f"JSON Schema keys are strings; {k!r} at {where} is not")
        out[k] = copy_json(v, f"{where}.{k}")
    return out


def check_schema(schema: object, where: str, root: JsonObject) -> None:
    """Raise ``ValueError`` naming where ``schema`` is malformed or uses an unknown keyword."""
    if isinstance(schema, bool):
        return  # true: anything; false: nothing
    if not isinstance(schema, dict):
        raise ValueError(f"a JSON Schema is an object or a boolean; {schema!r} at {where} is not")
    for key, sub in typing.cast("dict[str, object]", schema).items():
        if key in NOTES:
            continue
        if key not in KEYWORDS:
            raise ValueError(
                f"the JSON Schema keyword {key!r} (at {where}) is not supported; supported: "
                f"{', '.join(sorted(KEYWORDS))}"
            )
        for here, item in _subschemas(key, sub, where):
            check_schema(item, here, root)
        _check_value(key, sub, where, root)


def _subschemas(key: str, sub: object, where: str) -> list[tuple[str, object]]:
    """The schemas that keyword ``key`` holds, with where each is."""
    here = f"{where}.{key}"
    if key in _ONE_SCHEMA:
        return [(here, sub)]
    if key in _SCHEMA_LISTS:
        if not isinstance(sub, list) or not sub:
            raise ValueError(f"{key} (at {where}) takes a non-empty list of schemas")
        return [(f"{here}[{i}]", item) for i, item in enumerate(typing.cast("list[object]", sub))]
    if key in _SCHEMA_MAPS:
        if not isinstance(sub, dict):
            raise ValueError(f"{key} (at {where}) takes an object of schemas")
        return [(f"{here}.{n}", item) for n, item in typing.cast("dict[str, object]", sub).items()]
    return []


def _check_value(key: str, sub: object, where: str, root: JsonObject) -> None:
    """Raise ``ValueError`` unless keyword ``key``'s own value has the right form."""
    problem: str | None = None
    if key == "type":
        names: list[object] = typing.cast("list[object]", sub) if isinstance(sub, list) else [sub]
        if not names or any(n not in TYPES for n in names):
            problem = f"must name JSON types: {sorted(TYPES)}"
    elif key == "pattern":  # before the branches that narrow ``sub`` to a list
        problem = _pattern_problem(sub)
    elif key == "$ref":
        target = resolve(sub, root, where)
        if not isinstance(target, dict | bool):  # the answer check reads it as a schema
            problem = (
                f"must point at a schema (an object or a boolean); {sub!r} points at {target!r}"
            )
    elif key == "required":
        if not isinstance(sub, list) or not all(
            isinstance(k, str) for k in typing.cast("list[object]", sub)
        ):
            problem = "takes a list of key names"
    elif key == "enum" and not isinstance(sub, list):
        problem = "takes a list of values"
    elif key in BOUNDED and (isinstance(sub, bool) or not isinstance(sub, int | float)):
        problem = "takes a number"
    if problem is not None:
        raise ValueError(f"{key} (at {where}) {problem}")


def _pattern_problem(sub: object) -> str | None:
    if not isinstance(sub, str):
        return "takes a regular expression as text"
    try:
        re.compile(sub)
    except re.error as exc:
        return f"is not a regular expression: {exc}"
    return None


def resolve(ref: object, root: JsonObject, where: str) -> JsonValue:
    """The schema a local ``$ref`` (``#/$defs/Name``, ``#/definitions/Name``) points at."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise ValueError(f"$ref (at {where}) must point inside the schema (#/...); got {ref!r}")
    node: JsonValue = root
    for raw in ref[1:].split("/")[1:] if ref != "#" else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise ValueError(f"$ref {ref!r} (at {where}) points at nothing")
        node = node[part]
    return node
