"""A serving process without HTTP, for the crash tests: ``RunService`` with one worker.

    python -m tests.server.crash_server DB_URL READY_FILE

Opens the service on ``DB_URL`` serving `tests.server.run_graphs`, starts its worker
(requeueing what a killed predecessor left running), creates ``READY_FILE``, and
serves until it is killed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.server.run_graphs import GRAPHS

from pausepoint.server.service import RunService


async def main(db_url: str, ready: str) -> None:
    service = await RunService.open(db_url, GRAPHS, workers=1, poll_seconds=0.02)
    await service.start()
    Path(ready).touch()
    await asyncio.Event().wait()  # until SIGKILL (or SIGTERM)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
