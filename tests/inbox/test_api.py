"""The JSON API against real savers: list, get, answer; 401, 409 and 422."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from tests.inbox import graphs
from tests.inbox.conftest import TOKEN, checkpoint_of

BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def api(graph: Any) -> Iterator[Any]:
    """A TestClient sending the token as a bearer header, as a program would."""
    from starlette.testclient import TestClient

    from pausepoint.inbox import create_app

    with TestClient(create_app(graph, token=TOKEN), headers=BEARER) as c:
        yield c


def url(q: Any, thread: str) -> str:
    return f"/api/threads/{quote(thread, safe='')}/questions/{q.question_id}"


def test_list_get_and_answer(graph: Any, api: Any) -> None:
    q = graphs.start(graph, "t1", request="clean up", rows=12)
    listed = api.get("/api/questions").json()
    assert listed["next_cursor"] is None
    (item,) = listed["items"]
    assert item["thread_id"] == "t1"
    assert item["question_id"] == q.question_id
    assert item["value"] == {"question": "Delete 12 rows?", "request": "clean up"}
    assert item["response_schema"]["required"] == ["decision"]
    assert item["links"]["answer"] == url(q, "t1") + "/answer"

    got = api.get(url(q, "t1"))
    assert got.status_code == 200
    assert got.json()["question_id"] == q.question_id

    done = api.post(url(q, "t1") + "/answer", json={"answer": {"decision": "approve"}})
    assert done.status_code == 200, done.text
    assert done.json()["result"]["result"] == "approve: 12 rows"
    assert api.get("/api/questions").json()["items"] == []
    assert api.get(url(q, "t1")).status_code == 404


def test_an_invalid_answer_is_422_with_problems_and_changes_nothing(graph: Any, api: Any) -> None:
    q = graphs.start(graph, "t1", rows=3)
    before = checkpoint_of(graph, "t1")
    bad = api.post(url(q, "t1") + "/answer", json={"answer": {"decision": "maybe", "rows": "x"}})
    assert bad.status_code == 422
    body = bad.json()
    assert body["error"] == "invalid_answer"
    assert {p["path"] for p in body["problems"]} == {"$.decision", "$.rows"}
    assert checkpoint_of(graph, "t1") == before
    assert len(api.get("/api/questions").json()["items"]) == 1


def test_a_second_answer_is_a_409_conflict(graph: Any, api: Any) -> None:
    q = graphs.start(graph, "t1", rows=3)
    assert (
        api.post(url(q, "t1") + "/answer", json={"answer": {"decision": "approve"}}).status_code
        == 200
    )
    after = checkpoint_of(graph, "t1")
    late = api.post(url(q, "t1") + "/answer", json={"answer": {"decision": "reject"}})
    assert late.status_code == 409
    assert late.json()["error"] == "conflict"
    assert checkpoint_of(graph, "t1") == after


def test_bad_requests_are_400(graph: Any, api: Any) -> None:
    q = graphs.start(graph, "t1")
    assert api.post(url(q, "t1") + "/answer", content=b"{not json").status_code == 400
    assert api.post(url(q, "t1") + "/answer", json={"value": 1}).status_code == 400
    assert api.get("/api/questions", params={"limit": "0"}).status_code == 400
    assert api.get("/api/questions", params={"metadata": "{bad"}).status_code == 400


def test_pages_follow_the_cursor(graph: Any, api: Any) -> None:
    asked = [graphs.start(graph, f"t{i}", rows=i).question_id for i in range(5)]
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        page = api.get("/api/questions", params=params).json()
        seen += [item["question_id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(asked)


def test_a_thread_id_with_a_slash_works(graph: Any, api: Any) -> None:
    q = graphs.start(graph, "team/a b", rows=1)
    assert api.get(url(q, "team/a b")).json()["thread_id"] == "team/a b"
    answered = api.post(url(q, "team/a b") + "/answer", json={"answer": {"decision": "approve"}})
    assert answered.status_code == 200


def test_without_the_token_the_api_is_401(graph: Any) -> None:
    from starlette.testclient import TestClient

    from pausepoint.inbox import create_app

    graphs.start(graph, "t1")
    with TestClient(create_app(graph, token=TOKEN)) as c:
        assert c.get("/api/questions").status_code == 401
        wrong = c.get("/api/questions", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        assert TOKEN not in wrong.text


def test_a_cookie_request_needs_the_csrf_header(graph: Any, client: Any) -> None:
    q = graphs.start(graph, "t1")
    refused = client.post(url(q, "t1") + "/answer", json={"answer": {"decision": "approve"}})
    assert refused.status_code == 403
    assert len(client.get("/api/questions").json()["items"]) == 1
    page = client.get(f"/threads/t1/questions/{q.question_id}").text
    csrf = page.split('name="csrf" value="')[1].split('"')[0]
    sent = client.post(
        url(q, "t1") + "/answer",
        json={"answer": {"decision": "approve"}},
        headers={"X-CSRF-Token": csrf},
    )
    assert sent.status_code == 200


@pytest.mark.postgres
def test_the_api_on_postgres(pg_url: str, pg_schema: str) -> None:
    from starlette.testclient import TestClient

    from pausepoint.checkpoint.postgres import PostgresSaver
    from pausepoint.inbox import create_app

    conninfo = f"{pg_url}?options=-csearch_path%3D{pg_schema}"
    with PostgresSaver.from_conn_string(conninfo) as saver:
        saver.setup()
        graph = graphs.approval().compile(checkpointer=saver, name="approval")
        q = graphs.start(graph, "pg-1", rows=7)
        before = checkpoint_of(graph, "pg-1")
        with TestClient(create_app(graph, token=TOKEN), headers=BEARER) as api:
            (item,) = api.get("/api/questions").json()["items"]
            assert item["question_id"] == q.question_id
            bad = api.post(url(q, "pg-1") + "/answer", json={"answer": {"decision": 1}})
            assert bad.status_code == 422
            assert checkpoint_of(graph, "pg-1") == before
            ok = api.post(url(q, "pg-1") + "/answer", json={"answer": {"decision": "reject"}})
            assert ok.status_code == 200
            assert ok.json()["result"]["decision"] == "reject"
            late = api.post(url(q, "pg-1") + "/answer", json={"answer": {"decision": "approve"}})
            assert late.status_code == 409
            assert api.get("/api/questions").json()["items"] == []


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_the_api_on_an_async_saver(pg_url: str, pg_schema: str) -> None:
    """An async-only saver is awaited in the app's own event loop, never in a thread."""
    import httpx

    from pausepoint.checkpoint.postgres import AsyncPostgresSaver
    from pausepoint.inbox import create_app

    conninfo = f"{pg_url}?options=-csearch_path%3D{pg_schema}"
    async with AsyncPostgresSaver.from_conn_string(conninfo) as saver:
        await saver.setup()
        graph = graphs.approval().compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "apg"}}
        (q,) = (await graph.ainvoke({"rows": 4}, config))["__interrupt__"]
        transport = httpx.ASGITransport(app=create_app(graph, token=TOKEN))
        async with httpx.AsyncClient(
            transport=transport, base_url="http://inbox", headers=BEARER
        ) as api:
            (item,) = (await api.get("/api/questions")).json()["items"]
            assert item["question_id"] == q.question_id
            page = await api.get(f"/threads/apg/questions/{q.question_id}")
            assert "Thread history" in page.text
            bad = await api.post(url(q, "apg") + "/answer", json={"answer": {"decision": 0}})
            assert bad.status_code == 422
            ok = await api.post(url(q, "apg") + "/answer", json={"answer": {"decision": "approve"}})
            assert ok.json()["result"]["result"] == "approve: 4 rows"


