"""Take the screenshots of docs/inbox.md: the list of waiting questions and a form.

Starts three threads of the tests' approval graph in a temporary SQLite file, serves
the inbox with uvicorn and photographs it with Debian's Chromium (Playwright)::

    PYTHONPATH=src:. .venv/bin/python scripts/inbox_screenshots.py

Writes docs/img/inbox-list.png and docs/img/inbox-question.png.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from pausepoint.checkpoint.sqlite import SqliteSaver  # noqa: E402
from pausepoint.inbox import create_app  # noqa: E402
from tests.inbox import graphs  # noqa: E402
from tests.inbox.server import chromium, serve  # noqa: E402

IMG = ROOT / "docs" / "img"
TOKEN = "screenshots"


def main() -> None:
    IMG.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        with SqliteSaver.from_conn_string(str(Path(tmp) / "inbox.sqlite")) as saver:
            graph = graphs.approval().compile(checkpointer=saver, name="cleanup")
            for thread, name, request, rows, minutes in [
                ("ticket-4411", "cleanup", "Inactive users", 1204, 240),
                ("ticket-4415", "cleanup", "Staging leftovers", 88, None),
                ("ticket-4420", "archive", "Old orders", 52310, 45),
            ]:
                graphs.start(
                    graph, thread, graph_id=name, request=request, rows=rows, minutes=minutes
                )
            with serve(create_app(graph, token=TOKEN)) as base, chromium() as browser:
                page = browser.new_page(viewport={"width": 1100, "height": 420})
                page.goto(f"{base}/?token={TOKEN}")
                page.locator("time.deadline").first.wait_for()
                page.screenshot(path=str(IMG / "inbox-list.png"), full_page=True)
                page.get_by_role("link", name="Delete 1204 rows?").click()
                page.fill('[name="$.rows"]', "about a thousand")
                page.get_by_role("button", name="Edit").click()
                page.locator(".errors").wait_for()
                page.set_viewport_size({"width": 1100, "height": 900})
                page.screenshot(path=str(IMG / "inbox-question.png"), full_page=True)
    print(f"wrote {IMG / 'inbox-list.png'} and {IMG / 'inbox-question.png'}")


if __name__ == "__main__":
    main()
