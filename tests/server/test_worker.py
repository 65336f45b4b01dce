"""Workers across processes' boundaries (two services on one database stand for two
server processes): a cancel asked of a run another process executes, a thread deleted
while its run runs, a run due later (``after_seconds``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.server.run_graphs import GRAPHS
from tests.server.service_fixtures import db_url, eventually, pg_schema, pg_url, service

from pausepoint.server.errors import NotFoundError
from pausepoint.server.records import RunRequest
from pausepoint.server.service import RunService

__all__ = ["db_url", "pg_schema", "pg_url", "service"]

pytestmark = pytest.mark.asyncio


def _gated(tmp_path: Path) -> dict[str, Any]:
    return {"item": "a", "gate": str(tmp_path / "gate"), "count": str(tmp_path / "count")}


async def test_a_cancel_reaches_a_run_another_process_executes(db_url: str, tmp_path: Path) -> None:
    executing = await RunService.open(db_url, GRAPHS, workers=1, lease_seconds=0.3)
    asking = await RunService.open(db_url, GRAPHS, workers=0)
    await executing.start()
    try:
        run = await asking.create_run(
            "t", RunRequest("gated", input=_gated(tmp_path), if_not_exists="create")
        )

        await eventually(lambda: _true((tmp_path / "count").exists()))  # inside ``work``
        await asking.cancel_run("t", run.run_id, wait=True)  # seen by the lease renewal
        assert (await asking.get_run("t", run.run_id)).status == "interrupted"
        assert (await asking.get_thread("t")).status == "interrupted"
        body = await asking.join_run("t", run.run_id)
        assert body["item"] == "a"
    finally:
        await executing.close()
        await asking.close()


async def test_deleting_a_thread_stops_its_run_and_removes_everything(
    service: RunService, tmp_path: Path
) -> None:
    run = await service.create_run(
        "t", RunRequest("gated", input=_gated(tmp_path), if_not_exists="create")
    )
    await eventually(lambda: _true((tmp_path / "count").exists()))
    await service.delete_thread("t")
    with pytest.raises(NotFoundError):
        await service.get_thread("t")
    with pytest.raises(NotFoundError):
        await service.get_run("t", run.run_id)
    config: Any = {"configurable": {"thread_id": "t"}}
    assert await service.saver.aget_tuple(config) is None


async def test_a_run_due_later_waits_for_its_time(service: RunService) -> None:
    later = await service.create_run(
        "t",
        RunRequest("steps", input={}, after_seconds=3600, if_not_exists="create"),
    )
    now = await service.create_run("u", RunRequest("steps", input={}, if_not_exists="create"))
    await service.join_run("u", now.run_id)
    assert (await service.get_run("t", later.run_id)).status == "pending"
    assert (await service.get_thread("t")).status == "busy"
    await service.cancel_run("t", later.run_id)
    assert (await service.get_run("t", later.run_id)).status == "interrupted"
    assert (await service.get_thread("t")).status == "idle"


async def _true(value: bool) -> bool:
    return value


@pytest.mark.parametrize("attempt", range(4))
async def test_a_cancel_right_after_the_claim_stops_the_run(
    db_url: str, tmp_path: Path, attempt: int
) -> None:
    """The cancel lands wherever the run is (a saver write, the first step...): it
    still stops (on PostgreSQL one can be swallowed below the engine's driver: the
    worker cancels again after a grace period)."""
    del attempt
    executing = await RunService.open(db_url, GRAPHS, workers=1, lease_seconds=0.3)
    asking = await RunService.open(db_url, GRAPHS, workers=0)
    await executing.start()
    try:
        run = await asking.create_run(
            "t", RunRequest("gated", input=_gated(tmp_path), if_not_exists="create")
        )

        async def claimed() -> bool:
            return (await asking.get_run("t", run.run_id)).status != "pending"

        await eventually(claimed)
        await asking.cancel_run("t", run.run_id, wait=True)
        assert (await asking.get_run("t", run.run_id)).status == "interrupted"
        assert (await asking.get_thread("t")).status != "busy"
    finally:
        await executing.close()
        await asking.close()
