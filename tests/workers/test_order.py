"""A thread's runs over the queue: in arrival order, and the multitask strategies under
racing requests from two front ends (the runs executed by separate worker processes)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError
from tests.workers.cluster import TOKEN, Cluster, lines

pytestmark = pytest.mark.asyncio


async def _status(client: LangGraphClient, tid: str, run_id: str) -> str:
    try:
        return (await client.runs.get(tid, run_id))["status"]
    except NotFoundError:
        return "deleted"


async def _until(client: LangGraphClient, tid: str, run_id: str, want: str) -> None:
    async def poll() -> None:
        while await _status(client, tid, run_id) != want:
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), 60)  # a safeguard against a hang, not a timing


async def test_a_threads_runs_execute_one_at_a_time_in_arrival_order(
    deployment: Cluster, tmp_path: Path
) -> None:
    a, b = deployment.fronts
    log = str(tmp_path / "order.log")
    async with (
        get_client(url=a.url, api_key=TOKEN) as ca,
        get_client(url=b.url, api_key=TOKEN) as cb,
    ):
        tid = (await ca.threads.create())["thread_id"]
        made = await asyncio.gather(
            *(
                (ca if i % 2 else cb).runs.create(
                    tid,
                    "append",
                    input={"item": f"i{i}", "log": log},
                    multitask_strategy="enqueue",
                )
                for i in range(8)
            )
        )
        for run in made:
            await _join(ca, tid, run["run_id"])
        newest_first = await cb.runs.list(tid, limit=100)
        arrival = [r["kwargs"]["input"]["item"] for r in reversed(newest_first)]
        assert sorted(arrival) == sorted(f"i{i}" for i in range(8))
        assert all(r["status"] == "success" for r in newest_first)
        state: Any = await cb.threads.get_state(tid)
        assert state["values"]["items"] == arrival, deployment.logs()
        assert lines(Path(log)) == [f"item {i}" for i in arrival]


async def _join(client: LangGraphClient, tid: str, run_id: str) -> Any:
    return await asyncio.wait_for(client.runs.join(tid, run_id), 60)  # a hang's safeguard


async def _gated_run(client: LangGraphClient, tid: str, gate: Path, log: Path, item: str) -> str:
    """A run of ``gated`` whose node has started (it waits for ``gate``)."""
    run = await client.runs.create(
        tid, "gated", input={"gate": str(gate), "log": str(log), "item": item}
    )

    async def started() -> None:
        while f"work {item}" not in lines(log):
            await asyncio.sleep(0.02)

    await asyncio.wait_for(started(), 60)
    return run["run_id"]


async def test_reject_refuses_from_every_front_end_while_a_run_is_in_flight(
    deployment: Cluster, tmp_path: Path
) -> None:
    a, b = deployment.fronts
    gate, log = tmp_path / "gate", tmp_path / "work.log"
    async with (
        get_client(url=a.url, api_key=TOKEN) as ca,
        get_client(url=b.url, api_key=TOKEN) as cb,
    ):
        tid = (await ca.threads.create())["thread_id"]
        first = await _gated_run(ca, tid, gate, log, "first")
        refused = await asyncio.gather(
            *(
                (ca if i % 2 else cb).runs.create(
                    tid, "append", input={"item": "x"}, multitask_strategy="reject"
                )
                for i in range(6)
            ),
            return_exceptions=True,
        )
        assert all(isinstance(r, ConflictError) for r in refused), refused
        gate.touch()
        await _join(ca, tid, first)
        assert [r["run_id"] for r in await cb.runs.list(tid)] == [first]
        assert lines(log) == ["work first"]


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
async def test_interrupt_and_rollback_stop_the_run_in_the_worker_holding_it(
    deployment: Cluster, tmp_path: Path, strategy: str
) -> None:
    a, b = deployment.fronts
    log = tmp_path / "work.log"
    async with (
        get_client(url=a.url, api_key=TOKEN) as ca,
        get_client(url=b.url, api_key=TOKEN) as cb,
    ):
        tid = (await ca.threads.create())["thread_id"]
        first = await _gated_run(ca, tid, tmp_path / "never", log, "first")
        open_gate = tmp_path / "open"
        open_gate.touch()
        second = await cb.runs.create(
            tid, "gated", input={"gate": str(open_gate), "log": str(log), "item": "second"},
            multitask_strategy=strategy,  # pyright: ignore[reportArgumentType]
        )  # fmt: skip
        await _join(cb, tid, second["run_id"])
        want = "interrupted" if strategy == "interrupt" else "deleted"
        await _until(ca, tid, first, want)
        assert await _status(ca, tid, second["run_id"]) == "success"
        state: Any = await ca.threads.get_state(tid)
        assert state["values"]["items"] == ["second"]
        assert lines(log) == ["work first", "work second"]
