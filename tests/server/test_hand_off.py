"""The served path's short cuts, on SQLite and PostgreSQL (issue 33's speed target).

- A run recorded while a worker of the process waits is claimed in the transaction
  that records it and handed to that worker: no claim of its own.
- The claim marks the run started (its thread's head and newest write kept) in the
  same transaction; a retry keeps where the first attempt started.
- A worker done with a run claims again only when the transaction recording the end
  saw a runnable run, or a run was recorded meanwhile that no waiting worker took.
- ``join`` of a run this process executed answers from memory, not the record.
- None of it loses a guarantee: two services (two processes) racing runs on one
  thread still run them one at a time, in order; a request cancelled while its run
  is recorded still has the run executed.

Workers poll rarely here (``poll_seconds`` an hour): a run that starts is started by
the hand-off or a wake, never by a poll.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from tests.server.run_graphs import GRAPHS
from tests.server.service_fixtures import db_url, eventually, pg_schema, pg_url

from pausepoint.server.records import RunRequest
from pausepoint.server.service import RunService
from pausepoint.server.store_sql import Flow

__all__ = ["db_url", "pg_schema", "pg_url"]

pytestmark = pytest.mark.asyncio

_HOUR = 3600.0


class Counted:
    """Calls of some of a service's store methods, counted by name."""

    def __init__(self, service: RunService, *names: str) -> None:
        self.calls = dict.fromkeys(names, 0)
        for name in names:
            setattr(service.store, name, self._wrap(name, getattr(service.store, name)))

    def _wrap(self, name: str, method: Callable[..., Awaitable[Any]]) -> Any:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return await method(*args, **kwargs)

        return counted


@pytest_asyncio.fixture
async def quiet(db_url: str) -> AsyncIterator[RunService]:
    """A started service with 2 workers that poll only hourly, both waiting."""
    svc = await RunService.open(db_url, GRAPHS, workers=2, poll_seconds=_HOUR)
    await svc.start()
    try:
        await eventually(lambda: _true(svc.workers.waiting == 2))
        yield svc
    finally:
        await svc.close()


async def _record(service: RunService, run_id: str) -> tuple[int, int, str | None]:
    def flow() -> Flow:
        rows = yield (
            "SELECT attempt, started, start_checkpoint FROM pausepoint_server_runs "
            "WHERE run_id = ?",
            (run_id,),
        )
        return int(rows[0][0]), int(rows[0][1]), rows[0][2]

    got: tuple[int, int, str | None] = await service.store.db.run(flow())
    return got


async def _head(service: RunService, thread_id: str) -> str | None:
    got = await service.saver.aget_tuple({"configurable": {"thread_id": thread_id}})
    return None if got is None else str(got.checkpoint["id"])


async def test_a_run_recorded_while_a_worker_waits_is_handed_to_it(quiet: RunService) -> None:
    await quiet.get_assistant("asker")  # read once, then kept: assistants never change
    counted = Counted(quiet, "claim", "run_result", "get_assistant")
    first = await quiet.create_run("t", RunRequest("asker", input={}, if_not_exists="create"))
    paused: Any = await quiet.join_run("t", first.run_id, run=first)
    assert "__interrupt__" in paused
    head = await _head(quiet, "t")
    resume = await quiet.create_run("t", RunRequest("asker", command={"resume": "yes"}))
    done: Any = await quiet.join_run("t", resume.run_id, run=resume)
    assert done["answer"] == "yes"
    assert counted.calls == {"claim": 0, "run_result": 0, "get_assistant": 0}
    # claimed once, marked started where the thread's head was, as a claim does
    assert await _record(quiet, first.run_id) == (1, 1, None)
    assert await _record(quiet, resume.run_id) == (1, 1, head)
    assert (await quiet.get_run("t", resume.run_id)).status == "success"
    assert (await quiet.get_thread("t")).status == "idle"


