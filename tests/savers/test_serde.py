"""Round trips, the allowlist and write-time errors of the serializer."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import math
import operator
import pathlib
import subprocess
import sys
import uuid
import zoneinfo
from typing import Annotated, Any, NamedTuple, TypedDict

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pausepoint.errors import CheckpointDecodeError, SerializationError
from pausepoint.serde import FORMAT, Serializer, StoredError, dumps, loads
from pausepoint.types import Command, Interrupt, Overwrite, Send, TimedOut


class Color(enum.Enum):
    RED = "red"
    BLUE = 2


class Level(enum.IntEnum):
    LOW = 1


@dataclasses.dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list[str])


@dataclasses.dataclass
class Box:
    point: Point
    color: Color

    def __post_init__(self) -> None:
        raise AssertionError("decoding must not call __init__/__post_init__")


class Pair(NamedTuple):
    left: Any
    right: Any


class Model(pydantic.BaseModel):
    name: str
    point: Point | None = None
    items: list[int] = []

    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)


SER = Serializer(allowed_types=[Color, Level, Point, Pair, Model])


def same(a: Any, b: Any) -> bool:
    """Equal, with exactly the same types all the way down (nan equal to nan)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, datetime.datetime):
        return a == b and (a.fold, a.tzinfo) == (b.fold, b.tzinfo)
    if isinstance(a, (Interrupt, Send, Point)):
        names = ("value", "id") if isinstance(a, Interrupt) else ("node", "arg")
        if isinstance(a, Point):
            names = ("x", "y", "tags")
        return all(same(getattr(a, n), getattr(b, n)) for n in names)
    return bool(a == b)


def round_trip(value: Any, ser: Serializer = SER) -> Any:
    return ser.loads_typed(ser.dumps_typed(value))


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.binary()
    | st.datetimes(timezones=st.none() | st.timezones())
    | st.dates()
    | st.times()
    | st.timedeltas()
    | st.uuids()
    | st.decimals(allow_nan=False)
    | st.sampled_from(list(Color))
)
hashables = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | st.binary(),
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
    max_leaves=6,
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(st.text(), inner, max_size=4)
        | st.dictionaries(hashables, inner, max_size=4)
        | st.sets(hashables, max_size=4)
        | st.builds(Point, st.integers(), st.integers(), st.lists(st.text(), max_size=2))
        | st.builds(Pair, inner, inner)
        | st.builds(Interrupt, inner, st.text(max_size=5))
        | st.builds(Send, st.text(max_size=5), inner)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_nested_values_round_trip(value: Any) -> None:
    assert same(round_trip(value), value)


@pytest.mark.parametrize(
    "value",
    [
        None,
        float("nan"),
        float("-inf"),
        -0.0,
        2**100,
        {"__pp__": "tuple", "v": [1]},
        {1: "a", "b": 2, None: 3, (1, 2): 4},
        bytearray(b"xy"),
        datetime.datetime(2024, 11, 3, 1, 30, fold=1, tzinfo=zoneinfo.ZoneInfo("America/New_York")),
        datetime.time(1, 2, 3, tzinfo=datetime.timezone(datetime.timedelta(hours=-3), "X")),
        datetime.UTC,
        zoneinfo.ZoneInfo("Europe/Paris"),
        decimal.Decimal("NaN"),
        decimal.Decimal("1.100"),
        pathlib.Path("/tmp/x"),
        pathlib.PurePosixPath("a/b"),
        pathlib.PureWindowsPath(r"C:\x"),
        Level.LOW,
        Command(update={"a": 1}, resume={"id": 2}, goto=[Send("n", 1), "m"]),
        Command(graph=Command.PARENT, goto="x"),
        Overwrite([1, 2]),
        Model(name="m", point=Point(1), items=[1]),
    ],
    ids=repr,
)
def test_builtin_and_registered_types_round_trip(value: Any) -> None:
    out = round_trip(value)
    assert type(out) is type(value)
    assert repr(out) == repr(value)
    if isinstance(value, datetime.datetime):
        assert (out.fold, out.tzinfo) == (value.fold, value.tzinfo)


def test_dataclass_is_rebuilt_without_running_init() -> None:
    ser = Serializer(allowed_types=[Point, Color])
    ser.register(Box)
    box = object.__new__(Box)
    box.point, box.color = Point(1, 2, ["t"]), Color.BLUE
    out = round_trip(box, ser)
    assert (out.point, out.color) == (Point(1, 2, ["t"]), Color.BLUE)


