"""``pausepoint serve --inbox``: a real server process (on a SQLite file and on
PostgreSQL), answered in real Chromium.

Every answer is a run the server's worker executes; the answer page follows it to its
outcome (the next question, linked; then a finished run). No sleeps: Playwright polls
the page until what it expects shows; the API checks wait on the server's ``join``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from tests.server.serving import TOKEN, Served, serve

WAIT_MS = 30_000
GRAPHS = ("twice=tests.inbox.graphs:two_questions",)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    """``pausepoint serve --inbox twice`` on a SQLite file, or on a PostgreSQL schema."""
    if request.param == "sqlite":
        db = str(tmp_path / "serve.sqlite")
        with serve(db, tmp_path / "serve.log", graphs=GRAPHS, extra=["--inbox", "twice"]) as s:
            yield s
        return
    from tests.server.serving import pg_database

    for url in pg_database("inbox_served"):
        with serve(url, tmp_path / "serve.log", graphs=GRAPHS, extra=["--inbox", "twice"]) as s:
            yield s


def start(served: Served, thread: str, **state: Any) -> None:
    import httpx

    body = {"assistant_id": "twice", "input": state, "if_not_exists": "create"}
    got = httpx.post(
        f"{served.url}/threads/{thread}/runs/wait",
        json=body,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=60,
    )
    assert got.status_code == 200, got.text


def test_serve_prints_the_inbox_link(served: Served) -> None:
    assert f"/inbox/?token={TOKEN}" in served.output()


def test_an_unserved_inbox_graph_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from pausepoint.cli import main

    db = str(tmp_path / "x.sqlite")
    args = ["serve", "--db", db, "--graph", "twice=tests.inbox.graphs:two_questions"]
    assert main([*args, "--inbox", "other"]) == 2
    assert "--inbox 'other' is not a served graph" in capsys.readouterr().err


def test_answer_through_the_queue_in_the_browser(served: Served, browser: Any) -> None:
    from playwright.sync_api import expect

    start(served, "t1", request="clean up", rows=5)
    expect.set_options(timeout=WAIT_MS)
    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)
    try:
        page = context.new_page()
        page.goto(f"{served.url}/inbox/?token={TOKEN}")
        page.get_by_role("link", name="Delete 5 rows?").click()
        expect(page.locator("h1")).to_have_text("Delete 5 rows?")
        page.get_by_role("button", name="Approve").click()
        assert "/inbox/threads/t1/runs/" in page.url  # the run's page, at once

        expect(page.locator("h1")).to_have_text("Waiting on the next question")
        page.get_by_role("link", name="Really delete 5 rows?").click()
        expect(page.locator("h1")).to_have_text("Really delete 5 rows?")
        page.get_by_role("button", name="Approve").click()

        expect(page.locator("h1")).to_have_text("Run finished")
        expect(page.locator("pre.values")).to_contain_text("approve: 5 rows")
    finally:
        context.close()


def test_a_failed_run_shows_its_error_in_the_browser(served: Served, browser: Any) -> None:
    from playwright.sync_api import expect

    start(served, "t13", rows=13)  # execute raises "disk full" for 13 rows
    expect.set_options(timeout=WAIT_MS)
    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)
    try:
        page = context.new_page()
        page.goto(f"{served.url}/inbox/?token={TOKEN}")
        page.get_by_role("link", name="Delete 13 rows?").click()
        page.get_by_role("button", name="Approve").click()
        page.get_by_role("link", name="Really delete 13 rows?").click()
        page.get_by_role("button", name="Approve").click()
        expect(page.locator("h1")).to_have_text("Run failed")
        expect(page.locator(".errors")).to_contain_text("RuntimeError")
        expect(page.locator(".errors")).to_contain_text("disk full")
    finally:
        context.close()
