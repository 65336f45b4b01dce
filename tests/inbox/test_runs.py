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


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, db_path: Path) -> Iterator[str]:
    """A SQLite file, or a PostgreSQL URL confined to a fresh schema."""
    if request.param == "sqlite":
        yield str(db_path)
        return
    from tests.server.serving import pg_database

    yield from pg_database("inbox_runs")


@pytest.fixture
def client(database: str) -> Iterator[Any]:
    from starlette.testclient import TestClient

    with TestClient(served_app(database)) as c:
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


@pytest.fixture
def idle(db_path: Path) -> Iterator[tuple[Any, Any]]:
    """The queued inbox of a `RunService` whose workers are not started (runs stay
    pending until the test starts them), and a test client logged in to it.

    The threads are started outside the server (a plain SqliteSaver on the same file):
    the inbox makes their server records when it answers.
    """
    import contextlib
    from collections.abc import AsyncGenerator

    from starlette.applications import Starlette
    from starlette.routing import Mount
    from starlette.testclient import TestClient

    from pausepoint.checkpoint.sqlite import SqliteSaver
    from pausepoint.inbox import create_app
    from pausepoint.server.service import RunService

    with SqliteSaver.from_conn_string(str(db_path)) as saver:
        direct = graphs.two_questions().compile(checkpointer=saver)
        graphs.start(direct, "t1", graph_id="twice", rows=5)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        service = await RunService.open(str(db_path), {"twice": graphs.two_questions()})
        app.state.service = service
        try:
            yield
        finally:
            await service.close()

    outer = Starlette(lifespan=lifespan)
    inbox = create_app("twice", runs=lambda: outer.state.service, token=TOKEN)
    outer.router.routes.append(Mount("/inbox", app=inbox))
    with TestClient(outer) as c:
        c.get("/inbox/", params={"token": TOKEN})
        yield c, outer


def test_a_pending_run_shows_as_pending_until_a_worker_runs_it(idle: tuple[Any, Any]) -> None:
    client, outer = idle
    (q,) = questions(client)
    sent = answer_api(client, q, {"decision": "approve"})
    assert sent.status_code == 202, sent.text
    run = sent.json()
    report = client.get(run["run"], headers=BEARER).json()
    assert report["status"] == "pending"
    assert report["ended"] is False
    assert report["outcome"] is None
    page = client.get(run["page"])
    assert page.status_code == 200
    assert "Answer sent" in page.text
    assert 'data-ended="no"' in page.text
    # A second answer while the first run is pending: the thread is busy, nothing recorded.
    busy = answer_api(client, q, {"decision": "reject"})
    assert busy.status_code == 409, busy.text
    assert "being processed" in busy.json()["message"]

    service = outer.state.service
    client.portal.call(service.start)
    client.portal.call(service.join_run, "t1", run["run_id"])
    ended = client.get(run["run"], headers=BEARER).json()
    assert ended["outcome"]["kind"] == "waiting"
    assert len(client.portal.call(lambda: service.list_runs("t1"))) == 1


def test_a_wrong_form_is_shown_again_and_records_no_run(idle: tuple[Any, Any]) -> None:
    """The form's own reading refuses ``lots``; the API's answer reaches the server's
    check of the resume, which refuses it (the thread started outside the server gets
    its record first, so it is checked: else the run would be recorded and fail)."""
    client, outer = idle
    (q,) = questions(client)
    page = client.get(q["links"]["page"])
    csrf = page.text.split('name="csrf" value="')[1].split('"')[0]
    form = {"csrf": csrf, "$.decision": '"edit"', "$.rows": "lots"}
    sent = client.post(q["links"]["page"], data=form, follow_redirects=False)
    assert sent.status_code == 422, sent.text
    assert "The answer was not sent" in sent.text
    api = answer_api(client, q, {"decision": "edit", "rows": "lots"})
    assert api.status_code == 422
    assert api.json()["problems"][0]["path"] == "$.rows"
    service = outer.state.service
    assert client.portal.call(lambda: service.list_runs("t1")) == []
