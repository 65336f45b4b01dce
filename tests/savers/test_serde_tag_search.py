"""The serializer's look for tags in a large payload (issues 32 and 35).

``serializer._untagged`` decides whether a payload may skip the object hook. It looks
for an underscore and a backslash first (one ``memchr`` each) and skips the searches
they rule out; its answer must be the three searches' answer for every input, so the
three searches are kept here as the oracle.
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pausepoint.errors import CheckpointDecodeError
from pausepoint.serde import Serializer, fast
from pausepoint.serde.decoder import make_object_hook
from pausepoint.serde.serializer import _untagged  # pyright: ignore[reportPrivateUsage]

TAG = b"__pp__"


def _made(*, plain: bool) -> Serializer:
    """A serializer on the standard library's path (``PAUSEPOINT_FAST=0``) or on orjson's."""
    saved = os.environ.get(fast.ENV)
    os.environ[fast.ENV] = "0" if plain else "1"
    try:
        return Serializer()
    finally:
        if saved is None:
            del os.environ[fast.ENV]
        else:
            os.environ[fast.ENV] = saved


# Both paths, whichever the run selects: each must decode as the hook does.
BOTH = (_made(plain=True), _made(plain=False))


def searched(data: bytes | str) -> bool:
    """The look as it was: the tag, then both escapes, each searched for in full."""
    return (
        type(data) is bytes and TAG not in data and b"\\u005" not in data and b"\\u0070" not in data
    )


# Text made mostly of the characters the searches are about, so that near misses
# (``\u005`` alone, ``_p_``, ``\u0071``) and hits both come up often.
pieces = st.sampled_from(
    [
        "_",
        "__",
        "p",
        "pp",
        "__pp__",
        "\\",
        "\\u",
        "\\u00",
        "\\u005f",
        "\\u005F",
        "\\u0070",
        "\\u0071",
        "\\u0050",
        "\\n",
        '\\"',
        "0",
        "5",
        "7",
        "f",
        '"',
        ":",
        "{",
        "}",
        "x",
        " ",
        "\xe9",
    ]
)
texts = st.lists(pieces, max_size=40).map("".join)


@settings(max_examples=500)
@given(texts)
def test_the_look_answers_as_the_three_searches_for_any_text(text: str) -> None:
    data = text.encode("utf-8")
    assert _untagged(data) == searched(data)
    assert _untagged(text) is False  # str: always decoded with the hook, as before


leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=12)
keys = st.text(max_size=8) | st.sampled_from(["__pp__", "_", "p", "__p", "\\", "v"])
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)


def _escaped(text: str, letters: str) -> str:
    """``text`` with each of ``letters`` written as a JSON ``\\uXXXX`` escape."""
    for letter in letters:
        text = text.replace(letter, f"\\u{ord(letter):04x}")
    return text


@settings(max_examples=300)
@given(values, st.sampled_from(["", "_", "p", "_p"]), st.booleans())
def test_the_look_answers_as_the_three_searches_for_json_texts(
    value: Any, letters: str, ascii_only: bool
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, separators=(",", ":"))
    data = _escaped(text, letters).encode("utf-8")
    assert _untagged(data) == searched(data)


def _outcomes(ser: Serializer, data: bytes) -> tuple[object, object]:
    """The value ``ser`` reads from ``data``, and the value the object hook makes of it.

    Each is ``Exception`` where it fails (a stray tag key in a generated value is a
    crafted node): both must then fail.
    """
    hook = make_object_hook(ser.registry)
    read: object
    hooked: object
    try:
        read = ser.loads(data)
    except CheckpointDecodeError:
        read = Exception
    try:
        hooked = json.loads(data.decode("utf-8"), object_hook=hook)
    except Exception:  # any failure of the hook's decoding
        hooked = Exception
    return read, hooked


@settings(max_examples=150, deadline=None)
@given(values, st.sampled_from(["", "_", "p", "_p"]))
def test_a_large_payload_decodes_as_the_hook_decodes_it(value: Any, letters: str) -> None:
    # A list padded past the size the look starts at, its text's letters perhaps
    # escaped: an escaped tag key still decodes as a tag (a tuple here), whether the
    # look lets the payload skip the hook or not.
    padded = ["x" * 4096, value, {"__pp__": "tuple", "v": [1, 2]}]
    tagged = _escaped(json.dumps(padded, separators=(",", ":")), letters).encode("ascii")
    plain = json.dumps(["x" * 4096, value], separators=(",", ":"))
    untagged = _escaped(plain, letters).encode("ascii")
    for ser in BOTH:
        for data in (tagged, untagged):
            read, hooked = _outcomes(ser, data)
            assert read == hooked


def test_a_large_prose_payload_without_underscore_or_backslash_skips_the_hook() -> None:
    messages = [{"role": "user", "content": "plain words " * 50} for _ in range(20)]
    data = json.dumps(messages, separators=(",", ":")).encode("ascii")
    assert b"_" not in data
    assert b"\\" not in data
    assert _untagged(data)
    assert Serializer().loads(data) == messages
