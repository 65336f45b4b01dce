"""Forms made from response schemas, and answers read back from them (no server)."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, NotRequired, TypedDict

import pytest

from pausepoint.inbox.forms import form_for, problems_by_field, read_form
from pausepoint.response_schema import answer_problems, json_schema_of


class Plan(TypedDict, total=False):
    rows: int
    table: str


class Review(TypedDict):
    decision: Literal["approve", "edit", "reject"]
    reason: NotRequired[str]
    plan: NotRequired[Plan]


@dataclasses.dataclass
class Order:
    item: str
    qty: int
    price: float
    gift: bool
    colour: Literal["red", "blue"]
    tags: list[str]
    sizes: list[Literal["S", "M", "L"]]
    note: str | None = None
    urgent: bool | None = None
    extra: dict[str, int] | None = None


def kinds(schema: Any) -> dict[str, str]:
    form = form_for(json_schema_of(schema))
    return {f.path: f.kind for f in form.root.children}


def test_each_json_type_gets_its_input() -> None:
    assert kinds(Order) == {
        "$.item": "text",
        "$.qty": "integer",
        "$.price": "number",
        "$.gift": "boolean",
        "$.colour": "choice",
        "$.tags": "list",
        "$.sizes": "choices",
        "$.note": "text",
        "$.urgent": "boolean",
        "$.extra": "json",
    }


def test_required_and_nullable_come_from_the_schema() -> None:
    fields = {f.path: f for f in form_for(json_schema_of(Order)).root.children}
    assert fields["$.item"].required
    assert not fields["$.item"].nullable
    assert not fields["$.note"].required
    assert fields["$.note"].nullable


def test_no_schema_or_an_unusual_one_is_a_json_textarea() -> None:
    assert form_for(None).root.kind == "json"
    assert form_for({"type": "array", "items": {"type": "object"}}).root.kind == "json"
    assert form_for({"anyOf": [{"type": "string"}, {"type": "integer"}]}).root.kind == "json"


def test_a_scalar_schema_is_one_field_at_the_root() -> None:
    form = form_for({"type": "integer", "minimum": 1})
    assert (form.root.path, form.root.kind) == ("$", "integer")
    assert read_form(form, {"$": ["3"]}) == (3, [])


def test_refs_are_followed() -> None:
    schema = {
        "type": "object",
        "properties": {"plan": {"$ref": "#/$defs/Plan"}},
        "$defs": {"Plan": {"type": "object", "properties": {"rows": {"type": "integer"}}}},
    }
    (plan,) = form_for(schema).root.children
    assert plan.kind == "group"
    assert [c.path for c in plan.children] == ["$.plan.rows"]


def test_deep_objects_become_json() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "string"}}}
    for _ in range(4):
        schema = {"type": "object", "properties": {"in": schema}}
    form = form_for(schema)
    field = form.root
    depth = 0
    while field.kind == "group":
        field = field.children[0]
        depth += 1
    assert field.kind == "json"
    assert depth == 3


def test_the_approval_shape_gets_decision_buttons() -> None:
    form = form_for(json_schema_of(Review))
    assert form.is_approval
    assert form.decisions == ("approve", "edit", "reject")


@pytest.mark.parametrize(
    "schema",
    [
        {
            "type": "object",
            "properties": {"decision": {"enum": ["yes", "no"]}},
            "required": ["decision"],
        },
        {"type": "object", "properties": {"decision": {"enum": ["approve", "reject"]}}},
        {"type": "object", "properties": {"verdict": {"enum": ["approve", "reject"]}}},
        {"type": "string"},
    ],
)
def test_other_shapes_get_no_buttons(schema: dict[str, Any]) -> None:
    assert not form_for(schema).is_approval


def test_reading_a_form_gives_typed_values() -> None:
    form = form_for(json_schema_of(Order))
    data = {
        "$.item": ["pen"],
        "$.qty": ["3"],
        "$.price": ["2.5"],
        "$.gift": ["true"],
        "$.colour": ['"blue"'],
        "$.tags": ["a\n\n b \n"],
        "$.sizes": ['"S"', '"L"'],
        "$.note": [""],
        "$.urgent": ["false"],
        "$.extra": ['{"k": 1}'],
    }
    value, problems = read_form(form, data)
    assert problems == []
    assert value == {
        "item": "pen",
        "qty": 3,
        "price": 2.5,
        "gift": True,
        "colour": "blue",
        "tags": ["a", "b"],
        "sizes": ["S", "L"],
        "note": None,
        "urgent": False,
        "extra": {"k": 1},
    }
    assert answer_problems(value, json_schema_of(Order)) == []


def test_empty_optional_fields_are_left_out() -> None:
    form = form_for(json_schema_of(Review))
    value, problems = read_form(form, {"$.decision": ['"approve"'], "$.reason": [""]})
    assert (value, problems) == ({"decision": "approve"}, [])


def test_unreadable_inputs_are_problems_at_their_path() -> None:
    form = form_for(json_schema_of(Order))
    data = {"$.qty": ["three"], "$.price": ["1e999"], "$.extra": ["{nope"], "$.colour": ['"pink"']}
    _, problems = read_form(form, data)
    assert {p.path for p in problems} == {"$.qty", "$.price", "$.extra", "$.colour"}
    assert {p.path: p.expected for p in problems}["$.qty"] == "an integer"


def test_a_fractional_integer_is_refused_and_list_lines_are_numbered() -> None:
    form = form_for(
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "xs": {"type": "array", "items": {"type": "number"}},
            },
        }
    )
    _, problems = read_form(form, {"$.n": ["1.5"], "$.xs": ["1\nx\n3"]})
    assert [(p.path, p.expected) for p in problems] == [
        ("$.n", "an integer"),
        ("$.xs[1]", "a number"),
    ]


def test_problems_land_on_the_deepest_field() -> None:
    form = form_for(json_schema_of(Review))
    problems = answer_problems(
        {"decision": "maybe", "plan": {"rows": "x"}, "other": 1}, json_schema_of(Review)
    )
    by_field, general = problems_by_field(form, problems)
    assert set(by_field) == {"$.decision", "$.plan.rows"}
    (message,) = general
    assert message.startswith("$.other: expected no such key")
