"""Agent Inbox's HumanInterrupt questions: read, offered, answered as Agent Inbox does;
proposed values prefilling an edit; the graph's version label in the list."""

from __future__ import annotations

import html as htmllib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from tests.inbox import graphs
from tests.inbox.conftest import TOKEN, checkpoint_of

from pausepoint.inbox.agent_inbox import human_problems, human_request, read_human_form
from pausepoint.inbox.forms import form_for, prefilled, read_form

REQUEST: dict[str, Any] = {
    "action_request": {"action": "send_email", "args": {"to": "a@example.com"}},
    "config": graphs.ALL_ALLOWED,
    "description": "Send it?",
}

# --------------------------------------------------------------------------- units


def test_the_human_interrupt_shape_is_recognised_alone_or_as_a_list_of_one() -> None:
    for value in (REQUEST, [REQUEST]):
        found = human_request(value)
        assert found is not None
        assert found.action == "send_email"
        assert found.args == {"to": "a@example.com"}
        assert found.description == "Send it?"
        assert found.allowed == ("accept", "edit", "response", "ignore")
    partial = {**REQUEST, "config": {"allow_accept": True, "allow_ignore": True}}
    found = human_request(partial)
    assert found is not None
    assert found.allowed == ("accept", "ignore")  # a missing flag: not allowed
    assert human_request({**REQUEST, "description": None}) is not None


@pytest.mark.parametrize(
    "value",
    [
        [REQUEST, REQUEST],
        [],
        "send_email",
        {"question": "Delete 5 rows?"},
        {**REQUEST, "config": {"allow_accept": "yes"}},
        {**REQUEST, "action_request": {"action": 3, "args": {}}},
        {**REQUEST, "action_request": {"action": "x", "args": ["not", "an", "object"]}},
        {**REQUEST, "description": 7},
        {"action_request": REQUEST["action_request"]},
    ],
)
def test_other_values_are_ordinary_questions(value: Any) -> None:
    assert human_request(value) is None


def test_the_form_sends_agent_inbox_replies() -> None:
    found = human_request(REQUEST)
    assert found is not None
    action = {"action": "send_email", "args": {"to": "a@example.com"}}
    assert read_human_form(found, {"$.type": ["accept"]}) == (
        [{"type": "accept", "args": action}],
        [],
    )
    assert read_human_form(found, {"$.type": ["ignore"]}) == (
        [{"type": "ignore", "args": None}],
        [],
    )
    assert read_human_form(found, {"$.type": ["response"], "$.response": ["later"]}) == (
        [{"type": "response", "args": "later"}],
        [],
    )
    edited = read_human_form(found, {"$.type": ["edit"], "$.args": ['{"to": "b@example.com"}']})
    assert edited == (
        [{"type": "edit", "args": {"action": "send_email", "args": {"to": "b@example.com"}}}],
        [],
    )


def test_the_form_refuses_what_cannot_be_sent() -> None:
    found = human_request({**REQUEST, "config": {"allow_accept": True, "allow_edit": True}})
    assert found is not None
    for data, path in (
        ({"$.type": ["ignore"]}, "$.type"),  # not allowed by config
        ({"$.type": ["edit"], "$.args": ["{oops"]}, "$.args"),
        ({"$.type": ["edit"], "$.args": ["[1]"]}, "$.args"),
    ):
        value, problems = read_human_form(found, data)
        assert value is None
        assert [p.path for p in problems] == [path]
    everything = human_request(REQUEST)
    assert everything is not None
    _, problems = read_human_form(everything, {"$.type": ["response"], "$.response": ["  "]})
    assert [p.path for p in problems] == ["$.response"]


def test_api_replies_are_checked_against_the_config() -> None:
    found = human_request({**REQUEST, "config": {"allow_accept": True, "allow_respond": True}})
    assert found is not None
    assert human_problems(found, [{"type": "response", "args": "no"}]) == []
    assert human_problems(found, [{"type": "accept", "args": REQUEST["action_request"]}]) == []
    for answer, path in (
        ({"type": "accept"}, "$"),  # not a list
        ([], "$"),
        (["accept"], "$[0]"),
        ([{"type": "ignore", "args": None}], "$[0].type"),
        ([{"type": "response", "args": 3}], "$[0].args"),
        ([{"type": "accept", "args": "yes"}], "$[0].args"),
    ):
        assert [p.path for p in human_problems(found, answer)] == [path], answer


