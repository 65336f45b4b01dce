"""Closing the workers stops every worker task, even when a wake meets the cancel.

On Python 3.11 ``asyncio.wait_for`` returns the result of a wait that finished in
the same loop iteration as the cancel of the task awaiting it, dropping the cancel
(fixed in 3.12). A worker idle in such a wait, woken (a run was recorded) just as
``close`` cancels it, went on looping: ``close`` then waited for it forever, and a
``pausepoint serve`` asked to stop hung until it was killed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.server import run_graphs

from pausepoint.server.service import RunService

pytestmark = pytest.mark.asyncio


async def test_close_stops_workers_woken_as_they_are_cancelled(tmp_path: Path) -> None:
    for n in range(20):
        service = await RunService.open(
            str(tmp_path / f"s{n}.sqlite"), run_graphs.GRAPHS, workers=4, poll_seconds=30
        )
        await service.start()
        for _ in range(50):  # until every worker waits for news
            if len(service.workers._idle) == 4:  # pyright: ignore[reportPrivateUsage]
                break
            await asyncio.sleep(0.01)
        loops = list(service.workers._loops)  # pyright: ignore[reportPrivateUsage]
        service.workers.wake()  # one wait finishes in the iteration the cancels land in
        closing = asyncio.create_task(service.close())
        # A safeguard against the hang; what is asserted is that close ended.
        done, _ = await asyncio.wait({closing}, timeout=60)
        if not done:  # stop what close could not, so that the failure is not a hang
            for _ in range(100):
                for task in loops:
                    task.cancel()
                await asyncio.sleep(0.01)
            await closing
            pytest.fail(f"close() did not stop the workers (round {n})")
        assert all(task.done() for task in loops)
