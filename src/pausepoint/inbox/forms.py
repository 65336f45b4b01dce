"""HTML forms from a question's response schema, and answers read back from them.

`form_for` turns a JSON Schema (as stored with a question) into a tree of `Field`s the
templates render; `read_form` turns the submitted form back into the answer, listing
what could not even be read (a number field holding ``"ten"``) as `AnswerProblem`s, so
they show next to their fields exactly like the schema's own problems do.

Every field's HTML name is its JSON path (``$.plan.rows``), the same path
`pausepoint.response_schema.answer_problems` reports, so a problem finds its field
by prefix (`problems_by_field`).

What gets a real input: objects with ``properties`` (nested up to `MAX_DEPTH`),
strings, numbers, integers, booleans, enums of scalars, and arrays of those scalars (one
item a line, or a checkbox per choice for an array of an enum). Anything else (no
schema, unions, tuples, maps, arrays of objects) is a JSON textarea.

The *approval shape* (see docs/inbox.md): an object schema whose required
``decision`` property is an enum holding ``"approve"`` and ``"reject"`` (``"edit"``
and others may be added). Its decision is given by one button per choice instead of a
select; the other properties are the details an edit or a rejection fills in.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import typing
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, TypedDict

from pausepoint._schema_dicts import JsonObject, resolve
from pausepoint.response_schema import AnswerProblem

if TYPE_CHECKING:
    from pausepoint.serde.plain import Json

__all__ = [
    "MAX_DEPTH",
    "Choice",
    "Field",
    "Form",
    "form_for",
    "prefilled",
    "problems_by_field",
    "read_form",
]

Kind = Literal["text", "number", "integer", "boolean", "choice", "list", "choices", "json", "group"]

MAX_DEPTH = 3
"""Objects nested deeper than this are edited as JSON: a form that deep helps nobody."""

_SCALAR_KINDS: dict[str, Kind] = {"string": "text", "number": "number", "integer": "integer"}
Choice: TypeAlias = "str | int | float | bool | None"
"""A value a ``choice`` field offers: the scalars an ``enum`` or ``const`` may hold."""


class _Left(enum.Enum):
    OUT = "left out"


_NO_VALUE: Final = _Left.OUT  # a field left empty: the key is left out of the answer


class _Common(TypedDict):
    """What every kind of field is built with."""

    path: str
    label: str
    required: bool
    nullable: bool
    description: str
    initial: str


@dataclasses.dataclass(frozen=True, slots=True)
class Field:
    """One input of an answer form (or a group of them, for an object)."""

    path: str
    """The JSON path of the value this field gives, and the input's HTML name."""
    label: str
    kind: Kind
    required: bool = False
    nullable: bool = False
    """An empty input means ``null`` (the schema allows it) rather than "left out"."""
    description: str = ""
    choices: tuple[Choice, ...] = ()
    """For ``choice``/``choices``: the allowed values, in the schema's order."""
    item_kind: Kind = "text"
    """For ``list``: how each line is read."""
    children: tuple[Field, ...] = ()
    """For ``group``: one field per property."""
    initial: str = ""
    """The input's text before anything is submitted (the schema's ``default``)."""

    def choice_text(self, choice: Choice) -> str:
        """How a choice is sent in the form: its JSON text, so types survive."""
        return json.dumps(choice)


@dataclasses.dataclass(frozen=True, slots=True)
class Form:
    """The form of one question: a root field, and the approval buttons if any."""

    root: Field
    decisions: tuple[str, ...] = ()
    """The approval shape's choices (one button each); empty for other schemas."""

    @property
    def is_approval(self) -> bool:
        """Whether the schema has the approval shape (module docstring)."""
        return bool(self.decisions)


# --------------------------------------------------------------------------- schema -> form


def form_for(schema: Mapping[str, object] | None) -> Form:
    """The form for answers to ``schema`` (None: no schema, a JSON textarea)."""
    if schema is None:
        return Form(Field("$", "Answer (JSON)", "json", required=True))
    root_schema = dict(schema)
    root = _field(root_schema, "$", "Answer", True, root_schema, 0)
    return Form(root, _decisions(root))


def _decisions(root: Field) -> tuple[str, ...]:
    if root.kind != "group":
        return ()
    decision = next((c for c in root.children if c.path == "$.decision"), None)
    if decision is None or decision.kind != "choice" or not decision.required:
        return ()
    if not {"approve", "reject"} <= set(decision.choices):
        return ()
    return tuple(c for c in decision.choices if isinstance(c, str))


def _field(
    schema: object, path: str, label: str, required: bool, root: dict[str, object], depth: int
) -> Field:
    node, nullable = _unwrap(schema, root)
    title = str(node.get("title") or label)
    common: _Common = {
        "path": path,
        "label": title,
        "required": required,
        "nullable": nullable,
        "description": str(node.get("description") or ""),
        "initial": _initial(node),
    }
    choices = _scalar_choices(node)
    if choices is not None:
        return Field(kind="choice", choices=choices, **common)
    kind = _scalar_kind(node)
    if kind is not None:
        return Field(kind=kind, **common)
    is_object = _type_of(node) == "object" and isinstance(node.get("properties"), dict)
    if is_object and depth < MAX_DEPTH:
        return _group(node, common, root, depth)
    if _type_of(node) == "array":
        listed = _list_field(node, common, root)
        if listed is not None:
            return listed
    return Field(kind="json", **common)