def test_exceptions_are_stored_as_data() -> None:
    class Secret(Exception):
        pass

    out = round_trip({"error": Secret("no way")})["error"]
    assert isinstance(out, StoredError)
    assert out.type_name.endswith("Secret")
    assert out.message == "no way"
    again = round_trip(out)
    assert (again.type_name, again.message) == (out.type_name, out.message)


def test_unknown_type_fails_at_write_naming_the_path() -> None:
    class Opaque:
        pass

    value = {"messages": [1, {"body": Opaque()}]}
    with pytest.raises(SerializationError) as info:
        SER.dumps(value, label="channel 'state'")
    text = str(info.value)
    assert "channel 'state', at ['messages'][1]['body']" in text
    assert "Opaque" in text
    assert "allowed_types" in text


def test_unregistered_dataclass_and_subclass_fail_at_write() -> None:
    @dataclasses.dataclass
    class Other:
        x: int

    with pytest.raises(SerializationError, match="Other"):
        Serializer().dumps([Other(1)])
    with pytest.raises(SerializationError, match=r"value, at \.right: .*Point"):
        Serializer(allowed_types=[Pair]).dumps(Pair(1, Point(1)))  # Point not allowed here

    @dataclasses.dataclass(frozen=True, slots=True)
    class SubPoint(Point):
        pass

    with pytest.raises(SerializationError, match="SubPoint"):
        SER.dumps(SubPoint(1))


def test_cycles_fail_clearly() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(SerializationError, match="reference to itself"):
        SER.dumps(loop)


def test_registry_rules() -> None:
    ser = Serializer()
    with pytest.raises(TypeError, match="only Enum classes"):
        ser.register(object)
    ser.register(Point, name="geo.Point")
    with pytest.raises(TypeError, match="already used"):
        ser.register(Pair, name="geo.Point")
    assert "geo.Point" in ser.dumps(Point(1)).decode()


def test_stored_name_is_resolved_only_in_the_reader_registry() -> None:
    payload = SER.dumps(Point(3))
    with pytest.raises(CheckpointDecodeError, match="not in this serializer's allowlist"):
        Serializer().loads(payload)


def test_dataclass_fields_missing_from_old_payloads_take_defaults() -> None:
    payload = b'{"__pp__":"dataclass","v":["%s",{"x":5}]}' % Point.__qualname__.encode()
    ser = Serializer(allowed_types=[(Point, Point.__qualname__)])
    assert ser.loads(payload) == Point(5, 0, [])
    with pytest.raises(CheckpointDecodeError, match="lacks field 'x'"):
        ser.loads(payload.replace(b'"x":5', b'"y":5'))
    with pytest.raises(CheckpointDecodeError, match="'z'"):
        ser.loads(payload.replace(b'"x":5', b'"x":5,"z":1'))


def test_a_timed_out_answer_without_its_policy_is_refused() -> None:
    now = datetime.datetime(2026, 12, 2, tzinfo=datetime.UTC)
    payload = dumps(TimedOut(now, "fail", now, "s1"))
    assert loads(payload) == TimedOut(now, "fail", now, "s1")
    with pytest.raises(CheckpointDecodeError, match="lacks its on_timeout"):
        loads(payload.replace(b'"fail"', b"null"))


def test_module_level_dumps_loads_and_typed_format() -> None:
    assert loads(dumps({"a": (1,)})) == {"a": (1,)}
    kind, data = SER.dumps_typed([1])
    assert kind == FORMAT
    assert data == b"[1]"


