"""The saver conformance suite again, every saver sealing what it stores."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from pausepoint.checkpoint.compact import CompactingMemorySaver
from pausepoint.checkpoint.memory import InMemorySaver
from pausepoint.checkpoint.postgres import AsyncPostgresSaver, PostgresSaver
from pausepoint.checkpoint.sqlite import AsyncSqliteSaver, SqliteSaver
from pausepoint.crypto import KeyRing
from pausepoint.testing import SaverConformance


class TestEncryptedInMemory(SaverConformance):
    @pytest.fixture
    def saver(self, ring: KeyRing) -> InMemorySaver:
        return InMemorySaver(encryption=ring)


class TestEncryptedCompacting(SaverConformance):
    @pytest.fixture
    def saver(self, ring: KeyRing) -> CompactingMemorySaver:
        return CompactingMemorySaver(encryption=ring)


class TestEncryptedSqlite(SaverConformance):
    @pytest.fixture
    def saver(self, tmp_path: Path, ring: KeyRing) -> Iterator[SqliteSaver]:
        with SqliteSaver.from_conn_string(str(tmp_path / "c.db"), encryption=ring) as saver:
            yield saver


class TestEncryptedAsyncSqlite(SaverConformance):
    @pytest_asyncio.fixture
    async def saver(self, tmp_path: Path, ring: KeyRing) -> AsyncIterator[AsyncSqliteSaver]:
        path = str(tmp_path / "a.db")
        async with AsyncSqliteSaver.from_conn_string(path, encryption=ring) as saver:
            yield saver


@pytest.mark.postgres
class TestEncryptedPostgres(SaverConformance):
    modes = ("sync",)
    clock_source = "database"

    @pytest.fixture
    def saver(
        self, pg_url: str, pg_kwargs: dict[str, Any], ring: KeyRing
    ) -> Iterator[PostgresSaver]:
        import psycopg

        with psycopg.connect(pg_url, **pg_kwargs) as conn:
            saver = PostgresSaver(conn, encryption=ring)
            saver.setup()
            yield saver


@pytest.mark.postgres
class TestEncryptedAsyncPostgres(SaverConformance):
    modes = ("async",)
    clock_source = "database"

    @pytest_asyncio.fixture
    async def saver(
        self, pg_url: str, pg_kwargs: dict[str, Any], ring: KeyRing
    ) -> AsyncIterator[AsyncPostgresSaver]:
        import psycopg

        async with await psycopg.AsyncConnection.connect(pg_url, **pg_kwargs) as conn:
            saver = AsyncPostgresSaver(conn, encryption=ring)
            await saver.setup()
            yield saver
