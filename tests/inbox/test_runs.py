"""The inbox answering through the run queue (``runs=``): pages and JSON API.

The inbox is mounted in `pausepoint serve`'s application (`with_inbox`) on a real
SQLite file; threads are started through the server's own API, and every answer is a
run its worker executes. Waits are the server's ``join`` (no sleeps).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.inbox import graphs
from tests.inbox.conftest import TOKEN

BEARER = {"Authorization": f"Bearer {TOKEN}"}


def served_app(db: str, *, poll_seconds: float = 3.0) -> Any:
    """`pausepoint serve`'s app on ``db`` (graph ``twice``) with the inbox at /inbox."""
    from pausepoint.inbox.mount import with_inbox
    from pausepoint.server.app import create_app
    from pausepoint.server.service import RunService

    async def opened() -> RunService:
        return await RunService.open(db, {"twice": graphs.two_questions()}, workers=1)

    return with_inbox(
        create_app(opened, token=TOKEN), "twice", token=TOKEN, poll_seconds=poll_seconds
    )


@pytest.fixture
def client(db_path: Path) -> Iterator[Any]:
    from starlette.testclient import TestClient

    with TestClient(served_app(str(db_path))) as c:
        c.get("/inbox/", params={"token": TOKEN})
        yield c


def start(client: Any, thread: str, **state: Any) -> dict[str, Any]:
    """Run a new thread of ``twice`` through the server until it asks; its question."""
    body = {"assistant_id": "twice", "input": state, "if_not_exists": "create"}
    got = client.post(f"/threads/{thread}/runs/wait", json=body, headers=BEARER)
    assert got.status_code == 200, got.text
    (item,) = [q for q in questions(client) if q["thread_id"] == thread]
    return item


def questions(client: Any) -> list[dict[str, Any]]:
    got = client.get("/inbox/api/questions", headers=BEARER)
    assert got.status_code == 200, got.text
    items: list[dict[str, Any]] = got.json()["items"]
    return items


def join(client: Any, thread: str, run_id: str) -> None:
    got = client.get(f"/threads/{thread}/runs/{run_id}/join", headers=BEARER)
    assert got.status_code == 200, got.text


def answer_api(client: Any, q: dict[str, Any], value: Any) -> Any:
    return client.post(q["links"]["answer"], json={"answer": value}, headers=BEARER)


def test_the_api_records_a_run_and_reports_its_outcomes(client: Any) -> None:
    q = start(client, "t1", rows=5)
    sent = answer_api(client, q, {"decision": "approve"})
    assert sent.status_code == 202, sent.text
    run = sent.json()
    assert run["answered"] == q["question_id"]
    assert run["status"] == "pending"
    assert run["run"] == f"/inbox/api/threads/t1/runs/{run['run_id']}"
    join(client, "t1", run["run_id"])

    report = client.get(run["run"], headers=BEARER).json()
    assert report["status"] == "success"
    assert report["ended"]
    outcome = report["outcome"]
    assert outcome["kind"] == "waiting"
    (nxt,) = outcome["questions"]
    assert nxt["value"]["question"] == "Really delete 5 rows?"
    assert nxt["question_id"] != q["question_id"]

    second = answer_api(client, nxt, {"decision": "approve"}).json()
    join(client, "t1", second["run_id"])
    done = client.get(second["run"], headers=BEARER).json()
    assert done["outcome"] == {
        "kind": "finished",
        "values": {"rows": 5, "decision": "approve", "result": "approve: 5 rows"},
    }
    assert questions(client) == []


def test_a_failed_run_reports_its_error(client: Any) -> None:
    q = start(client, "t13", rows=13)
    first = answer_api(client, q, {"decision": "approve"}).json()
    join(client, "t13", first["run_id"])
    (nxt,) = client.get(first["run"], headers=BEARER).json()["outcome"]["questions"]
    second = answer_api(client, nxt, {"decision": "approve"}).json()
    join(client, "t13", second["run_id"])
    report = client.get(second["run"], headers=BEARER).json()
    assert report["status"] == "error"
    assert report["outcome"]["kind"] == "failed"
    assert report["outcome"]["error"] == "RuntimeError"
    assert "disk full" in report["outcome"]["message"]


def test_a_wrong_answer_is_refused_and_no_run_is_recorded(client: Any) -> None:
    q = start(client, "t1", rows=5)
    got = answer_api(client, q, {"decision": "maybe"})
    assert got.status_code == 422, got.text
    assert got.json()["error"] == "invalid_answer"
    runs = client.get("/threads/t1/runs", headers=BEARER).json()
    assert len(runs) == 1  # only the run that started the thread
    assert questions(client)[0]["question_id"] == q["question_id"]


def test_a_second_answer_to_the_same_question_conflicts(client: Any) -> None:
    q = start(client, "t1", rows=5)
    first = answer_api(client, q, {"decision": "approve"})
    assert first.status_code == 202
    join(client, "t1", first.json()["run_id"])
    again = answer_api(client, q, {"decision": "reject"})
    assert again.status_code == 409, again.text
    assert len(client.get("/threads/t1/runs", headers=BEARER).json()) == 2


def test_the_form_redirects_to_the_run_page_which_shows_the_outcome(client: Any) -> None:
    q = start(client, "t1", rows=5)
    page = client.get(q["links"]["page"])
    csrf = page.text.split('name="csrf" value="')[1].split('"')[0]
    form = {"csrf": csrf, "$.decision": "approve"}
    sent = client.post(q["links"]["page"], data=form, follow_redirects=False)
    assert sent.status_code == 303, sent.text
    where = sent.headers["location"]
    assert where.startswith("/inbox/threads/t1/runs/")
    join(client, "t1", where.rsplit("/", 1)[1])
    shown = client.get(where)
    assert shown.status_code == 200
    assert "Waiting on the next question" in shown.text
    assert "Really delete 5 rows?" in shown.text


def test_an_unknown_run_is_404(client: Any) -> None:
    assert client.get("/inbox/api/threads/t1/runs/nope", headers=BEARER).status_code == 404
    assert client.get("/inbox/threads/t1/runs/nope").status_code == 404


def test_a_name_without_runs_and_a_graph_with_runs_are_refused(graph: Any) -> None:
    from pausepoint.inbox import create_app

    with pytest.raises(ValueError, match="pass runs="):
        create_app("approval")
    with pytest.raises(ValueError, match="with runs="):
        create_app(graph, runs=lambda: None)  # type: ignore[arg-type]
