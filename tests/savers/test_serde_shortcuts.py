"""The serializer's shortcuts for large values write and read exactly what its walk does.

``serde/plain.py`` lets plain JSON skip the walk and bytes skip the JSON pass;
``Serializer.loads`` skips the object hook for large payloads without a tag;
``checkpoint/_reuse.py`` splices a write's encoding into the checkpoint's. Each must
give the same bytes as the walk (the stored format does not change) and, for any
payload, crafted ones too, the same value or the same error.
"""

from __future__ import annotations

import enum
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pausepoint.checkpoint._reuse import REUSE_FROM, dumps_checkpoint, remember
from pausepoint.errors import CheckpointDecodeError, SerializationError
from pausepoint.serde import Serializer
from pausepoint.serde.frames import BLOB_FROM
from pausepoint.serde.plain import MAX_LEVELS, dump_bytes, is_plain_json, load_bytes

HEAD = b'{"__pp__":"bytes","v":"'


class Mood(enum.StrEnum):
    OK = "ok"


def walked(ser: Serializer, value: Any) -> bytes:
    """What the serializer wrote before the shortcuts: its tree, as compact ASCII JSON."""
    tree = ser.to_tree(value)
    return json.dumps(tree, separators=(",", ":"), allow_nan=False).encode("ascii")


leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.binary(max_size=20)
    | st.sampled_from([Mood.OK, "__pp__"])
)
keys = st.text(max_size=8) | st.sampled_from(["__pp__", "v"]) | st.integers()
values = st.recursive(
    leaves,
    lambda kids: (
        st.lists(kids, max_size=5)
        | st.tuples(kids, kids)
        | st.dictionaries(keys, kids, max_size=5)
        | st.dictionaries(st.text(max_size=8), kids, max_size=5)
    ),
    max_leaves=30,
)


def same(got: Any, want: Any) -> bool:
    if type(got) is not type(want):
        return False
    if isinstance(got, float) and math.isnan(got):
        return math.isnan(want)
    if isinstance(got, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k]) for k in got)
    if isinstance(got, list | tuple):
        return len(got) == len(want) and all(map(same, got, want))
    return bool(got == want)


@settings(max_examples=300, deadline=None)
@given(values)
def test_any_value_is_written_as_the_walk_writes_it_and_reads_back(value: Any) -> None:
    ser = Serializer(allowed_types=[Mood])
    blob = ser.dumps(value)
    assert blob == walked(ser, value)
    assert same(ser.loads(blob), value)
    assert same(ser.loads(blob.decode("ascii")), value)  # text input: no shortcut


def test_plain_json_is_told_apart_from_what_needs_tags() -> None:
    assert is_plain_json({"a": [1, 2.5, "x", None, True, {"b": []}]})
    assert is_plain_json([[1]] * 3)  # a shared leaf-only list is written twice, fine
    assert not is_plain_json({"__pp__": 1})
    assert not is_plain_json({1: "a"})
    assert not is_plain_json([(1, 2)])
    assert not is_plain_json(["ok", Mood.OK])  # a str subclass would lose its type
    shared = [1, [2]]
    assert not is_plain_json([shared, shared])  # holds a container: the walk copes
    deep: list[Any] = []
    for _ in range(MAX_LEVELS + 5):
        deep = [deep]
    assert not is_plain_json(deep)
    ser = Serializer()
    assert ser.dumps(deep) == walked(ser, deep)


def test_a_cyclic_value_fails_as_before() -> None:
    ring: list[Any] = [1]
    ring.append(ring)
    doubling: list[Any] = []
    doubling += [doubling, doubling]
    for value in (ring, doubling, {"a": ring}):
        with pytest.raises(SerializationError, match="reference to itself"):
            Serializer().dumps(value)


@pytest.mark.parametrize("value", [float("nan"), float("-inf"), 10**400])
def test_what_the_c_encoder_refuses_takes_the_walk(value: Any) -> None:
    ser = Serializer()
    data = {"rows": [{"x": 1}, {"x": value}]}
    assert ser.dumps(data) == walked(ser, data)
    assert same(ser.loads(ser.dumps(data)), data)


def test_an_int_too_long_for_text_still_names_its_place() -> None:
    with pytest.raises(SerializationError, match=r"value\['rows'\]\[1\].* cannot be stored"):
        Serializer().dumps({"rows": [1, 10**5000]})


@pytest.mark.parametrize("data", [b"", b"\x00", bytes(range(256)) * 255])
def test_bytes_are_written_as_their_tagged_node(data: bytes) -> None:
    # Below BLOB_FROM (64 KiB); larger ones are framed (tests/savers/test_frames.py).
    ser = Serializer()
    assert dump_bytes(data) == ser.dumps(data) == walked(ser, data)
    assert load_bytes(ser.dumps(data)) == data
    assert type(ser.loads(ser.dumps(bytearray(data)))) is bytearray


