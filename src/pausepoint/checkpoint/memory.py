"""``InMemorySaver``: the reference saver, checkpoints in plain dicts.

The saver to read when writing one. It implements the contract of
[`pausepoint.checkpoint.base`][] with ``get_tuple``, ``list``, ``delete_thread`` and
``commit``, the engine's one write; LangGraph's ``put``, ``put_writes`` and the rest
are the base class's, made of ``commit``. Like a durable saver it stores values,
metadata and writes encoded, so it refuses what SQLite would refuse (at write time,
naming where it is), and changing state objects after a step never changes history.
A commit encodes all it stores, then checks the lease and stores under one lock: all
or nothing. Everything is lost when the process exits (use
[`pausepoint.checkpoint.sqlite.SqliteSaver`][]); for many paused threads in one process,
[`CompactingMemorySaver`][pausepoint.checkpoint.compact.CompactingMemorySaver] gives the
same results (a differential test holds it to them) with less memory and time.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Mapping

from pausepoint.checkpoint._keys import ListQuery
from pausepoint.checkpoint._labels import explain_checkpoint, write_label
from pausepoint.checkpoint._leases import LocalLeases, check_head, check_release
from pausepoint.checkpoint._prune import ApplyPlan, Request
from pausepoint.checkpoint._retention import apply_to_dicts
from pausepoint.checkpoint._sealing import (
    Sealer,
    checkpoint_binding,
    metadata_binding,
    seal,
    unseal,
    write_binding,
)
from pausepoint.checkpoint.base import (
    At,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointPut,
    CheckpointRef,
    CheckpointTuple,
    PendingWrite,
    StepCommit,
    TaskWrites,
    config_keys,
    in_form,
    ref_of,
)
from pausepoint.config import RunnableConfig
from pausepoint.constants import WRITES_IDX_MAP
from pausepoint.errors import SerializationError
from pausepoint.serde import Serializer

__all__ = ["InMemorySaver", "MemorySaver"]


@dataclasses.dataclass(frozen=True, slots=True)
class _Saved:
    """One stored checkpoint: its values' encoding, the rest of it, metadata, parent, writes.

    ``checkpoint`` is the rest: ids, times and version maps, copied (its
    ``versions_seen`` entries are kept as given: read-only, by the contract).
    ``writes``: ``(task_id, idx) -> (channel, encoding)``, in insertion order. Frozen:
    a write replaces the whole record, so a reader holding one never sees it change.
    """

    checkpoint: Checkpoint
    values: bytes
    metadata: bytes
    parent_id: str | None
    writes: dict[tuple[str, int], tuple[str, bytes]]


class InMemorySaver(BaseCheckpointSaver):
    """A thread-safe saver that keeps everything in process memory.

    Args:
        serde: The serializer values are stored with (a fresh
            [`Serializer`][pausepoint.serde.Serializer] by default). Graphs compiled with
            this saver register their state schemas' types with it.
        clock: Seconds since the epoch, by which leases expire (``lease_clock``).
        encryption: Seal values, metadata and writes to their slots as the durable
            savers do (a [`pausepoint.crypto.KeyRing`][]): for tests and code shared
            with them; process memory is not "at rest" (docs/security.md).

    Leases hold within this process, all that can share it. ``list_pending`` is the
    base class's: it reads every thread's newest checkpoint.
    """

    supports_leases = True

    def __init__(
        self,
        *,
        serde: Serializer | None = None,
        clock: Callable[[], float] = time.time,
        encryption: Sealer | None = None,
    ) -> None:
        self.serde = serde if serde is not None else Serializer()
        self._sealer = encryption
        self.lease_clock = clock
        self._lock = threading.Lock()
        # The base class's lease methods use this table; sharing the saver's lock, a
        # fenced write checks the lease and writes in one step.
        self._leases = self._local_lease_table = LocalLeases(self._lock)
        # thread_id -> checkpoint_ns -> checkpoint_id -> what is stored
        self._threads: dict[str, dict[str, dict[str, _Saved]]] = {}

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
        filter: Mapping[str, object] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """See [`pausepoint.checkpoint.base`][]."""
        query = ListQuery.of(config, filter, before)
        with self._lock:
            rows = [
                (thread, ns, cid, saved)
                for thread, spaces in self._threads.items()
                if query.thread is None or thread == query.thread
                for ns, by_id in spaces.items()
                for cid, saved in by_id.items()
                if query.admits(ns, cid)
            ]
        rows.sort(key=lambda row: row[2], reverse=True)
        found = 0
        for row in rows:
            if limit is not None and found >= limit:
                return
            tup = self._tuple(*row)
            if query.matches(tup.metadata):
                found += 1
                yield tup

    def _tuple(self, thread: str, ns: str, cid: str, saved: _Saved) -> CheckpointTuple:
        loads, parent, sealer = self.serde.loads, saved.parent_id, self._sealer
        where = f"checkpoint {cid!r} of thread {thread!r}: "
        values = unseal(sealer, saved.values, checkpoint_binding(thread, ns, cid), where + "values")
        meta = unseal(sealer, saved.metadata, metadata_binding(thread, ns, cid), where + "metadata")
        return CheckpointTuple(
            config=CheckpointRef(thread, ns, cid).config(),
            checkpoint=_copy(saved.checkpoint, loads(values)),
            metadata=loads(meta),
            parent_config=CheckpointRef(thread, ns, parent).config() if parent else None,
            pending_writes=[
                PendingWrite(
                    task_id,
                    channel,
                    loads(
                        unseal(
                            sealer,
                            blob,
                            write_binding(thread, ns, cid, task_id, idx, channel),
                            f"{where}write {idx} of task {task_id!r}",
                        )
                    ),
                )
                for (task_id, idx), (channel, blob) in saved.writes.items()
            ],
        )

    def commit(self, step: StepCommit[At]) -> At:
        """Store ``first``, the writes against it (else the config's checkpoint), ``checkpoint``.

        See [`pausepoint.checkpoint.base`][]. Everything is encoded before the lock is
        taken, so a value that cannot be stored stops the commit before it stores anything.
        """
        check_release(step.lease, step.release)
        ref = ref_of(step.config)
        thread, ns, target = ref  # target: the checkpoint the writes go to
        first = None if step.first is None else self._encode(ref, step.first, target)
        if first is not None:
            target = first[0]  # the first checkpoint, stored after the config's
        if step.writes and target is None:
            raise ValueError("put_writes needs a config with a 'checkpoint_id'")
        tasks = [self._encode_writes(ref.at(target), task) for task in step.writes]
        last = None if step.checkpoint is None else self._encode(ref, step.checkpoint, target)
        with self._lock:
            if step.lease is not None:
                self._leases.fence(thread, step.lease, self.lease_clock())
            by_id = self._threads.get(thread, {}).get(ns, {})
            if step.if_head and target is not None:
                check_head(by_id, thread, ns, target)
            if first is not None:
                _put_in(by_id, *first)
            if tasks and target is not None:
                _store_writes(by_id, thread, ns, target, tasks)
            if last is not None:
                _put_in(by_id, *last)
            if by_id:  # in place already, unless this is the namespace's first checkpoint
                self._threads.setdefault(thread, {})[ns] = by_id
            if step.release:
                self._leases.drop(thread)  # fenced above: the owner's own
        stored = last or first
        return step.config if stored is None else in_form(step.config, ref.at(stored[0]))

    def _encode(
        self, ref: CheckpointRef, put: CheckpointPut, parent_id: str | None
    ) -> tuple[str, _Saved]:
        """A checkpoint's id, and the checkpoint encoded to be stored after ``parent_id``."""
        checkpoint, dumps = put.checkpoint, self.serde.dumps
        thread, ns, cid = ref.thread_id, ref.checkpoint_ns, checkpoint["id"]
        values = checkpoint["channel_values"]
        try:
            blob = dumps(values, label="checkpoint")
        except SerializationError as exc:  # name the channel value, as the SQL savers do
            raise explain_checkpoint(values, lambda v, label: dumps(v, label=label), exc) from None
        meta = dumps(put.metadata, label="metadata")
        blob = seal(self._sealer, blob, checkpoint_binding(thread, ns, cid))
        meta = seal(self._sealer, meta, metadata_binding(thread, ns, cid))
        # Entries of versions_seen are shared, not copied (see _Saved); the maps are.
        kept = _copy(checkpoint, {}, seen=dict(checkpoint["versions_seen"]))
        return cid, _Saved(kept, blob, meta, parent_id, {})

    def _encode_writes(self, at: CheckpointRef, task: TaskWrites) -> TaskWrites:
        """The task's writes, each value replaced by its encoding (sealed to its slot)."""
        encoded: list[tuple[str, bytes]] = []
        for n, (channel, value) in enumerate(task.writes):
            try:
                blob = self.serde.dumps(value, label=channel)
                if self._sealer is not None:
                    idx = WRITES_IDX_MAP.get(channel, n)
                    aad = write_binding(at[0], at[1], str(at[2]), task.task_id, idx, channel)
                    blob = seal(self._sealer, blob, aad)
                encoded.append((channel, blob))
            except SerializationError:  # again, to name the key by what the node returned
                label = write_label(channel, value, task.task_id, task.task_path)
                self.serde.dumps(value, label=label)
                raise
        return task._replace(writes=encoded)

    def delete_thread(self, thread_id: str) -> None:
        """See [`pausepoint.checkpoint.base`][]."""
        thread = str(thread_id)
        with self._lock:
            self._threads.pop(thread, None)
            self._leases.drop(thread)

    def _prune_request(self, request: Request) -> object:
        """A prune's deletions under the lock: lease and head checked, then dropped."""
        if not isinstance(request, ApplyPlan):
            return super()._prune_request(request)
        thread = request.thread_id
        with self._lock:
            leased = self._leases.held(thread, self.lease_clock())
            done = apply_to_dicts(request, self._threads.get(thread, {}), leased)
            if request.whole and done != "busy":
                self._threads.pop(thread, None)
                self._leases.drop(thread)
            return done

    async def _aprune_request(self, request: Request) -> object:
        return self._prune_request(request)


def _put_in(by_id: dict[str, _Saved], checkpoint_id: str, saved: _Saved) -> None:
    """Store a checkpoint (locked); one stored again keeps the writes made against it."""
    old = by_id.get(checkpoint_id)
    by_id[checkpoint_id] = saved if old is None else dataclasses.replace(saved, writes=old.writes)


def _store_writes(
    by_id: dict[str, _Saved], thread: str, ns: str, checkpoint_id: str, tasks: list[TaskWrites]
) -> None:
    """Keep tasks' writes (locked): ordinary ones once, special ones (idx < 0) replaced."""
    saved = by_id.get(checkpoint_id)
    if saved is None:
        raise KeyError(f"no checkpoint {checkpoint_id!r} in thread {thread!r} namespace {ns!r}")
    kept = dict(saved.writes)
    for task_id, writes, _ in tasks:
        for n, (channel, blob) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, n)
            if idx < 0 or (task_id, idx) not in kept:
                kept[task_id, idx] = (channel, blob)
    by_id[checkpoint_id] = dataclasses.replace(saved, writes=kept)


def _copy(
    checkpoint: Checkpoint,
    values: dict[str, object],
    seen: dict[str, ChannelVersions] | None = None,
) -> Checkpoint:
    """A copy of ``checkpoint`` holding ``values``: new dicts and lists all the way down.

    ``seen``: its ``versions_seen``, if not a copy of each entry (what a commit keeps).
    """
    updated = checkpoint.get("updated_channels")
    if seen is None:
        seen = {node: dict(versions) for node, versions in checkpoint["versions_seen"].items()}
    copied: Checkpoint = {
        "v": checkpoint["v"],
        "id": checkpoint["id"],
        "ts": checkpoint["ts"],
        "channel_values": values,
        "channel_versions": dict(checkpoint["channel_versions"]),
        "versions_seen": seen,
        "updated_channels": None if updated is None else list(updated),
    }
    if "graph" in checkpoint:  # the graph's stamp (docs/deploys.md): read-only, shared
        copied["graph"] = checkpoint["graph"]
    return copied


MemorySaver = InMemorySaver
"""LangGraph's older name for `InMemorySaver`."""
