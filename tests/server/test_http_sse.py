"""The bytes of ``runs/stream``, ``runs/wait`` and the rejoin stream, read raw (httpx).

What both LangGraph clients need: ``text/event-stream``, ``Content-Location`` naming
the run, ``Location`` to reconnect to, ``metadata`` first, one line of JSON per
``data:`` (never empty), ``id:`` lines only on a resumable run, and a replay after
``Last-Event-ID``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph_sdk")
pytest.importorskip("uvicorn")

import httpx
from tests.server.serving import TOKEN, Served, serve

RUN_PATH = re.compile(r"^/threads/(?P<thread>[^/]+)/runs/(?P<run>[^/]+)$")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    where: Path = tmp_path_factory.mktemp("serve")
    with serve(str(where / "serve.sqlite"), where / "serve.log") as s:
        yield s


@pytest.fixture
def http(served: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, headers={"x-api-key": TOKEN}, timeout=30) as c:
        yield c


def _frames(text: str) -> list[dict[str, str]]:
    """The SSE frames of ``text`` as field dicts; comment lines skipped."""
    frames: list[dict[str, str]] = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            assert name not in fields, f"field {name!r} twice in one frame: {block!r}"
            fields[name] = value
        if fields:
            frames.append(fields)
    return frames


def _stream(http: httpx.Client, tid: str, body: dict[str, Any]) -> tuple[httpx.Response, str]:
    headers = {"accept": "text/event-stream"}
    with http.stream("POST", f"/threads/{tid}/runs/stream", json=body, headers=headers) as r:
        return r, r.read().decode()


def test_stream_headers_and_frames(http: httpx.Client):
    tid = http.post("/threads", json={}).json()["thread_id"]
    body = {"assistant_id": "approval", "input": {"request": "x"}, "stream_mode": ["values"]}
    response, text = _stream(http, tid, body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    where = RUN_PATH.match(response.headers["content-location"])
    assert where is not None
    assert where["thread"] == tid
    assert response.headers["location"] == response.headers["content-location"] + "/stream"

    assert text.startswith("event: metadata\ndata: ")
    frames = _frames(text)
    assert frames[0]["event"] == "metadata"
    assert json.loads(frames[0]["data"])["run_id"] == where["run"]
    for f in frames:
        assert set(f) == {"event", "data"}, f
        assert f["data"] != ""
        json.loads(f["data"])
    values = [json.loads(f["data"]) for f in frames if f["event"] == "values"]
    assert values[-1]["__interrupt__"][0]["value"] == {"question": "Approve x?"}


def test_resumable_stream_has_ids_and_replays_after_last_event_id(http: httpx.Client):
    tid = http.post("/threads", json={}).json()["thread_id"]
    body = {
        "assistant_id": "approval",
        "input": {"request": "y"},
        "stream_mode": ["values", "updates"],
        "stream_resumable": True,
    }
    response, text = _stream(http, tid, body)
    frames = [f for f in _frames(text) if f["event"] != "metadata"]
    assert frames
    assert all("id" in f for f in frames)
    assert len({f["id"] for f in frames}) == len(frames)

    headers = {"last-event-id": frames[0]["id"], "accept": "text/event-stream"}
    again = http.get(response.headers["location"], headers=headers)
    assert again.status_code == 200
    replayed = [f for f in _frames(again.text) if f["event"] != "metadata"]
    assert [f["id"] for f in replayed] == [f["id"] for f in frames[1:]]
    assert [f["data"] for f in replayed] == [f["data"] for f in frames[1:]]


def test_wait_is_json_with_the_run_named(http: httpx.Client):
    tid = http.post("/threads", json={}).json()["thread_id"]
    body = {"assistant_id": "approval", "input": {"request": "z"}}
    response = http.post(f"/threads/{tid}/runs/wait", json=body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert RUN_PATH.match(response.headers["content-location"])
    assert response.json()["__interrupt__"][0]["value"] == {"question": "Approve z?"}

    run = http.post(f"/threads/{tid}/runs", json={**body, "command": {"resume": "ok"}})
    assert run.status_code == 200
    assert run.headers["content-location"] == f"/threads/{tid}/runs/{run.json()['run_id']}"
    joined = http.get(f"/threads/{tid}/runs/{run.json()['run_id']}/join")
    assert joined.json()["result"] == "z: ok"


def test_a_failing_run_ends_the_stream_with_an_error_event(http: httpx.Client):
    tid = http.post("/threads", json={}).json()["thread_id"]
    body = {"assistant_id": "approval", "input": {"request": "w"}}
    http.post(f"/threads/{tid}/runs/wait", json=body)
    _, text = _stream(http, tid, {"assistant_id": "approval", "command": {"resume": "boom"}})
    last = _frames(text)[-1]
    assert last["event"] == "error"
    assert json.loads(last["data"]) == {
        "error": "RuntimeError",
        "message": "boom: the side effect failed",
    }
    thread = http.get(f"/threads/{tid}").json()
    assert thread["status"] == "error"
    [run, _] = http.get(f"/threads/{tid}/runs").json()
    assert run["status"] == "error"
    joined = http.get(f"/threads/{tid}/runs/{run['run_id']}/join").json()
    assert joined == {
        "__error__": {"error": "RuntimeError", "message": "boom: the side effect failed"}
    }


def test_an_unknown_node_in_interrupt_before_is_refused(http: httpx.Client):
    tid = http.post("/threads", json={}).json()["thread_id"]
    body = {"assistant_id": "approval", "input": {}, "interrupt_before": ["no_such_node"]}
    assert http.post(f"/threads/{tid}/runs/stream", json=body).status_code == 422
    assert http.get(f"/threads/{tid}/runs").json() == []


def _run_status_after(http: httpx.Client, tid: str, run_id: str) -> str:
    """The run's status once it has left pending/running (bounded: a hang fails)."""
    for _ in range(3000):
        status = http.get(f"/threads/{tid}/runs/{run_id}").json()["status"]
        if status not in ("pending", "running"):
            return status
        time.sleep(0.02)
    raise AssertionError(f"run {run_id} still {status}")


