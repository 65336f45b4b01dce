"""Fixtures of the queue tests: a fresh PostgreSQL schema per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.server.serving import pg_database


@pytest.fixture
def pg_db() -> Iterator[str]:
    """A ``postgresql://`` URL confined to a fresh schema (dropped after)."""
    yield from pg_database("workers")
