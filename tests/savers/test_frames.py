"""Large bytes are stored raw after the JSON (framed payloads, serde/frames.py; issue 18).

A value holding bytes of at least ``BLOB_FROM`` is written as a header, its JSON (each
such bytes value a ``blob`` node naming a range) and the bytes themselves; savers store
it under the type ``FRAMED``. These tests pin the form, its boundary, that older rows
(base64 inside JSON) still read, that metadata stays JSON, that every saver round-trips
framed values exactly and stores them under ``FRAMED`` (the SQL savers in a value row of
their own since schema 12, the node's write a reference to it), and that a damaged or crafted
framed payload is a ``CheckpointDecodeError``, never another exception.
"""

from __future__ import annotations

import base64
import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pausepoint import START, InMemorySaver, StateGraph
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import CheckpointDecodeError
from pausepoint.serde import FORMAT, FRAMED, Serializer
from pausepoint.serde.frames import BLOB_FROM, MAGIC, is_framed, unframe

FILE = bytes(range(256)) * (BLOB_FROM // 256 + 1)


def _framed(text: bytes, tail: bytes) -> bytes:
    return MAGIC + len(text).to_bytes(8, "big") + text + tail


def test_a_large_bytes_value_is_its_json_node_then_the_bytes() -> None:
    data = Serializer().dumps(FILE)
    node = b'{"__pp__":"blob","v":[0,%d]}' % len(FILE)
    assert data == _framed(node, FILE)
    assert Serializer().dumps_typed(FILE) == (FRAMED, data)


def test_the_boundary_is_blob_from() -> None:
    ser = Serializer()
    small, large = FILE[: BLOB_FROM - 1], FILE[:BLOB_FROM]
    assert ser.dumps_typed(small)[0] == FORMAT
    assert ser.dumps(small).startswith(b'{"__pp__":"bytes","v":"')
    assert ser.dumps_typed(large)[0] == FRAMED
    assert ser.loads(ser.dumps(small)) == small
    assert ser.loads(ser.dumps(large)) == large


def test_nested_bytes_keep_their_places_and_types() -> None:
    ser = Serializer()
    value = {
        "name": "scan.pdf",
        "pages": [FILE, bytearray(FILE[::-1]), b"tiny"],
        "pair": (FILE[:BLOB_FROM], {"k": FILE}),
    }
    data = ser.dumps(value)
    text, tail = unframe(data)
    assert len(tail) == 4 * len(FILE) - len(FILE) + BLOB_FROM  # every large one once
    assert json.loads(text)["name"] == "scan.pdf"
    back = ser.loads(data)
    assert back == value
    assert type(back["pages"][1]) is bytearray
    assert type(back["pages"][2]) is bytes


def test_rows_written_before_framing_still_read() -> None:
    old = b'{"f":{"__pp__":"bytes","v":"' + base64.b64encode(FILE) + b'"}}'
    assert Serializer().loads(old) == {"f": FILE}
    assert Serializer().loads_typed((FORMAT, old)) == {"f": FILE}


def test_to_tree_and_metadata_stay_json() -> None:
    ser = Serializer()
    assert ser.to_tree(FILE) == {"__pp__": "bytes", "v": base64.b64encode(FILE).decode()}
    text = ser.dumps_mapping({"source": "upload", "raw": FILE})
    assert json.loads(text)["raw"]["__pp__"] == "bytes"
    assert ser.loads_mapping(text) == {"source": "upload", "raw": FILE}


@pytest.mark.parametrize(
    ("kind", "payload", "match"),
    [
        (FRAMED, b'{"__pp__":"bytes","v":"QQ=="}', "does not hold that form"),
        (FORMAT, _framed(b'{"__pp__":"blob","v":[0,1]}', b"x"), "does not hold that form"),
        ("msgpack", b"\x81", "reads only"),
    ],
)
def test_the_type_must_match_the_form(kind: str, payload: bytes, match: str) -> None:
    with pytest.raises(CheckpointDecodeError, match=match):
        Serializer().loads_typed((kind, payload))


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (MAGIC + b"\x00\x00", "cut short"),
        (MAGIC + (10**6).to_bytes(8, "big") + b"{}", "declares 1000000 bytes"),
        (_framed(b'{"__pp__":"blob","v":[0,5]}', b"abc"), "runs past"),
        (_framed(b'{"__pp__":"blob","v":[-1,1]}', b"abc"), "not \\[offset, length\\]"),
        (_framed(b'{"__pp__":"blob","v":[0,1,2]}', b"abc"), "not \\[offset, length\\]"),
        (_framed(b'{"__pp__":"blob","v":"0"}', b"abc"), "not \\[offset, length\\]"),
        (_framed(b'{"__pp__":"blob","v":[0,1]} 1', b"abc"), "after its value"),
        (_framed(b'{"a":1', b""), "cannot decode"),
        (_framed("é".encode(), b""), "cannot decode"),
        (b'{"__pp__":"blob","v":[0,1]}', "outside a framed payload"),
    ],
)
def test_a_damaged_framed_payload_is_a_decode_error(payload: bytes, match: str) -> None:
    with pytest.raises(CheckpointDecodeError, match=match):
        Serializer().loads(payload)


