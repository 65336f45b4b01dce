"""Fixtures for the saver tests: PostgreSQL access and per-test schemas.

PostgreSQL tests need ``PAUSEPOINT_PG_URL`` (``eval "$(scripts/postgres.sh start)"``).
Without it they skip locally, but FAIL when ``CI`` is set, so CI cannot pass by
silently skipping them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def pg_url() -> str:
    url = os.environ.get("PAUSEPOINT_PG_URL")
    if url:
        return url
    how = 'start a server with: eval "$(scripts/postgres.sh start)"'
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but PAUSEPOINT_PG_URL is not: {how}", pytrace=False)
    pytest.skip(f"PAUSEPOINT_PG_URL is not set; {how}")


@pytest.fixture
def pg_schema(pg_url: str) -> Iterator[str]:
    """A fresh, empty schema for one test, dropped afterwards."""
    import psycopg

    name = f"pp_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")  # type: ignore[arg-type]
    yield name
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {name} CASCADE")  # type: ignore[arg-type]


@pytest.fixture
def pg_kwargs(pg_schema: str) -> dict[str, Any]:
    """Connection options for a saver confined to the test's schema.

    Statements are prepared on first use (``from_conn_string``'s default); the
    cross-process tests connect without prepared statements (a pooler's setting).
    """
    return {
        "autocommit": True,
        "prepare_threshold": 0,
        "options": f"-c search_path={pg_schema}",
    }