def _group(node: dict[str, object], common: _Common, root: dict[str, object], depth: int) -> Field:
    required = {str(name) for name in typing.cast("list[object]", node.get("required") or [])}
    props = typing.cast("dict[str, object]", node["properties"])  # checked by _field
    path = common["path"]
    children = tuple(
        _field(sub, f"{path}.{name}", name, name in required, root, depth + 1)
        for name, sub in props.items()
    )
    return Field(kind="group", children=children, **common)


def _list_field(node: dict[str, object], common: _Common, root: dict[str, object]) -> Field | None:
    if "prefixItems" in node or not isinstance(node.get("items"), dict):
        return None
    items, nullable = _unwrap(node["items"], root)
    if nullable:
        return None
    choices = _scalar_choices(items)
    if choices is not None:
        return Field(kind="choices", choices=choices, **common)
    kind = _scalar_kind(items)
    if kind is None or kind == "boolean":
        return None
    return Field(kind="list", item_kind=kind, **common)


def _unwrap(schema: object, root: dict[str, object]) -> tuple[dict[str, object], bool]:
    """The schema a field edits (``$ref`` followed), and whether ``null`` is allowed too."""
    found = schema
    for _ in range(20):  # a $ref chain; a cycle is left to the JSON textarea
        if not (isinstance(found, dict) and "$ref" in found):
            break
        ref = typing.cast("dict[str, object]", found)["$ref"]
        # the schema is JSON (it was checked when the question was asked)
        found = resolve(ref, typing.cast("JsonObject", root), "$")
    if not isinstance(found, dict):
        return {}, False
    node = dict(typing.cast("dict[str, object]", found))
    options = node.get("anyOf") or node.get("oneOf")
    if isinstance(options, list):
        rest = [o for o in typing.cast("list[object]", options) if o != {"type": "null"}]
        if len(rest) == 1 and len(typing.cast("list[object]", options)) == 2:
            # Optional[X]: edit X; an empty input gives null
            inner, _ = _unwrap(rest[0], root)
            outer = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
            return {**outer, **inner}, True
    kinds = node.get("type")
    if isinstance(kinds, list):
        others = [k for k in typing.cast("list[object]", kinds) if k != "null"]
        if len(others) == 1 and len(typing.cast("list[object]", kinds)) == 2:
            node["type"] = others[0]
            return node, True
    return node, False


def _type_of(node: dict[str, object]) -> str | None:
    kind = node.get("type")
    if isinstance(kind, str):
        return kind
    if kind is None and isinstance(node.get("properties"), dict):
        return "object"
    return None


def _scalar_kind(node: dict[str, object]) -> Kind | None:
    kind = _type_of(node)
    if kind == "boolean":
        return "boolean"
    return _SCALAR_KINDS.get(kind or "")


def _scalar_choices(node: dict[str, object]) -> tuple[Choice, ...] | None:
    if "const" in node:
        values = [node["const"]]
    elif isinstance(node.get("enum"), list):
        values = typing.cast("list[object]", node["enum"])
    else:
        return None
    scalars = tuple(v for v in values if v is None or isinstance(v, str | int | float | bool))
    return scalars if len(scalars) == len(values) else None


def _initial(node: dict[str, object]) -> str:
    if "default" not in node:
        return ""
    default = node["default"]
    if isinstance(default, str) and _type_of(node) == "string":
        return default
    return json.dumps(default)


def prefilled(form: Form, proposed: object) -> Form:
    """``form`` with its details starting from what the question proposes.

    Only for the approval shape when it offers ``"edit"``: each detail field whose
    name is a key of the question's value (an object) starts from that key's value,
    so an edit begins from the proposal instead of an empty form. Any other form, or
    a question that is not an object, is returned as it is.
    """
    if "edit" not in form.decisions or not isinstance(proposed, Mapping):
        return form
    values = typing.cast("Mapping[str, object]", proposed)
    return dataclasses.replace(form, root=_prefill_group(form.root, values))


def _prefill_group(group: Field, values: Mapping[str, object]) -> Field:
    children: list[Field] = []
    for child in group.children:
        name = child.path.rsplit(".", 1)[1]
        if child.path == "$.decision" or name not in values or child.kind == "choices":
            children.append(child)
        elif child.kind == "group" and isinstance(values[name], Mapping):
            inner = typing.cast("Mapping[str, object]", values[name])
            children.append(_prefill_group(child, inner))
        else:
            children.append(dataclasses.replace(child, initial=_text_of(child, values[name])))
    return dataclasses.replace(group, children=tuple(children))


