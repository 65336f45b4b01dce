"""Response schemas (issue 20's typed answers): classes as JSON Schema, an answer's problems.

The checker is held to the `jsonschema` package (Draft 2020-12) on random JSON values
for every supported keyword; the problems it reports are checked by hand.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import re
from typing import Annotated, Any, Literal, NotRequired

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typing_extensions import TypedDict

from pausepoint.response_schema import AnswerProblem, answer_problems, json_schema_of

jsonschema = pytest.importorskip("jsonschema")
pydantic = pytest.importorskip("pydantic")


class Verdict(enum.Enum):
    APPROVE = "approve"
    REJECT = "reject"


class Line(TypedDict):
    sku: str
    qty: int


class Review(TypedDict):
    verdict: Literal["approve", "edit", "reject"]
    lines: list[Line]
    note: NotRequired[str | None]


@dataclasses.dataclass
class Refund:
    amount: float
    reason: str
    verdict: Verdict = Verdict.APPROVE
    tags: tuple[str, ...] = ()


class Ticket(pydantic.BaseModel):
    title: str
    priority: Annotated[int, pydantic.Field(ge=1, le=5)]
    refund: Refund | None = None


def problems(answer: Any, schema: Any) -> list[str]:
    return [str(p) for p in answer_problems(answer, json_schema_of(schema))]


# ----------------------------------------------------------------------- the schemas


def test_a_typeddict_is_an_object_with_its_required_keys():
    schema = json_schema_of(Review)
    assert schema["type"] == "object"
    assert schema["required"] == ["verdict", "lines"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["verdict"] == {"enum": ["approve", "edit", "reject"]}
    assert schema["properties"]["lines"]["items"]["required"] == ["sku", "qty"]
    assert schema["properties"]["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}


def test_a_dataclass_requires_the_fields_without_defaults():
    schema = json_schema_of(Refund)
    assert schema["required"] == ["amount", "reason"]
    assert schema["properties"]["verdict"] == {"enum": ["approve", "reject"]}
    assert schema["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}


def test_a_pydantic_model_gives_its_own_schema():
    schema = json_schema_of(Ticket)
    assert schema == Ticket.model_json_schema()
    assert problems({"title": "x", "priority": 9}, Ticket) == [
        "$.priority: expected a number at most 5, got 9"
    ]


def test_a_json_schema_dict_is_copied_and_checked():
    given_schema: dict[str, Any] = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    schema = json_schema_of(given_schema)
    assert schema == given_schema
    assert schema is not given_schema
    assert schema["properties"] is not given_schema["properties"]


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "object", "if": {}}, "keyword 'if' (at $)"),
        (
            {"properties": {"a": {"patternProperties": {}}}},
            "'patternProperties' (at $.properties.a)",
        ),
        ({"type": "text"}, "type (at $) must name JSON types"),
        ({"$ref": "#/$defs/Missing"}, "points at nothing"),
        (
            {"required": ["a"], "properties": {"a": {"$ref": "#/required"}}},
            "$ref (at $.properties.a) must point at a schema (an object or a boolean); "
            "'#/required' points at ['a']",
        ),
        ({"$ref": "https://example.com/schema"}, "must point inside the schema"),
        ({"pattern": "("}, "is not a regular expression"),
        ({"minLength": "3"}, "minLength (at $) takes a number"),
        ({"anyOf": []}, "non-empty list of schemas"),
        ({"required": "name"}, "takes a list of key names"),
        ({"enum": [datetime.date(2026, 1, 1)]}, "is not a JSON value"),
        ({1: {}}, "keys are strings"),
    ],
)
def test_a_schema_dict_it_cannot_check_is_refused(schema: Any, words: str):
    with pytest.raises(ValueError, match=re.escape(words)):
        json_schema_of(schema)


@dataclasses.dataclass
class Node:
    name: str
    children: list[Node]


@pytest.mark.parametrize(
    ("hint", "words"),
    [
        (datetime.datetime, "datetime.datetime'> (at $) has no JSON form"),
        (set[str], "(at $) has no JSON form"),
        (dict[int, str], "int'> keys (at $)"),
        (Node, "Node refers to itself (at $.children[])"),
        (list[Ticket], "a pydantic model inside another type (at $[])"),
        (Literal[b"x"], "the choice b'x' (at $) is not a JSON value"),
    ],
)
def test_a_type_without_a_json_form_is_refused_naming_where(hint: Any, words: str):
    with pytest.raises(TypeError) as caught:
        json_schema_of(hint)
    assert words in str(caught.value)


# ----------------------------------------------------------------------- the problems


def test_a_fitting_answer_has_no_problems():
    answer = {"verdict": "edit", "lines": [{"sku": "A-1", "qty": 2}], "note": None}
    assert answer_problems(answer, json_schema_of(Review)) == []
    assert problems(Refund(12.5, "late"), Refund) == []  # an instance reads as its fields
    assert problems(Ticket(title="t", priority=2), Ticket) == []


def test_every_problem_is_listed_with_where_what_and_got():
    answer = {"verdict": "maybe", "lines": [{"sku": "A-1", "qty": "2"}, {"qty": 1}], "x": 1}
    assert problems(answer, Review) == [
        '$.verdict: expected one of "approve", "edit", "reject", got \'maybe\'',
        "$.lines[0].qty: expected an integer, got '2'",
        "$.lines[1].sku: expected a string, got nothing",
        "$.x: expected no such key (known keys: 'verdict', 'lines', 'note'), got 1",
    ]


def test_a_wrong_type_at_the_top_is_one_problem():
    assert answer_problems("yes", json_schema_of(Review)) == [
        AnswerProblem("$", "an object (Review)", "'yes'")
    ]


@pytest.mark.parametrize(
    ("schema", "answer", "expected"),
    [
        (
            {"minLength": 2, "maxLength": 3},
            "abcd",
            "$: expected at most 3 characters, got 4 characters",
        ),
        (
            {"pattern": "^[A-Z]-\\d+$"},
            "a-1",
            "$: expected text matching '^[A-Z]-\\\\d+$', got 'a-1'",
        ),
        ({"exclusiveMinimum": 0}, 0, "$: expected a number more than 0, got 0"),
        ({"multipleOf": 5}, 12, "$: expected a multiple of 5, got 12"),
        ({"minItems": 1}, [], "$: expected at least 1 item, got 0 items"),
        ({"uniqueItems": True}, [1, 1.0], "$: expected items that are all different, got [1, 1.0]"),
        ({"const": True}, 1, "$: expected exactly true, got 1"),
        ({"not": {"type": "null"}}, None, "$: expected not null, got null"),
        (
            {"oneOf": [{"type": "integer"}, {"type": "number"}]},
            3,
            "$: expected exactly one of 2 forms, got 3",
        ),
        (
            {"anyOf": [{"type": "string"}, {"type": "null"}]},
            3,
            "$: expected a string or null, got 3",
        ),
        (False, "x", "$: expected nothing (no value is allowed here), got 'x'"),
        (
            {"properties": {"x": False}},
            {"x": 1},
            "$.x: expected nothing (no value is allowed here), got 1",
        ),
    ],
)
def test_each_keyword_names_its_problem(schema: Any, answer: Any, expected: str):
    assert problems(answer, schema) == [expected]


def test_long_values_are_shortened_and_problems_capped():
    got = problems("x" * 500, {"type": "integer"})
    assert len(got[0]) < 140
    assert got[0].endswith("...")
    assert len(answer_problems(list(range(300)), {"items": {"type": "string"}})) == 100


# ----------------------------------------------------------- held to jsonschema itself

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-20, 20)
    | st.floats(-20, 20, allow_nan=False)
    | st.sampled_from(["", "a", "approve", "A-1", "edit", "reject", "zz"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["verdict", "lines", "note", "sku", "qty", "x"]), inner, max_size=4
        )
    ),
    max_leaves=12,
)

SCHEMAS: list[Any] = [
    json_schema_of(Review),
    json_schema_of(Refund),
    json_schema_of(Ticket),
    json_schema_of(tuple[int, str]),
    json_schema_of(dict[str, list[int] | None]),
    {"type": ["integer", "string"], "minimum": 0, "maxLength": 1},
    {"enum": [1, "a", None, [1], {"qty": 1}]},
    {"const": 1},
    {"type": "number", "exclusiveMaximum": 5, "multipleOf": 2},
    {
        "type": "array",
        "prefixItems": [{"type": "boolean"}],
        "items": {"type": "null"},
        "maxItems": 3,
    },
    {"type": "array", "uniqueItems": True},
    {"type": "object", "minProperties": 1, "maxProperties": 2, "required": ["x"]},
    {"oneOf": [{"type": "integer"}, {"minimum": 2}]},
    {"allOf": [{"type": "object"}, {"not": {"required": ["x"]}}]},
    {"$defs": {"Q": {"type": "integer"}}, "type": "array", "items": {"$ref": "#/$defs/Q"}},
    {"type": "string", "pattern": "^[a-z]+$"},
    {"properties": {"x": False}},
]


@settings(max_examples=300, deadline=None)
@given(value=json_values, index=st.integers(0, len(SCHEMAS) - 1))
def test_answers_fit_exactly_when_jsonschema_says_so(value: Any, index: int):
    schema = SCHEMAS[index]
    validator = jsonschema.Draft202012Validator(schema)
    found = answer_problems(value, schema)
    assert (not found) == validator.is_valid(value), (schema, value, found)
