"""The ``fast`` extra (orjson) writes the standard library path's bytes and reads its values.

``serde/fast.py``: a serializer made with orjson installed encodes with it and decodes
large untagged payloads with it; the stored format must not depend on it. Each test
sets a serializer using orjson against one made with ``PAUSEPOINT_FAST=0`` (the plain
path, as without the extra): the same bytes for every value the serializer supports,
and, for every payload, values equal and of the same types (or the same error).
CI runs this file and the other saver tests with the extra and again with
``PAUSEPOINT_FAST=0`` (Makefile, ``unit``).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import os
import subprocess
import sys
import uuid
from decimal import Decimal
from typing import Any, NamedTuple

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pausepoint.errors import CheckpointDecodeError, SerializationError
from pausepoint.serde import Serializer, fast
from pausepoint.types import Interrupt, Send

orjson = pytest.importorskip("orjson")


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Mood(enum.StrEnum):
    OK = "ok"


@dataclasses.dataclass
class Row:
    name: str
    score: Any = None


class Pair(NamedTuple):
    left: Any
    right: Any


TYPES: list[type] = [Colour, Level, Mood, Row, Pair]


def make(*, plain: bool) -> Serializer:
    """A serializer on the plain path (``PAUSEPOINT_FAST=0``) or on orjson."""
    saved = os.environ.get(fast.ENV)
    os.environ[fast.ENV] = "0" if plain else "1"
    try:
        return Serializer(allowed_types=TYPES)
    finally:
        if saved is None:
            del os.environ[fast.ENV]
        else:
            os.environ[fast.ENV] = saved


PLAIN = make(plain=True)
FAST = make(plain=False)


def test_the_extra_is_in_use_here_and_the_switch_turns_it_off(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(fast.ENV, raising=False)  # CI's second pass sets it
    assert fast.orjson_enabled()
    assert not PLAIN._fast
    assert FAST._fast
    calls: list[object] = []
    monkeypatch.setattr(orjson, "dumps", lambda *a, **k: calls.append(a) or b"{}")
    PLAIN.dumps({"a": [1.5, {"b": None}]})
    assert calls == []
    monkeypatch.setenv(fast.ENV, "0")
    assert not fast.orjson_enabled()


def same(a: object, b: object) -> bool:
    """Equal, and of the same types all the way down (nan is nan, -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        assert isinstance(b, float)
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, list | tuple):
        assert isinstance(b, list | tuple)
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return len(a) == len(b) and all(
            same(k1, k2) and same(v1, v2)
            for (k1, v1), (k2, v2) in zip(a.items(), b.items(), strict=True)
        )
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        names = [f.name for f in dataclasses.fields(a)]
        return all(same(getattr(a, n), getattr(b, n)) for n in names)
    if isinstance(a, datetime.datetime | datetime.time):
        return a == b and repr(a) == repr(b)
    return a == b or repr(a) == repr(b)  # Send(node, nan) is not equal to itself


# Text with what the two encoders write differently: non-ASCII (escaped after orjson),
# DEL, astral characters (surrogate pairs), lone surrogates (orjson refuses them), and
# text that looks like what the fallbacks look for.
awkward = st.sampled_from(
    [
        "é",
        "\x7f",
        "🚀",
        "\ud800",
        "\udfff",
        "\u2028",
        "\x00",
        '"',
        "\\",
        "e-7",
        "1e-5,",
        "0.0000",
        '"__pp__":',
        "__pp__",
        "1234567890123456789012",
    ]
)
texts = st.text(max_size=12) | st.text(st.characters(codec=None), max_size=8) | awkward
floats = (
    st.floats()
    | st.floats(min_value=-1e-3, max_value=1e-3)
    | st.floats(min_value=1e15, max_value=1e17)
    | st.sampled_from([-0.0, 1e-5, 1e-7, 1e16, 5e-324, 1.7976931348623157e308])
)
ints = (
    st.integers(min_value=-(2**64), max_value=2**64)
    | st.integers()
    | st.sampled_from([2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**64, -(2**63) - 1, 10**30])
)
leaves = (
    st.none()
    | st.booleans()
    | ints
    | floats
    | texts
    | st.binary(max_size=20)
    | st.datetimes(timezones=st.none() | st.timezones())
    | st.dates()
    | st.uuids()
    | st.decimals(allow_nan=False)
    | st.sampled_from([Colour.RED, Level.HIGH, Mood.OK])
)
keys = texts | st.sampled_from(["__pp__", "v"]) | st.integers() | st.sampled_from([Mood.OK])
values = st.recursive(
    leaves,
    lambda kids: (
        st.lists(kids, max_size=6)
        | st.tuples(kids, kids)
        | st.dictionaries(keys, kids, max_size=5)
        | st.dictionaries(texts, kids, max_size=5)
        | st.frozensets(ints | texts, max_size=4)
        | st.sets(ints | texts, max_size=4)
        | st.builds(Row, texts, kids)
        | st.builds(Pair, kids, kids)
        | st.builds(lambda v: Interrupt(value=v, id="q"), kids)
        | st.builds(lambda v: Send("node", v), kids)
    ),
    max_leaves=40,
)
# Plain JSON only: what the fast path writes without the walk.
json_values = st.recursive(
    st.none() | st.booleans() | ints | floats | texts,
    lambda kids: st.lists(kids, max_size=6) | st.dictionaries(texts, kids, max_size=5),
    max_leaves=40,
)


