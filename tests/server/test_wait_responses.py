"""``runs/wait`` and ``/join``: a run that ends at once is answered plainly, a longer one
streams (newlines keep it alive) — the same JSON either way.

The window (`pausepoint.server.routes_runs.QUICK_SECONDS`) is set far above or to zero
here, so which form answers never depends on how fast the machine is. A client that
leaves a streaming wait cancels its run: tests/server/test_http_sse.py, through a real
server process.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

pytest.importorskip("starlette")

import httpx
from tests.server.run_graphs import GRAPHS
from tests.server.service_fixtures import db_url, pg_schema, pg_url

from pausepoint.server import routes_runs
from pausepoint.server.app import create_app
from pausepoint.server.service import RunService

__all__ = ["db_url", "pg_schema", "pg_url"]

pytestmark = pytest.mark.asyncio

_ASK = {"assistant_id": "asker", "input": {"request": "refund"}, "if_not_exists": "create"}


@pytest_asyncio.fixture
async def client(db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    service = await RunService.open(db_url, GRAPHS, workers=1, poll_seconds=0.05)
    await service.start()
    transport = httpx.ASGITransport(app=create_app(service))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as c:
            yield c
    finally:
        await service.close()


async def _answers(client: httpx.AsyncClient, thread: str) -> list[httpx.Response]:
    """A pause and its answer through ``runs/wait``, then ``/join`` of the answer's run."""
    paused = await client.post(f"/threads/{thread}/runs/wait", json=_ASK, timeout=60)
    resume = {"assistant_id": "asker", "command": {"resume": "yes"}}
    done = await client.post(f"/threads/{thread}/runs/wait", json=resume, timeout=60)
    run_path = done.headers["content-location"]
    joined = await client.get(f"{run_path}/join", timeout=60)
    return [paused, done, joined]


def _bodies(responses: list[httpx.Response]) -> list[Any]:
    for r in responses:
        assert r.status_code == 200, r.text
    return [json.loads(r.content) for r in responses]


async def test_a_run_that_ends_within_the_window_is_answered_plainly(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routes_runs, "QUICK_SECONDS", 60.0)
    responses = await _answers(client, "quick")
    for r in responses:  # a whole body: its length known, no stream, no keep-alive
        assert r.headers["content-length"] == str(len(r.content))
        assert r.headers["content-type"] == "application/json"
        assert r.headers["location"].endswith("/join")
        assert not r.content.startswith(b"\n")
    paused, done, joined = _bodies(responses)
    assert paused["__interrupt__"][0]["value"] == {"question": "Approve refund?"}
    assert done == joined
    assert done["result"] == "refund: yes"


async def test_a_longer_run_streams_the_same_json(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routes_runs, "QUICK_SECONDS", 60.0)
    plain = _bodies(await _answers(client, "plain"))
    monkeypatch.setattr(routes_runs, "QUICK_SECONDS", 0.0)
    responses = await _answers(client, "streamed")
    for r in responses:  # streamed: no length announced
        assert "content-length" not in r.headers
        assert r.headers["location"].endswith("/join")
    streamed = _bodies(responses)
    assert [_no_ids(b) for b in streamed] == [_no_ids(b) for b in plain]  # ids aside


def _no_ids(body: Any) -> Any:
    """``body`` with its questions' ids blanked (each thread asks with ids of its own)."""
    if not isinstance(body, dict) or "__interrupt__" not in body:
        return body
    return {**body, "__interrupt__": [{**q, "id": "-"} for q in body["__interrupt__"]]}


@pytest.mark.parametrize("quick", [60.0, 0.0])
async def test_a_stateless_wait_deletes_its_thread_after_answering(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch, quick: float
) -> None:
    """``POST /runs/wait``: the run's thread is deleted once the answer is in hand, in
    either form of the answer."""
    monkeypatch.setattr(routes_runs, "QUICK_SECONDS", quick)
    body = {"assistant_id": "asker", "input": {"request": "once"}}
    done = await client.post("/runs/wait", json=body, timeout=60)
    assert done.status_code == 200, done.text
    assert json.loads(done.content)["__interrupt__"][0]["value"] == {"question": "Approve once?"}
    thread = done.headers["content-location"].split("/")[2]
    for _ in range(3000):  # the deletion runs beside the response: bounded, not timed
        if (await client.get(f"/threads/{thread}")).status_code == 404:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the stateless run's thread {thread} was kept")