def test_an_edit_starts_from_the_proposed_value() -> None:
    form = prefilled(form_for(_review_schema()), {"question": "?", "rows": 7, "reason": "tidy"})
    fields = {f.path: f for f in form.root.children}
    assert fields["$.rows"].initial == "7"
    assert fields["$.reason"].initial == "tidy"
    assert fields["$.decision"].initial == ""
    # what the prefilled inputs send back reads as the proposal
    value, problems = read_form(
        form, {"$.decision": ['"edit"'], "$.rows": ["7"], "$.reason": ["tidy"]}
    )
    assert problems == []
    assert value == {"decision": "edit", "rows": 7, "reason": "tidy"}


def test_only_an_approval_with_edit_is_prefilled() -> None:
    no_edit = {
        "type": "object",
        "properties": {"decision": {"enum": ["approve", "reject"]}, "rows": {"type": "integer"}},
        "required": ["decision"],
    }
    plain = {"type": "object", "properties": {"rows": {"type": "integer"}}}
    for schema in (no_edit, plain):
        form = form_for(schema)
        assert prefilled(form, {"rows": 3}) is form
    approval = form_for(_review_schema())
    assert prefilled(approval, "not an object") is approval


def _review_schema() -> dict[str, Any]:
    from pausepoint.response_schema import json_schema_of

    return dict(json_schema_of(graphs.Review))


# --------------------------------------------------------------------------- pages and API


@pytest.fixture
def mail(db_path: Path) -> Iterator[Any]:
    from pausepoint.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(str(db_path)) as saver:
        yield graphs.agent_inbox().compile(checkpointer=saver, name="mail", version="v7")


@pytest.fixture
def mail_client(mail: Any) -> Iterator[Any]:
    from starlette.testclient import TestClient

    from pausepoint.inbox import create_app

    with TestClient(create_app(mail, token=TOKEN)) as c:
        c.get("/", params={"token": TOKEN})
        yield c


def page_url(q: Any, thread: str) -> str:
    return f"/threads/{quote(thread, safe='')}/questions/{q.question_id}"


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found
    return found.group(1)


def values_of(graph: Any, thread: str) -> dict[str, Any]:
    return graph.get_state({"configurable": {"thread_id": thread}}).values


def test_the_page_offers_only_what_the_config_allows(mail: Any, mail_client: Any) -> None:
    q = graphs.start(mail, "t1", to="a@example.com")
    page = mail_client.get(page_url(q, "t1")).text
    for kind in ("accept", "edit", "response", "ignore"):
        assert f'name="$.type" value="{kind}"' in page
    assert "Send the weekly report?" in page
    # the edit starts from the proposed args
    args = re.search(r'<textarea id="f-\$\.args" name="\$\.args"[^>]*>(.*?)</textarea>', page, re.S)
    assert args
    assert json.loads(htmllib.unescape(args.group(1))) == {"to": "a@example.com", "n": 2}

    allow = {"allow_accept": True, "allow_ignore": True}
    q2 = graphs.start(mail, "t2", to="b@example.com", allow=allow, as_list=True)
    page = mail_client.get(page_url(q2, "t2")).text
    assert 'value="accept"' in page
    assert 'value="ignore"' in page
    assert 'value="edit"' not in page
    assert 'name="$.args"' not in page
    assert 'name="$.response"' not in page


def test_answers_from_the_page_are_agent_inbox_lists(mail: Any, mail_client: Any) -> None:
    replies = {
        "a": (
            {"$.type": "accept"},
            [{"type": "accept", "args": {"action": "send_email", "args": {"to": "x", "n": 2}}}],
        ),
        "e": (
            {"$.type": "edit", "$.args": '{"to": "y", "n": 3}'},
            [{"type": "edit", "args": {"action": "send_email", "args": {"to": "y", "n": 3}}}],
        ),
        "r": ({"$.type": "response", "$.response": "wait"}, [{"type": "response", "args": "wait"}]),
        "i": ({"$.type": "ignore"}, [{"type": "ignore", "args": None}]),
    }
    for thread, (form, expected) in replies.items():
        q = graphs.start(mail, thread, to="x")
        csrf = csrf_of(mail_client.get(page_url(q, thread)).text)
        done = mail_client.post(
            page_url(q, thread), data={"csrf": csrf, **form}, follow_redirects=False
        )
        assert done.status_code == 303, done.text
        assert values_of(mail, thread)["reply"] == expected