def test_filters_by_graph_and_metadata(graph: Any, api: Any, client: Any) -> None:
    graphs.start(graph, "c1", graph_id="cleanup", rows=1)
    graphs.start(graph, "a1", graph_id="archive", rows=2)

    def threads(**params: str) -> list[str]:
        return [q["thread_id"] for q in api.get("/api/questions", params=params).json()["items"]]

    assert threads() == ["c1", "a1"]
    assert threads(graph="archive") == ["a1"]
    assert threads(metadata="graph_id=cleanup") == ["c1"]
    assert threads(metadata='{"graph_id": "nope"}') == []
    html = client.get("/", params={"graph": "archive"}).text
    assert 'data-thread="a1"' in html
    assert 'data-thread="c1"' not in html
    assert 'data-src="/rows?graph=archive"' in html  # the refresh keeps the filter
    paged = client.get("/rows", params={"limit": "1"}).text
    assert 'rel="next"' in paged


def test_a_run_that_fails_after_the_answer_is_reported(graph: Any, api: Any, client: Any) -> None:
    q = graphs.start(graph, "t1", rows=13)
    failed = api.post(url(q, "t1") + "/answer", json={"answer": {"decision": "approve"}})
    assert failed.status_code == 500
    assert failed.json()["error"] == "run_failed"
    assert "disk full" in failed.json()["message"]
    state = graph.get_state({"configurable": {"thread_id": "t1"}})
    assert state.tasks[0].error is not None  # kept, with the answer, for a retry
    assert api.get("/api/questions").json()["items"] == []

    q = graphs.start(graph, "t2", rows=13)
    html = client.get(f"/threads/t2/questions/{q.question_id}").text
    csrf = html.split('name="csrf" value="')[1].split('"')[0]
    page = client.post(
        f"/threads/t2/questions/{q.question_id}", data={"csrf": csrf, "$.decision": '"approve"'}
    )
    assert page.status_code == 500
    assert "The answer was saved, but the resumed run failed" in page.text


def test_a_busy_thread_is_a_409_and_changes_nothing(graph: Any) -> None:
    from starlette.testclient import TestClient

    from pausepoint.inbox import create_app

    saver = graph.checkpointer
    impatient = graphs.approval().compile(checkpointer=saver, lease_wait=0)
    q = graphs.start(impatient, "t1", rows=3)
    before = checkpoint_of(graph, "t1")
    assert saver.acquire_lease("t1", "another-run", 60).acquired  # a run in flight
    with TestClient(create_app(impatient, token=TOKEN), headers=BEARER) as api:
        busy = api.post(url(q, "t1") + "/answer", json={"answer": {"decision": "approve"}})
        assert busy.status_code == 409
        assert "being processed" in busy.json()["message"]
        assert checkpoint_of(graph, "t1") == before
        saver.release_lease("t1", "another-run")
        done = api.post(url(q, "t1") + "/answer", json={"answer": {"decision": "approve"}})
        assert done.status_code == 200
