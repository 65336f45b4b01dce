"""``prune``, ``copy_thread`` and their async forms, for every saver (a mixin).

[`BaseCheckpointSaver`][pausepoint.checkpoint.base.BaseCheckpointSaver] inherits
`Retention`. The prune itself is one flow (``_prune``); this drives it, sync or
async, answering its requests with three hooks a saver may override:
``_prune_request`` (sync) and ``_aprune_request`` (async), each given a
`ListThreads`, `ReadThread` or `ApplyPlan` request.

The defaults work for any saver from its public methods: threads are found with
``list``, a thread is read with ``list``, ``get_tuple`` and ``get_lease``, and a
thread whose time is up is removed with ``delete_thread`` (after checking, not
atomically, that its lease is free and its head unchanged). Dropping *some* of a
thread's checkpoints needs a way to delete one checkpoint, which the saver protocol
does not have: the default raises ``NotImplementedError`` naming the hook to
implement (``_prune_request`` for `ApplyPlan`). pausepoint's savers implement them
all, atomically (the SQL ones in ``_sql_prune``).
"""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from pausepoint.checkpoint._prune import (
    Applied,
    ApplyPlan,
    ListThreads,
    PruneFlow,
    PrunePolicy,
    PruneReport,
    ReadThread,
    Request,
    StoredRow,
    ThreadInventory,
    prune_flow,
)
from pausepoint.errors import CheckpointDecodeError

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, PendingWrite
    from pausepoint.config import RunnableConfig

__all__ = ["Retention", "apply_to_dicts", "copy_steps", "inventory_of"]

REPORTED = (CheckpointDecodeError,)
"""Errors of one thread's rows that a prune reports and goes on past (a corrupt row)."""