base64ish = st.text(alphabet='ABCDab+/=0189"\\ }', max_size=40)


@settings(max_examples=500, deadline=None)
@given(base64ish)
def test_a_crafted_bytes_payload_decodes_as_json_would(body: str) -> None:
    ser = Serializer()
    payload = HEAD + body.encode("ascii") + b'"}'
    try:
        want: Any = ser.loads(payload.decode("ascii"))  # text: the JSON path
    except CheckpointDecodeError:
        with pytest.raises(CheckpointDecodeError):
            ser.loads(payload)
        return
    assert same(ser.loads(payload), want)


def test_short_or_foreign_payloads_are_not_taken_for_bytes() -> None:
    assert load_bytes(HEAD + b"}") is None
    assert load_bytes(HEAD[:-1]) is None
    assert load_bytes(b'{"__pp__":"bytes","v":"QQ=="} ') is None
    with pytest.raises(CheckpointDecodeError):
        Serializer().loads(HEAD + b"}")


@pytest.mark.parametrize("key", ["\\u005f_pp__", "__\\u0070p__", "\\u005F\\u005Fpp__"])
def test_a_large_payload_with_an_escaped_tag_still_decodes_the_tag(key: str) -> None:
    filler = '"' + "x" * 10_000 + '"'
    text = f'[{filler},{{"{key}":"tuple","v":[1,2]}}]'
    assert Serializer().loads(text.encode("ascii"))[1] == (1, 2)


def test_a_large_untagged_payload_decodes_to_plain_data() -> None:
    rows = [{"id": i, "name": f"é {i}", "x": [i, None]} for i in range(2_000)]
    ser = Serializer()
    blob = ser.dumps(rows)
    assert len(blob) > 4096
    assert ser.loads(blob) == rows


def _checkpoint(payload: Any) -> dict[str, Any]:
    return {
        "v": 4,
        "id": "1f0",
        "ts": "2026-12-01T00:00:00+00:00",
        "channel_values": {"n": 1, "payload": payload, "t": (1, 2)},
        "channel_versions": {"n": 2, "payload": 2},
        "versions_seen": {"put": {"n": 1}},
        "updated_channels": ["payload"],
    }


def test_a_framed_encoding_is_not_noted_and_a_checkpoint_holding_one_is_encoded_whole() -> None:
    # Large bytes are framed (raw after the JSON): no splicing, re-encoding them is a copy.
    ser = Serializer()
    big = b"\x01" * BLOB_FROM
    found: dict[int, tuple[Any, bytes]] = {}
    remember(found, big, ser.dumps(big))
    assert not found
    text = "é" * REUSE_FROM
    remember(found, text, ser.dumps(text))
    checkpoint = _checkpoint(text)
    checkpoint["channel_values"]["file"] = big
    assert dumps_checkpoint(ser, checkpoint, found) is None


@pytest.mark.parametrize("payload", ["é" * REUSE_FROM, b"\x01" * (BLOB_FROM - 1), [1.5] * 20_000])
def test_a_spliced_checkpoint_is_the_whole_encoding(payload: Any) -> None:
    ser = Serializer()
    found: dict[int, tuple[Any, bytes]] = {}
    remember(found, payload, ser.dumps(payload))
    assert found
    checkpoint = _checkpoint(payload)
    assert dumps_checkpoint(ser, checkpoint, found) == ser.dumps(checkpoint)


def test_a_checkpoint_without_noted_values_is_left_to_the_caller() -> None:
    ser = Serializer()
    found: dict[int, tuple[Any, bytes]] = {}
    remember(found, "small", ser.dumps("small"))  # too small to note
    assert not found
    big = "x" * REUSE_FROM
    remember(found, big, ser.dumps(big))
    assert dumps_checkpoint(ser, _checkpoint("y" * REUSE_FROM), found) is None
    odd = _checkpoint(big)
    odd["channel_values"][7] = "int key"  # not a plain object: encoded whole instead
    assert dumps_checkpoint(ser, odd, found) is None


@pytest.mark.parametrize("odd", [float("nan"), float("inf"), (1,), {1: 2}, b"x", Mood.OK])
def test_a_long_list_or_dict_with_one_odd_item_is_tagged_where_it_is(odd: Any) -> None:
    # Parts of 32 items or more are checked whole (serde/plain.py): one odd item
    # sends the part to the walk, which tags just that item.
    ser = Serializer(allowed_types=[Mood])
    rows = [{"x": i / 3} for i in range(40)] + [{"x": odd}]
    data = {"rows": rows, "by_key": {f"k{i}": i for i in range(40)} | {"odd": odd}}
    assert ser.dumps(data) == walked(ser, data)
    assert same(ser.loads(ser.dumps(data)), data)