async def test_a_worker_claims_after_a_run_only_when_a_run_waits(
    quiet: RunService, tmp_path: Path
) -> None:
    counted = Counted(quiet, "claim")
    for n in range(3):  # one after the other: each handed over, none claimed
        run = await quiet.create_run(f"t{n}", RunRequest("steps", input={}, if_not_exists="create"))
        await quiet.join_run(run.thread_id, run.run_id)
    await eventually(lambda: _true(quiet.workers.waiting == 2))
    assert counted.calls["claim"] == 0
    # two runs of one thread at once: the second waits for the first, whose end
    # finds it runnable, so the worker claims it (and nothing after it)
    count = str(tmp_path / "count")
    await quiet.create_thread(thread_id="u")
    request = RunRequest("steps", input={"count": count})
    made = await asyncio.gather(quiet.create_run("u", request), quiet.create_run("u", request))
    for run in made:
        await quiet.join_run("u", run.run_id)
    assert {(await quiet.get_run("u", r.run_id)).status for r in made} == {"success"}
    assert (tmp_path / "count").read_text().splitlines() == ["one", "two", "three"] * 2
    assert 1 <= counted.calls["claim"] <= 3  # not one per poll: the wakes and the end


async def test_the_hand_off_racing_a_second_front_end_keeps_one_run_at_a_time(
    db_url: str, tmp_path: Path
) -> None:
    """Two services (as two processes) with waiting workers record runs of one thread
    at once: whichever records first hands its run over; the other's run waits, and
    runs after it, once."""
    one = await RunService.open(db_url, GRAPHS, workers=2, poll_seconds=_HOUR)
    two = await RunService.open(db_url, GRAPHS, workers=2, poll_seconds=_HOUR)
    await one.start()
    await two.start()
    try:
        await one.create_thread(thread_id="t")
        for round_ in range(3):
            await eventually(lambda: _true(one.workers.waiting == 2 == two.workers.waiting))
            count = str(tmp_path / f"count-{round_}")
            request = RunRequest("steps", input={"count": count})
            made = await asyncio.gather(one.create_run("t", request), two.create_run("t", request))
            for run in made:
                # the other process's run: its record is read (SQLite: polled)
                await one.join_run("t", run.run_id)
                await two.join_run("t", run.run_id)
            statuses = {(await one.get_run("t", r.run_id)).status for r in made}
            assert statuses == {"success"}
            lines = (tmp_path / f"count-{round_}").read_text().splitlines()
            assert lines == ["one", "two", "three"] * 2  # one after the other, each once
            for run in made:
                attempt, started, _ = await _record(one, run.run_id)
                assert (attempt, started) == (1, 1)
    finally:
        await one.close()
        await two.close()


async def test_a_request_cancelled_while_its_run_is_recorded_still_hands_it_over(
    quiet: RunService,
) -> None:
    await quiet.get_assistant("steps")  # read once: the request's first wait is the record
    request = RunRequest("steps", input={}, if_not_exists="create")
    task = asyncio.ensure_future(quiet.create_run("t", request))
    await asyncio.sleep(0)  # inside the record's transaction
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    async def finished() -> bool:
        runs = await quiet.store.runs("t", limit=10, offset=0, status=None)
        return len(runs) == 1 and runs[0].status == "success"

    await eventually(finished)  # the workers do not poll: the hand-off ran it
    assert (await quiet.get_thread("t")).status == "idle"


async def test_a_thread_claim_requeues_its_expired_run_and_keeps_where_it_started(
    db_url: str,
) -> None:
    """A queue worker's claim of a thread's run: the thread's run whose lease ran out
    (its process died) is taken over in the claim's own transaction; the retry keeps
    where the first attempt started."""
    service = await RunService.open(db_url, GRAPHS, workers=0)
    try:
        run = await service.create_run("t", RunRequest("asker", input={}, if_not_exists="create"))
        now = time.time()
        dead = await service.store.claim("gone/1/x", now, now - 1)  # its lease has run out
        assert dead is not None
        assert (dead.attempt, dead.started, dead.start_checkpoint, dead.head) == (
            1,
            False,
            None,
            None,
        )
        assert await service.store.claim("w2", now, now + 30) is None  # not taken over
        retry = await service.store.claim("w2", now, now + 30, thread_id="t")
        assert retry is not None
        assert retry.run.run_id == run.run_id
        assert (retry.attempt, retry.started, retry.start_checkpoint) == (2, True, None)
        assert await _record(service, run.run_id) == (2, 1, None)
    finally:
        await service.close()


async def _true(value: bool) -> bool:
    return value
