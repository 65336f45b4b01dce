"""``InMemorySaver``: checkpoints in a dict, for tests and short-lived processes.

Everything is lost when the process exits; use
:class:`pausepoint.checkpoint.sqlite.SqliteSaver` for pauses that must survive.
Values are stored encoded by the same serializer the durable savers use, so a
value that SQLite or PostgreSQL would refuse is refused here too (at write time,
naming where it is), and mutating state objects after a step never changes
history. Immutable values (str, int, float, bool, None, and interrupts holding
them) are kept as they are: they always encode, and need no copy.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast

from pausepoint.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    config_keys,
)
from pausepoint.config import RunnableConfig
from pausepoint.constants import WRITES_IDX_MAP
from pausepoint.serde import Serializer
from pausepoint.types import Interrupt

__all__ = ["InMemorySaver", "MemorySaver"]


class _Stored:
    """One stored checkpoint, as flat slots (no dict per checkpoint: ~300 B less each).

    The id is its key in the namespace's dict. The version maps are copies of the
    outer dicts; the ``versions_seen`` entries are shared (read-only by the saver
    contract, :mod:`pausepoint.checkpoint.base`).
    """

    __slots__ = (
        "metadata",
        "parent_id",
        "seen",
        "ts",
        "updated",
        "v",
        "values",
        "versions",
        "writes",
    )

    def __init__(
        self,
        checkpoint: Checkpoint,
        values: dict[str, Any],
        metadata: bytes,
        parent_id: str | None,
    ) -> None:
        self.v = checkpoint["v"]
        self.ts = checkpoint["ts"]
        self.versions = dict(checkpoint["channel_versions"])
        self.seen = dict(checkpoint["versions_seen"])
        updated = checkpoint.get("updated_channels")
        self.updated = None if updated is None else tuple(updated)
        self.values = values  # an encoding (bytes), or the value itself if immutable
        self.metadata = metadata
        self.parent_id = parent_id
        # (task_id, idx) -> (channel, kept value); dict order is insertion order.
        self.writes: dict[tuple[str, int], tuple[str, Any]] = {}

    def checkpoint(self, cid: str, values: dict[str, Any]) -> Checkpoint:
        """A new checkpoint dict for a reader: every part of it may be changed freely."""
        return {
            "v": self.v,
            "id": cid,
            "ts": self.ts,
            "channel_values": values,
            "channel_versions": dict(self.versions),
            "versions_seen": {k: dict(v) for k, v in self.seen.items()},
            "updated_channels": None if self.updated is None else list(self.updated),
        }


class InMemorySaver(BaseCheckpointSaver):
    """A thread-safe saver that keeps everything in process memory.

    Args:
        serde: The serializer values are stored with (a fresh
            :class:`~pausepoint.serde.Serializer` by default). Graphs compiled with
            this saver register their state schemas' types with it.
    """

    def __init__(self, *, serde: Serializer | None = None) -> None:
        self.serde = serde if serde is not None else Serializer()
        self._lock = threading.Lock()
        # thread_id -> checkpoint_ns -> checkpoint_id -> stored
        self._threads: dict[str, dict[str, dict[str, _Stored]]] = {}
        # thread_id -> (checkpoint_ns, channel) -> (value object, its encoding): a value
        # that a step did not change is the same object, so it is encoded once.
        # Holding the object keeps its identity from being reused; per-thread maps
        # let delete_thread drop a thread's entries without scanning the others.
        self._encoded: dict[str, dict[tuple[str, str], tuple[Any, bytes]]] = {}
        # Immutable values (see _is_frozen) skip both: they are kept as they are.

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """See :mod:`pausepoint.checkpoint.base`."""
        thread, ns, checkpoint_id = config_keys(config)
        with self._lock:
            by_id = self._threads.get(thread, {}).get(ns)
            if not by_id:
                return None
            if checkpoint_id is None:
                checkpoint_id = max(by_id)
            stored = by_id.get(checkpoint_id)
            if stored is None:
                return None
            return self._tuple(thread, ns, checkpoint_id, stored)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """See :mod:`pausepoint.checkpoint.base`."""
        with self._lock:
            rows = self._select(config, filter, before)
        for n, row in enumerate(rows):
            if limit is not None and n >= limit:
                return
            yield row

    def _select(
        self,
        config: RunnableConfig | None,
        filter: Mapping[str, Any] | None,
        before: RunnableConfig | None,
    ) -> list[CheckpointTuple]:
        conf = (config or {}).get("configurable") or {}
        threads = [str(conf["thread_id"])] if conf.get("thread_id") is not None else None
        ns_wanted = conf.get("checkpoint_ns")
        id_wanted = conf.get("checkpoint_id")
        before_id = ((before or {}).get("configurable") or {}).get("checkpoint_id")
        out: list[CheckpointTuple] = []
        for thread in threads if threads is not None else list(self._threads):
            for ns, by_id in self._threads.get(thread, {}).items():
                if ns_wanted is not None and ns != ns_wanted:
                    continue
                for cid in sorted(by_id, reverse=True):
                    if id_wanted is not None and cid != id_wanted:
                        continue
                    if before_id is not None and cid >= before_id:
                        continue
                    stored = by_id[cid]
                    if filter and not _matches(self.serde.loads(stored.metadata), filter):
                        continue
                    out.append(self._tuple(thread, ns, cid, stored))
        out.sort(key=lambda t: t.checkpoint["id"], reverse=True)
        return out

    def _tuple(self, thread: str, ns: str, cid: str, stored: _Stored) -> CheckpointTuple:
        parent = (
            {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": pid}}
            if (pid := stored.parent_id)
            else None
        )
        thaw = self._thaw
        new = _new_write
        writes: list[PendingWrite] = [
            new(PendingWrite, (task_id, channel, thaw(value) if type(value) in _THAWED else value))
            for (task_id, _idx), (channel, value) in stored.writes.items()
        ]
        return CheckpointTuple(
            config={
                "configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": cid}
            },
            checkpoint=stored.checkpoint(cid, {k: thaw(v) for k, v in stored.values.items()}),
            metadata=self.serde.loads(stored.metadata),
            parent_config=parent,  # type: ignore[arg-type]
            pending_writes=writes,
        )

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """See :mod:`pausepoint.checkpoint.base`."""
        thread, ns, parent_id = config_keys(config)
        dumps = self.serde.dumps
        values = {
            chan: self._encode(thread, ns, chan, value)
            for chan, value in checkpoint["channel_values"].items()
        }
        stored = _Stored(checkpoint, values, dumps(metadata, label="metadata"), parent_id)
        with self._lock:
            self._threads.setdefault(thread, {}).setdefault(ns, {})[checkpoint["id"]] = stored
        return {
            "configurable": {
                "thread_id": thread,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def _encode(self, thread: str, ns: str, chan: str, value: Any) -> Any:
        if _is_frozen(value):
            return value
        key = (ns, chan)
        cache = self._encoded.setdefault(thread, {})
        known = cache.get(key)
        if known is not None and known[0] is value:
            return known[1]
        blob = self.serde.dumps(value, label=f"channel {chan!r}")
        cache[key] = (value, blob)
        return blob

    def _freeze(self, channel: str, value: Any) -> Any:
        """What a write keeps: the value itself if immutable, else its encoding."""
        if _is_frozen(value):
            return value
        if type(value) is tuple and value and all(_is_frozen_interrupt(i) for i in value):  # pyright: ignore[reportUnknownVariableType]
            found: tuple[Interrupt, ...] = value  # pyright: ignore[reportUnknownVariableType]
            return _Interrupts((i.value, i.id) for i in found)
        return self.serde.dumps(value, label=f"write to {channel!r}")

    def _thaw(self, kept: Any) -> Any:
        """The value a kept form stands for (a new object wherever it could be changed)."""
        kind: type[Any] = type(kept)  # pyright: ignore[reportUnknownVariableType]
        if kind is bytes:
            return self.serde.loads(kept)
        if kind is _Interrupts:
            return tuple(Interrupt(value, iid) for value, iid in kept)
        return kept

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """See :mod:`pausepoint.checkpoint.base`."""
        thread, ns, checkpoint_id = config_keys(config)
        if checkpoint_id is None:
            raise ValueError("put_writes needs a config with a 'checkpoint_id'")
        freeze = self._freeze
        copied = [(channel, freeze(channel, value)) for channel, value in writes]
        with self._lock:
            stored = self._threads.get(thread, {}).get(ns, {}).get(checkpoint_id)
            if stored is None:
                raise KeyError(
                    f"no checkpoint {checkpoint_id!r} in thread {thread!r} namespace {ns!r}"
                )
            for n, (channel, value) in enumerate(copied):
                idx = WRITES_IDX_MAP.get(channel, n)
                key = (task_id, idx)
                if idx >= 0 and key in stored.writes:
                    continue
                stored.writes[key] = (channel, value)

    def delete_thread(self, thread_id: str) -> None:
        """See :mod:`pausepoint.checkpoint.base`."""
        thread = str(thread_id)
        with self._lock:
            self._threads.pop(thread, None)
            self._encoded.pop(thread, None)


# PendingWrite's own __new__ is a Python-level function; tuple's is not (a checkpoint
# read makes one per pending write).
_new_write = cast(
    "Callable[[type[PendingWrite], tuple[str, str, Any]], PendingWrite]",
    tuple.__new__,  # pyright: ignore[reportUnknownMemberType]
)

_FROZEN = frozenset({str, int, float, bool, type(None)})


def _is_frozen(value: Any) -> bool:
    """Immutable, so kept as it is: no copy needed, and nothing to decode on reads.

    Checked before encoding: a counter, a name or an edge trigger's ``None`` is
    stored and read back without the serializer (they can always be encoded), which
    is most values and writes of a typical step, and smaller than their encoding.
    Bytes are not in the list: a kept ``bytes`` is an encoding.
    """
    return type(value) in _FROZEN


def _is_frozen_interrupt(value: Any) -> bool:
    return type(value) is Interrupt and type(value.id) is str and _is_frozen(value.value)


class _Interrupts(tuple[tuple[Any, str], ...]):
    """A kept ``INTERRUPT`` write whose values are immutable: ``(value, id)`` pairs.

    Read back as new :class:`Interrupt` objects (they are mutable), with no decoding.
    """

    __slots__ = ()


_THAWED = frozenset({bytes, _Interrupts})
"""Kept forms that stand for something else (see ``InMemorySaver._thaw``)."""


def _matches(metadata: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return all(metadata.get(k) == v for k, v in wanted.items())


MemorySaver = InMemorySaver
"""LangGraph's older name for :class:`InMemorySaver`."""
