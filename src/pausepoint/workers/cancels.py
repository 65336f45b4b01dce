"""Cancels told at once: a LISTEN on `CANCEL_CHANNEL` stops the run this process holds.

A run cancelled by another process (``interrupt``/``rollback`` multitask strategies,
``POST .../cancel``) is marked in its record, which the executing worker reads at
its next lease renewal (a third of the lease). The record's transaction also
notifies `CANCEL_CHANNEL`; this listener hears it and cancels the run at once if a
worker of this process executes it. A lost connection is opened again; meanwhile
the renewal still finds the cancel.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from pausepoint.server.store import CANCEL_CHANNEL

assert CANCEL_CHANNEL == "pausepoint_cancel"  # LISTEN takes no parameter

if TYPE_CHECKING:
    from pausepoint.server.worker import Workers

__all__ = ["listen_for_cancels"]

_log = logging.getLogger("pausepoint.workers")


async def listen_for_cancels(
    db_url: str, workers: Workers, *, ready: asyncio.Event | None = None
) -> None:
    """Listen until cancelled; reconnect after a lost connection (a second later)."""
    import psycopg

    while True:
        try:
            async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
                await conn.execute("LISTEN pausepoint_cancel")  # CANCEL_CHANNEL
                if ready is not None:
                    ready.set()
                async for note in conn.notifies():
                    action, _, run_id = note.payload.partition(" ")
                    if action in ("interrupt", "rollback"):
                        workers.cancel(run_id, action)
        except psycopg.Error:
            _log.warning("pausepoint worker: the cancel listener lost its connection")
            await asyncio.sleep(1.0)