def check_round_trip(value: object) -> None:
    data = FAST.dumps(value)
    assert data == PLAIN.dumps(value)  # the stored bytes do not depend on the extra
    big = {"padding": "x" * 5000, "value": value}  # large: read by orjson when untagged
    big_data = FAST.dumps(big)
    assert big_data == PLAIN.dumps(big)
    for payload in (data, big_data):
        assert same(FAST.loads(payload), PLAIN.loads(payload))


@settings(max_examples=400, deadline=None)
@given(values)
@example(float("nan"))
@example([float("inf"), None])
@example({"a": [1e-7, 0.5]})
@example({"k": "\x7fé🚀"})
@example({"__pp__": 1})
@example({"n": 2**64})
@example({"rows": [{"id": 1, "t": (1, 2)}]})
@example({"rows": [Colour.RED, Level.HIGH, Mood.OK, uuid.UUID(int=7)]})
@example({Mood.OK: 1})
def test_every_supported_value_has_the_same_bytes_and_reads_back_the_same(value: object):
    check_round_trip(value)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_plain_json_is_written_by_orjson_as_json_writes_it(value: object):
    if not all(math.isfinite(x) for x in _floats(value)):  # tagged: not plain JSON
        assert not isinstance(value, dict | list) or fast.orjson_plain(value) is None
    else:
        want = json.dumps(value, separators=(",", ":"), allow_nan=False).encode("ascii")
        if isinstance(value, dict | list):
            got = fast.orjson_plain(value)
            assert got is None or got == want
        got = fast.orjson_text(value)
        assert got is None or got == want
        read = fast.orjson_load(want)
        assert read is fast.FALLBACK or same(read, json.loads(want))
    check_round_trip(value)


def _floats(value: object) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        return [f for v in value.values() for f in _floats(v)]
    if isinstance(value, list):
        return [f for v in value for f in _floats(v)]
    return []


def test_orjson_writes_the_common_large_shapes_itself():
    """The fallbacks are for edge cases: records, text and nested JSON take orjson."""
    rows = [{"id": i, "name": f"item {i}", "score": i / 7, "ok": i % 3 == 0} for i in range(500)]
    for value in ({"rows": rows}, rows, {"text": "café 🚀 " * 1000, "n": None}):
        assert fast.orjson_plain(value) == PLAIN.dumps(value)
        assert fast.orjson_load(PLAIN.dumps(value)) == value


@pytest.mark.parametrize(
    "value",
    [
        [1e-5],  # orjson: 0.00001
        [-1.5e-7],  # orjson: -1.5e-7
        [2**64],  # beyond orjson's ints
        ["\ud800"],  # a lone surrogate
        [(1, 2)],  # a tuple: tagged, orjson writes an array
        [Colour.RED],  # an enum: tagged, orjson writes its value
        [uuid.UUID(int=1)],  # tagged, orjson writes a string
        [float("nan")],  # tagged, orjson writes null
        {"__pp__": "x"},  # a user key that is the tag key: tagged dict
        [Level.HIGH],  # an int subclass
    ],
)
def test_what_orjson_would_write_otherwise_is_left_to_the_walk(value: Any):
    assert fast.orjson_plain(value) is None
    assert FAST.dumps(value) == PLAIN.dumps(value)


@pytest.mark.parametrize(
    "payload",
    [
        b"[123456789012345678901]",  # orjson would read a float
        b"[-9223372036854775809]",
        b"[0.5,12345678901234567890]",  # a float beside a long number: json's, to be sure
        b'["\\ud800"]',  # a lone surrogate: orjson refuses it
        b"[NaN]",
        b"[1e400]",
        b"[1, 2",
    ],
)
def test_what_orjson_would_read_otherwise_goes_to_json(payload: bytes):
    assert fast.orjson_load(payload) is fast.FALLBACK
    padded = b'{"pad":"' + b"x" * 5000 + b'","v":' + payload + b"}"
    outcomes = []
    for ser in (PLAIN, FAST):
        try:
            outcomes.append(ser.loads(padded))
        except CheckpointDecodeError as exc:
            outcomes.append(str(exc))
    assert same(outcomes[0], outcomes[1])


