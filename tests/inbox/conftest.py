"""Fixtures of the inbox tests: a graph on a real SQLite file, an app, a test client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.inbox import graphs

TOKEN = "test-token-0123456789"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "inbox.sqlite"


@pytest.fixture
def graph(db_path: Path) -> Iterator[Any]:
    """The approval graph, compiled with a SqliteSaver on a real file."""
    from pausepoint.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(str(db_path)) as saver:
        yield graphs.approval().compile(checkpointer=saver, name="approval")


@pytest.fixture
def client(graph: Any) -> Iterator[Any]:
    """A TestClient of the inbox, logged in with the token (as a browser after ?token=)."""
    from starlette.testclient import TestClient

    from pausepoint.inbox import create_app

    with TestClient(create_app(graph, token=TOKEN)) as c:
        c.get("/", params={"token": TOKEN})
        yield c


def checkpoint_of(graph: Any, thread: str) -> Any:
    """The thread's head checkpoint tuple: tests compare it before and after."""
    saver = graph.checkpointer
    got = saver.get_tuple({"configurable": {"thread_id": thread}})
    assert got is not None
    return (got.config, got.checkpoint, got.metadata, got.pending_writes)


# PostgreSQL access for the API's PostgreSQL test: the saver tests' fixtures (they
# fail, not skip, without a server when CI is set).
from tests.savers.conftest import pg_schema, pg_url  # noqa: E402

__all__ = ["TOKEN", "checkpoint_of", "pg_schema", "pg_url"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per test module. Missing: skip locally, FAIL under CI.

    Not per session: Playwright's sync API keeps an event loop running in the main
    thread while it is open, and later tests calling ``asyncio.run`` would fail.
    """
    import os

    from tests.inbox.server import browser_missing, chromium

    why = browser_missing()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but the browser tests cannot run: {why}", pytrace=False)
        pytest.skip(why)
    with chromium() as b:
        yield b
