"""The saver conformance suite against every saver pausepoint ships."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from pausepoint.checkpoint.base import (
    At,
    BaseCheckpointSaver,
    CheckpointTuple,
    Lease,
    LeaseClaim,
    StepCommit,
)
from pausepoint.checkpoint.compact import CompactingMemorySaver
from pausepoint.checkpoint.memory import InMemorySaver
from pausepoint.checkpoint.postgres import AsyncPostgresSaver, PostgresSaver
from pausepoint.checkpoint.sqlite import AsyncSqliteSaver, SqliteSaver
from pausepoint.config import RunnableConfig
from pausepoint.testing import SaverConformance


class TestInMemorySaver(SaverConformance):
    @pytest.fixture
    def saver(self) -> InMemorySaver:
        return InMemorySaver()


class TestCompactingMemorySaver(SaverConformance):
    @pytest.fixture
    def saver(self) -> CompactingMemorySaver:
        return CompactingMemorySaver()


class _ThirdParty(BaseCheckpointSaver):
    """A saver written before leases: its methods take no guards (supports_leases is
    false), so it gets BaseCheckpointSaver's in-process lease methods."""

    def __init__(self) -> None:
        self.inner = InMemorySaver()

    def get_tuple(self, config: Any) -> Any:
        return self.inner.get_tuple(config)

    def list(self, config: Any, **kwargs: Any) -> Any:
        return self.inner.list(config, **kwargs)

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:  # type: ignore[override]
        return self.inner.put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:  # type: ignore[override]
        self.inner.put_writes(config, writes, task_id, task_path)

    def put_after_writes(self, config: Any, writes: Any, *rest: Any) -> Any:  # type: ignore[override]
        return self.inner.put_after_writes(config, writes, *rest)

    def put_pair(self, config: Any, *rest: Any) -> Any:  # type: ignore[override]
        return self.inner.put_pair(config, *rest)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)


class TestThirdPartySaver(SaverConformance):
    @pytest.fixture
    def saver(self) -> _ThirdParty:
        return _ThirdParty()


class PartsOnly(BaseCheckpointSaver):
    """A third-party saver with LangGraph's methods only: its commits are
    BaseCheckpointSaver's default, made of its put_writes and put calls."""

    def __init__(self) -> None:
        self.inner = InMemorySaver()
        self.calls: list[str] = []

    def get_tuple(self, config: Any) -> Any:
        return self.inner.get_tuple(config)

    def list(self, config: Any, **kwargs: Any) -> Any:
        return self.inner.list(config, **kwargs)

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:  # type: ignore[override]
        self.calls.append("put")
        return self.inner.put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:  # type: ignore[override]
        self.calls.append("put_writes")
        self.inner.put_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)


class TestPartsOnlySaver(SaverConformance):
    atomic = False

    @pytest.fixture
    def saver(self) -> PartsOnly:
        return PartsOnly()


class CommitOnly(BaseCheckpointSaver):
    """A saver written to the engine's one write: get_tuple, list, commit and
    delete_thread only. LangGraph's put, put_writes, put_after_writes and put_pair
    (and their async forms) are BaseCheckpointSaver's defaults, made of its commit."""

    def __init__(self) -> None:
        self.inner = InMemorySaver()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.inner.get_tuple(config)

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Iterator[CheckpointTuple]:
        return self.inner.list(config, **kwargs)

    def commit(self, step: StepCommit[At]) -> At:
        return self.inner.commit(step)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)


class TestCommitOnlySaver(SaverConformance):
    @pytest.fixture
    def saver(self) -> CommitOnly:
        return CommitOnly()


class FencedCommitOnly(CommitOnly):
    """``CommitOnly`` with leases that its commit honours: the guarded-write tests
    then run through the base class's put, put_writes, ... to this commit."""

    supports_leases = True

    def __init__(self) -> None:
        super().__init__()
        self.inner = InMemorySaver(clock=self._now)

    def _now(self) -> float:
        return self.lease_clock()  # as the suite sets it, after the saver is made

    def acquire_lease(
        self, thread_id: str, owner: str, ttl: float, *, nudge: bool = False
    ) -> LeaseClaim:
        return self.inner.acquire_lease(thread_id, owner, ttl, nudge=nudge)

    def renew_lease(self, thread_id: str, owner: str, ttl: float | None = None) -> bool:
        return self.inner.renew_lease(thread_id, owner, ttl)

    def release_lease(self, thread_id: str, owner: str) -> bool:
        return self.inner.release_lease(thread_id, owner)

    def get_lease(self, thread_id: str) -> Lease | None:
        return self.inner.get_lease(thread_id)


class TestFencedCommitOnlySaver(SaverConformance):
    @pytest.fixture
    def saver(self) -> FencedCommitOnly:
        return FencedCommitOnly()


class TestSqliteFile(SaverConformance):
    @pytest.fixture
    def saver(self, tmp_path: Path) -> Iterator[SqliteSaver]:
        with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
            assert saver.journal_mode == "wal"
            yield saver


class TestSqliteMemory(SaverConformance):
    @pytest.fixture
    def saver(self) -> Iterator[SqliteSaver]:
        with SqliteSaver.from_conn_string(":memory:") as saver:
            yield saver


class TestAsyncSqlite(SaverConformance):
    @pytest_asyncio.fixture
    async def saver(self, tmp_path: Path) -> AsyncIterator[AsyncSqliteSaver]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.db")) as saver:
            yield saver


@pytest.mark.postgres
class TestPostgresConnection(SaverConformance):
    modes = ("sync",)
    clock_source = "database"

    @pytest.fixture
    def saver(self, pg_url: str, pg_kwargs: dict[str, Any]) -> Iterator[PostgresSaver]:
        import psycopg

        with psycopg.connect(pg_url, **pg_kwargs) as conn:
            saver = PostgresSaver(conn)
            saver.setup()
            yield saver


@pytest.mark.postgres
class TestPostgresPool(SaverConformance):
    modes = ("sync",)
    clock_source = "database"

    @pytest.fixture
    def saver(self, pg_url: str, pg_kwargs: dict[str, Any]) -> Iterator[PostgresSaver]:
        from psycopg_pool import ConnectionPool

        with ConnectionPool(pg_url, min_size=1, max_size=4, kwargs=pg_kwargs, open=True) as pool:
            saver = PostgresSaver(pool)
            saver.setup()
            yield saver


@pytest.mark.postgres
class TestAsyncPostgresConnection(SaverConformance):
    modes = ("async",)
    clock_source = "database"

    @pytest_asyncio.fixture
    async def saver(
        self, pg_url: str, pg_kwargs: dict[str, Any]
    ) -> AsyncIterator[AsyncPostgresSaver]:
        import psycopg

        async with await psycopg.AsyncConnection.connect(pg_url, **pg_kwargs) as conn:
            saver = AsyncPostgresSaver(conn)
            await saver.setup()
            yield saver


@pytest.mark.postgres
class TestAsyncPostgresPool(SaverConformance):
    modes = ("async",)
    clock_source = "database"

    @pytest_asyncio.fixture
    async def saver(
        self, pg_url: str, pg_kwargs: dict[str, Any]
    ) -> AsyncIterator[AsyncPostgresSaver]:
        from psycopg_pool import AsyncConnectionPool

        pool = AsyncConnectionPool(pg_url, min_size=1, max_size=4, kwargs=pg_kwargs, open=False)
        async with pool:
            saver = AsyncPostgresSaver(pool)
            await saver.setup()
            yield saver