def _text_of(field: Field, value: object) -> str:
    """How ``value`` reads in ``field``'s input (the inverse of `read_form`)."""
    if field.kind == "text" and isinstance(value, str):
        return value
    if field.kind == "choice":
        return field.choice_text(typing.cast("Choice", value))
    if field.kind == "list" and isinstance(value, list):
        items = typing.cast("list[object]", value)
        return "\n".join(i if isinstance(i, str) else json.dumps(i) for i in items)
    if field.kind == "json":
        return json.dumps(value, indent=2, ensure_ascii=False, default=repr)
    return json.dumps(value, ensure_ascii=False, default=repr)


# --------------------------------------------------------------------------- form -> answer


def read_form(form: Form, data: Mapping[str, Sequence[str]]) -> tuple[Json, list[AnswerProblem]]:
    """The answer a submitted form gives, and the inputs that could not be read.

    Args:
        form: The question's form (`form_for`).
        data: The submitted inputs: each name with all its values (a checkbox list
            sends several).

    Returns:
        The answer (``None`` when the whole form was left empty) and a problem per
        unreadable input. Whether the answer fits the schema is the answer API's
        check, not this function's.
    """
    problems: list[AnswerProblem] = []
    value = _read(form.root, data, problems)
    return (None if value is _NO_VALUE else value), problems


def _read(
    field: Field, data: Mapping[str, Sequence[str]], problems: list[AnswerProblem]
) -> Json | _Left:
    if field.kind == "group":
        out: dict[str, Json] = {}
        for child in field.children:
            got = _read(child, data, problems)
            if got is not _NO_VALUE:
                out[child.path.rsplit(".", 1)[1]] = got
        if not out and not field.required and field.path != "$":
            return None if field.nullable else _NO_VALUE
        return out
    if field.kind == "choices":
        texts = list(data.get(field.path, ()))
        return [_choice(field, t, problems) for t in texts if t]
    if field.kind == "boolean" and field.required:  # a checkbox: absent means unticked
        return bool(data.get(field.path))
    text = (data.get(field.path) or [""])[-1]
    if not text.strip():
        return None if field.nullable else _NO_VALUE
    return _read_text(field, text, problems)


def _read_text(field: Field, text: str, problems: list[AnswerProblem]) -> Json:
    match field.kind:
        case "choice":
            return _choice(field, text, problems)
        case "boolean":  # an optional boolean is a select: "true" / "false"
            return text == "true"
        case "list":
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            item = dataclasses.replace(field, kind=field.item_kind)
            return [
                _scalar(item, line, f"{field.path}[{i}]", problems) for i, line in enumerate(lines)
            ]
        case "json":
            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                problems.append(
                    AnswerProblem(field.path, "JSON text", f"{exc.msg} ({text[:40]!r})")
                )
                return None
        case _:
            return _scalar(field, text, field.path, problems)


def _scalar(field: Field, text: str, path: str, problems: list[AnswerProblem]) -> Json:
    if field.kind == "text":
        return text
    try:
        number = float(text.strip())
    except ValueError:
        number = math.nan
    if math.isnan(number) or math.isinf(number):
        problems.append(AnswerProblem(path, f"{_ARTICLE[field.kind]}", repr(text[:40])))
        return None
    if field.kind == "integer":
        if not number.is_integer():
            problems.append(AnswerProblem(path, "an integer", repr(text[:40])))
            return None
        return int(number)
    return int(number) if number.is_integer() and "." not in text else number


_ARTICLE = {"number": "a number", "integer": "an integer"}


def _choice(field: Field, text: str, problems: list[AnswerProblem]) -> Choice:
    for choice in field.choices:
        if field.choice_text(choice) == text or choice == text:
            return choice
    options = ", ".join(field.choice_text(c) for c in field.choices)
    problems.append(AnswerProblem(field.path, f"one of {options}", repr(text[:40])))
    return None


# --------------------------------------------------------------------------- problems


def problems_by_field(
    form: Form, problems: Sequence[AnswerProblem]
) -> tuple[dict[str, list[str]], list[str]]:
    """Each problem under the deepest field it is about; the rest (the whole answer's).

    Returns:
        ``{field path: [message, ...]}`` and the messages that belong to no one field.
    """
    paths = sorted(_paths(form.root), key=len, reverse=True)
    by_field: dict[str, list[str]] = {}
    general: list[str] = []
    for problem in problems:
        message = f"expected {problem.expected}, got {problem.got}"
        owner = next((p for p in paths if _within(problem.path, p)), None)
        if owner is None or (owner == "$" and form.root.kind == "group"):
            general.append(f"{problem.path}: {message}" if problem.path != "$" else message)
        else:
            by_field.setdefault(owner, []).append(_relative(problem.path, owner, message))
    return by_field, general


def _paths(field: Field) -> list[str]:
    return [field.path, *(p for child in field.children for p in _paths(child))]


def _within(path: str, prefix: str) -> bool:
    return path == prefix or (path.startswith(prefix) and path[len(prefix)] in ".[")


def _relative(path: str, owner: str, message: str) -> str:
    rest = path[len(owner) :]
    return f"{rest.lstrip('.')}: {message}" if rest else message
