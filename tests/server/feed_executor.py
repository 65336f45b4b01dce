"""An executing process without HTTP, for the event feed tests: it serves the HTTP
tests' graphs (`tests.server.serving.GRAPHS`) with a short lease.

    python -m tests.server.feed_executor DB_URL READY_FILE LEASE_SECONDS

Opens the service on ``DB_URL``, starts two workers (requeueing what a killed
predecessor of this host left running), creates ``READY_FILE`` and executes runs
until it is killed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.server.serving import GRAPHS

from pausepoint.cli.serve import graph_specs
from pausepoint.server.service import RunService


async def main(db_url: str, ready: str, lease: float) -> None:
    graphs = graph_specs(list(GRAPHS))
    service = await RunService.open(
        db_url, graphs, workers=2, lease_seconds=lease, poll_seconds=0.05
    )
    await service.start()
    Path(ready).touch()
    await asyncio.Event().wait()  # until SIGKILL (or SIGTERM)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