def test_pydantic_is_never_imported_by_pausepoint() -> None:
    code = (
        "import sys, pausepoint.serde as s, pausepoint.checkpoint.sqlite;"
        "s.loads(s.dumps({'a': (1, {2})}));"
        "assert 'pydantic' not in sys.modules, 'pydantic was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_uuid_and_json_output_is_ascii() -> None:
    data = SER.dumps({"ü": uuid.UUID(int=1), "s": "\ud800"})
    assert data.isascii()
    assert SER.loads(data) == {"ü": uuid.UUID(int=1), "s": "\ud800"}


class Mood(enum.Enum):
    HAPPY = "happy"


@dataclasses.dataclass
class Note:
    text: str
    mood: Mood


class Inner(pydantic.BaseModel):
    notes: list[Note] = []


class StateSchema(pydantic.BaseModel):
    inner: Inner | None = None
    pairs: dict[str, Pair] = {}


class Typed(TypedDict):
    items: Annotated[list[Note], operator.add]
    model: StateSchema | None


def test_types_in_schema_registers_what_a_state_declares() -> None:
    ser = Serializer()
    found = ser.register_schema(Typed)
    assert set(found) == {Note, Mood, StateSchema, Inner, Pair}
    value = StateSchema(inner=Inner(notes=[Note("hi", Mood.HAPPY)]), pairs={"p": Pair(1, 2)})
    assert round_trip(value, ser) == value


def test_a_redefined_class_replaces_the_old_registration() -> None:
    def define() -> type:
        @dataclasses.dataclass
        class Again:
            x: int

        return Again

    first, second = define(), define()
    ser = Serializer(allowed_types=[first])
    ser.register(second)
    out = round_trip(second(1), ser)
    assert type(out) is second
    with pytest.raises(SerializationError):
        ser.dumps(first(1))


@pytest.mark.parametrize(
    "value",
    [
        {"source": "loop", "step": 3, "parents": {}},
        {"a": None, "b": True, "c": "é\n", "d": -1},
        {"__pp__": "tuple", "v": 1},  # a user dict that looks tagged: never the fast path
        {1: "int key"},
        {"x": 1.5, "y": float("nan")},
        {"nested": {"k": 1}},
    ],
)
def test_fast_paths_write_what_the_tree_walk_writes(value: Any) -> None:
    # Scalars and flat str-keyed dicts skip the encoder's walk; the bytes must be the
    # same as the walk's, or old and new payloads would differ.
    ser = Serializer()
    walked = ser._text(ser.to_tree(value)).encode("ascii")  # pyright: ignore[reportPrivateUsage]
    assert ser.dumps(value) == walked
    back = ser.loads(walked)
    assert back.keys() == value.keys()


@pytest.mark.parametrize(
    "value",
    [
        list(range(1000)),
        [1, "a", None, True, "__pp__", -(2**70), "é\n"],
        [],
        [1.5],  # floats take the walk (nan and infinities are tagged)
        [[1], (2,)],  # nested: the walk
        [{"__pp__": "tuple", "v": 1}],
    ],
)
def test_list_fast_path_writes_what_the_tree_walk_writes(value: list[Any]) -> None:
    # A list of str/int/bool/None is JSON as it is: same bytes, same value back.
    ser = Serializer()
    walked = ser._text(ser.to_tree(value)).encode("ascii")  # pyright: ignore[reportPrivateUsage]
    assert ser.dumps(value) == walked
    assert ser.loads(walked) == value


@pytest.mark.parametrize("value", ["text é", 7, -(2**70), True, False, None])
def test_scalar_fast_path_round_trips(value: Any) -> None:
    ser = Serializer()
    assert ser.dumps(value) == ser._text(ser.to_tree(value)).encode("ascii")  # pyright: ignore[reportPrivateUsage]
    back = ser.loads(ser.dumps(value))
    assert back == value
    assert type(back) is type(value)


def test_reads_accept_surrounding_whitespace_and_refuse_extra_data() -> None:
    # Reads go straight to the JSON scanner; anything else falls back to the full
    # decoder, for whitespace and for a precise error.
    ser = Serializer()
    assert ser.loads(b' \n[1, {"a": 2}]\n') == [1, {"a": 2}]
    for bad in (b"", b"1 2", b'"a" x', b"nul", b"\xff"):
        with pytest.raises(CheckpointDecodeError, match="cannot decode a stored value"):
            ser.loads(bad)


def test_extra_fields_of_a_pydantic_model_that_allows_them_are_kept() -> None:
    class Loose(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="allow")
        name: str

    value = Loose(name="n", note=Point(1), when=datetime.date(2024, 1, 2))  # pyright: ignore[reportCallIssue]
    ser = Serializer(allowed_types=[Loose, Point])
    out = ser.loads(ser.dumps(value))
    assert out == value
    assert out.__pydantic_extra__ == {"note": Point(1), "when": datetime.date(2024, 1, 2)}
