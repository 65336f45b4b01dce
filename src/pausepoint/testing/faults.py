"""``FaultySaver``: a saver wrapper that fails on purpose, for failure-path tests.

Example:
    >>> saver = FaultySaver(SqliteSaver(conn), fail_on="put_writes", after=2)
    >>> # the first two put_writes/aput_writes calls work; the third raises InjectedFault
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence

from pausepoint.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointRef,
    CheckpointTuple,
    Lease,
    LeaseClaim,
    Version,
    guard_kwargs,
)
from pausepoint.config import RunnableConfig
from pausepoint.drivers.owners import claim_kwargs

__all__ = ["FaultySaver", "InjectedFault"]

METHODS = frozenset(
    {
        "get_tuple",
        "list",
        "put",
        "put_writes",
        "delete_thread",
        "acquire_lease",
        "renew_lease",
        "release_lease",
        "get_lease",
    }
)


class InjectedFault(Exception):
    """The failure a [`FaultySaver`][] raises by default."""


class FaultySaver(BaseCheckpointSaver):
    """Delegates to ``inner``, but makes chosen methods fail after some calls.

    Sync and async forms of a method share one counter: ``fail_on="put_writes"``
    counts ``put_writes`` and ``aput_writes`` calls alike.

    Args:
        inner: The saver that does the real work.
        fail_on: The method name(s) to fail: ``get_tuple``, ``list``, ``put``,
            ``put_writes``, ``delete_thread``, ``acquire_lease``, ``renew_lease``,
            ``release_lease``, ``get_lease``.
        after: How many calls succeed before the first failure.
        times: How many calls fail after that (``None``: every later call).
        exc: What to raise: a factory returning the exception, or ``None`` for
            [`InjectedFault`][].

    Attributes:
        calls: Every call made, as method names without the ``a`` prefix, in order.
        failures: How many calls were made to fail.

    Lease methods and the writes' ``lease=``/``if_head=`` go to ``inner`` too, and
    ``supports_leases`` is the inner saver's.
    """

    def __init__(
        self,
        inner: BaseCheckpointSaver,
        *,
        fail_on: str | Iterable[str] = "put_writes",
        after: int = 0,
        times: int | None = 1,
        exc: Callable[[], BaseException] | None = None,
    ) -> None:
        names = {fail_on} if isinstance(fail_on, str) else set(fail_on)
        unknown = names - METHODS
        if unknown:
            raise ValueError(
                f"FaultySaver cannot fail on {sorted(unknown)!r}: choose among {sorted(METHODS)!r}"
            )
        self.inner = inner
        self.fail_on = frozenset(names)
        self.after = after
        self.times = times
        self._exc = exc
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self.calls: list[str] = []
        self.failures = 0
        # The wrapper has its inner saver's capability (an instance attribute shadows
        # the class's): the engine then guards writes exactly as it would unwrapped.
        self.__dict__["supports_leases"] = inner.supports_leases

    def _enter(self, method: str) -> None:
        with self._lock:
            self.calls.append(method)
            if method not in self.fail_on:
                return
            n = self._counts.get(method, 0)
            self._counts[method] = n + 1
            if n < self.after or (self.times is not None and n >= self.after + self.times):
                return
            self.failures += 1
        raise (
            self._exc()
            if self._exc is not None
            else InjectedFault(f"injected failure of {method}() (call {n + 1}, after={self.after})")
        )

    def get_next_version(self, current: Version | None, channel: str | None = None) -> Version:
        """Delegate to the inner saver."""
        return self.inner.get_next_version(current, channel)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Delegate, failing if chosen."""
        self._enter("get_tuple")
        return self.inner.get_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, object] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Delegate, failing if chosen (when called, before any item)."""
        self._enter("list")
        return self.inner.list(config, filter=filter, before=before, limit=limit)

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
        """Delegate, failing if chosen (nothing is stored then)."""
        self._enter("put")
        guard = guard_kwargs(lease, False, release)
        return self.inner.put(config, checkpoint, metadata, new_versions, **guard)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, object]],
        task_id: str,
        task_path: str = "",
        *,
        lease: str | None = None,
        release: bool = False,
        if_head: bool = False,
    ) -> None:
        """Delegate, failing if chosen (nothing is stored then)."""
        self._enter("put_writes")
        guard = guard_kwargs(lease, if_head, release)
        self.inner.put_writes(config, writes, task_id, task_path, **guard)

    def delete_thread(self, thread_id: str) -> None:
        """Delegate, failing if chosen."""
        self._enter("delete_thread")
        self.inner.delete_thread(thread_id)

    def acquire_lease(
        self,
        thread_id: str,
        owner: str,
        ttl: float,
        *,
        nudge: bool = False,
        read: CheckpointRef | RunnableConfig | None = None,
    ) -> LeaseClaim:
        """Delegate (``read`` only to a saver that takes it), failing if chosen."""
        self._enter("acquire_lease")
        kw = claim_kwargs(self.inner, read)
        return self.inner.acquire_lease(thread_id, owner, ttl, nudge=nudge, **kw)

    def renew_lease(self, thread_id: str, owner: str, ttl: float | None = None) -> bool:
        """Delegate, failing if chosen (nothing changes then)."""
        self._enter("renew_lease")
        return self.inner.renew_lease(thread_id, owner, ttl)

    def release_lease(self, thread_id: str, owner: str) -> bool:
        """Delegate, failing if chosen (the lease stays then)."""
        self._enter("release_lease")
        return self.inner.release_lease(thread_id, owner)

    def get_lease(self, thread_id: str) -> Lease | None:
        """Delegate, failing if chosen."""
        self._enter("get_lease")
        return self.inner.get_lease(thread_id)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Delegate, failing if chosen."""
        self._enter("get_tuple")
        return await self.inner.aget_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, object] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Delegate, failing if chosen (before any item)."""
        self._enter("list")
        async for item in self.inner.alist(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        lease: str | None = None,
        release: bool = False,
    ) -> RunnableConfig:
        """Delegate, failing if chosen (nothing is stored then)."""
        self._enter("put")
        guard = guard_kwargs(lease, False, release)
        return await self.inner.aput(config, checkpoint, metadata, new_versions, **guard)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, object]],
        task_id: str,
        task_path: str = "",
        *,
        lease: str | None = None,
        release: bool = False,
        if_head: bool = False,
    ) -> None:
        """Delegate, failing if chosen (nothing is stored then)."""
        self._enter("put_writes")
        guard = guard_kwargs(lease, if_head, release)
        await self.inner.aput_writes(config, writes, task_id, task_path, **guard)

    async def adelete_thread(self, thread_id: str) -> None:
        """Delegate, failing if chosen."""
        self._enter("delete_thread")
        await self.inner.adelete_thread(thread_id)

    async def aacquire_lease(
        self,
        thread_id: str,
        owner: str,
        ttl: float,
        *,
        nudge: bool = False,
        read: CheckpointRef | RunnableConfig | None = None,
    ) -> LeaseClaim:
        """Delegate (``read`` only to a saver that takes it), failing if chosen."""
        self._enter("acquire_lease")
        kw = claim_kwargs(self.inner, read, "aacquire_lease")
        return await self.inner.aacquire_lease(thread_id, owner, ttl, nudge=nudge, **kw)

    async def arenew_lease(self, thread_id: str, owner: str, ttl: float | None = None) -> bool:
        """Delegate, failing if chosen (nothing changes then)."""
        self._enter("renew_lease")
        return await self.inner.arenew_lease(thread_id, owner, ttl)

    async def arelease_lease(self, thread_id: str, owner: str) -> bool:
        """Delegate, failing if chosen (the lease stays then)."""
        self._enter("release_lease")
        return await self.inner.arelease_lease(thread_id, owner)

    async def aget_lease(self, thread_id: str) -> Lease | None:
        """Delegate, failing if chosen."""
        self._enter("get_lease")
        return await self.inner.aget_lease(thread_id)
