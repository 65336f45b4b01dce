"""A serving process killed with SIGKILL loses no accepted run (SQLite and PostgreSQL).

A run accepted while the only worker is busy is executed after the restart; the run
the worker was executing is requeued and completes exactly once: the node that had
finished before the kill (its checkpoint saved) is not run again, the node in flight
runs again (at least once, as any crashed step), the rest once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.server.run_graphs import GRAPHS, counted
from tests.server.service_fixtures import db_url, eventually, pg_schema, pg_url

from pausepoint.server.records import RunRequest
from pausepoint.server.service import RunService

__all__ = ["db_url", "pg_schema", "pg_url"]

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.asyncio


@contextlib.contextmanager
def serving(db: str, ready: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The crash server as a real process; killed (if alive) afterwards."""
    ready.unlink(missing_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.server.crash_server", db, str(ready)], cwd=ROOT, env=env
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


async def _ready(process: subprocess.Popen[bytes], ready: Path) -> None:
    async def up() -> bool:
        assert process.poll() is None, "the serving process exited"
        return ready.exists()

    await eventually(up)


async def test_sigkill_between_accept_and_execution_and_mid_run(
    db_url: str, tmp_path: Path
) -> None:
    ready, gate = tmp_path / "ready", tmp_path / "gate"
    count_t, count_u = tmp_path / "count-t", tmp_path / "count-u"
    client = await RunService.open(db_url, GRAPHS, workers=0)  # records only
    try:
        with serving(db_url, ready) as first:
            await _ready(first, ready)
            inp: dict[str, Any] = {"gate": str(gate), "count": str(count_t)}
            # durability "sync": step one's checkpoint is saved before step two starts
            mid = await client.create_run(
                "t", RunRequest("steps", input=inp, durability="sync", if_not_exists="create")
            )
            await eventually(lambda: _now(counted(count_t, "two") == 1))
            waiting = await client.create_run(
                "u",
                RunRequest("steps", input={"count": str(count_u)}, if_not_exists="create"),
            )
            assert (await client.get_run("u", waiting.run_id)).status == "pending"
            first.send_signal(signal.SIGKILL)
            first.wait()
        assert (await client.get_run("t", mid.run_id)).status == "running"
        assert (await client.get_run("u", waiting.run_id)).status == "pending"
        assert counted(count_u, "one") == 0
        gate.touch()
        with serving(db_url, ready) as second:
            await _ready(second, ready)
            body = await client.join_run("t", mid.run_id)
            other = await client.join_run("u", waiting.run_id)
        assert (await client.get_run("t", mid.run_id)).status == "success"
        assert (await client.get_run("u", waiting.run_id)).status == "success"
        assert body["items"] == ["one", "two", "three"]
        assert other["items"] == ["one", "two", "three"]
        assert [counted(count_t, n) for n in ("one", "two", "three")] == [1, 2, 1]
        assert [counted(count_u, n) for n in ("one", "two", "three")] == [1, 1, 1]
        assert [r.status for r in await client.list_runs("t")] == ["success"]
        assert (await client.get_thread("t")).status == "idle"
        assert (await client.get_thread("u")).status == "idle"
    finally:
        await client.close()


async def _now(value: bool) -> bool:
    await asyncio.sleep(0)
    return value
