"""A run whose record cannot be opened under ``$PAUSEPOINT_KEYS`` ends ``error`` at its
claim and blocks no other run (issue 41, item 1).

Real SQLite files and PostgreSQL schemas, real tampering: a sealed ``kwargs`` cell
moved from another run's row, and a ``kwargs`` cell rewritten in clear while
plaintext is refused. The in-process workers and (PostgreSQL) the job queue's
workers: the claim ends the run ``error`` (the decode error's name and message, an
``error`` event and the end event), the thread's status is ``error``, the stored
checkpoints are unchanged, and the runs of other threads (and the next run of the
same thread) execute.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("cryptography")

from tests.crypto.conftest import KEY1
from tests.server.run_graphs import GRAPHS
from tests.server.service_fixtures import db_url, pg_schema, pg_url
from tests.server.serving import pg_database

from pausepoint.server.records import RunEvent, RunRecord, RunRequest
from pausepoint.server.service import RunService
from pausepoint.server.store_sql import Flow

__all__ = ["db_url", "pg_schema", "pg_url"]

pytestmark = pytest.mark.asyncio

KEYS = f"k1:{base64.b64encode(KEY1).decode()}"
_LIMIT = 60.0
"""A safeguard against a hang (without the fix, the queue blocks): never a timing."""


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAUSEPOINT_KEYS", KEYS)
    monkeypatch.delenv("PAUSEPOINT_ALLOW_PLAINTEXT", raising=False)


async def _sql(service: RunService, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """One statement on the service's own database, in a transaction of its own."""

    def flow() -> Flow:
        rows = yield sql, params
        return [tuple(r) for r in rows]

    got: list[tuple[Any, ...]] = await service.store.db.run(flow(), write=True)
    return got


async def _checkpoints(service: RunService, thread_id: str) -> list[list[str]]:
    """The thread's checkpoint and write rows, as stored."""
    return [
        sorted(
            repr(r)
            for r in await _sql(service, f"SELECT * FROM {t} WHERE thread_id = ?", thread_id)
        )
        for t in ("pausepoint_checkpoints", "pausepoint_writes")
    ]


async def _tamper(
    service: RunService, moved: RunRecord, cleared: RunRecord, donor: RunRecord
) -> None:
    """``moved``'s kwargs: ``donor``'s sealed cell; ``cleared``'s: its JSON in clear."""
    await _sql(
        service,
        "UPDATE pausepoint_server_runs SET kwargs = (SELECT kwargs FROM "
        "pausepoint_server_runs WHERE run_id = ?) WHERE run_id = ?",
        donor.run_id, moved.run_id,
    )  # fmt: skip
    await _sql(
        service,
        "UPDATE pausepoint_server_runs SET kwargs = ? WHERE run_id = ?",
        json.dumps(cleared.kwargs), cleared.run_id,
    )  # fmt: skip


async def _status(service: RunService, run: RunRecord) -> str:
    [[status]] = await _sql(
        service, "SELECT status FROM pausepoint_server_runs WHERE run_id = ?", run.run_id
    )
    return str(status)


async def _events(service: RunService, run: RunRecord) -> list[RunEvent]:
    return [e async for e in service.stream_run(run.thread_id, run.run_id)]


def _request(**extra: Any) -> RunRequest:
    return RunRequest("steps", input={"item": "x"}, if_not_exists="create", **extra)


def _check_failed(body: Any, events: list[RunEvent], cell: str) -> None:
    error = body["__error__"]
    assert error["error"] == "CheckpointDecodeError"
    assert cell in error["message"]
    assert [e.event for e in events] == ["error"]
    assert events[0].data == error


