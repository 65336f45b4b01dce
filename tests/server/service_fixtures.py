"""Fixtures of helper X's server tests: a database URL (SQLite file, PostgreSQL schema)
and a started `RunService` on it, serving `tests.server.run_graphs`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from tests.savers.conftest import pg_schema, pg_url
from tests.server import run_graphs

from pausepoint.server.service import RunService

__all__ = ["db_url", "eventually", "pg_schema", "pg_url", "service", "with_search_path"]


def with_search_path(url: str, schema: str) -> str:
    """``url`` confined to ``schema`` (libpq's ``options``)."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A SQLite file in the test's directory, then a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return str(tmp_path / "serve.sqlite")
    base: str = request.getfixturevalue("pg_url")
    schema: str = request.getfixturevalue("pg_schema")
    return with_search_path(base, schema)


@pytest_asyncio.fixture
async def service(db_url: str) -> AsyncIterator[RunService]:
    """A started service with 4 workers on ``db_url``."""
    svc = await RunService.open(db_url, run_graphs.GRAPHS, workers=4, poll_seconds=0.05)
    await svc.start()
    try:
        yield svc
    finally:
        await svc.close()


async def eventually(check: Callable[[], Awaitable[Any]], *, limit: float = 60.0) -> Any:
    """Poll ``check`` until it returns a true value; a safeguard ``limit`` against a
    hang (what is asserted is the value, never how long it took)."""

    async def poll() -> Any:
        while not (got := await check()):
            await asyncio.sleep(0.01)
        return got

    return await asyncio.wait_for(poll(), limit)
