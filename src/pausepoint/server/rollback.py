"""Rolling a thread back to the checkpoint a run started from (``rollback``).

The checkpoints a run wrote are those newer than the thread's head when it started
(checkpoint ids grow with time; subgraph namespaces included). They are deleted
with their writes in one transaction by the saver's prune machinery, which refuses
while a run holds the thread's lease or if the head moved meanwhile: then it is
tried again. A run that started on an empty thread leaves no checkpoint at all.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

from pausepoint.checkpoint._pending_schema import BACKFILL_THREAD
from pausepoint.checkpoint._prune import ApplyPlan, ReadThread, ThreadInventory
from pausepoint.server.store_sql import Flow

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import BaseCheckpointSaver
    from pausepoint.server.store_records import Database

__all__ = ["drop_writes_after", "roll_back"]

_TRIES = 50


async def roll_back(saver: BaseCheckpointSaver, thread_id: str, start: str | None) -> int:
    """Delete the thread's checkpoints newer than ``start`` (all if None); how many."""
    request: Any = saver._aprune_request  # pyright: ignore[reportPrivateUsage]
    for attempt in range(_TRIES):
        inventory = cast("ThreadInventory | None", await request(ReadThread(thread_id)))
        if inventory is None or inventory.head is None:
            return 0
        drop = tuple(
            (row.ns, row.checkpoint_id)
            for row in inventory.rows
            if start is None or row.checkpoint_id > start
        )
        if not drop:
            return 0
        head_id = str(inventory.head.checkpoint["id"])
        head_writes = next(
            (r.writes for r in inventory.rows if r.ns == "" and r.checkpoint_id == head_id), 0
        )
        plan = ApplyPlan(thread_id, head_id, head_writes, drop, whole=start is None)
        if await request(plan) != "busy":
            return len(drop)
        await asyncio.sleep(0.01 * (attempt + 1))  # the cancelled run lets its lease go
    raise RuntimeError(f"thread {thread_id!r} stayed busy: its rollback was not applied")


async def drop_writes_after(db: Database, thread_id: str, seq: int) -> None:
    """Delete the thread's checkpoint writes newer than ``seq`` (the run's own).

    Then index again the questions its head waits on (the saver's index of
    waiting questions): a question the rolled-back run had moved past waits again.
    """

    def flow() -> Flow:
        yield (
            "DELETE FROM pausepoint_writes WHERE thread_id = ? AND seq > ?",
            (thread_id, seq),
        )
        # The index is the saver's to keep (schema 8): rebuilt for the thread.
        yield "DELETE FROM pausepoint_pending WHERE thread_id = ?", (thread_id,)
        yield BACKFILL_THREAD, (thread_id,)

    await db.run(flow(), write=True)
