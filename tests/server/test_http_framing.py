"""The server's bytes without a server: SSE frames, heartbeats, JSON forms, body checks."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("starlette")

from pausepoint.server.body import Fields
from pausepoint.server.errors import InvalidRequestError
from pausepoint.server.run_body import run_request
from pausepoint.server.sse import HEARTBEAT, frame, with_heartbeats
from pausepoint.server.wire import dumps, jsonable
from pausepoint.types import Interrupt


def test_a_frame_is_event_data_blank_line():
    assert frame("metadata", {"run_id": "r1", "attempt": 1}) == (
        b'event: metadata\ndata: {"run_id":"r1","attempt":1}\n\n'
    )


def test_a_resumable_frame_carries_its_id():
    assert frame("values", {"a": 1}, "7") == b'event: values\ndata: {"a":1}\nid: 7\n\n'


def test_none_is_data_null_never_an_empty_data_line():
    assert frame("end", None) == b"event: end\ndata: null\n\n"


def test_data_with_newlines_stays_on_one_line():
    raw = frame("values", {"text": "two\nlines\r\n", "list": [1, 2]})
    lines = raw.split(b"\n")
    assert lines[0] == b"event: values"
    assert lines[1].startswith(b"data: ")
    assert lines[2:] == [b"", b""]
    assert json.loads(lines[1][6:]) == {"text": "two\nlines\r\n", "list": [1, 2]}


def test_event_names_with_line_breaks_are_refused():
    with pytest.raises(ValueError, match="line break"):
        frame("values\nevent: x", 1)


def test_heartbeat_is_a_comment():
    assert HEARTBEAT == b": heartbeat\n\n"


async def _slow(items: list[bytes], gate: asyncio.Event) -> AsyncIterator[bytes]:
    yield items[0]
    await gate.wait()
    for item in items[1:]:
        yield item


def test_heartbeats_fill_silences_and_lose_no_frame():
    async def main() -> list[bytes]:
        gate = asyncio.Event()
        got: list[bytes] = []
        async for chunk in with_heartbeats(_slow([b"a", b"b", b"c"], gate), 0.001):
            got.append(chunk)
            if chunk == HEARTBEAT and got.count(HEARTBEAT) == 3:
                gate.set()
        return got

    got = asyncio.run(main())
    assert [c for c in got if c != HEARTBEAT] == [b"a", b"b", b"c"]
    assert got[0] == b"a"
    assert got.count(HEARTBEAT) >= 3


def test_heartbeats_take_another_beat():
    async def main() -> list[bytes]:
        gate = asyncio.Event()
        got: list[bytes] = []
        async for chunk in with_heartbeats(_slow([b"{}", b"x"], gate), 0.001, b"\n"):
            got.append(chunk)
            if chunk == b"\n":
                gate.set()
        return got

    assert b"\n" in asyncio.run(main())


def test_closing_the_stream_closes_its_source():
    closed: list[bool] = []

    async def source() -> AsyncIterator[bytes]:
        try:
            yield b"a"
            await asyncio.Event().wait()
            yield b"never"
        finally:
            closed.append(True)

    async def main() -> None:
        beats = with_heartbeats(source(), 0.001)
        assert await anext(beats) == b"a"
        assert await anext(beats) == HEARTBEAT
        await beats.aclose()

    asyncio.run(main())
    assert closed == [True]


# --- JSON forms ---------------------------------------------------------------------------


@dataclasses.dataclass
class Point:
    x: int
    when: datetime.datetime


class Modelish:
    def model_dump(self) -> dict[str, Any]:
        return {"type": "ai", "content": "hi"}


def test_jsonable_forms():
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    ident = uuid.UUID(int=1)
    assert jsonable(Interrupt("q?", "abc")) == {"value": "q?", "id": "abc"}
    assert jsonable(Point(1, when)) == {"x": 1, "when": "2026-01-02T03:04:05+00:00"}
    assert jsonable({1: (ident, {"s"})}) == {"1": [str(ident), ["s"]]}
    assert jsonable(Modelish()) == {"type": "ai", "content": "hi"}
    assert jsonable(float("nan")) is None
    assert jsonable(b"\x00\x01") == "AAE="
    assert isinstance(jsonable(object()), str)


def test_dumps_is_one_compact_line():
    text = dumps({"a": [1, "é\n"], "b": None})
    assert text == '{"a":[1,"é\\n"],"b":null}'


# --- request bodies -------------------------------------------------------------------------


def test_fields_report_every_problem_at_once():
    f = Fields({"limit": "ten", "metadata": [], "status": "sleeping"})
    f.int("limit", 10)
    f.dict("metadata")
    f.choice("status", ("idle", "busy"), None)
    with pytest.raises(InvalidRequestError) as caught:
        f.check()
    message = str(caught.value)
    assert "'limit'" in message
    assert "'metadata'" in message
    assert "'status'" in message


def test_a_body_that_is_not_an_object_is_refused():
    with pytest.raises(InvalidRequestError, match="JSON object"):
        run_request([1, 2])


def test_run_request_defaults_and_command_with_input():
    req = run_request({"assistant_id": "g", "input": {}, "command": {"resume": "yes"}})
    assert req.command == {"resume": "yes"}
    assert req.input == {}
    assert req.stream_mode == ["values"]
    assert req.multitask_strategy == "enqueue"
    assert req.if_not_exists == "reject"
    assert req.on_disconnect == "cancel"


def test_run_request_takes_one_stream_mode_as_a_string():
    assert run_request({"assistant_id": "g", "stream_mode": "events"}).stream_mode == ["events"]


def test_run_request_refuses_wrong_types():
    body = {
        "assistant_id": 3,
        "stream_mode": ["values", "nope"],
        "multitask_strategy": "queue",
        "interrupt_before": "a",
        "stream_subgraphs": "yes",
    }
    with pytest.raises(InvalidRequestError) as caught:
        run_request(body)
    message = str(caught.value)
    names = ("assistant_id", "nope", "multitask_strategy", "interrupt_before", "stream_subgraphs")
    for name in names:
        assert name in message
