"""Bad requests against ``pausepoint serve``: 4xx JSON errors, and nothing written.

Raw HTTP (httpx) where the SDK would not send the request (malformed JSON, wrong
types, a huge body); the stored state, runs and threads are compared before and after.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph_sdk")
pytest.importorskip("uvicorn")

import httpx
from tests.server.serving import TOKEN, Served, serve

MAX_BODY = 64 * 1024
ORIGIN = "http://ui.example"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    where: Path = tmp_path_factory.mktemp("serve")
    extra = ["--max-body", str(MAX_BODY), "--cors-origin", ORIGIN]
    with serve(str(where / "serve.sqlite"), where / "serve.log", extra=extra) as s:
        yield s


@pytest.fixture
def http(served: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, headers={"x-api-key": TOKEN}, timeout=30) as c:
        yield c


@pytest.fixture
def paused(http: httpx.Client) -> tuple[str, str]:
    """A thread of ``approval`` waiting on its question: (thread id, question id)."""
    tid = http.post("/threads", json={}).json()["thread_id"]
    body = {"assistant_id": "approval", "input": {"request": "r"}}
    result = http.post(f"/threads/{tid}/runs/wait", json=body).json()
    return tid, result["__interrupt__"][0]["id"]


def _stored(http: httpx.Client, tid: str) -> Any:
    """What a bad request must leave alone: the thread, its state, history and runs."""
    thread = http.get(f"/threads/{tid}").json()
    thread.pop("updated_at")
    return (
        thread,
        http.get(f"/threads/{tid}/state").json(),
        http.post(f"/threads/{tid}/history", json={"limit": 100}).json(),
        http.get(f"/threads/{tid}/runs", params={"limit": 100}).json(),
        http.post("/threads/count", json={}).json(),
    )


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["message"]
    assert body["detail"] == body["message"]
    return body


def test_without_the_token_only_ok_and_info_answer(served: Served):
    with httpx.Client(base_url=served.url, timeout=30) as anonymous:
        assert anonymous.get("/ok").json() == {"ok": True}
        assert anonymous.get("/info").json()["flags"]["assistants"] is True
        _error(anonymous.post("/threads/search", json={}), 401)
        _error(anonymous.get("/threads/x", headers={"x-api-key": "wrong"}), 401)
        bearer = {"authorization": f"Bearer {TOKEN}"}
        assert anonymous.post("/threads/search", json={}, headers=bearer).status_code == 200


def test_unknown_thread_assistant_run_and_path_are_404(http: httpx.Client, paused: tuple[str, str]):
    tid, _ = paused
    before = _stored(http, tid)
    nobody = str(uuid.uuid4())
    assert _error(http.get(f"/threads/{nobody}"), 404)["error"] == "NotFoundError"
    _error(http.get(f"/threads/{nobody}/state"), 404)
    _error(http.post(f"/threads/{nobody}/history", json={}), 404)
    run = {"assistant_id": "approval", "input": {"request": "x"}}
    _error(http.post(f"/threads/{nobody}/runs", json=run), 404)
    _error(http.post(f"/threads/{tid}/runs", json={**run, "assistant_id": "nope"}), 404)
    _error(http.get(f"/threads/{tid}/runs/{nobody}"), 404)
    _error(http.get("/assistants/nope"), 404)
    _error(http.get("/no/such/path"), 404)
    assert _stored(http, tid) == before
    assert http.get(f"/threads/{nobody}").status_code == 404


def test_malformed_json_is_422_and_writes_nothing(http: httpx.Client, paused: tuple[str, str]):
    tid, _ = paused
    before = _stored(http, tid)
    headers = {"content-type": "application/json"}
    for path in (f"/threads/{tid}/runs", f"/threads/{tid}/runs/wait", f"/threads/{tid}/state"):
        body = _error(
            http.post(path, content=b'{"assistant_id": "approval", ', headers=headers), 422
        )
        assert "JSON" in body["message"]
    _error(http.post("/threads", content=b"[1, 2", headers=headers), 422)
    _error(http.post(f"/threads/{tid}/runs", content=b"", headers=headers), 422)
    assert _stored(http, tid) == before


def test_wrong_types_are_422_with_every_problem(http: httpx.Client, paused: tuple[str, str]):
    tid, _ = paused
    before = _stored(http, tid)
    run = {
        "assistant_id": 7,
        "stream_mode": ["values", "telepathy"],
        "multitask_strategy": "sometimes",
        "config": "not an object",
    }
    message = _error(http.post(f"/threads/{tid}/runs", json=run), 422)["message"]
    for name in ("assistant_id", "telepathy", "multitask_strategy", "config"):
        assert name in message
    _error(http.post(f"/threads/{tid}/runs/stream", json=[run]), 422)
    _error(http.post("/threads/search", json={"limit": "ten"}), 422)
    _error(http.post("/threads/search", json={"status": "asleep"}), 422)
    _error(http.post("/threads", json={"thread_id": 5}), 422)
    _error(http.patch(f"/threads/{tid}", json={"metadata": [1]}), 422)
    _error(http.post(f"/threads/{tid}/runs/x/cancel", params={"action": "explode"}), 422)
    _error(http.get(f"/threads/{tid}/runs", params={"limit": "many"}), 422)
    assert _stored(http, tid) == before


def test_a_body_over_the_limit_is_413_and_writes_nothing(
    http: httpx.Client, paused: tuple[str, str]
):
    tid, _ = paused
    before = _stored(http, tid)
    big = {"assistant_id": "approval", "input": {"request": "x" * (MAX_BODY + 1)}}
    body = _error(http.post(f"/threads/{tid}/runs", json=big), 413)
    assert body["error"] == "BodyTooLargeError"
    chunked = (json.dumps(big).encode()[i : i + 4096] for i in range(0, MAX_BODY + 8192, 4096))
    _error(http.post(f"/threads/{tid}/state", content=chunked), 413)
    assert _stored(http, tid) == before


def test_an_unknown_question_id_is_422_with_the_typed_error(
    http: httpx.Client, paused: tuple[str, str]
):
    tid, _ = paused
    before = _stored(http, tid)
    run = {"assistant_id": "approval", "command": {"resume": {"0" * 32: "yes"}}}
    body = _error(http.post(f"/threads/{tid}/runs", json=run), 422)
    assert body["error"] == "UnknownInterruptIdError"
    assert _stored(http, tid) == before


def test_an_answer_to_an_answered_question_is_409_with_the_typed_error(http: httpx.Client):
    tid = http.post("/threads", json={}).json()["thread_id"]
    start = {"assistant_id": "twice", "input": {"request": "t"}}
    first = http.post(f"/threads/{tid}/runs/wait", json=start).json()
    qid = first["__interrupt__"][0]["id"]
    answered = {"assistant_id": "twice", "command": {"resume": "A"}}
    second = http.post(f"/threads/{tid}/runs/wait", json=answered).json()
    assert second["__interrupt__"][0]["value"] == "second?"
    before = _stored(http, tid)
    again = {"assistant_id": "twice", "command": {"resume": {f"{qid}:0": "B"}}}
    body = _error(http.post(f"/threads/{tid}/runs", json=again), 409)
    assert body["error"] == "AlreadyAnsweredError"
    assert "'A'" in body["message"]
    assert _stored(http, tid) == before
    same = {"assistant_id": "twice", "command": {"resume": {f"{qid}:0": "A"}}}
    assert http.post(f"/threads/{tid}/runs", json=same).status_code == 200


def test_a_resume_with_nothing_waiting_is_422(http: httpx.Client):
    tid = http.post("/threads", json={}).json()["thread_id"]
    run = {"assistant_id": "approval", "input": {"request": "q"}}
    http.post(f"/threads/{tid}/runs/wait", json=run)
    http.post(f"/threads/{tid}/runs/wait", json={**run, "command": {"resume": "ok"}})
    before = _stored(http, tid)
    again = {"assistant_id": "approval", "command": {"resume": "ok again"}}
    body = _error(http.post(f"/threads/{tid}/runs/stream", json=again), 422)
    assert body["error"] == "NothingToResumeError"
    assert _stored(http, tid) == before


def test_cors_preflight_and_exposed_headers(http: httpx.Client):
    preflight = http.options(
        "/threads/search",
        headers={
            "origin": ORIGIN,
            "access-control-request-method": "POST",
            "access-control-request-headers": "x-api-key, content-type",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == ORIGIN
    got = http.post("/threads/search", json={}, headers={"origin": ORIGIN})
    exposed = got.headers["access-control-expose-headers"].lower()
    for name in ("content-location", "location", "x-pagination-total", "x-pagination-next"):
        assert name in exposed
    refused = http.options(
        "/threads/search",
        headers={"origin": "http://evil.example", "access-control-request-method": "POST"},
    )
    assert "access-control-allow-origin" not in refused.headers