def test_a_refused_form_shows_why_and_changes_nothing(mail: Any, mail_client: Any) -> None:
    allow = {"allow_edit": True, "allow_respond": True}
    q = graphs.start(mail, "t1", to="x", allow=allow)
    before = checkpoint_of(mail, "t1")
    csrf = csrf_of(mail_client.get(page_url(q, "t1")).text)
    for form, says in (
        ({"$.type": "edit", "$.args": "{oops"}, "a JSON object"),
        ({"$.type": "response", "$.response": ""}, "the text of a response"),
        ({"$.type": "accept"}, "one of edit, response"),  # a forged button
    ):
        sent = mail_client.post(page_url(q, "t1"), data={"csrf": csrf, **form})
        assert sent.status_code == 422
        assert "The answer was not sent" in sent.text
        assert says in sent.text
    assert checkpoint_of(mail, "t1") == before


def test_the_api_describes_and_checks_agent_inbox_answers(mail: Any) -> None:
    from starlette.testclient import TestClient

    from pausepoint.inbox import create_app

    q = graphs.start(mail, "t1", to="x", allow={"allow_accept": True, "allow_respond": True})
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(create_app(mail, token=TOKEN), headers=bearer) as api:
        (item,) = api.get("/api/questions").json()["items"]
        assert item["agent_inbox"] == {
            "action_request": {"action": "send_email", "args": {"to": "x", "n": 2}},
            "description": "Send the weekly report?",
            "allowed": ["accept", "response"],
        }
        assert item["graph_version"] == "v7"
        answer = f"/api{page_url(q, 't1')}/answer"
        before = checkpoint_of(mail, "t1")
        bad = api.post(answer, json={"answer": [{"type": "ignore", "args": None}]})
        assert bad.status_code == 422
        assert bad.json()["problems"][0]["path"] == "$[0].type"
        assert checkpoint_of(mail, "t1") == before
        good = api.post(answer, json={"answer": [{"type": "response", "args": "not now"}]})
        assert good.status_code == 200, good.text
    assert values_of(mail, "t1")["sent"] == {"note": "not now"}


def test_an_ordinary_question_has_no_agent_inbox_part(graph: Any) -> None:
    from starlette.testclient import TestClient

    from pausepoint.inbox import create_app

    graphs.start(graph, "t1", rows=2)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(create_app(graph, token=TOKEN), headers=bearer) as api:
        (item,) = api.get("/api/questions").json()["items"]
    assert item["agent_inbox"] is None
    assert item["graph_version"] is None  # compiled without version=


def test_the_list_shows_the_graph_and_its_version(mail: Any, mail_client: Any) -> None:
    graphs.start(mail, "t1", graph_id="mail", to="x")
    rows = mail_client.get("/rows").text
    cell = re.search(r'<td class="graph">(.*?)</td>', rows, re.S)
    assert cell
    assert "mail" in cell.group(1)
    assert '<span class="version' in cell.group(1)
    assert "v7" in cell.group(1)


def test_the_approval_page_prefills_the_proposal(db_path: Path) -> None:
    from starlette.testclient import TestClient

    from pausepoint.checkpoint.sqlite import SqliteSaver
    from pausepoint.inbox import create_app

    with SqliteSaver.from_conn_string(str(db_path)) as saver:
        graph = graphs.proposal().compile(checkpointer=saver)
        q = graphs.start(graph, "t1", rows=40)
        with TestClient(create_app(graph, token=TOKEN)) as c:
            c.get("/", params={"token": TOKEN})
            page = c.get(page_url(q, "t1")).text
            assert 'name="$.rows" value="40"' in page
            assert 'name="$.reason" value="cleanup"' in page


def test_the_list_reads_each_checkpoints_label_once(mail: Any, mail_client: Any) -> None:
    """The list polls every few seconds: a checkpoint's label (it never changes) is read
    once, not once a poll."""
    graphs.start(mail, "t1", graph_id="mail", to="x")
    saver = mail.checkpointer
    reads: list[Any] = []
    real = saver.get_tuple

    def counted(config: Any) -> Any:
        reads.append(config["configurable"].get("checkpoint_id"))
        return real(config)

    saver.get_tuple = counted
    try:
        for _ in range(3):
            assert "v7" in mail_client.get("/rows").text
    finally:
        del saver.get_tuple
    assert len(reads) == 1
    assert reads[0] is not None  # the checkpoint the question waits at, not "the head"


def test_the_list_names_a_request_by_its_description_or_action() -> None:
    from pausepoint.inbox.present import summary

    assert summary(REQUEST) == "Send it?"
    assert summary([{**REQUEST, "description": None}]) == 'send_email {"to": "a@example.com"}'
