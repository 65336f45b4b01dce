"""Fixtures of the queue tests: a PostgreSQL schema, and a deployment on one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.server.serving import pg_database
from tests.workers.cluster import Cluster, cluster


@pytest.fixture
def pg_db() -> Iterator[str]:
    """A ``postgresql://`` URL confined to a fresh schema (dropped after)."""
    yield from pg_database("workers")


@pytest.fixture(scope="package")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Two front ends (127.0.0.2, 127.0.0.3) and three workers, shared by the tests of
    this directory (each uses threads of its own; the fault test kills and restarts
    workers, and leaves three running)."""
    tmp = tmp_path_factory.mktemp("deployment")
    for db in pg_database("workers"):
        with cluster(db, tmp, fronts=("127.0.0.2", "127.0.0.3"), workers=3) as c:
            yield c
