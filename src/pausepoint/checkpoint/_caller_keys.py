"""`CallerKeys`: a saver handed the caller's own ``configurable`` keys, as LangGraph does.

LangGraph 1.1.6 passes a run's whole ``configurable`` to the saver: a saver that files
checkpoints by a key of its own (``{"thread_id": "t", "tenant": "acme"}``) finds
``tenant`` in every ``get_tuple``, ``list``, ``put`` and ``put_writes`` config. The
engine carries only where a checkpoint is (a `CheckpointRef`), so a run whose config
has such keys wraps its saver in this: each config dict the saver is handed gets the
keys back. A run without them (the usual case) uses the saver as it is, at no cost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, final, overload

from pausepoint.checkpoint._commit import At, CheckpointRef, StepCommit, ref_of
from pausepoint.checkpoint._keys import lease_scope_of, method_takes, path_kwarg

if TYPE_CHECKING:
    from pausepoint.checkpoint._protocol import SaverProtocol
    from pausepoint.checkpoint.base import (
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        LeaseClaim,
    )
    from pausepoint.config import RunnableConfig

__all__ = ["CallerKeys", "with_caller_keys"]

_ENGINE_KEYS = frozenset({"thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map"})
"""The keys the engine sets itself in the configs it hands a saver."""


def caller_keys(configurable: Mapping[str, object]) -> dict[str, object]:
    """The keys of a caller's ``configurable`` a saver is handed besides the engine's.

    Internal keys (``__``-prefixed) stay out, as do the checkpoint's coordinates,
    which the engine sets for each call.
    """
    return {
        key: value
        for key, value in configurable.items()
        if key not in _ENGINE_KEYS and not key.startswith("__")
    }


@overload
def with_caller_keys(saver: SaverProtocol, configurable: Mapping[str, object]) -> SaverProtocol: ...
@overload
def with_caller_keys(saver: None, configurable: Mapping[str, object]) -> None: ...
@overload
def with_caller_keys(
    saver: SaverProtocol | None, configurable: Mapping[str, object]
) -> SaverProtocol | None: ...
def with_caller_keys(
    saver: SaverProtocol | None, configurable: Mapping[str, object]
) -> SaverProtocol | None:
    """``saver`` as a run with ``configurable`` uses it: wrapped only if it has keys to hand."""
    if type(saver) is CallerKeys:  # a subgraph's run: its own keys replace its parent's
        saver = saver.saver
    if saver is not None:
        for key in configurable:  # a loop, not caller_keys: every run passes here
            if key not in _ENGINE_KEYS and not key.startswith("__"):
                return CallerKeys(saver, caller_keys(configurable))
    return saver


@final
class CallerKeys:
    """A saver whose config dicts carry a run's own ``configurable`` keys.

    Reads and commits are passed on with the keys added to the config (the engine's
    own keys win); a commit goes under a config dict, not a ref, and what it returns
    is turned back into the ref the engine expects. Everything else is the saver's.
    A claim's ``read=`` is passed on as a config dict with the keys, to a saver that
    takes it.
    """

    __slots__ = ("keys", "saver")

    def __init__(self, saver: SaverProtocol, keys: Mapping[str, object]) -> None:
        self.saver = saver
        self.keys = keys

    def __repr__(self) -> str:
        return f"CallerKeys({self.saver!r}, keys={sorted(self.keys)!r})"

    def _config(self, config: RunnableConfig) -> RunnableConfig:
        return {**config, "configurable": {**self.keys, **(config.get("configurable") or {})}}

    def _step(self, step: StepCommit[At]) -> StepCommit[RunnableConfig]:
        at = step.config
        config = at.config() if type(at) is CheckpointRef else at
        return StepCommit(self._config(config), *step[1:])

    def _read(self, read: CheckpointRef | None, method: str) -> dict[str, RunnableConfig]:
        """The ``read=`` to pass ``method`` of the saver: none if it takes none."""
        if read is None or not method_takes(type(self.saver), method, "read"):
            return {}
        return {"read": self._config(read.config())}

    @property
    def batches(self) -> bool:
        """The saver's own."""
        return self.saver.batches

    @property
    def supports_leases(self) -> bool:
        """The saver's own."""
        return self.saver.supports_leases

    @property
    def lease_scope(self) -> str:
        """The saver's own (its identity, for a saver that names none)."""
        return lease_scope_of(self.saver)

    @property
    def async_in_threads(self) -> bool:
        """The saver's own (its async methods are its sync ones in a worker thread)."""
        held = getattr(type(self.saver), "async_in_threads", None)
        return type(held) is property and getattr(self.saver, "async_in_threads", False) is True

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The saver's, with the caller's keys."""
        return self.saver.get_tuple(self._config(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The saver's, with the caller's keys."""
        config = None if config is None else self._config(config)
        return self.saver.list(config, filter=filter, before=before, limit=limit)

    def commit(self, step: StepCommit[At]) -> At:
        """The saver's, under a config dict with the caller's keys; in ``step``'s form."""
        return _in_form_of(step, self.saver.commit(self._step(step)))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """The saver's, with the caller's keys."""
        return self.saver.put(self._config(config), checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """The saver's, with the caller's keys."""
        path = path_kwarg(self.saver, "put_writes", task_path)
        self.saver.put_writes(self._config(config), writes, task_id, **path)

    def delete_thread(self, thread_id: str) -> None:
        """The saver's."""
        self.saver.delete_thread(thread_id)

    def acquire_lease(
        self, thread_id: str, owner: str, ttl: float, *, read: CheckpointRef | None = None
    ) -> LeaseClaim:
        """The saver's; ``read`` (with the caller's keys) if it takes the keyword."""
        return self.saver.acquire_lease(thread_id, owner, ttl, **self._read(read, "acquire_lease"))

    def release_lease(self, thread_id: str, owner: str) -> bool:
        """The saver's."""
        return self.saver.release_lease(thread_id, owner)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The saver's, with the caller's keys."""
        return await self.saver.aget_tuple(self._config(config))

    def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """The saver's, with the caller's keys."""
        config = None if config is None else self._config(config)
        return self.saver.alist(config, filter=filter, before=before, limit=limit)

    async def acommit(self, step: StepCommit[At]) -> At:
        """The saver's, under a config dict with the caller's keys; in ``step``'s form."""
        return _in_form_of(step, await self.saver.acommit(self._step(step)))

    async def aacquire_lease(
        self, thread_id: str, owner: str, ttl: float, *, read: CheckpointRef | None = None
    ) -> LeaseClaim:
        """The saver's; ``read`` (with the caller's keys) if it takes the keyword."""
        kw = self._read(read, "aacquire_lease")
        return await self.saver.aacquire_lease(thread_id, owner, ttl, **kw)

    async def arelease_lease(self, thread_id: str, owner: str) -> bool:
        """The saver's."""
        return await self.saver.arelease_lease(thread_id, owner)


def _in_form_of(step: StepCommit[At], done: RunnableConfig) -> At:
    """What the saver's commit under a dict returned, in ``step``'s form (a ref for a ref)."""
    stored: Any = ref_of(done) if type(step.config) is CheckpointRef else done
    return stored
