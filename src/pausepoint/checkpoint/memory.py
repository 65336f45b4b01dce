"""``InMemorySaver``: the reference saver, checkpoints in plain dicts.

Everything is lost when the process exits; use
[`pausepoint.checkpoint.sqlite.SqliteSaver`][] for pauses that must survive. This
is the saver to read when writing one: every contract of
[`pausepoint.checkpoint.base`][] in a few small methods. It behaves like a durable
saver: every channel value, write and metadata is stored as its encoding by the
same serializer, so a value that SQLite or PostgreSQL would refuse is refused here
too (at write time, naming where it is), each read decodes anew (a reader may change
what it gets), and mutating state objects after a step never changes history. The
versions a checkpoint holds (ints the engine keeps) are copied instead.

For many paused threads in one process, use
[`CompactingMemorySaver`][pausepoint.checkpoint.compact.CompactingMemorySaver]: the
same results (a differential test holds them to it), less memory and time per
thread.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from pausepoint.checkpoint._labels import explain_checkpoint, write_label
from pausepoint.checkpoint._leases import LocalLeases, check_head, check_release
from pausepoint.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointPut,
    CheckpointTuple,
    PendingWrite,
    TaskWrites,
    config_keys,
    guard_kwargs,
)
from pausepoint.config import RunnableConfig
from pausepoint.constants import WRITES_IDX_MAP
from pausepoint.errors import SerializationError
from pausepoint.serde import Serializer

__all__ = ["InMemorySaver", "MemorySaver"]

Writes = dict[tuple[str, int], tuple[str, bytes]]
"""A checkpoint's pending writes: (task_id, idx) -> (channel, encoding), in insertion order."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Saved:
    """One stored checkpoint: its values' encoding, the rest of it, metadata, parent, writes.

    ``checkpoint`` is the checkpoint without its values (``channel_values`` is empty):
    ids, times and versions, copied at ``put`` and again for each reader. Its
    ``versions_seen`` entries are kept as given, not copied: they are read-only once
    put (the saver contract, `pausepoint.checkpoint.base`); encoding them made every
    step cost O(nodes) in the serializer. Frozen: a write replaces the whole record
    (see ``_store_writes``), so a reader holding one never sees it change.
    """

    checkpoint: Checkpoint
    values: bytes
    metadata: bytes
    parent_id: str | None
    writes: Writes


@dataclasses.dataclass(frozen=True, slots=True)
class _Put:
    """A checkpoint encoded and ready to store (nothing is stored until all encode)."""

    thread: str
    ns: str
    checkpoint_id: str
    saved: _Saved


