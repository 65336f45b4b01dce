"""`SaverProtocol`: what the engine needs from a saver (re-exported by ``base``).

Kept apart from `pausepoint.checkpoint.base` so the contract fits on one page;
``BaseCheckpointSaver`` provides all of it (``commit`` made of the other writes).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pausepoint.checkpoint._commit import At, StepCommit
    from pausepoint.checkpoint.base import (
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        LeaseClaim,
    )
    from pausepoint.config import RunnableConfig

__all__ = ["SaverProtocol"]


@runtime_checkable
class SaverProtocol(Protocol):
    """What the engine needs from a saver (sync methods; async ones are ``a``-prefixed).

    The engine reads with ``get_tuple``/``list``, writes with ``commit`` only, and
    takes and lets go of thread leases; ``put``/``put_writes`` are the
    LangGraph-compatible writes that ``BaseCheckpointSaver.commit`` is made of.
    """

    @property
    def batches(self) -> bool:
        """Whether one ``commit`` costs about what one of its parts would."""
        ...

    @property
    def supports_leases(self) -> bool:
        """Whether commits honour ``lease``/``release``/``if_head`` atomically."""
        ...

    @property
    def lease_scope(self) -> str:
        """What this saver's threads live in: two savers with the same scope share them."""
        ...

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint the config names (or the newest), with pending writes."""
        ...

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Stored checkpoints, newest first."""
        ...

    def commit(self, step: StepCommit[At]) -> At:
        """Store a `StepCommit`; its last checkpoint (else its config), in its config's form."""
        ...

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint whose parent is the config's ``checkpoint_id``."""
        ...

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes against the config's checkpoint."""
        ...

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread."""
        ...

    def acquire_lease(self, thread_id: str, owner: str, ttl: float) -> LeaseClaim:
        """Take the thread's lease (see ``BaseCheckpointSaver.acquire_lease``)."""
        ...

    def release_lease(self, thread_id: str, owner: str) -> bool:
        """Give up ``owner``'s lease; whether it was nudged meanwhile."""
        ...

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async ``get_tuple``."""
        ...

    def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async ``list``."""
        ...

    async def acommit(self, step: StepCommit[At]) -> At:
        """Async ``commit``."""
        ...

    async def aacquire_lease(self, thread_id: str, owner: str, ttl: float) -> LeaseClaim:
        """Async ``acquire_lease``."""
        ...

    async def arelease_lease(self, thread_id: str, owner: str) -> bool:
        """Async ``release_lease``."""
        ...
