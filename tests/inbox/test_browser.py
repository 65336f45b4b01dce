"""The inbox in a real browser: Chromium (Debian's) against uvicorn, on a SQLite file
and on PostgreSQL (every scenario on both).

No sleeps: every wait is Playwright polling the page until what it expects shows (the
list refreshes itself every 0.2 s here).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from tests.inbox import graphs
from tests.inbox.conftest import TOKEN, checkpoint_of
from tests.inbox.server import serve

WAIT_MS = 10_000


class FakeClock:
    """The time the graph, the inbox and the sweeper share; moved by hand."""

    def __init__(self) -> None:
        self.now = datetime.datetime(2026, 3, 2, 9, 0, tzinfo=datetime.UTC)

    def __call__(self) -> datetime.datetime:
        return self.now


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def graph(request: pytest.FixtureRequest, db_path: Any) -> Iterator[Any]:
    """The approval graph on a real SQLite file, or on a PostgreSQL schema of its own."""
    if request.param == "sqlite":
        from pausepoint.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(str(db_path)) as saver:
            yield graphs.approval().compile(checkpointer=saver, name="approval")
        return
    from pausepoint.checkpoint.postgres import PostgresSaver

    url: str = request.getfixturevalue("pg_url")
    schema: str = request.getfixturevalue("pg_schema")
    with PostgresSaver.from_conn_string(f"{url}?options=-csearch_path%3D{schema}") as saver:
        saver.setup()
        yield graphs.approval().compile(checkpointer=saver, name="approval")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def base(graph: Any, clock: FakeClock) -> Iterator[str]:
    """The inbox of ``graph`` served by uvicorn; its URL."""
    from pausepoint.inbox import create_app

    with serve(create_app(graph, token=TOKEN, clock=clock, poll_seconds=0.2)) as url:
        yield url


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    """A fresh browser profile (no cookies) per test."""
    from playwright.sync_api import expect

    expect.set_options(timeout=WAIT_MS)
    ctx = browser.new_context()
    ctx.set_default_timeout(WAIT_MS)
    yield ctx
    ctx.close()


def open_inbox(context: Any, base: str) -> Any:
    page = context.new_page()
    page.goto(f"{base}/?token={TOKEN}")
    assert "token=" not in page.url  # traded for a cookie
    return page


def row(page: Any, thread: str) -> Any:
    return page.locator(f'tr[data-thread="{thread}"]')


def test_answer_a_question_in_the_browser(graph: Any, base: str, context: Any) -> None:
    from playwright.sync_api import expect

    graphs.start(graph, "t1", request="clean up", rows=1204)
    page = open_inbox(context, base)
    expect(row(page, "t1")).to_contain_text("Delete 1204 rows?")
    page.get_by_role("link", name="Delete 1204 rows?").click()
    expect(page.locator("h1")).to_have_text("Delete 1204 rows?")

    before = checkpoint_of(graph, "t1")
    page.fill('[name="$.rows"]', "lots")
    page.get_by_role("button", name="Edit").click()
    expect(page.locator(".errors")).to_contain_text("The answer was not sent")
    expect(page.locator('.field[data-path="$.rows"] .problems')).to_contain_text("an integer")
    expect(page.locator('[name="$.rows"]')).to_have_value("lots")
    assert checkpoint_of(graph, "t1") == before

    page.fill('[name="$.rows"]', "10")
    page.get_by_role("button", name="Edit").click()
    expect(page.locator(".flash")).to_contain_text("t1")
    expect(row(page, "t1")).to_have_count(0)
    state = graph.get_state({"configurable": {"thread_id": "t1"}})
    assert state.values["result"] == "edit: 10 rows"


def test_the_list_updates_by_itself(graph: Any, base: str, context: Any) -> None:
    from playwright.sync_api import expect

    from pausepoint.questions import answer

    page = open_inbox(context, base)
    expect(page.locator(".empty")).to_be_visible()
    graphs.start(graph, "late", rows=3)
    expect(row(page, "late")).to_be_visible()
    (q,) = graph.checkpointer.list_pending().items
    answer(graph, q, {"decision": "approve"})
    expect(row(page, "late")).to_have_count(0)


def test_the_list_keeps_its_table_while_its_questions_stay(
    graph: Any, base: str, context: Any
) -> None:
    """Polls that find the same questions leave the table alone: a click is never lost.

    (It was replaced on every poll, the countdowns and the server's clock making each
    response differ from what the page showed; a click landing as it was replaced
    did nothing, which failed test_two_tabs_answer_one_wins once on a loaded machine.)
    """
    from playwright.sync_api import expect

    graphs.start(graph, "t1", rows=5)
    page = open_inbox(context, base)
    page.evaluate("document.querySelector('#questions table').dataset.marked = 'kept'")
    for _ in range(3):  # three polls answered and handled
        with page.expect_response(lambda r: "/rows" in r.url):
            pass
    expect(page.locator('#questions table[data-marked="kept"]')).to_have_count(1)
    graphs.start(graph, "t2", rows=2)  # a new question: the table is replaced
    expect(row(page, "t2")).to_be_visible()
    expect(page.locator('#questions table[data-marked="kept"]')).to_have_count(0)


def test_two_tabs_answer_one_wins(graph: Any, base: str, context: Any) -> None:
    from playwright.sync_api import expect

    graphs.start(graph, "t1", rows=5)
    first = open_inbox(context, base)
    second = context.new_page()
    for page in (first, second):
        page.goto(f"{base}/")
        page.get_by_role("link", name="Delete 5 rows?").click()
        expect(page.get_by_role("button", name="Approve")).to_be_visible()

    first.get_by_role("button", name="Approve").click()
    expect(first.locator(".flash")).to_be_visible()
    after = checkpoint_of(graph, "t1")

    second.fill('[name="$.reason"]', "too risky")
    second.get_by_role("button", name="Reject").click()
    expect(second.locator(".conflict")).to_contain_text("no longer waits")
    assert checkpoint_of(graph, "t1") == after
    state = graph.get_state({"configurable": {"thread_id": "t1"}})
    assert state.values["decision"] == "approve"


def test_a_deadline_passes_and_the_sweeper_answers(
    graph: Any, base: str, context: Any, clock: FakeClock
) -> None:
    from playwright.sync_api import expect

    from pausepoint.questions import sweep, use_clock

    with use_clock(clock):
        graphs.start(graph, "slow", rows=9, minutes=30)
    page = open_inbox(context, base)
    deadline = row(page, "slow").locator("time.deadline")
    expect(deadline).to_contain_text("in 30m")  # counted on the inbox's clock

    clock.now += datetime.timedelta(minutes=31)
    outcomes = sweep(graph, now=clock.now)
    assert len(outcomes) == 1
    expect(row(page, "slow")).to_have_count(0)
    state = graph.get_state({"configurable": {"thread_id": "slow"}})
    assert state.values["decision"] == "reject"
    assert state.values["reason"] == "no answer in time"


# --------------------------------------------------------------------------- Agent Inbox


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def mail(request: pytest.FixtureRequest, db_path: Any) -> Iterator[Any]:
    """The Agent Inbox graph (a HumanInterrupt question), compiled with version="v7"."""
    if request.param == "sqlite":
        from pausepoint.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(str(db_path)) as saver:
            yield graphs.agent_inbox().compile(checkpointer=saver, name="mail", version="v7")
        return
    from pausepoint.checkpoint.postgres import PostgresSaver

    url: str = request.getfixturevalue("pg_url")
    schema: str = request.getfixturevalue("pg_schema")
    with PostgresSaver.from_conn_string(f"{url}?options=-csearch_path%3D{schema}") as saver:
        saver.setup()
        yield graphs.agent_inbox().compile(checkpointer=saver, name="mail", version="v7")


@pytest.fixture
def mail_base(mail: Any) -> Iterator[str]:
    from pausepoint.inbox import create_app

    with serve(create_app(mail, token=TOKEN, poll_seconds=0.2)) as url:
        yield url


def open_mail_question(context: Any, base: str, thread: str) -> Any:
    from playwright.sync_api import expect

    page = open_inbox(context, base)
    expect(row(page, thread).locator("td.graph")).to_contain_text("v7")
    row(page, thread).get_by_role("link").click()
    expect(page.locator(".human-request")).to_contain_text("send_email")
    return page


def answered(page: Any, graph: Any, thread: str) -> dict[str, Any]:
    """Wait for the list the answer leads to; the thread's resumed values."""
    from playwright.sync_api import expect

    expect(page.locator(".flash")).to_contain_text(thread)
    expect(row(page, thread)).to_have_count(0)
    state = graph.get_state({"configurable": {"thread_id": thread}})
    assert state.next == ()  # the run went on to the end
    return state.values