SAMPLE = Serializer().dumps({"a": FILE[:BLOB_FROM], "b": [1, "two"]})


@settings(max_examples=300, deadline=None)
@given(
    cut=st.integers(0, len(SAMPLE)),
    flips=st.lists(st.tuples(st.integers(0, 200), st.integers(1, 255)), max_size=3),
)
def test_any_damage_reads_back_or_is_a_decode_error(cut: int, flips: list[Any]) -> None:
    data = bytearray(SAMPLE[:cut] if cut < len(SAMPLE) else SAMPLE)
    for at, mask in flips:  # the header and the JSON: the tail's bytes are data
        if at < len(data):
            data[at] ^= mask
    with contextlib.suppress(CheckpointDecodeError):
        Serializer().loads(bytes(data))


class S(TypedDict, total=False):
    n: int
    doc: dict[str, Any]


def _graph(saver: Any) -> Any:
    b = StateGraph(S)
    b.add_node("attach", lambda s: {"doc": {"name": "scan.pdf", "data": FILE}})
    b.add_node("count", lambda s: {"n": s["n"] + 1})
    b.add_edge(START, "attach")
    b.add_edge("attach", "count")
    return b.compile(checkpointer=saver)


def _check_graph(saver: Any) -> None:
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "t"}}
    out = graph.invoke({"n": 0}, config)
    assert out == {"n": 1, "doc": {"name": "scan.pdf", "data": FILE}}
    history = list(graph.get_state_history(config))
    assert [s.values.get("doc", {}).get("data") == FILE for s in history] == [
        True,
        True,
        False,
        False,
    ]


def test_every_saver_round_trips_framed_values(tmp_path: Path) -> None:
    _check_graph(InMemorySaver())
    path = tmp_path / "f.sqlite"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        _check_graph(saver)
    with sqlite3.connect(path) as conn:
        kinds = {
            table: {row[0] for row in conn.execute(f"SELECT type FROM pausepoint_{table}")}
            for table in ("checkpoints", "writes", "blobs")
        }
        metadata = conn.execute("SELECT metadata FROM pausepoint_checkpoints").fetchall()
    # The file once, in a value row; the checkpoints reference it, the write too.
    assert kinds == {"checkpoints": {FORMAT}, "writes": {FORMAT, "ppref/1"}, "blobs": {FRAMED}}
    for (text,) in metadata:  # metadata stays a JSON object, whatever the values hold
        assert isinstance(json.loads(text), dict)


@pytest.mark.postgres
def test_postgres_round_trips_framed_values(pg_url: str, pg_kwargs: dict[str, Any]) -> None:
    import psycopg

    from pausepoint.checkpoint.postgres import PostgresSaver

    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        _check_graph(saver)
        rows = conn.execute(
            "SELECT type, value FROM pausepoint_blobs WHERE thread_id = 't'"
        ).fetchall()
    framed = [bytes(blob) for kind, blob in rows if kind == FRAMED]
    assert framed
    assert all(is_framed(b) for b in framed)
