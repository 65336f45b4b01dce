"""Runs' events in the database, through two `RunService`\\ s on one database (real
SQLite and PostgreSQL): one executes, the other (no workers) reads the rows; the
writer's batches; the end of a run cancelled elsewhere; retention."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from tests.server.run_graphs import GRAPHS
from tests.server.service_fixtures import db_url, eventually, pg_schema, pg_url, service

from pausepoint.server import event_rows
from pausepoint.server.event_rows import END, EventRow
from pausepoint.server.event_writer import EventWriter
from pausepoint.server.records import RunRequest
from pausepoint.server.service import RunService

__all__ = ["db_url", "pg_schema", "pg_url", "service"]

pytestmark = pytest.mark.asyncio

MODES = ["values", "updates", "events", "debug"]


@pytest_asyncio.fixture
async def front(db_url: str, service: RunService) -> AsyncIterator[RunService]:
    """A second service on the same database that executes no run (``workers=0``)."""
    del service  # opened first: it executes the runs
    svc = await RunService.open(db_url, GRAPHS, workers=0)
    await svc.start()
    try:
        yield svc
    finally:
        await svc.close()


async def _rows(svc: RunService, run_id: str) -> list[str]:
    events = await svc.store.db.run(event_rows.after(run_id, 0, 10_000, svc.store.db.sealer))
    return [e.event for e in events]


async def test_a_run_created_by_one_service_streams_from_the_rows_of_the_other(
    service: RunService, front: RunService
) -> None:
    request = RunRequest("asker", input={"request": "r"}, stream_mode=MODES, if_not_exists="create")
    run = await front.create_run("t", request)
    assert front.events.get(run.run_id) is None  # nothing of it in the front's memory
    remote = [e async for e in front.stream_run("t", run.run_id)]
    local = [e async for e in service.stream_run("t", run.run_id)]  # its memory log
    assert remote == local
    assert [e.id for e in remote] == [str(n) for n in range(1, len(remote) + 1)]
    updates = [e.data for e in remote if e.event == "updates"]
    assert updates[-1]["__interrupt__"][0]["value"] == {"question": "Approve r?"}
    rows = await _rows(front, run.run_id)
    assert rows == [e.event for e in remote] + [END]

    again = [e async for e in front.stream_run("t", run.run_id, last_event_id="3")]
    assert again == remote[3:]
    assert [e async for e in front.stream_run("t", run.run_id, from_now=True)] == []


async def test_a_steps_events_are_written_together(service: RunService, front: RunService) -> None:
    before = service.events.writer.transactions
    request = RunRequest("steps", input={}, stream_mode=MODES, if_not_exists="create")
    run = await front.create_run("t", request)
    events = [e async for e in front.stream_run("t", run.run_id)]
    await service.events.flushed()
    # A step's events go out together (its starts, at worst, apart from its results).
    assert service.events.writer.transactions - before < len(events)


async def test_the_writer_writes_what_is_queued_together_and_gives_a_runs_rows_up(
    service: RunService,
) -> None:
    writer = EventWriter(service.store.db)
    run_id, other = str(uuid.uuid4()), str(uuid.uuid4())
    now = time.time()
    for n in range(1, 7):  # a step's events
        writer.add(EventRow(run_id, n, "updates", "{}", now))
    await writer.flushed()
    assert writer.transactions == 1
    writer.add(EventRow(run_id, 7, "values", "{}", now))
    writer.add(EventRow(other, 1, "values", "{}", now))
    await writer.settled(run_id)
    taken = writer.take(run_id)  # for the transaction that ends the run
    assert [r.seq for r in taken] == [7]
    await writer.flushed()
    assert writer.transactions == 2
    assert await _rows(service, run_id) == ["updates"] * 6
    assert await _rows(service, other) == ["values"]
    await writer.close()


async def test_a_run_cancelled_while_pending_ends_its_readers_everywhere(
    service: RunService, front: RunService
) -> None:
    request = RunRequest(
        "asker", input={"request": "r"}, after_seconds=3600, if_not_exists="create"
    )
    run = await front.create_run("t", request)
    follow = service.stream_run("t", run.run_id)
    await front.cancel_run("t", run.run_id)
    assert [e async for e in follow] == []
    assert await _rows(front, run.run_id) == [END]


async def test_retention_deletes_ended_runs_events_in_bounded_batches(
    service: RunService, front: RunService
) -> None:
    request = RunRequest("asker", input={"request": "r"}, if_not_exists="create")
    ended = await front.create_run("t", request)
    await front.join_run("t", ended.run_id)

    async def all_written() -> bool:
        return END in await _rows(front, ended.run_id)

    await eventually(all_written)
    waiting = await front.create_run(
        "u", RunRequest("asker", input={}, after_seconds=3600, if_not_exists="create")
    )
    old = time.time() - 7200
    rows = [EventRow(waiting.run_id, 1, "values", "{}", old)]  # a run still in flight
    gone = str(uuid.uuid4())  # a run whose record was deleted
    rows += [EventRow(gone, n, "values", "{}", old) for n in range(1, 2501)]
    await front.store.db.run(event_rows.insert(rows, postgres=front.store.db.postgres), write=True)
    kept = await _rows(front, ended.run_id)

    assert await front.events.sweep() == 2500  # the orphans, 1000 per transaction
    assert await _rows(front, gone) == []
    assert await _rows(front, ended.run_id) == kept  # ended within keep_seconds
    later = time.time() + front.events.keep_seconds + 1
    assert await front.events.sweep(now=later) == len(kept)
    assert await _rows(front, ended.run_id) == []
    assert await _rows(front, waiting.run_id) == ["values"]  # in flight: kept


async def test_a_deleted_runs_events_are_deleted(service: RunService, front: RunService) -> None:
    request = RunRequest("asker", input={"request": "r"}, if_not_exists="create")
    run = await front.create_run("t", request)
    await front.join_run("t", run.run_id)

    async def all_written() -> bool:
        return END in await _rows(front, run.run_id)

    await eventually(all_written)
    await front.delete_run("t", run.run_id)

    async def deleted() -> bool:
        return await _rows(front, run.run_id) == []

    await eventually(deleted)


async def test_old_events_are_swept_in_the_background(db_url: str, service: RunService) -> None:
    swept = await RunService.open(db_url, GRAPHS, workers=0, keep_events_seconds=0.0)
    try:
        request = RunRequest("asker", input={"request": "r"}, if_not_exists="create")
        run = await swept.create_run("t", request)
        await swept.join_run("t", run.run_id)

        async def deleted() -> bool:  # swept every second (keep 0 s)
            return await _rows(swept, run.run_id) == []

        await eventually(deleted)
    finally:
        await swept.close()


async def test_readers_go_on_when_the_notification_connection_is_killed(
    db_url: str, service: RunService, front: RunService
) -> None:
    if not front.store.db.postgres:
        pytest.skip("PostgreSQL's notifications")
    listener = front.events.listener
    assert listener is not None
    first = await front.create_run("t0", RunRequest("steps", input={}, if_not_exists="create"))
    [e async for e in front.stream_run("t0", first.run_id)]  # a reader: the front listens
    await eventually(lambda: _true(listener.connected.is_set()))
    import psycopg

    base = db_url.split("?")[0]
    async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE query LIKE 'LISTEN pausepoint_server_events%' AND pid <> pg_backend_pid()"
        )
        assert any(row[0] for row in await cur.fetchall())
    request = RunRequest("steps", input={}, stream_mode=["values"], if_not_exists="create")
    run = await front.create_run("t", request)
    remote = [e async for e in front.stream_run("t", run.run_id)]
    local = [e async for e in service.stream_run("t", run.run_id)]
    assert remote == local
    await eventually(lambda: _true(listener.connected.is_set()))  # reconnected


async def test_a_process_listens_for_notifications_from_its_first_reader_on(
    db_url: str, service: RunService, front: RunService
) -> None:
    """Every NOTIFY wakes every listening backend of the database: a process that reads
    no other process's events (the executing service here, a queue worker) does not
    listen, and a front end listens from its first reader on."""
    if not front.store.db.postgres:
        pytest.skip("PostgreSQL's notifications")
    import psycopg

    base = db_url.split("?")[0]

    async def listening() -> int:
        async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
            cur = await conn.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE query LIKE 'LISTEN pausepoint_server_events%' AND pid <> pg_backend_pid()"
            )
            row = await cur.fetchone()
            assert row is not None
            return int(row[0])

    before = await listening()
    request = RunRequest("asker", input={"request": "r"}, stream_mode=MODES, if_not_exists="create")
    run = await front.create_run("t", request)
    await eventually(lambda: _true(service.events.outcome(run.run_id) is not None))  # ended
    assert front.events.listener is not None
    assert service.events.listener is not None
    assert not front.events.listener.connected.is_set()
    assert await listening() == before
    remote = [e async for e in front.stream_run("t", run.run_id)]  # the front's first reader
    listener = front.events.listener
    await eventually(lambda: _true(listener.connected.is_set()))
    assert await listening() == before + 1
    assert not service.events.listener.connected.is_set()
    assert remote == [e async for e in service.stream_run("t", run.run_id)]  # it reads now


async def _true(value: bool) -> bool:
    return value
