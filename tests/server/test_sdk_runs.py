"""Runs through the real ``langgraph-sdk`` client: background runs, cancel, and a second
concurrent resume under each multitask strategy.

Racing runs meet deterministically: the ``gated`` graph's ``work`` node waits for a
file the test creates, so the first run is certainly running when the second arrives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph_sdk")
pytest.importorskip("uvicorn")

from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError
from tests.server.serving import TOKEN, Served, serve


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    where: Path = tmp_path_factory.mktemp("serve")
    with serve(str(where / "serve.sqlite"), where / "serve.log") as s:
        yield s


async def _until(client: Any, tid: str, run_id: str, *statuses: str) -> dict[str, Any]:
    """Poll the run until its status is one of ``statuses``.

    Not a timing assertion: the bound only turns a hang into a failure that says
    where the run got stuck.
    """
    seen: list[str] = []
    for _ in range(3000):
        run = await client.runs.get(tid, run_id)
        if run["status"] in statuses:
            return run
        if not seen or seen[-1] != run["status"]:
            seen.append(run["status"])
        await asyncio.sleep(0.02)
    joined = await client.http.get(f"/threads/{tid}/runs/{run_id}/join")
    raise AssertionError(f"run {run_id} went {seen}, never {statuses}: {joined}")


async def _paused_gated(client: Any, gate: Path) -> str:
    tid = (await client.threads.create())["thread_id"]
    paused = await client.runs.wait(tid, "gated", input={"request": "r", "gate": str(gate)})
    assert "__interrupt__" in paused
    return tid


async def _first_resume_running(client: Any, tid: str) -> str:
    first = await client.runs.create(tid, "gated", command={"resume": "first"})
    await _until(client, tid, first["run_id"], "running")
    return first["run_id"]


@pytest.mark.asyncio
async def test_cancel_stops_a_running_run_and_keeps_its_progress(served: Served, tmp_path: Path):
    async with get_client(url=served.url, api_key=TOKEN) as client:
        tid = (await client.threads.create())["thread_id"]
        gate = tmp_path / "never"
        run = await client.runs.create(tid, "ticker", input={"stop": 10**9, "gate": str(gate)})
        await _until(client, tid, run["run_id"], "running")
        assert (await client.threads.get(tid))["status"] == "busy"
        while (await client.threads.get_state(tid))["values"].get("n", 0) < 2:
            await asyncio.sleep(0.02)
        await client.runs.cancel(tid, run["run_id"], wait=True)
        assert (await client.runs.get(tid, run["run_id"]))["status"] == "interrupted"
        thread = await client.threads.get(tid)
        assert thread["status"] != "busy"
        state: Any = await client.threads.get_state(tid)
        assert state["values"]["n"] >= 2


@pytest.mark.asyncio
async def test_reject_refuses_a_second_resume_with_409(served: Served, tmp_path: Path):
    async with get_client(url=served.url, api_key=TOKEN) as client:
        gate = tmp_path / "gate"
        tid = await _paused_gated(client, gate)
        first = await _first_resume_running(client, tid)
        with pytest.raises(ConflictError):
            await client.runs.create(
                tid, "gated", command={"resume": "second"}, multitask_strategy="reject"
            )
        gate.touch()
        await client.runs.join(tid, first)
        runs = await client.runs.list(tid)
        assert [r["status"] for r in runs] == ["success", "success"]
        state: Any = await client.threads.get_state(tid)
        assert state["values"]["answer"] == "first"


@pytest.mark.asyncio
async def test_enqueue_runs_the_second_resume_after_the_first(served: Served, tmp_path: Path):
    async with get_client(url=served.url, api_key=TOKEN) as client:
        gate = tmp_path / "gate"
        tid = await _paused_gated(client, gate)
        first = await _first_resume_running(client, tid)
        second = await client.runs.create(
            tid, "gated", command={"resume": "second"}, multitask_strategy="enqueue"
        )
        assert second["status"] == "pending"
        gate.touch()
        await client.runs.join(tid, first)
        await _until(client, tid, second["run_id"], "success", "error")
        # The question was answered by the first run: the second finds nothing to
        # resume (pausepoint does not hand a stale answer to the next question).
        state: Any = await client.threads.get_state(tid)
        assert state["values"]["answer"] == "first"
        assert (await client.runs.get(tid, first))["status"] == "success"


@pytest.mark.asyncio
async def test_interrupt_cancels_the_first_and_keeps_its_checkpoints(
    served: Served, tmp_path: Path
):
    async with get_client(url=served.url, api_key=TOKEN) as client:
        gate = tmp_path / "gate"
        tid = await _paused_gated(client, gate)
        first = await _first_resume_running(client, tid)
        # "running" comes before the answer's step is saved: wait for the checkpoint the
        # test says is kept (a cancel before it would rightly keep nothing of the run).
        for _ in range(3000):
            state: Any = await client.threads.get_state(tid)
            if state["values"].get("answer") == "first":
                break
            await asyncio.sleep(0.02)
        second = await client.runs.create(tid, "gated", input=None, multitask_strategy="interrupt")
        gate.touch()
        await _until(client, tid, second["run_id"], "success", "error")
        assert (await client.runs.get(tid, first))["status"] == "interrupted"
        state = await client.threads.get_state(tid)
        assert state["values"]["answer"] == "first"


@pytest.mark.asyncio
async def test_rollback_deletes_the_first_and_answers_again(served: Served, tmp_path: Path):
    async with get_client(url=served.url, api_key=TOKEN) as client:
        gate = tmp_path / "gate"
        tid = await _paused_gated(client, gate)
        first = await _first_resume_running(client, tid)
        second = await client.runs.create(
            tid, "gated", command={"resume": "second"}, multitask_strategy="rollback"
        )
        await _until(client, tid, second["run_id"], "running", "success")
        with pytest.raises(NotFoundError):
            await client.runs.get(tid, first)
        gate.touch()
        joined = await client.http.get(f"/threads/{tid}/runs/{second['run_id']}/join")
        assert "__error__" not in joined, joined
        assert (await client.runs.get(tid, second["run_id"]))["status"] == "success"
        state: Any = await client.threads.get_state(tid)
        assert state["values"]["answer"] == "second"
        assert state["values"]["done"] is True