class Retention:
    """``prune``/``aprune`` and ``copy_thread``/``acopy_thread`` (see the module docstring)."""

    def prune(
        self,
        thread_ids: Sequence[str] | None = None,
        *,
        strategy: str | None = None,
        keep_last: int | None = None,
        older_than: datetime.datetime | datetime.timedelta | None = None,
        include_waiting: bool = False,
        dry_run: bool = False,
        batch_size: int = 500,
        now: datetime.datetime | None = None,
    ) -> PruneReport:
        """Drop old checkpoints, and threads idle too long; never a waiting question.

        See docs/persistence.md, "Storage and retention". A thread whose head has a
        question waiting (or answered, its run not finished) is left alone unless
        ``include_waiting``; one whose lease is held always is. A truncated thread
        keeps its head checkpoint and the head's pending writes.

        Args:
            thread_ids: The threads to prune; None: every thread.
            strategy: LangGraph's form: ``"keep_latest"`` (``keep_last=1``) or
                ``"delete"`` (delete the named threads whole).
            keep_last: Keep each thread's newest N root checkpoints (at least these).
            older_than: Drop checkpoints made before this time (a timedelta: before
                ``now`` minus it); a thread with nothing newer (idle since) is
                deleted whole, unless ``keep_last`` keeps some of it.
            include_waiting: Prune threads with a waiting or answered question too.
            dry_run: Delete nothing; the report says what would go.
            batch_size: At most this many checkpoints deleted per transaction (and
                threads listed per read).
            now: The time ``older_than`` counts back from (default: now, UTC).

        Returns:
            What was deleted, thread by thread; a thread whose rows cannot be read
            is reported in it (``PruneReport.errors``), and the others are pruned.

        Raises:
            ValueError: An argument is malformed (nothing is read).
            NotImplementedError: The saver cannot delete single checkpoints.
        """
        policy = PrunePolicy.of(
            strategy=strategy, keep_last=keep_last, older_than=older_than,
            include_waiting=include_waiting, dry_run=dry_run, batch_size=batch_size,
            now=now, thread_ids=thread_ids,
        )  # fmt: skip
        return drive(prune_flow(policy, thread_ids), self._prune_request)

    async def aprune(
        self,
        thread_ids: Sequence[str] | None = None,
        *,
        strategy: str | None = None,
        keep_last: int | None = None,
        older_than: datetime.datetime | datetime.timedelta | None = None,
        include_waiting: bool = False,
        dry_run: bool = False,
        batch_size: int = 500,
        now: datetime.datetime | None = None,
    ) -> PruneReport:
        """Async [`prune`][]."""
        policy = PrunePolicy.of(
            strategy=strategy, keep_last=keep_last, older_than=older_than,
            include_waiting=include_waiting, dry_run=dry_run, batch_size=batch_size,
            now=now, thread_ids=thread_ids,
        )  # fmt: skip
        return await adrive(prune_flow(policy, thread_ids), self._aprune_request)

    def _prune_request(self, request: Request) -> object:
        """Answer one request of the prune flow (default: from the public methods)."""
        saver = _saver(self)
        match request:
            case ListThreads(after, limit):
                return _page(_thread_ids(saver.list(None)), after, limit)
            case ReadThread(thread):
                tuples = list(saver.list(_config(thread)))
                return inventory_of(thread, tuples, _head(tuples), saver.get_lease(thread))
            case ApplyPlan():
                if not request.whole:
                    return _part(request, saver)
                current = saver.get_tuple(_config(request.thread_id))
                if saver.get_lease(request.thread_id) is not None or _moved(request, current):
                    return "busy"
                saver.delete_thread(request.thread_id)
                return Applied(0, 0)

    async def _aprune_request(self, request: Request) -> object:
        """Async `_prune_request` (default: from the public async methods)."""
        saver = _saver(self)
        match request:
            case ListThreads(after, limit):
                return _page(_thread_ids([t async for t in saver.alist(None)]), after, limit)
            case ReadThread(thread):
                tuples = [t async for t in saver.alist(_config(thread))]
                lease = await saver.aget_lease(thread)
                return inventory_of(thread, tuples, _head(tuples), lease)
            case ApplyPlan():
                if not request.whole:
                    return _part(request, saver)
                current = await saver.aget_tuple(_config(request.thread_id))
                lease = await saver.aget_lease(request.thread_id)
                if lease is not None or _moved(request, current):
                    return "busy"
                await saver.adelete_thread(request.thread_id)
                return Applied(0, 0)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of a thread to a new thread (LangGraph's name).

        The target then has the source's history, head and waiting questions (its
        own: answering one in either thread leaves the other waiting).

        Raises:
            ValueError: The target thread already has checkpoints (nothing is copied).
        """
        saver = _saver(self)
        target = str(target_thread_id)
        if next(iter(saver.list(_config(target), limit=1)), None) is not None:
            raise _target_exists(target)
        for config, tup, tasks in copy_steps(saver.list(_config(source_thread_id)), target):
            saved = saver.put(config, tup.checkpoint, tup.metadata, {})
            for task_id, writes in tasks:
                saver.put_writes(saved, writes, task_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async [`copy_thread`][]."""
        saver = _saver(self)
        target = str(target_thread_id)
        if [t async for t in saver.alist(_config(target), limit=1)]:
            raise _target_exists(target)
        source = [t async for t in saver.alist(_config(source_thread_id))]
        for config, tup, tasks in copy_steps(source, target):
            saved = await saver.aput(config, tup.checkpoint, tup.metadata, {})
            for task_id, writes in tasks:
                await saver.aput_writes(saved, writes, task_id)


def drive(flow: PruneFlow, call: Callable[[Request], object]) -> PruneReport:
    """Run the prune flow with blocking calls; a thread's read error goes back into it."""
    try:
        request = next(flow)
        while True:
            try:
                reply = call(request)
            except REPORTED as exc:
                reply = exc
            request = flow.send(reply)
    except StopIteration as stop:
        report: PruneReport = stop.value
        return report
    finally:
        flow.close()


async def adrive(flow: PruneFlow, call: Callable[[Request], Awaitable[object]]) -> PruneReport:
    """Run the prune flow with awaitable calls (see `drive`)."""
    try:
        request = next(flow)
        while True:
            try:
                reply = await call(request)
            except REPORTED as exc:
                reply = exc
            request = flow.send(reply)
    except StopIteration as stop:
        report: PruneReport = stop.value
        return report
    finally:
        flow.close()


def _saver(obj: object) -> BaseCheckpointSaver:
    return cast("BaseCheckpointSaver", obj)


