"""The multitask strategies on a busy thread, with racing requests, on SQLite and
PostgreSQL: ``reject`` (409, nothing written), ``enqueue`` (runs one after the other,
in order), ``interrupt`` (the run in flight ends ``interrupted``, its checkpoints kept),
``rollback`` (the run in flight and its checkpoints deleted). A run is held running
by a gate file the test creates: no timing decides anything."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.server.run_graphs import GRAPHS
from tests.server.service_fixtures import db_url, eventually, pg_schema, pg_url, service

from pausepoint.server.errors import ConflictError, NotFoundError
from pausepoint.server.records import MultitaskStrategy, RunRecord, RunRequest
from pausepoint.server.service import RunService

__all__ = ["db_url", "pg_schema", "pg_url", "service"]

pytestmark = pytest.mark.asyncio


def _inp(tmp_path: Path, item: str, *, gated: bool) -> dict[str, Any]:
    gate = tmp_path / f"gate-{item}"
    return {
        "item": item,
        "gate": str(gate) if gated else "",
        "count": str(tmp_path / "count"),
    }


async def _running(service: RunService, tmp_path: Path, item: str) -> RunRecord:
    """A gated run on thread ``t``, once its worker is inside ``work``."""
    run = await service.create_run(
        "t", RunRequest("gated", input=_inp(tmp_path, item, gated=True), if_not_exists="create")
    )
    count = tmp_path / "count"

    async def inside() -> bool:
        return count.exists() and f"work {item}" in count.read_text()

    await eventually(inside)
    assert (await service.get_run("t", run.run_id)).status == "running"
    return run


def _second(tmp_path: Path, strategy: MultitaskStrategy) -> RunRequest:
    return RunRequest("gated", input=_inp(tmp_path, "b", gated=False), multitask_strategy=strategy)


async def _items(service: RunService) -> list[str]:
    state = await service.graphs["gated"].aget_state({"configurable": {"thread_id": "t"}})
    return list(state.values.get("items", []))


async def test_reject_answers_conflict_and_writes_nothing(
    service: RunService, tmp_path: Path
) -> None:
    first = await _running(service, tmp_path, "a")
    with pytest.raises(ConflictError) as caught:
        await service.create_run("t", _second(tmp_path, "reject"))
    assert caught.value.status == 409
    assert [r.run_id for r in await service.list_runs("t")] == [first.run_id]
    (tmp_path / "gate-a").touch()
    await service.join_run("t", first.run_id)
    assert (await service.get_run("t", first.run_id)).status == "success"
    assert await _items(service) == ["a"]
    assert (await service.get_thread("t")).status == "idle"


async def test_enqueue_runs_after_the_run_in_flight_in_order(
    service: RunService, tmp_path: Path
) -> None:
    first = await _running(service, tmp_path, "a")
    second = await service.create_run("t", _second(tmp_path, "enqueue"))
    third = await service.create_run(
        "t", RunRequest("gated", input=_inp(tmp_path, "c", gated=False))
    )  # enqueue is the default
    assert third.multitask_strategy == "enqueue"
    # four workers are idle, yet the thread's next runs wait for the one in flight
    assert (await service.get_run("t", second.run_id)).status == "pending"
    assert (await service.get_thread("t")).status == "busy"
    (tmp_path / "gate-a").touch()
    await service.join_run("t", third.run_id)
    for run in (first, second, third):
        assert (await service.get_run("t", run.run_id)).status == "success"
    assert await _items(service) == ["a", "b", "c"]
    lines = (tmp_path / "count").read_text().splitlines()
    assert lines == ["work a", "work b", "work c"]
    assert (await service.get_thread("t")).status == "idle"


async def test_interrupt_stops_the_run_in_flight_and_keeps_its_checkpoints(
    service: RunService, tmp_path: Path
) -> None:
    first = await _running(service, tmp_path, "a")
    second = await service.create_run("t", _second(tmp_path, "interrupt"))
    body = await service.join_run("t", second.run_id)
    assert (await service.get_run("t", first.run_id)).status == "interrupted"
    assert (await service.get_run("t", second.run_id)).status == "success"
    assert body["items"] == ["b"]
    graph = service.graphs["gated"]
    history = [s async for s in graph.aget_state_history({"configurable": {"thread_id": "t"}})]
    assert any(s.values.get("item") == "a" for s in history)  # the first run's input stays


async def test_rollback_deletes_the_run_in_flight_and_its_checkpoints(
    service: RunService, tmp_path: Path
) -> None:
    # a run that ended before: the thread is rolled back to its end, not further
    done = await service.create_run(
        "t", RunRequest("gated", input=_inp(tmp_path, "z", gated=False), if_not_exists="create")
    )
    await service.join_run("t", done.run_id)
    graph = service.graphs["gated"]
    config: Any = {"configurable": {"thread_id": "t"}}
    before = [s.config async for s in graph.aget_state_history(config)]
    first = await _running(service, tmp_path, "a")
    second = await service.create_run("t", _second(tmp_path, "rollback"))
    body = await service.join_run("t", second.run_id)
    with pytest.raises(NotFoundError):
        await service.get_run("t", first.run_id)
    assert body["items"] == ["z", "b"]
    after = [s async for s in graph.aget_state_history(config)]
    assert all(s.values.get("item") != "a" for s in after)
    assert [s.config for s in after][-len(before) :] == before
    assert [r.run_id for r in await service.list_runs("t")] == [second.run_id, done.run_id]


async def test_rollback_of_a_thread_first_run_leaves_no_checkpoint(
    service: RunService, tmp_path: Path
) -> None:
    first = await _running(service, tmp_path, "a")
    await service.cancel_run("t", first.run_id, action="rollback", wait=True)
    with pytest.raises(NotFoundError):
        await service.get_run("t", first.run_id)
    graph = service.graphs["gated"]
    config: Any = {"configurable": {"thread_id": "t"}}
    assert [s async for s in graph.aget_state_history(config)] == []
    assert (await service.get_thread("t")).status == "idle"


async def test_a_pending_run_cancelled_by_the_strategies(
    service: RunService, tmp_path: Path
) -> None:
    first = await _running(service, tmp_path, "a")
    queued = await service.create_run("t", _second(tmp_path, "enqueue"))
    last = await service.create_run(
        "t",
        RunRequest("gated", input=_inp(tmp_path, "c", gated=False), multitask_strategy="rollback"),
    )
    with pytest.raises(NotFoundError):  # the pending run was deleted at once
        await service.get_run("t", queued.run_id)
    await service.join_run("t", last.run_id)
    with pytest.raises(NotFoundError):
        await service.get_run("t", first.run_id)
    assert await _items(service) == ["c"]


async def test_racing_rejects_accept_exactly_one(db_url: str, tmp_path: Path) -> None:
    """Two services (as two server processes) on one database, many racing requests."""
    one = await RunService.open(db_url, GRAPHS, workers=0, poll_seconds=0.05)
    two = await RunService.open(db_url, GRAPHS, workers=0, poll_seconds=0.05)
    try:
        await one.create_thread(thread_id="t")
        request = RunRequest(
            "gated", input=_inp(tmp_path, "a", gated=True), multitask_strategy="reject"
        )
        outcomes = await asyncio.gather(
            *(svc.create_run("t", request) for svc in (one, two) * 8), return_exceptions=True
        )
        accepted = [o for o in outcomes if isinstance(o, RunRecord)]
        refused = [o for o in outcomes if isinstance(o, ConflictError)]
        assert len(accepted) == 1
        assert len(refused) == 15
        assert [r.run_id for r in await one.list_runs("t")] == [accepted[0].run_id]
    finally:
        await one.close()
        await two.close()


async def test_racing_enqueues_never_run_two_runs_of_a_thread_at_once(
    db_url: str, tmp_path: Path
) -> None:
    """Two services with workers, runs enqueued from both: each thread's runs run one
    at a time, in the order they were accepted."""
    one = await RunService.open(db_url, GRAPHS, workers=3, poll_seconds=0.02)
    two = await RunService.open(db_url, GRAPHS, workers=3, poll_seconds=0.02)
    await one.start()
    await two.start()
    try:
        for thread in ("t", "u"):
            await one.create_thread(thread_id=thread)
        made = await asyncio.gather(
            *(
                svc.create_run(
                    thread,
                    RunRequest("steps", input={"count": str(tmp_path / f"count-{thread}")}),
                )
                for n, svc in enumerate((one, two) * 5)
                for thread in (("t", "u")[n % 2],)
            )
        )
        for run in made:
            await one.join_run(run.thread_id, run.run_id)
        for thread in ("t", "u"):
            runs = await one.list_runs(thread, limit=100)
            assert {r.status for r in runs} == {"success"}
            lines = (tmp_path / f"count-{thread}").read_text().splitlines()
            assert lines == ["one", "two", "three"] * 5  # never interleaved
    finally:
        await one.close()
        await two.close()


async def test_rollback_of_a_resume_forgets_its_answer(service: RunService, tmp_path: Path) -> None:
    """The answer the rolled-back run stored is deleted with it: the question waits
    again (in the saver's index of waiting questions too), and another answer is taken."""
    gate = tmp_path / "gate"
    paused = await service.create_run(
        "t", RunRequest("review", input={"gate": str(gate)}, if_not_exists="create")
    )
    question = (await service.join_run("t", paused.run_id))["__interrupt__"][0]
    first = await service.create_run("t", RunRequest("review", command={"resume": "first"}))

    async def running() -> bool:
        return (await service.get_run("t", first.run_id)).status == "running"

    await eventually(running)
    await service.cancel_run("t", first.run_id, action="rollback", wait=True)
    assert (await service.get_thread("t")).status == "interrupted"
    waiting = await service.saver.alist_pending()
    assert [(q.thread_id, q.interrupt_id) for q in waiting.items] == [("t", question["id"])]
    gate.touch()
    second = await service.create_run("t", RunRequest("review", command={"resume": "second"}))
    body = await service.join_run("t", second.run_id)
    assert body == {"answer": "second", "gate": str(gate), "done": True}
    assert (await service.saver.alist_pending()).items == []


async def test_racing_interrupts_leave_one_run_to_finish(db_url: str, tmp_path: Path) -> None:
    """Racing ``interrupt`` runs from two services: each cancels the runs before it, so
    exactly the last one accepted finishes; every other ends ``interrupted``.

    The racing runs are gated too, and the gate opens only once every run but the
    newest has ended: an ungated run could finish before the next one is accepted,
    and then it rightly ends ``success`` (nothing was in flight to interrupt). A
    short lease makes a worker of the other service read a cancel soon."""
    one = await RunService.open(db_url, GRAPHS, workers=2, poll_seconds=0.02, lease_seconds=0.3)
    two = await RunService.open(db_url, GRAPHS, workers=2, poll_seconds=0.02, lease_seconds=0.3)
    await one.start()
    await two.start()
    try:
        first = await _running(one, tmp_path, "a")
        request = RunRequest(
            "gated", input=_inp(tmp_path, "b", gated=True), multitask_strategy="interrupt"
        )
        made = await asyncio.gather(*(svc.create_run("t", request) for svc in (one, two) * 4))

        async def all_but_one_ended() -> bool:
            runs = await one.list_runs("t", limit=100)
            return sum(r.status in ("pending", "running") for r in runs) == 1

        await eventually(all_but_one_ended)
        (tmp_path / "gate-b").touch()
        for run in made:
            await one.join_run("t", run.run_id)
        runs = await one.list_runs("t", limit=100)
        assert len(runs) == 9
        statuses = {r.run_id: r.status for r in runs}
        assert statuses[first.run_id] == "interrupted"
        finished = [r for r in runs if r.status == "success"]
        assert len(finished) == 1
        assert finished[0].run_id == runs[0].run_id  # the newest accepted
        assert {r.status for r in runs if r is not finished[0]} == {"interrupted"}
    finally:
        await one.close()
        await two.close()