async def test_an_unopenable_run_ends_error_and_the_others_run(db_url: str) -> None:
    service = await RunService.open(db_url, GRAPHS, workers=2, poll_seconds=0.05)
    try:
        # checkpoints of the threads written before (the application's own invoke)
        for tid in ("t1", "t2"):
            await service.graphs["steps"].ainvoke(
                {"item": tid}, {"configurable": {"thread_id": tid}}
            )
        moved = await service.create_run("t1", _request())
        cleared = await service.create_run("t2", _request())
        after = await service.create_run("t2", _request())  # the same thread's next run
        other = await service.create_run("u", _request())
        await _tamper(service, moved, cleared, other)
        before = [await _checkpoints(service, t) for t in ("t1", "t2")]
        assert [await _status(service, r) for r in (moved, cleared, after, other)] == [
            "pending"
        ] * 4

        await service.start()  # the workers' claims meet the unopenable runs first
        bodies = await asyncio.wait_for(
            asyncio.gather(
                *(
                    service.join_run(r.thread_id, r.run_id, run=r)
                    for r in (moved, cleared, after, other)
                )
            ),
            _LIMIT,
        )
        _check_failed(bodies[0], await _events(service, moved), "the kwargs of run")
        _check_failed(bodies[1], await _events(service, cleared), "stored unencrypted")
        assert bodies[2]["items"] == ["one", "two", "three"] * 2  # on from t2's checkpoint
        assert bodies[3]["items"] == ["one", "two", "three"]
        assert [await _status(service, r) for r in (moved, cleared, after, other)] == [
            "error", "error", "success", "success",
        ]  # fmt: skip
        assert (await service.get_thread("t1")).status == "error"
        assert (await service.get_thread("u")).status == "idle"
        assert await _checkpoints(service, "t1") == before[0]  # nothing executed on t1
    finally:
        await service.close()


async def test_an_unopenable_run_claimed_by_its_thread_ends_and_the_next_runs(db_url: str) -> None:
    """The queue's claim (`Workers.run_thread`): the thread's next run, not a retry."""
    service = await RunService.open(db_url, GRAPHS, workers=0)
    try:
        bad = await service.create_run("t", _request())
        good = await service.create_run("t", _request())
        donor = await service.create_run("d", _request())
        await _tamper(service, bad, bad, donor)
        assert await service.workers.run_thread("t") is False  # bad ended, good ran: no more
        assert [await _status(service, r) for r in (bad, good, donor)] == [
            "error", "success", "pending",
        ]  # fmt: skip
        assert (await service.get_thread("t")).status == "idle"  # settled by good's end
        _check_failed(
            await service.join_run("t", bad.run_id, run=bad),
            await _events(service, bad),
            "stored unencrypted",
        )
    finally:
        await service.close()


@pytest.fixture
def pg_db() -> Iterator[str]:
    yield from pg_database("unopenable")


async def test_a_queue_job_whose_run_cannot_be_opened_ends_and_is_not_retried(pg_db: str) -> None:
    from procrastinate import App

    from pausepoint.workers.queue import QUEUE, dispatcher, ensure_schema, new_app
    from pausepoint.workers.repair import repair
    from pausepoint.workers.tasks import Settings, register

    await ensure_schema(pg_db)
    service = await RunService.open(pg_db, GRAPHS, workers=0)
    app: App = new_app(pg_db)
    register(app, service, Settings(sweep_cron=None))
    try:
        async with app.open_async():
            service.dispatch = dispatcher(app)
            bad = await service.create_run("t", _request())
            after = await service.create_run("t", _request())
            other = await service.create_run("u", _request())
            await _tamper(service, bad, bad, other)
            # the queue's workers take every job, then stop (``wait=False``)
            await asyncio.wait_for(
                app.run_worker_async(
                    queues=[QUEUE], concurrency=2, wait=False, install_signal_handlers=False
                ),
                _LIMIT,
            )
            assert [await _status(service, r) for r in (bad, after, other)] == [
                "error",
                "success",
                "success",
            ]
            jobs = await _sql(
                service,
                "SELECT status, count(*) FROM procrastinate_jobs "
                "WHERE task_name = 'pausepoint.run' GROUP BY status",
            )
            assert dict(jobs) == {"succeeded": 3}  # no job failed, none waits
            assert (await repair(app, service.store, stalled_seconds=30.0))[2] == 0  # none deferred
            _check_failed(
                await service.join_run("t", bad.run_id, run=bad),
                await _events(service, bad),
                "stored unencrypted",
            )
    finally:
        await service.close()


