"""Mutations of stored rows for the corrupt-row property test (``test_corrupt_rows``).

Each mutation takes one real row written by a real graph run and damages one
column: truncated or flipped bytes, a value of the wrong column type, valid JSON of
the wrong structure, an unknown type tag, an oversized or deeply nested value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from pausepoint.checkpoint._packing import unpack
from pausepoint.serde.frames import MAGIC, is_framed, unframe

JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
"""Any small JSON value (no floats: JSONB and json disagree on their text)."""

CHECKPOINT_KEYS = (
    "v",
    "id",
    "ts",
    "channel_values",
    "channel_versions",
    "versions_seen",
    "updated_channels",
)
DEEP = 100_000
"""Nesting deeper than any recursion limit."""


@dataclass(frozen=True)
class Mutation:
    """One damaged column of one row.

    Attributes:
        table: ``"checkpoints"`` or ``"writes"``.
        row: Index into the victim's rows of that table (modulo their number).
        column: The column to replace.
        make: A description, for the failure report.
        value: The new value, or a function of the old value returning it.
        sqlite_only: The value is of a type only SQLite's columns accept.
        must_fail: No reading of the row can succeed (a truncated checkpoint, a blob
            column holding a number or text).

    """

    table: str
    row: int
    column: str
    make: str
    value: Any
    sqlite_only: bool = False
    must_fail: bool = False

    def apply(self, old: Any) -> Any:
        """The column's new value, given its old one."""
        return self.value(old) if callable(self.value) else self.value


def _truncate(n: int) -> Any:
    return lambda old: bytes(old)[: n % max(len(old), 1)]


def _flip(i: int, mask: int) -> Any:
    def flip(old: Any) -> bytes:
        data = bytearray(bytes(old))
        if data:
            data[i % len(data)] ^= mask
        return bytes(data)

    return flip


def _split(old: Any) -> tuple[bytes, bytes | None]:
    """A row's JSON, and the raw tail after it if the row is framed (serde/frames.py).

    A deflated row (schema 9) is inflated: its reshaped JSON is stored as it is, which
    reads as a row written before version 9 (its bytes are damaged by the others).
    """
    data = unpack(bytes(old), "a row")
    if not is_framed(data):
        return data, None
    text, tail = unframe(data)
    return text.encode("ascii"), bytes(tail)


def _tree(text: bytes) -> Any:
    """The JSON of a row's text; a text that is not JSON (a write stored as a reference
    to a value row, ``_write_refs``: ``"<version> <from> <to> <wrap> <digest>"``) as a
    JSON string."""
    try:
        return json.loads(text)
    except ValueError:
        return text.decode("ascii", "replace")


def _join(text: bytes, tail: bytes | None) -> bytes:
    """The row holding ``text`` (framed again, with its tail, if it was)."""
    return text if tail is None else MAGIC + len(text).to_bytes(8, "big") + text + tail


def _reshape(change: Any) -> Any:
    def reshape(old: Any) -> bytes:
        text, tail = _split(old)
        return _join(json.dumps(change(_tree(text))).encode(), tail)

    return reshape


def _set_key(key: str, value: Any) -> Any:
    def change(tree: Any) -> Any:
        if isinstance(tree, dict):
            tree[key] = value
        return tree

    return change


def _drop_key(key: str) -> Any:
    def change(tree: Any) -> Any:
        if isinstance(tree, dict):
            tree.pop(key, None)
        return tree

    return change


def _in_map(key: str, value: Any) -> Any:
    """Set every entry of ``tree[key]`` (a dict) to ``value``."""

    def change(tree: Any) -> Any:
        inner = tree.get(key) if isinstance(tree, dict) else None
        if isinstance(inner, dict):
            for k in list(inner):
                inner[k] = value
            inner["__extra__"] = value
        return tree

    return change


def _deep(_: Any) -> bytes:
    return b"[" * DEEP + b"]" * DEEP


def _deep_value(old: Any) -> bytes:
    text, tail = _split(old)
    tree = _tree(text)
    deep = "[" * DEEP + "1" + "]" * DEEP
    if isinstance(tree, dict) and isinstance(tree.get("channel_values"), dict):
        return _join(
            text.replace(
                b'"channel_values":{', b'"channel_values":{"deep":' + deep.encode() + b",", 1
            ),
            tail,
        )
    return deep.encode()


def _huge_number(digits: int) -> Any:
    return lambda old: b'{"__pp__":"tuple","v":[' + b"7" * digits + b"]}"


