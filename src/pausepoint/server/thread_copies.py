"""Copying and pruning served threads: ``POST /threads/{id}/copy`` and ``/threads/prune``.

A copy is a new thread with the source's metadata and its whole history (the saver's
``acopy_thread``): its waiting questions are its own, so answering one in either
thread leaves the other waiting. Its status is worked out from its head, never
``busy`` (no run of it exists yet).

A prune takes explicit thread ids. ``"delete"`` deletes each thread as ``DELETE
/threads/{id}`` does (its runs cancelled first); ``"keep_latest"`` drops every
checkpoint but each thread's head through the saver's ``aprune``, whose rules hold:
a thread waiting on a question is left alone, as is one whose lease is held (a run
executing it), and a truncated thread keeps its head's pending writes. Unknown ids are skipped: the
count says how many threads were pruned.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pausepoint.server.errors import NotFoundError
from pausepoint.server.records import ThreadRecord

if TYPE_CHECKING:
    from pausepoint.server.service import RunService

__all__ = ["PruneStrategy", "copy_thread", "prune_threads"]

PruneStrategy = Literal["delete", "keep_latest"]


async def copy_thread(service: RunService, thread_id: str) -> ThreadRecord:
    """A new thread (fresh uuid4 id) holding a copy of ``thread_id``'s history.

    Raises:
        NotFoundError: No such thread.
    """
    source = await service.store.thread(thread_id)
    target = str(uuid.uuid4())
    await service.saver.acopy_thread(source.thread_id, target)
    await service.store.put_thread(target, dict(source.metadata), time.time(), if_exists="raise")
    return await service.settle_thread(target)


async def prune_threads(
    service: RunService, thread_ids: Sequence[str], strategy: PruneStrategy
) -> int:
    """Prune the given threads; how many were pruned (unknown ids are not counted)."""
    known: list[str] = []
    for tid in dict.fromkeys(thread_ids):
        try:
            await service.store.thread(tid)
        except NotFoundError:
            continue
        known.append(tid)
    if strategy == "delete":
        for tid in known:
            await service.delete_thread(tid)
        return len(known)
    if not known:
        return 0
    report = await service.saver.aprune(known, strategy="keep_latest")
    return sum(1 for t in report.threads if t.action == "truncated")
