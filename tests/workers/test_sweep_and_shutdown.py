"""The deadline sweep as a periodic job of three workers, and a worker's graceful stop."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph_sdk import get_client
from tests.workers.cluster import TOKEN, Cluster, lines

pytestmark = pytest.mark.asyncio


def _sweeps(db: str) -> int:
    """How many sweep jobs ended."""
    with psycopg.connect(db, autocommit=True) as conn:
        done = conn.execute(
            "SELECT count(*) FROM procrastinate_jobs "
            "WHERE task_name = 'pausepoint.sweep' AND status = 'succeeded'"
        ).fetchone()
    assert done is not None
    return int(done[0])


async def _eventually(check: Any) -> None:
    async def poll() -> None:
        while not await asyncio.to_thread(check):
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), 120)  # a safeguard against a hang, not a timing


async def test_one_sweep_acts_per_question_however_many_workers(
    deployment: Cluster, tmp_path: Path
) -> None:
    c = deployment
    async with get_client(url=c.fronts[0].url, api_key=TOKEN) as client:
        tids: list[str] = []
        for i in range(4):
            tid = (await client.threads.create())["thread_id"]
            paused: Any = await client.runs.wait(
                tid, "deadline", input={"log": str(tmp_path / f"late-{i}.log")}
            )
            assert paused["__interrupt__"][0]["value"] == "late?"
            tids.append(tid)
        logs = [tmp_path / f"late-{i}.log" for i in range(4)]
        await _eventually(lambda: all(lines(p) for p in logs))
        after = _sweeps(c.db)
        await _eventually(lambda: _sweeps(c.db) >= after + 3)  # three more sweeps ran
        for log in logs:
            assert lines(log) == ["answer timed out"]  # acted once, three workers or not
        for tid in tids:
            state: Any = await client.threads.get_state(tid)
            assert state["values"]["answer"] == "timed out"
            assert state["next"] == []
            assert (await client.threads.get(tid))["status"] == "idle"  # settled after


def _holder(db: str, run_id: str) -> int:
    with psycopg.connect(db, autocommit=True) as conn:
        row = conn.execute(
            "SELECT lease_owner FROM pausepoint_server_runs WHERE run_id = %s", (run_id,)
        ).fetchone()
    assert row is not None
    assert row[0] is not None
    return int(str(row[0]).split("/")[1])


async def test_sigterm_hands_a_running_run_back_to_another_worker(
    deployment: Cluster, tmp_path: Path
) -> None:
    c = deployment
    gate, log = tmp_path / "gate", tmp_path / "work.log"
    async with get_client(url=c.fronts[1].url, api_key=TOKEN) as client:
        tid = (await client.threads.create())["thread_id"]
        run = await client.runs.create(
            tid, "gated", input={"gate": str(gate), "log": str(log), "item": "x"}
        )
        await _eventually(lambda: lines(log) == ["work x"])
        pid = _holder(c.db, run["run_id"])
        [holder] = [w for w in c.workers if w.process.pid == pid]
        holder.process.send_signal(signal.SIGTERM)  # --shutdown-seconds=0: hand it back
        assert await asyncio.to_thread(holder.process.wait, 60) == 0, holder.output()
        assert "pausepoint worker: stopped" in holder.output()
        await _eventually(lambda: lines(log) == ["work x", "work x"])  # another worker
        assert _holder(c.db, run["run_id"]) != pid
        gate.touch()
        done: Any = await asyncio.wait_for(client.runs.join(tid, run["run_id"]), 60)
        assert done["items"] == ["x"]
        assert (await client.runs.get(tid, run["run_id"]))["status"] == "success"
    c.worker()  # three again for the next tests


async def test_a_run_whose_job_was_never_deferred_is_executed(
    deployment: Cluster, tmp_path: Path
) -> None:
    """A front end that died between recording a run and deferring its job: the
    repair defers one (here: a service that records and defers nothing)."""
    from tests.workers.graphs import append

    from pausepoint.server.records import RunRequest
    from pausepoint.server.service import RunService

    log = tmp_path / "lost.log"
    recorder = await RunService.open(deployment.db, {"append": append()}, workers=0)
    try:
        run = await recorder.create_run(
            "lost-defer",
            RunRequest("append", input={"item": "x", "log": str(log)}, if_not_exists="create"),
        )
        assert run.status == "pending"

        async def ran() -> bool:
            got = await recorder.get_run("lost-defer", run.run_id)
            return got.status == "success"

        async def poll() -> None:
            while not await ran():
                await asyncio.sleep(0.05)

        await asyncio.wait_for(poll(), 120)  # a safeguard against a hang, not a timing
        assert lines(log) == ["item x"]
    finally:
        await recorder.close()


async def test_sigterm_lets_a_running_run_finish_within_shutdown_seconds(
    deployment: Cluster, tmp_path: Path
) -> None:
    """With ``--shutdown-seconds`` to spare, a stopping worker finishes its run (its
    node runs once) and takes no new one."""
    c = deployment
    for w in c.workers:  # one worker only, with a long shutdown
        if w.process.poll() is None:
            w.process.send_signal(signal.SIGTERM)
    for w in c.workers:
        await asyncio.to_thread(w.process.wait, 60)
    patient = c.worker("--shutdown-seconds=120")
    await asyncio.to_thread(c.wait_started, patient)
    gate, log = tmp_path / "gate", tmp_path / "work.log"
    async with get_client(url=c.fronts[0].url, api_key=TOKEN) as client:
        tid = (await client.threads.create())["thread_id"]
        run = await client.runs.create(
            tid, "gated", input={"gate": str(gate), "log": str(log), "item": "y"}
        )
        await _eventually(lambda: lines(log) == ["work y"])
        patient.process.send_signal(signal.SIGTERM)
        await _eventually(lambda: "pausepoint worker: stopping" in patient.output())
        later = await client.runs.create(
            tid, "gated", input={"gate": str(gate), "log": str(log), "item": "z"}
        )
        gate.touch()
        assert await asyncio.to_thread(patient.process.wait, 120) == 0, patient.output()
        assert (await client.runs.get(tid, run["run_id"]))["status"] == "success"
        assert lines(log) == ["work y"]  # finished once, and nothing new taken
        for _ in range(3):
            c.worker()
        done: Any = await asyncio.wait_for(client.runs.join(tid, later["run_id"]), 120)
        assert done["items"] == ["y", "z"]
        assert lines(log) == ["work y", "work z"]