@pytest.mark.parametrize(
    "payload",
    [
        b"[12345678901234567890]",  # 20 digits, within 64 bits unsigned: an int
        b'{"n":-9223372036854775808,"rows":[{"id":1000000000000000000}]}',
        b'[[{"t":"a"},[[]]],{},"1234567890123456789012.5"]',  # digits in a string
    ],
)
def test_numbers_orjson_reads_as_json_does_are_orjsons(payload: bytes):
    read = fast.orjson_load(payload)
    assert read is not fast.FALLBACK
    assert same(read, json.loads(payload))


def test_floats_are_looked_for_in_what_orjson_read():
    messages = [{"role": "user", "content": f"{n} " + "x" * 500} for n in range(3000)]
    payload = json.dumps(messages, separators=(",", ":")).encode()
    assert fast._floatless(json.loads(payload))  # pyright: ignore[reportPrivateUsage]
    assert not fast._floatless([messages, [[{"deep": [1, 2.5]}]]])  # pyright: ignore[reportPrivateUsage]
    assert fast.orjson_load(payload) == messages


def test_a_serializer_without_orjson_installed_writes_the_same_bytes():
    """The import path without the extra (not just the switch): a child without orjson."""
    value = {"rows": [{"id": i, "x": i / 3, "t": "é"} for i in range(300)], "d": (1, 2)}
    script = (
        "import sys, json; sys.modules['orjson'] = None\n"
        "from pausepoint.serde import Serializer, fast\n"
        "assert not fast.available() and not fast.orjson_enabled()\n"
        "value = json.loads(sys.stdin.read())\n"
        "value['d'] = (1, 2)\n"
        "sys.stdout.buffer.write(Serializer().dumps(value))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(value).encode(),
        capture_output=True,
        check=True,
        text=False,
        env={**os.environ, fast.ENV: "1"},
    )
    assert done.stdout == FAST.dumps(value)
    assert same(FAST.loads(done.stdout), PLAIN.loads(done.stdout))


def test_decimals_and_other_tagged_values_are_unchanged():
    value = {"d": Decimal("1.10"), "when": datetime.datetime(2026, 1, 2, 3, 4, 5), "b": b"x"}
    assert FAST.dumps(value) == PLAIN.dumps(value)


@pytest.mark.parametrize(
    "bad",
    [(1, 2), (), Colour.RED, Level.HIGH, uuid.UUID(int=9), float("nan"), -math.inf, 1e-7, 3e-5],
)
@pytest.mark.parametrize("at", [0, 2999, 4999])
def test_a_tagged_item_deep_in_a_large_value_is_found_in_any_group(bad: object, at: int):
    """The check looks at items in groups (fast._GROUP): one odd item anywhere is found."""
    rows: list[dict[str, Any]] = [
        {"id": i, "score": i / 7, "tags": ["a", "b"], "ok": None} for i in range(5000)
    ]
    rows[at]["tags"] = ["a", bad]
    value = {"rows": rows}
    assert fast._GROUP < 5000  # several groups at the level holding the odd item
    assert fast.orjson_plain(value) is None
    assert FAST.dumps(value) == PLAIN.dumps(value)


def test_an_orjson_fragment_is_refused_as_without_the_extra():
    """orjson writes a Fragment's bytes as they are; the format has no such type."""
    value = {"rows": [{"id": i} for i in range(3000)] + [{"raw": orjson.Fragment(b"[1]")}]}
    assert fast.orjson_plain(value) is None
    messages = []
    for ser in (PLAIN, FAST):
        with pytest.raises(SerializationError) as caught:
            ser.dumps(value)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_a_small_value_with_a_tagged_item_at_its_top_is_not_given_to_orjson(
    monkeypatch: pytest.MonkeyPatch,
):
    """A pause's write (a list holding an Interrupt) goes to the walk without a try."""
    value = [Interrupt(value={"question": "ok?"}, id="q1")]
    want = PLAIN.dumps(value)
    tried: list[object] = []
    real = orjson.dumps

    def spy(obj: object, *args: Any, **kwargs: Any) -> bytes:
        tried.append(obj)
        return real(obj, *args, **kwargs)

    monkeypatch.setattr(orjson, "dumps", spy)
    assert fast.orjson_plain(value) is None
    assert tried == []
    assert FAST.dumps(value) == want
    assert all(type(obj) is not Interrupt and obj is not value for obj in tried)