class InMemorySaver(BaseCheckpointSaver):
    """A thread-safe saver that keeps everything in process memory.

    Args:
        serde: The serializer values are stored with (a fresh
            [`Serializer`][pausepoint.serde.Serializer] by default). Graphs compiled with
            this saver register their state schemas' types with it.
        clock: Seconds since the epoch, by which leases expire (``lease_clock``).

    Leases hold among the threads and tasks of this process, which is all that can
    share an in-memory saver; a fenced write checks and writes under one lock.
    """

    supports_leases = True

    def __init__(
        self, *, serde: Serializer | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.serde = serde if serde is not None else Serializer()
        self.lease_clock = clock
        # Re-entrant: put_pair holds it across its parts.
        self._lock = threading.RLock()
        # BaseCheckpointSaver's lease methods use this table; sharing the saver's lock,
        # a fenced write checks the lease and writes in one step.
        self._leases = self._local_lease_table = LocalLeases(self._lock)
        # thread_id -> checkpoint_ns -> checkpoint_id -> what is stored
        self._threads: dict[str, dict[str, dict[str, _Saved]]] = {}

    # ------------------------------------------------------------------ reading

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """See [`pausepoint.checkpoint.base`][]."""
        thread, ns, checkpoint_id = config_keys(config)
        with self._lock:
            by_id = self._threads.get(thread, {}).get(ns)
            if not by_id:
                return None
            if checkpoint_id is None:
                checkpoint_id = max(by_id)
            saved = by_id.get(checkpoint_id)
        return None if saved is None else self._tuple(thread, ns, checkpoint_id, saved)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """See [`pausepoint.checkpoint.base`][]."""
        conf = (config or {}).get("configurable") or {}
        thread_wanted = conf.get("thread_id")
        ns_wanted = conf.get("checkpoint_ns")
        id_wanted = conf.get("checkpoint_id")
        before_id = ((before or {}).get("configurable") or {}).get("checkpoint_id")
        with self._lock:
            rows = [
                (thread, ns, cid, saved)
                for thread, spaces in self._threads.items()
                if thread_wanted is None or thread == str(thread_wanted)
                for ns, by_id in spaces.items()
                if ns_wanted is None or ns == ns_wanted
                for cid, saved in by_id.items()
                if (id_wanted is None or cid == id_wanted)
                and (before_id is None or cid < before_id)
            ]
        rows.sort(key=lambda row: row[2], reverse=True)
        found = 0
        for thread, ns, cid, saved in rows:
            if limit is not None and found >= limit:
                return
            metadata = self.serde.loads(saved.metadata)
            if filter and not all(metadata.get(k) == v for k, v in filter.items()):
                continue
            found += 1
            yield self._tuple(thread, ns, cid, saved)

    def _tuple(self, thread: str, ns: str, cid: str, saved: _Saved) -> CheckpointTuple:
        loads = self.serde.loads
        return CheckpointTuple(
            config=_config(thread, ns, cid),
            checkpoint=_copy(saved.checkpoint, loads(saved.values)),
            metadata=loads(saved.metadata),
            parent_config=_config(thread, ns, saved.parent_id) if saved.parent_id else None,
            pending_writes=[
                PendingWrite(task_id, channel, loads(blob))
                for (task_id, _), (channel, blob) in saved.writes.items()
            ],
        )

    def _pending_heads(self) -> Iterator[CheckpointTuple]:
        # Each thread's newest root checkpoint: every thread is read (the compacting
        # saver keeps an index of the threads that hold a question instead).
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            if (head := self.get_tuple({"configurable": {"thread_id": thread}})) is not None:
                yield head

    # ------------------------------------------------------------------ writing

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
        """See [`pausepoint.checkpoint.base`][]."""
        # Keywords only when set: a subclass's put_after_writes may predate them.
        guard = guard_kwargs(lease, release=release)
        return self.put_after_writes(config, (), checkpoint, metadata, new_versions, **guard)

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
        """See [`pausepoint.checkpoint.base`][]."""
        check_release(lease, release)
        thread, ns, checkpoint_id = config_keys(config)
        if checkpoint_id is None:
            raise ValueError("put_writes needs a config with a 'checkpoint_id'")
        encoded = self._encode_writes(TaskWrites(task_id, writes, task_path))
        with self._lock:
            self._fence(thread, lease)
            if if_head:
                check_head(self._threads.get(thread, {}).get(ns), thread, ns, checkpoint_id)
            self._store_writes(thread, ns, checkpoint_id, [encoded])
            if release:
                self._leases.drop(thread)  # fenced above: the owner's own

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
        """See [`pausepoint.checkpoint.base`][]: all encoded first, so all or nothing."""
        check_release(lease, release)
        thread, ns, parent_id = config_keys(config)
        encoded = [self._encode_writes(task) for task in writes]
        if encoded and parent_id is None:
            raise ValueError("put_writes needs a config with a 'checkpoint_id'")
        put = self._encode(config, checkpoint, metadata)
        with self._lock:
            self._fence(thread, lease)
            if parent_id is not None and encoded:
                self._store_writes(thread, ns, parent_id, encoded)
            self._store(put)
            if release:
                self._leases.drop(thread)  # fenced above: the owner's own
        return _config(thread, ns, put.checkpoint_id)

    def put_pair(
        self,
        config: RunnableConfig,
        first: CheckpointPut,
        writes: Sequence[TaskWrites],
        second: CheckpointPut,
        *,
        lease: str | None = None,
    ) -> RunnableConfig:
        """See [`pausepoint.checkpoint.base`][]: all encoded first, so all or nothing."""
        thread, ns, _ = config_keys(config)
        put_first = self._encode(config, first.checkpoint, first.metadata)
        between = _config(thread, ns, put_first.checkpoint_id)
        encoded = [self._encode_writes(task) for task in writes]
        put_second = self._encode(between, second.checkpoint, second.metadata)
        with self._lock:
            self._fence(thread, lease)
            self._store(put_first)
            if encoded:
                self._store_writes(thread, ns, put_first.checkpoint_id, encoded)
            self._store(put_second)
        return _config(thread, ns, put_second.checkpoint_id)

    def _encode(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> _Put:
        """Encode a checkpoint to be stored after the config's one (its parent)."""
        thread, ns, parent_id = config_keys(config)
        dumps = self.serde.dumps
        values = checkpoint["channel_values"]
        try:
            blob = dumps(values, label="checkpoint")
        except SerializationError as exc:  # name the channel value, as the SQL savers do
            raise explain_checkpoint(values, lambda v, label: dumps(v, label=label), exc) from None
        meta = dumps(metadata, label="metadata")
        # Entries of versions_seen are shared, not copied (see _Saved); the maps are.
        kept = _copy(checkpoint, {}, seen=dict(checkpoint["versions_seen"]))
        return _Put(thread, ns, checkpoint["id"], _Saved(kept, blob, meta, parent_id, {}))

    def _encode_writes(self, task: TaskWrites) -> tuple[str, list[tuple[int, str, bytes]]]:
        """A task's writes as ``(task_id, [(idx, channel, encoding), ...])``."""
        out: list[tuple[int, str, bytes]] = []
        for n, (channel, value) in enumerate(task.writes):
            try:
                blob = self.serde.dumps(value, label=channel)
            except SerializationError:  # again, to name the key by what the node returned
                label = write_label(channel, value, task.task_id, task.task_path)
                self.serde.dumps(value, label=label)
                raise
            out.append((WRITES_IDX_MAP.get(channel, n), channel, blob))
        return task.task_id, out

    def _store(self, put: _Put) -> None:
        """Store an encoded checkpoint (locked); one with the same id is replaced.

        The replaced one's writes stay, as a database's table of writes keeps them.
        """
        by_id = self._threads.setdefault(put.thread, {}).setdefault(put.ns, {})
        old = by_id.get(put.checkpoint_id)
        saved = put.saved
        if old is not None and old.writes:
            saved = dataclasses.replace(saved, writes=old.writes)
        by_id[put.checkpoint_id] = saved

    def _store_writes(
        self,
        thread: str,
        ns: str,
        checkpoint_id: str,
        tasks: Sequence[tuple[str, list[tuple[int, str, bytes]]]],
    ) -> None:
        """Keep tasks' writes (locked): ordinary ones once, special ones (idx < 0) replaced."""
        by_id = self._threads.get(thread, {}).get(ns, {})
        saved = by_id.get(checkpoint_id)
        if saved is None:
            raise KeyError(f"no checkpoint {checkpoint_id!r} in thread {thread!r} namespace {ns!r}")
        kept = dict(saved.writes)
        for task_id, writes in tasks:
            for idx, channel, blob in writes:
                if idx < 0 or (task_id, idx) not in kept:
                    kept[task_id, idx] = (channel, blob)
        by_id[checkpoint_id] = _Saved(
            saved.checkpoint, saved.values, saved.metadata, saved.parent_id, kept
        )

    def _fence(self, thread: str, lease: str | None) -> None:
        """Renew ``lease`` if it still holds the thread, else raise (locked)."""
        if lease is not None:
            self._leases.fence(thread, lease, self.lease_clock())

    def delete_thread(self, thread_id: str) -> None:
        """See [`pausepoint.checkpoint.base`][]."""
        thread = str(thread_id)
        with self._lock:
            self._threads.pop(thread, None)
            self._leases.drop(thread)


def _copy(
    checkpoint: Checkpoint, values: dict[str, Any], seen: dict[str, Any] | None = None
) -> Checkpoint:
    """A copy of ``checkpoint`` holding ``values``: new dicts and lists all the way down.

    ``seen``: its ``versions_seen``, if not a copy of each entry (what ``put`` keeps).
    """
    updated = checkpoint.get("updated_channels")
    if seen is None:
        seen = {node: dict(versions) for node, versions in checkpoint["versions_seen"].items()}
    return {
        "v": checkpoint["v"],
        "id": checkpoint["id"],
        "ts": checkpoint["ts"],
        "channel_values": values,
        "channel_versions": dict(checkpoint["channel_versions"]),
        "versions_seen": seen,
        "updated_channels": None if updated is None else list(updated),
    }


def _config(thread: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
    }


MemorySaver = InMemorySaver
"""LangGraph's older name for `InMemorySaver`."""
