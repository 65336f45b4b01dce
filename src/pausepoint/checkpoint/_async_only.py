"""Sync methods refused by a saver that runs only on an async connection.

A graph's ``invoke``/``stream`` call a saver's sync methods; a saver built on an
async connection (``AsyncPostgresSaver``) cannot serve them, and calling the
async connection from a sync method would block its event loop. So each refuses
with a ``TypeError`` naming the async method to await and the sync saver to use.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pausepoint.checkpoint.base import (
    At,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointPut,
    CheckpointTuple,
    Lease,
    LeaseClaim,
    StepCommit,
    TaskWrites,
)
from pausepoint.config import RunnableConfig

__all__ = ["AsyncOnlySaver"]


class AsyncOnlySaver(BaseCheckpointSaver):
    """A saver whose sync methods raise ``TypeError`` (see the module docstring).

    ``sync_twin`` names the saver class to use in sync code.
    """

    sync_twin: str = "a sync saver"

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Not available: use `aget_tuple`, or the sync saver."""
        raise self._refuse("get_tuple")

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Not available: use `alist`, or the sync saver."""
        raise self._refuse("list")

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        lease: str | None = None,
        release: bool = False,
    ) -> RunnableConfig:
        """Not available: use `aput`, or the sync saver."""
        raise self._refuse("put")

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
        *,
        lease: str | None = None,
        release: bool = False,
        if_head: bool = False,
    ) -> None:
        """Not available: use `aput_writes`, or the sync saver."""
        raise self._refuse("put_writes")

    def commit(self, step: StepCommit[At]) -> At:
        """Not available: use `acommit`, or the sync saver."""
        raise self._refuse("commit")

    def put_after_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[TaskWrites],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        lease: str | None = None,
        release: bool = False,
    ) -> RunnableConfig:
        """Not available: use `aput_after_writes`, or the sync saver."""
        raise self._refuse("put_after_writes")

    def put_pair(
        self,
        config: RunnableConfig,
        first: CheckpointPut,
        writes: Sequence[TaskWrites],
        second: CheckpointPut,
        *,
        lease: str | None = None,
    ) -> RunnableConfig:
        """Not available: use `aput_pair`, or the sync saver."""
        raise self._refuse("put_pair")

    def delete_thread(self, thread_id: str) -> None:
        """Not available: use `adelete_thread`, or the sync saver."""
        raise self._refuse("delete_thread")

    def acquire_lease(
        self, thread_id: str, owner: str, ttl: float, *, nudge: bool = False
    ) -> LeaseClaim:
        """Not available: use `aacquire_lease`, or the sync saver."""
        raise self._refuse("acquire_lease")

    def renew_lease(self, thread_id: str, owner: str, ttl: float | None = None) -> bool:
        """Not available: use `arenew_lease`, or the sync saver."""
        raise self._refuse("renew_lease")

    def release_lease(self, thread_id: str, owner: str) -> bool:
        """Not available: use `arelease_lease`, or the sync saver."""
        raise self._refuse("release_lease")

    def get_lease(self, thread_id: str) -> Lease | None:
        """Not available: use `aget_lease`, or the sync saver."""
        raise self._refuse("get_lease")

    def _prune_request(self, request: object) -> object:
        """Not available: ``prune`` is ``aprune`` here."""
        raise self._refuse("prune")

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Not available: use `acopy_thread`, or the sync saver."""
        raise self._refuse("copy_thread")

    def _refuse(self, method: str) -> TypeError:
        return TypeError(
            f"{type(self).__name__}.{method}() is not available: this saver runs on an async "
            f"connection, so call 'await saver.a{method}(...)' (graph.ainvoke/astream do), or "
            f"use {self.sync_twin} for sync code (graph.invoke/stream)"
        )