@pytest.mark.parametrize(
    ("on_disconnect", "expected"), [("cancel", "interrupted"), ("continue", "success")]
)
def test_a_client_that_leaves_cancels_its_run_unless_continue(
    http: httpx.Client, tmp_path: Path, on_disconnect: str, expected: str
):
    tid = http.post("/threads", json={}).json()["thread_id"]
    gate = tmp_path / "gate"
    body = {
        "assistant_id": "ticker",
        "input": {"stop": 10**9, "gate": str(gate)},
        "stream_mode": ["values"],
        "on_disconnect": on_disconnect,
    }
    with http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
        run_id = RUN_PATH.match(response.headers["content-location"])["run"]  # type: ignore[index]
        for line in response.iter_lines():
            if line.startswith("event: values"):
                break  # the run is running: leave
    if on_disconnect == "continue":
        gate.touch()
    assert _run_status_after(http, tid, run_id) == expected


@pytest.mark.parametrize(
    ("on_disconnect", "expected"), [("cancel", "interrupted"), ("continue", "success")]
)
def test_a_client_that_leaves_a_wait_cancels_its_run_unless_continue(
    http: httpx.Client, tmp_path: Path, on_disconnect: str, expected: str
):
    """A run still going when its wait's window is over is answered by a stream (no
    length announced); the client leaving it cancels the run as a stream's does."""
    tid = http.post("/threads", json={}).json()["thread_id"]
    gate = tmp_path / "gate"
    body = {
        "assistant_id": "ticker",
        "input": {"stop": 10**9, "gate": str(gate)},
        "on_disconnect": on_disconnect,
    }
    with http.stream("POST", f"/threads/{tid}/runs/wait", json=body) as response:
        assert response.status_code == 200
        assert "content-length" not in response.headers  # streamed: it cannot have ended
        run_id = RUN_PATH.match(response.headers["content-location"])["run"]  # type: ignore[index]
    if on_disconnect == "continue":
        gate.touch()
    assert _run_status_after(http, tid, run_id) == expected