def _tag(tag: str, payload: Any) -> Any:
    node = {"__pp__": tag, "v": payload}

    def change(tree: Any) -> Any:
        values = tree.get("channel_values") if isinstance(tree, dict) else None
        if isinstance(values, dict):
            values["tagged"] = node
            return tree
        return node

    return change


@st.composite
def blob_mutations(draw: st.DrawFn, table: str, column: str) -> Mutation:
    """Damage a blob column (a checkpoint or a write's value)."""
    row = draw(st.integers(0, 50))
    kind = draw(st.sampled_from(["truncate", "flip", "column", "tag", "big", "deep", "json"]))
    if kind == "truncate":
        n = draw(st.integers(0, 10_000))
        whole = table == "checkpoints"  # a truncated JSON object is never JSON
        return Mutation(table, row, column, f"truncate at {n}", _truncate(n), must_fail=whole)
    if kind == "flip":
        i, mask = draw(st.integers(0, 10_000)), draw(st.integers(1, 255))
        return Mutation(table, row, column, f"flip byte {i} ^ {mask}", _flip(i, mask))
    if kind == "column":
        value = draw(st.sampled_from([0, 7, 2**62, -1, 1.5, "text", None]))
        return Mutation(table, row, column, f"{value!r} in a blob column", value, True, True)
    if kind == "tag":
        tag = draw(
            st.text(min_size=1, max_size=12) | st.sampled_from(["dataclass", "enum", "bytes"])
        )
        payload = draw(JSON)
        return Mutation(table, row, column, f"tag {tag!r}", _reshape(_tag(tag, payload)))
    if kind == "big":
        digits = draw(st.sampled_from([5_000, 100_000]))
        return Mutation(table, row, column, f"a {digits}-digit number", _huge_number(digits))
    if kind == "deep":
        return Mutation(
            table, row, column, "deep nesting", draw(st.sampled_from([_deep, _deep_value]))
        )
    value = draw(JSON)
    return Mutation(table, row, column, f"the JSON {value!r}", json.dumps(value).encode())


@st.composite
def checkpoint_shapes(draw: st.DrawFn) -> Mutation:
    """Valid JSON of the wrong structure in a checkpoint blob."""
    row = draw(st.integers(0, 50))
    key = draw(st.sampled_from(CHECKPOINT_KEYS))
    kind = draw(st.sampled_from(["drop", "set", "entries", "whole"]))
    if kind == "drop":
        return Mutation("checkpoints", row, "checkpoint", f"no {key!r}", _reshape(_drop_key(key)))
    value = draw(JSON)
    if kind == "set":
        change = _set_key(key, value)
        return Mutation("checkpoints", row, "checkpoint", f"{key!r} = {value!r}", _reshape(change))
    if kind == "entries":
        key = draw(st.sampled_from(["channel_versions", "versions_seen", "channel_values"]))
        change = _in_map(key, value)
        return Mutation(
            "checkpoints", row, "checkpoint", f"{key!r} entries = {value!r}", _reshape(change)
        )
    return Mutation(
        "checkpoints", row, "checkpoint", f"the checkpoint is {value!r}", _reshape(lambda _: value)
    )


@st.composite
def text_mutations(draw: st.DrawFn) -> Mutation:
    """Damage a text column: metadata, a type string, a write's task id or channel."""
    row = draw(st.integers(0, 50))
    table, column = draw(
        st.sampled_from(
            [
                ("checkpoints", "metadata"),
                ("checkpoints", "type"),
                ("writes", "type"),
                ("writes", "task_id"),
                ("writes", "channel"),
            ]
        )
    )
    if draw(st.booleans()):
        value = draw(st.sampled_from([0, 2**62, 1.5, b"\xff\x00bytes", None]))
        return Mutation(table, row, column, f"{value!r} in a text column", value, True)
    if column == "metadata":
        meta = draw(
            JSON
            | st.fixed_dictionaries(
                {"source": JSON, "step": JSON, "parents": JSON}, optional={"writes": JSON}
            )
        )
        return Mutation(table, row, column, f"metadata {meta!r}", json.dumps(meta))
    text = draw(
        st.sampled_from(["", "__interrupt__", "__resume__", "__error__", "__asked__", "x" * 40])
        | st.text(st.characters(exclude_characters="\x00"), max_size=8)
    )
    return Mutation(table, row, column, f"{column} {text!r}", text)


MUTATIONS = st.one_of(
    blob_mutations("checkpoints", "checkpoint"),
    blob_mutations("writes", "value"),
    checkpoint_shapes(),
    text_mutations(),
)
"""Every kind of damage, to any row of the victim thread."""