async def test_the_run_routes_answer_an_unopenable_run_with_what_they_can_read(
    db_url: str,
) -> None:
    """``GET`` a run, ``/join`` and ``/stream`` it, from requests that did not make it:
    before the claim, the run's fields that open and an error naming the cell that does
    not; once the claim has ended it, its ``error`` outcome."""
    import httpx

    from pausepoint.server.app import create_app

    service = await RunService.open(db_url, GRAPHS, workers=1, poll_seconds=0.05)
    app = create_app(service)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            bad = await service.create_run("t1", _request(metadata={"kind": "bad"}))
            donor = await service.create_run("d", _request())
            await _tamper(service, bad, bad, donor)  # bad's kwargs: in clear (refused)
            path = f"/threads/t1/runs/{bad.run_id}"
            stored = await _sql(service, "SELECT * FROM pausepoint_server_runs ORDER BY seq")

            got = await client.get(path)  # before any claim: pending
            assert got.status_code == 200, got.text
            run = got.json()
            assert run["status"] == "pending"
            assert (run["run_id"], run["thread_id"]) == (bad.run_id, "t1")
            assert run["assistant_id"] == bad.assistant_id
            assert run["metadata"] == {"kind": "bad"}  # its metadata cell opens
            assert run["kwargs"] is None
            assert run["error"]["error"] == "CheckpointDecodeError"
            assert "stored unencrypted" in run["error"]["message"]
            # reading changed nothing
            assert await _sql(service, "SELECT * FROM pausepoint_server_runs ORDER BY seq") == (
                stored
            )

            # a join made before the claim ends with the claim's error outcome
            joining = asyncio.ensure_future(client.get(f"{path}/join", timeout=_LIMIT))
            await asyncio.sleep(0.05)  # (the join's request is under way: not a timing)
            await service.start()
            joined = await asyncio.wait_for(joining, _LIMIT)
            assert joined.status_code == 200, joined.text
            error = joined.json()["__error__"]
            assert error["error"] == "CheckpointDecodeError"
            assert "stored unencrypted" in error["message"]

            got = await client.get(path)
            assert got.status_code == 200, got.text
            assert got.json()["status"] == "error"
            assert got.json()["error"]["error"] == "CheckpointDecodeError"
            joined = await client.get(f"{path}/join")
            assert joined.status_code == 200, joined.text
            assert joined.json() == {"__error__": error}
            streamed = await client.get(f"{path}/stream", timeout=_LIMIT)
            assert streamed.status_code == 200, streamed.text
            frames = [f for f in streamed.text.split("\n\n") if f.strip()]
            assert [f.splitlines()[0] for f in frames] == ["event: metadata", "event: error"]
            assert json.loads(frames[1].splitlines()[1].removeprefix("data: ")) == error
    finally:
        await service.close()


async def test_a_thread_with_an_unopenable_run_lists_its_runs_and_deletes(db_url: str) -> None:
    """``GET /threads/{t}/runs`` lists every run, one that does not open as ``GET`` of
    it shows it; ``DELETE /threads/{t}`` deletes the thread all the same."""
    import httpx

    from pausepoint.server.app import create_app

    service = await RunService.open(db_url, GRAPHS, workers=0)
    app = create_app(service)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            good = await service.create_run("t", _request(metadata={"kind": "good"}))
            bad = await service.create_run("t", _request(metadata={"kind": "bad"}))
            donor = await service.create_run("d", _request())
            await _tamper(service, bad, bad, donor)  # bad's kwargs: in clear (refused)
            stored = await _sql(service, "SELECT * FROM pausepoint_server_runs ORDER BY seq")

            listed = await client.get("/threads/t/runs")
            assert listed.status_code == 200, listed.text
            runs = listed.json()
            assert [r["run_id"] for r in runs] == [bad.run_id, good.run_id]  # newest first
            one = await client.get(f"/threads/t/runs/{bad.run_id}")
            assert runs[0] == one.json()
            assert runs[0]["metadata"] == {"kind": "bad"}
            assert runs[0]["kwargs"] is None
            assert runs[0]["error"]["error"] == "CheckpointDecodeError"
            assert runs[1]["metadata"] == {"kind": "good"}
            assert runs[1]["kwargs"] is not None
            assert "error" not in runs[1]
            assert await _sql(service, "SELECT * FROM pausepoint_server_runs ORDER BY seq") == (
                stored
            )  # reading changed nothing

            deleted = await client.delete("/threads/t")
            assert deleted.status_code in (200, 204), deleted.text
            assert (await client.get("/threads/t")).status_code == 404
            left = await _sql(service, "SELECT run_id FROM pausepoint_server_runs ORDER BY seq")
            assert left == [(donor.run_id,)]
    finally:
        await service.close()
