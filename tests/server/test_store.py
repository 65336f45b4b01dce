"""The server's tables on SQLite and PostgreSQL: claims, leases, requeues."""

from __future__ import annotations

import datetime
import time
from typing import Any

import pytest
from tests.server.run_graphs import GRAPHS
from tests.server.service_fixtures import db_url, pg_schema, pg_url

from pausepoint.server.records import RunRecord, RunRequest
from pausepoint.server.service import RunService
from pausepoint.server.store import Store
from pausepoint.server.store_sql import DuplicateError, Flow

__all__ = ["db_url", "pg_schema", "pg_url"]

pytestmark = pytest.mark.asyncio


def _run(run_id: str, thread_id: str) -> RunRecord:
    now = datetime.datetime.now(datetime.UTC)
    request = RunRequest("steps", input={})
    return RunRecord(run_id, thread_id, "a", "pending", {}, request.to_json(), "enqueue", now, now)


async def _create(store: Store, run_id: str, thread_id: str, *, delay: float = 0.0) -> None:
    await store.create_run(
        _run(run_id, thread_id),
        not_before=time.time() + delay,
        create_thread=True,
        stamp={},
    )


async def test_claims_take_the_oldest_runnable_run_one_per_thread(db_url: str) -> None:
    service = await RunService.open(db_url, GRAPHS, workers=0)
    store = service.store
    try:
        await _create(store, "r1", "t")
        await _create(store, "r2", "t")
        await _create(store, "r3", "u", delay=3600)  # after_seconds: not due
        await _create(store, "r4", "v")
        now = time.time()
        first = await store.claim("w1", now, now + 30)
        second = await store.claim("w2", now, now + 30)
        assert first is not None
        assert second is not None
        assert (first.run.run_id, first.attempt, first.started) == ("r1", 1, False)
        assert second.run.run_id == "r4"
        assert await store.claim("w3", now, now + 30) is None  # r2 waits for r1
        assert await store.finish(first.run, "w1", "success", {}, "idle", now)
        again = await store.claim("w3", now, now + 30)
        assert again is not None
        assert again.run.run_id == "r2"
        assert not await store.finish(second.run, "w1", "success", {}, "idle", now)  # not w1's
    finally:
        await service.close()


async def test_one_running_run_per_thread_is_enforced_by_the_table(db_url: str) -> None:
    service = await RunService.open(db_url, GRAPHS, workers=0)
    store = service.store
    try:
        await _create(store, "r1", "t")
        await _create(store, "r2", "t")

        def both_running() -> Flow:
            yield "UPDATE pausepoint_server_runs SET status = 'running'", ()

        with pytest.raises(DuplicateError):
            await store.db.run(both_running(), write=True)
        runs = await store.runs("t", limit=10, offset=0, status=None)
        assert {r.status for r in runs} == {"pending"}  # the transaction rolled back
    finally:
        await service.close()


async def test_an_expired_lease_is_requeued_and_the_run_completes(db_url: str) -> None:
    """A run claimed by a worker on another host that stopped renewing its lease."""
    service = await RunService.open(db_url, GRAPHS, workers=1, poll_seconds=0.02)
    try:
        run = await service.create_run("t", RunRequest("steps", input={}, if_not_exists="create"))
        now = time.time()
        claimed = await service.store.claim("elsewhere/1/x", now + 1, now - 30)
        assert claimed is not None
        assert claimed.run.run_id == run.run_id
        assert (await service.get_run("t", run.run_id)).status == "running"
        await service.start()  # requeues what expired, then executes it
        body: Any = await service.join_run("t", run.run_id)
        assert body["items"] == ["one", "two", "three"]
        assert (await service.get_run("t", run.run_id)).status == "success"
    finally:
        await service.close()


async def test_tables_are_created_once_and_kept(db_url: str) -> None:
    service = await RunService.open(db_url, GRAPHS, workers=0)
    try:
        await service.create_thread(thread_id="t", metadata={"k": 1})
    finally:
        await service.close()
    again = await RunService.open(db_url, GRAPHS, workers=0)
    try:
        assert (await again.get_thread("t")).metadata == {"k": 1}
        found, total = await again.search_assistants()
        assert total == len(GRAPHS)
        assert {a.graph_id for a in found} == set(GRAPHS)
    finally:
        await again.close()
