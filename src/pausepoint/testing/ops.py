"""One async-looking interface over a saver's sync *or* async methods.

The conformance suite is written once against `SaverOps`; it runs once
through `SyncOps` (the plain methods, concurrency on OS threads) and once
through `AsyncOps` (the ``a``-methods, concurrency on the event loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from pausepoint.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointPut,
    CheckpointRef,
    CheckpointTuple,
    Lease,
    LeaseClaim,
    StepCommit,
    TaskWrites,
    guard_kwargs,
)
from pausepoint.config import RunnableConfig

__all__ = ["AsyncOps", "Job", "SaverOps", "SyncOps"]

Job = Callable[[], Awaitable[None]]


class SaverOps:
    """The saver calls the suite makes; see the subclasses."""

    def __init__(self, saver: BaseCheckpointSaver) -> None:
        self.saver = saver

    async def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        *,
        lease: str | None = None,
        release: bool = False,
    ) -> RunnableConfig:
        """Store a checkpoint."""
        raise NotImplementedError

    async def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, object]],
        task_id: str,
        *,
        lease: str | None = None,
        release: bool = False,
        if_head: bool = False,
    ) -> None:
        """Store a task's writes."""
        raise NotImplementedError

    async def put_after_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[TaskWrites],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        *,
        lease: str | None = None,
        release: bool = False,
    ) -> RunnableConfig:
        """Store tasks' writes, then a checkpoint after the config's."""
        raise NotImplementedError

    async def put_pair(
        self,
        config: RunnableConfig,
        first: CheckpointPut,
        writes: Sequence[TaskWrites],
        second: CheckpointPut,
        *,
        lease: str | None = None,
    ) -> RunnableConfig:
        """Store a checkpoint, then tasks' writes and a checkpoint after it."""
        raise NotImplementedError

    async def commit(self, step: StepCommit) -> RunnableConfig:
        """Store a `StepCommit` (the engine's one write)."""
        raise NotImplementedError

    lease_method: str = "acquire_lease"
    """The saver method ``acquire_lease`` calls."""

    async def acquire_lease(
        self,
        thread_id: str,
        owner: str,
        ttl: float,
        *,
        nudge: bool = False,
        read: CheckpointRef | RunnableConfig | None = None,
    ) -> LeaseClaim:
        """Take or renew a thread's lease (``read``: and read the thread)."""
        raise NotImplementedError

    async def renew_lease(self, thread_id: str, owner: str, ttl: float | None = None) -> bool:
        """Extend a lease."""
        raise NotImplementedError

    async def release_lease(self, thread_id: str, owner: str) -> bool:
        """Give a lease up."""
        raise NotImplementedError

    async def get_lease(self, thread_id: str) -> Lease | None:
        """The thread's live lease."""
        raise NotImplementedError

    async def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Load a checkpoint tuple."""
        raise NotImplementedError

    async def get(self, config: RunnableConfig) -> Checkpoint | None:
        """Load a checkpoint."""
        raise NotImplementedError

    async def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, object] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> list[CheckpointTuple]:
        """List checkpoints, newest first, as a list."""
        raise NotImplementedError

    async def delete_thread(self, thread_id: str) -> None:
        """Delete a thread."""
        raise NotImplementedError

    async def concurrently(self, jobs: Sequence[Job]) -> None:
        """Run ``jobs`` at the same time and wait for all of them."""
        raise NotImplementedError


class SyncOps(SaverOps):
    """Calls the saver's sync methods; runs concurrent jobs on OS threads."""

    async def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        *,
        lease: str | None = None,
        release: bool = False,
    ) -> RunnableConfig:
        """Call ``put``."""
        return self.saver.put(
            config, checkpoint, metadata, {}, **guard_kwargs(lease, False, release)
        )

    async def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, object]],
        task_id: str,
        *,
        lease: str | None = None,
        release: bool = False,
        if_head: bool = False,
    ) -> None:
        """Call ``put_writes``."""
        self.saver.put_writes(config, writes, task_id, **guard_kwargs(lease, if_head, release))

    async def put_after_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[TaskWrites],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        *,
        lease: str | None = None,
        release: bool = False,
    ) -> RunnableConfig:
        """Call ``put_after_writes``."""
        guard = guard_kwargs(lease, False, release)
        return self.saver.put_after_writes(config, writes, checkpoint, metadata, {}, **guard)

    async def put_pair(
        self,
        config: RunnableConfig,
        first: CheckpointPut,
        writes: Sequence[TaskWrites],
        second: CheckpointPut,
        *,
        lease: str | None = None,
    ) -> RunnableConfig:
        """Call ``put_pair``."""
        return self.saver.put_pair(config, first, writes, second, **guard_kwargs(lease))

    async def commit(self, step: StepCommit) -> RunnableConfig:
        """Call ``commit``."""
        return self.saver.commit(step)

    async def acquire_lease(
        self,
        thread_id: str,
        owner: str,
        ttl: float,
        *,
        nudge: bool = False,
        read: CheckpointRef | RunnableConfig | None = None,
    ) -> LeaseClaim:
        """Call ``acquire_lease`` (with ``read=`` only when given)."""
        kw = {} if read is None else {"read": read}
        return self.saver.acquire_lease(thread_id, owner, ttl, nudge=nudge, **kw)

    async def renew_lease(self, thread_id: str, owner: str, ttl: float | None = None) -> bool:
        """Call ``renew_lease``."""
        return self.saver.renew_lease(thread_id, owner, ttl)

    async def release_lease(self, thread_id: str, owner: str) -> bool:
        """Call ``release_lease``."""
        return self.saver.release_lease(thread_id, owner)

    async def get_lease(self, thread_id: str) -> Lease | None:
        """Call ``get_lease``."""
        return self.saver.get_lease(thread_id)

    async def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Call ``get_tuple``."""
        return self.saver.get_tuple(config)

    async def get(self, config: RunnableConfig) -> Checkpoint | None:
        """Call ``get``."""
        return self.saver.get(config)

    async def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, object] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> list[CheckpointTuple]:
        """Call ``list``."""
        return list(self.saver.list(config, filter=filter, before=before, limit=limit))

    async def delete_thread(self, thread_id: str) -> None:
        """Call ``delete_thread``."""
        self.saver.delete_thread(thread_id)

    async def concurrently(self, jobs: Sequence[Job]) -> None:
        """Run each job on its own thread (each job only calls sync methods)."""

        def run(job: Job) -> None:
            asyncio.run(_as_coroutine(job))

        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            for future in [pool.submit(run, job) for job in jobs]:
                future.result()


class AsyncOps(SaverOps):
    """Awaits the saver's ``a``-methods; runs concurrent jobs as asyncio tasks."""

    lease_method = "aacquire_lease"

    async def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        *,
        lease: str | None = None,
        release: bool = False,
    ) -> RunnableConfig:
        """Await ``aput``."""
        return await self.saver.aput(
            config, checkpoint, metadata, {}, **guard_kwargs(lease, False, release)
        )

    async def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, object]],
        task_id: str,
        *,
        lease: str | None = None,
        release: bool = False,
        if_head: bool = False,
    ) -> None:
        """Await ``aput_writes``."""
        await self.saver.aput_writes(
            config, writes, task_id, **guard_kwargs(lease, if_head, release)
        )

    async def put_after_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[TaskWrites],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        *,
        lease: str | None = None,
        release: bool = False,
    ) -> RunnableConfig:
        """Await ``aput_after_writes``."""
        guard = guard_kwargs(lease, False, release)
        return await self.saver.aput_after_writes(config, writes, checkpoint, metadata, {}, **guard)

    async def put_pair(
        self,
        config: RunnableConfig,
        first: CheckpointPut,
        writes: Sequence[TaskWrites],
        second: CheckpointPut,
        *,
        lease: str | None = None,
    ) -> RunnableConfig:
        """Await ``aput_pair``."""
        return await self.saver.aput_pair(config, first, writes, second, **guard_kwargs(lease))

    async def commit(self, step: StepCommit) -> RunnableConfig:
        """Await ``acommit``."""
        return await self.saver.acommit(step)

    async def acquire_lease(
        self,
        thread_id: str,
        owner: str,
        ttl: float,
        *,
        nudge: bool = False,
        read: CheckpointRef | RunnableConfig | None = None,
    ) -> LeaseClaim:
        """Await ``aacquire_lease`` (with ``read=`` only when given)."""
        kw = {} if read is None else {"read": read}
        return await self.saver.aacquire_lease(thread_id, owner, ttl, nudge=nudge, **kw)

    async def renew_lease(self, thread_id: str, owner: str, ttl: float | None = None) -> bool:
        """Await ``arenew_lease``."""
        return await self.saver.arenew_lease(thread_id, owner, ttl)

    async def release_lease(self, thread_id: str, owner: str) -> bool:
        """Await ``arelease_lease``."""
        return await self.saver.arelease_lease(thread_id, owner)

    async def get_lease(self, thread_id: str) -> Lease | None:
        """Await ``aget_lease``."""
        return await self.saver.aget_lease(thread_id)

    async def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Await ``aget_tuple``."""
        return await self.saver.aget_tuple(config)

    async def get(self, config: RunnableConfig) -> Checkpoint | None:
        """Await ``aget``."""
        return await self.saver.aget(config)

    async def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, object] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> list[CheckpointTuple]:
        """Collect ``alist``."""
        items = self.saver.alist(config, filter=filter, before=before, limit=limit)
        return [item async for item in items]

    async def delete_thread(self, thread_id: str) -> None:
        """Await ``adelete_thread``."""
        await self.saver.adelete_thread(thread_id)

    async def concurrently(self, jobs: Sequence[Job]) -> None:
        """Run the jobs as tasks of the running loop."""
        await asyncio.gather(*(_as_coroutine(job) for job in jobs))


async def _as_coroutine(job: Job) -> None:
    await job()
