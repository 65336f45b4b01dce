"""The HTML pages through Starlette's TestClient: login, forms, escaping, conflicts."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from tests.inbox import graphs
from tests.inbox.conftest import TOKEN, checkpoint_of


def page_url(q: Any, thread: str) -> str:
    return f"/threads/{quote(thread, safe='')}/questions/{q.question_id}"


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the form carries no CSRF token"
    return found.group(1)


def test_the_token_link_sets_a_cookie_and_drops_the_token(graph: Any) -> None:
    from starlette.testclient import TestClient

    from pausepoint.inbox import create_app

    with TestClient(create_app(graph, token=TOKEN)) as c:
        assert c.get("/").status_code == 401
        first = c.get("/?token=" + TOKEN + "&graph=approval", follow_redirects=False)
        assert first.status_code == 303
        assert first.headers["location"] == "/?graph=approval"
        assert "HttpOnly" in first.headers["set-cookie"]
        assert "SameSite=Strict" in first.headers["set-cookie"]
        assert c.get("/").status_code == 200  # the cookie now
        assert c.get("/?token=wrong").status_code == 401
        # The redirect stays on this site, whatever the path looks like.
        odd = c.get(f"http://testserver//evil.example/?token={TOKEN}", follow_redirects=False)
        assert odd.headers["location"] == "/evil.example/"


def test_an_auth_hook_lets_in_whom_it_approves(graph: Any) -> None:
    from starlette.testclient import TestClient

    from pausepoint.inbox import create_app

    def staff_only(request: Any) -> bool:
        return request.headers.get("x-user") == "alice"

    app = create_app(graph, auth=staff_only)
    assert app.state.token is None
    with TestClient(app) as c:
        assert c.get("/").status_code == 401
        assert c.get("/", headers={"x-user": "alice"}).status_code == 200


def test_without_token_or_hook_a_token_is_made(graph: Any) -> None:
    from pausepoint.inbox import create_app

    app = create_app(graph)
    assert isinstance(app.state.token, str)
    assert len(app.state.token) >= 32


def test_the_list_shows_waiting_questions(graph: Any, client: Any) -> None:
    q = graphs.start(graph, "t1", rows=5)
    html = client.get("/").text
    assert "Delete 5 rows?" in html
    assert page_url(q, "t1") in html
    assert client.get("/rows").text.count("<tr data-thread=") == 1
    headers = client.get("/").headers
    assert "script-src 'nonce-" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"


def test_values_are_escaped_everywhere(graph: Any, client: Any) -> None:
    q = graphs.start(
        graph, "<script>alert(1)</script>", rows=1, request="<script>alert(2)</script>"
    )
    for path in ("/", "/rows", page_url(q, "<script>alert(1)</script>")):
        html = client.get(path).text
        assert "<script>alert" not in html, path
        assert "&lt;script&gt;alert" in html, path


def test_the_question_page_has_the_form_and_history(graph: Any, client: Any) -> None:
    q = graphs.start(graph, "t1", rows=5)
    html = client.get(page_url(q, "t1")).text
    for decision in ("approve", "edit", "reject"):
        assert f'class="decision {decision}"' in html
    assert 'name="$.rows"' in html
    assert 'name="$.reason"' in html
    assert "Thread history" in html
    assert html.count("<tr><td>") >= 2  # the input checkpoint and the one that asks


def test_a_valid_answer_resumes_and_redirects(graph: Any, client: Any) -> None:
    q = graphs.start(graph, "t1", rows=5)
    html = client.get(page_url(q, "t1")).text
    form = {"csrf": csrf_of(html), "$.decision": '"edit"', "$.rows": "2", "$.reason": ""}
    done = client.post(page_url(q, "t1"), data=form, follow_redirects=False)
    assert done.status_code == 303
    assert done.headers["location"] == "/?answered=t1"
    state = graph.get_state({"configurable": {"thread_id": "t1"}})
    assert state.values["result"] == "edit: 2 rows"
    assert "Answered" in client.get(done.headers["location"]).text


def test_an_invalid_answer_shows_its_problems_and_changes_nothing(graph: Any, client: Any) -> None:
    q = graphs.start(graph, "t1", rows=5)
    before = checkpoint_of(graph, "t1")
    csrf = csrf_of(client.get(page_url(q, "t1")).text)
    sent = client.post(
        page_url(q, "t1"), data={"csrf": csrf, "$.decision": '"edit"', "$.rows": "lots"}
    )
    assert sent.status_code == 422
    assert "The answer was not sent" in sent.text
    field = re.search(r'<div class="field invalid" data-path="\$\.rows">.*?</div>', sent.text, re.S)
    assert field
    assert "expected an integer" in field.group(0)
    assert 'value="lots"' in sent.text  # what was typed stays
    # A value the form reads but the schema refuses (a negative count is fine by the
    # schema, an unknown decision is not): the schema's problem, at its field.
    sent = client.post(page_url(q, "t1"), data={"csrf": csrf, "$.decision": '"maybe"'})
    assert sent.status_code == 422
    assert "one of" in sent.text
    assert checkpoint_of(graph, "t1") == before


def test_a_stale_form_gets_a_conflict_message(graph: Any, client: Any) -> None:
    q = graphs.start(graph, "t1", rows=5)
    csrf = csrf_of(client.get(page_url(q, "t1")).text)
    form = {"csrf": csrf, "$.decision": '"approve"'}
    assert client.post(page_url(q, "t1"), data=form, follow_redirects=False).status_code == 303
    after = checkpoint_of(graph, "t1")
    late = client.post(page_url(q, "t1"), data={**form, "$.decision": '"reject"'})
    assert late.status_code == 409
    assert "no longer waits" in late.text
    assert checkpoint_of(graph, "t1") == after


def test_a_form_without_its_csrf_token_is_refused(graph: Any, client: Any) -> None:
    q = graphs.start(graph, "t1", rows=5)
    before = checkpoint_of(graph, "t1")
    for csrf in ("", "forged"):
        sent = client.post(page_url(q, "t1"), data={"csrf": csrf, "$.decision": '"approve"'})
        assert sent.status_code == 403
    assert checkpoint_of(graph, "t1") == before


def test_an_untyped_question_takes_json(db_path: Any, tmp_path: Any) -> None:
    from starlette.testclient import TestClient

    from pausepoint.checkpoint.sqlite import SqliteSaver
    from pausepoint.inbox import create_app

    with SqliteSaver.from_conn_string(str(tmp_path / "free.sqlite")) as saver:
        graph = graphs.untyped().compile(checkpointer=saver)
        q = graphs.start(graph, "n1", text="anything?")
        with TestClient(create_app(graph, token=TOKEN)) as c:
            c.get("/", params={"token": TOKEN})
            html = c.get(page_url(q, "n1")).text
            assert 'class="json"' in html
            bad = c.post(page_url(q, "n1"), data={"csrf": csrf_of(html), "$": "{oops"})
            assert bad.status_code == 422
            assert "JSON text" in bad.text
            ok = c.post(page_url(q, "n1"), data={"csrf": csrf_of(html), "$": '{"ok": [1, 2]}'})
            assert ok.status_code == 200  # followed the redirect to the list
    with SqliteSaver.from_conn_string(str(tmp_path / "free.sqlite")) as saver:
        graph = graphs.untyped().compile(checkpointer=saver)
        assert graph.get_state({"configurable": {"thread_id": "n1"}}).values["reply"] == {
            "ok": [1, 2]
        }


def test_the_app_mounts_under_a_path(graph: Any) -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount
    from starlette.testclient import TestClient

    from pausepoint.inbox import create_app

    q = graphs.start(graph, "t1", rows=5)
    outer = Starlette(routes=[Mount("/inbox", app=create_app(graph, token=TOKEN))])
    with TestClient(outer) as c:
        login = c.get(f"/inbox/?token={TOKEN}", follow_redirects=False)
        assert login.headers["location"] == "/inbox/"
        assert "Path=/inbox" in login.headers["set-cookie"]
        html = c.get("/inbox/").text
        assert f"/inbox{page_url(q, 't1')}" in html
        csrf = csrf_of(c.get(f"/inbox{page_url(q, 't1')}").text)
        done = c.post(
            f"/inbox{page_url(q, 't1')}",
            data={"csrf": csrf, "$.decision": '"approve"'},
            follow_redirects=False,
        )
        assert done.headers["location"] == "/inbox/?answered=t1"


def test_the_question_page_shows_the_graph_version(db_path: Any) -> None:
    """The ``compile(version=...)`` label of the graph that wrote the thread (issue 31)."""
    from starlette.testclient import TestClient

    from pausepoint.checkpoint.sqlite import SqliteSaver
    from pausepoint.inbox import create_app

    with SqliteSaver.from_conn_string(str(db_path)) as saver:
        labelled = graphs.approval().compile(checkpointer=saver, name="approval", version="2026-12")
        q = graphs.start(labelled, "t1", rows=5)
        plain = graphs.approval().compile(checkpointer=saver, name="approval")
        q2 = graphs.start(plain, "t2", rows=5)
        with TestClient(create_app(labelled, token=TOKEN)) as c:
            c.get("/", params={"token": TOKEN})
            html = c.get(page_url(q, "t1")).text
            assert "<dt>Graph version</dt><dd>2026-12</dd>" in html
            assert "Graph version" not in c.get(page_url(q2, "t2")).text
            bearer = {"Authorization": f"Bearer {TOKEN}"}
            api = f"/api/threads/t1/questions/{q.question_id}"
            assert c.get(api, headers=bearer).json()["graph_version"] == "2026-12"
            api2 = f"/api/threads/t2/questions/{q2.question_id}"
            assert c.get(api2, headers=bearer).json()["graph_version"] is None