def test_accept_an_agent_inbox_request(mail: Any, mail_base: str, context: Any) -> None:
    graphs.start(mail, "acc", graph_id="mail", to="team@example.com")
    page = open_mail_question(context, mail_base, "acc")
    page.get_by_role("button", name="Accept").click()
    values = answered(page, mail, "acc")
    action = {"action": "send_email", "args": {"to": "team@example.com", "n": 2}}
    assert values["reply"] == [{"type": "accept", "args": action}]
    assert values["sent"] == {"to": "team@example.com", "n": 2}


def test_edit_starts_from_the_proposed_args(mail: Any, mail_base: str, context: Any) -> None:
    import json

    from playwright.sync_api import expect

    graphs.start(mail, "ed", graph_id="mail", to="team@example.com")
    page = open_mail_question(context, mail_base, "ed")
    box = page.locator('[name="$.args"]')
    assert json.loads(box.input_value()) == {"to": "team@example.com", "n": 2}
    before = checkpoint_of(mail, "ed")
    box.fill("{broken")
    page.get_by_role("button", name="Edit").click()
    expect(page.locator(".errors")).to_contain_text("a JSON object")
    expect(box).to_have_value("{broken")  # what was typed stays
    assert checkpoint_of(mail, "ed") == before

    box.fill(json.dumps({"to": "boss@example.com", "n": 2}))
    page.get_by_role("button", name="Edit").click()
    values = answered(page, mail, "ed")
    edited = {"action": "send_email", "args": {"to": "boss@example.com", "n": 2}}
    assert values["reply"] == [{"type": "edit", "args": edited}]
    assert values["sent"] == {"to": "boss@example.com", "n": 2}


def test_ignore_when_only_accept_and_ignore_are_allowed(
    mail: Any, mail_base: str, context: Any
) -> None:
    from playwright.sync_api import expect

    allow = {"allow_accept": True, "allow_ignore": True}
    graphs.start(mail, "ign", graph_id="mail", to="x@example.com", allow=allow, as_list=True)
    page = open_mail_question(context, mail_base, "ign")
    for absent in ("Edit", "Respond"):
        expect(page.get_by_role("button", name=absent)).to_have_count(0)
    expect(page.locator('[name="$.args"]')).to_have_count(0)
    page.get_by_role("button", name="Ignore").click()
    values = answered(page, mail, "ign")
    assert values["reply"] == [{"type": "ignore", "args": None}]
    assert values["sent"] is None