def _config(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": str(thread)}}


def _conf(tup: CheckpointTuple) -> dict[str, Any]:
    return dict(tup.config.get("configurable") or {})


def _thread_ids(tuples: Iterable[CheckpointTuple]) -> list[str]:
    return sorted({str(_conf(t).get("thread_id")) for t in tuples})


def _page(threads: list[str], after: str, limit: int) -> list[str]:
    return [t for t in threads if t > after][:limit]


def _head(tuples: Sequence[CheckpointTuple]) -> CheckpointTuple | None:
    root = [t for t in tuples if not _conf(t).get("checkpoint_ns")]
    return max(root, key=lambda t: str(_conf(t).get("checkpoint_id")), default=None)


def _moved(plan: ApplyPlan, current: CheckpointTuple | None) -> bool:
    """Whether the thread's head changed since the plan was made."""
    if current is None:
        return plan.head_id != ""
    writes = len(current.pending_writes or ())
    return current.checkpoint["id"] != plan.head_id or writes != plan.head_writes


def inventory_of(
    thread: str, tuples: Iterable[CheckpointTuple], head: CheckpointTuple | None, lease: object
) -> ThreadInventory | None:
    """A thread's inventory from its decoded checkpoints (sizes unknown)."""
    rows = [
        StoredRow(
            ns=str(_conf(t).get("checkpoint_ns") or ""),
            checkpoint_id=str(_conf(t).get("checkpoint_id")),
            parent_id=_parent_id(t),
            source=str(t.metadata.get("source", "")),
            writes=len(t.pending_writes or ()),
            size=None,
        )
        for t in tuples
    ]
    if not rows:
        return None
    return ThreadInventory(str(thread), rows, head, lease is not None)


def _parent_id(tup: CheckpointTuple) -> str | None:
    if tup.parent_config is None:
        return None
    found = (tup.parent_config.get("configurable") or {}).get("checkpoint_id")
    return None if found is None else str(found)


CopyStep = tuple["RunnableConfig", "CheckpointTuple", list[tuple[str, list[tuple[str, Any]]]]]


def copy_steps(tuples: Iterable[CheckpointTuple], target: str) -> list[CopyStep]:
    """What copying a thread stores, checkpoint by checkpoint, oldest first.

    Each: the ``put`` config (its parent, in ``target``), the checkpoint, and its
    writes grouped by task.
    """
    steps: list[CopyStep] = []
    for tup in sorted(tuples, key=lambda t: str(_conf(t).get("checkpoint_id"))):
        conf: dict[str, Any] = {
            "thread_id": target,
            "checkpoint_ns": _conf(tup).get("checkpoint_ns", ""),
        }
        if (parent := _parent_id(tup)) is not None:
            conf["checkpoint_id"] = parent
        steps.append(({"configurable": conf}, tup, _by_task(tup.pending_writes or ())))  # pyright: ignore[reportArgumentType]
    return steps


def _by_task(writes: Iterable[PendingWrite]) -> list[tuple[str, list[tuple[str, Any]]]]:
    return [
        (task_id, [(w.channel, w.value) for w in group])
        for task_id, group in itertools.groupby(writes, key=lambda w: w.task_id)
    ]


def apply_to_dicts(plan: ApplyPlan, spaces: dict[str, dict[str, Any]], leased: bool) -> object:
    """An in-memory saver's `ApplyPlan` (locked): its checkpoints dropped, or "busy".

    ``spaces``: namespace -> checkpoint id -> a record with ``writes``. A ``whole``
    plan changes nothing here: the caller then forgets the thread.
    """
    root = spaces.get("", {})
    head = max(root, default="")
    writes = len(getattr(root.get(head), "writes", None) or ()) if head else 0
    if leased or head != plan.head_id or writes != plan.head_writes:
        return "busy"
    gone = [spaces[ns].pop(cid) for ns, cid in plan.drop if cid in spaces.get(ns, {})]
    for ns in [ns for ns, by_id in spaces.items() if ns and not by_id]:
        del spaces[ns]
    return Applied(len(gone), sum(len(getattr(r, "writes", None) or ()) for r in gone))


def _part(plan: ApplyPlan, saver: BaseCheckpointSaver) -> Applied:
    """A part of a plan, for a saver that deletes only whole threads.

    The first parts of a thread deleted whole are left to the last (``delete_thread``);
    other parts it cannot do.
    """
    if plan.deleting:
        return Applied(0, 0)
    raise _cannot_truncate(saver)


def _cannot_truncate(saver: BaseCheckpointSaver) -> NotImplementedError:
    return NotImplementedError(
        f"{type(saver).__name__} cannot drop single checkpoints: prune(keep_last=/"
        "older_than=) needs it to implement _prune_request(ApplyPlan) (delete the plan's "
        "checkpoints and their writes, in one transaction, if the thread's lease is free "
        "and its head unchanged; see pausepoint.checkpoint._retention); "
        "prune(strategy='delete') works with delete_thread alone"
    )


def _target_exists(target: str) -> ValueError:
    return ValueError(
        f"copy_thread: the target thread {target!r} already has checkpoints; "
        "delete it first or copy to a new thread id"
    )
