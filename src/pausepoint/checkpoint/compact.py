"""``CompactingMemorySaver``: an in-memory saver for many paused threads in one process.

An opt-in alternative to [`InMemorySaver`][pausepoint.checkpoint.memory.InMemorySaver],
the small reference saver: the same contract and the same observable results (a
differential test runs the same operations on both), traded for code that is
harder to read. Use it when one process holds many threads (an approval service
with thousands of paused runs, benchmarks); tests and examples use the reference.

Values are stored encoded by the same serializer the durable savers use, so a
value that SQLite or PostgreSQL would refuse is refused here too (at write time,
naming where it is), and mutating state objects after a step never changes
history. Immutable values (str, int, float, bool, None, and interrupts holding
them) are kept as they are: they always encode, and need no copy. The checkpoints
of idle threads are compacted (parts that recur across threads are kept once), so
many paused threads cost ~3 KB each for a small graph. ``list_pending`` reads only
the threads whose head holds a question (an index kept with each write), not every
thread.

Layout of a stored checkpoint's values (``Stored.values``: the channel names, then
one kept form per channel; see `pausepoint.checkpoint._kept_values`):

- an immutable value as it is; a ``bytes`` value in a ``RawBytes``;
- otherwise an encoding (JSON bytes, or a ``Marshalled`` large plain value), made
  once per channel version: a channel no step wrote is the very kept form of the
  checkpoint before (one object for all the checkpoints that hold it), and so is a
  new version whose encoding is the same bytes;
- or a ``Grown`` link (`pausepoint.checkpoint._grown`): a reference to the kept form
  of the channel in the parent checkpoint and the bytes after the part the new
  encoding shares with it from the start. Decided by the bytes, not the reducer:
  an ``operator.add`` list or ``add_messages`` appending costs what it gained, not
  the whole list again (benchmarks/README.md: a 1,000-turn chat). A chain is cut by a
  whole copy at 1,000 links or once its gains pass twice the whole value's size, so
  any checkpoint reads back in work bounded by ~3x its value's bytes.

Everything kept is immutable and referenced, never copied: dropping a checkpoint
(``prune``, ``delete_thread``) frees what it alone held, and the links the kept
checkpoints stand on stay with them. The thread's last put (``Recent``) holds each
growing value's whole bytes, which serve reads of the head without joining a chain
and are what the next version is compared with.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast

from pausepoint.checkpoint._kept import (
    EMPTY,
    FROZEN,
    THAWED,
    Encoded,
    Meta,
    Recent,
    Stored,
    freeze,
    pack_seen,
    pack_versions,
    plain_metadata,
    thaw,
)
from pausepoint.checkpoint._kept_values import keep_values, whole_if_known
from pausepoint.checkpoint._keys import ListQuery
from pausepoint.checkpoint._leases import LocalLeases, check_head, check_release
from pausepoint.checkpoint._prune import ApplyPlan, Request
from pausepoint.checkpoint._retention import apply_to_dicts
from pausepoint.checkpoint._reuse import Found
from pausepoint.checkpoint._sealing import Sealer
from pausepoint.checkpoint.base import (
    At,
    BaseCheckpointSaver,
    ChannelVersions,
    CheckpointMetadata,
    CheckpointPut,
    CheckpointRef,
    CheckpointTuple,
    Lease,
    LeaseClaim,
    PendingWrite,
    StepCommit,
    config_keys,
    in_form,
    ref_of,
)
from pausepoint.config import RunnableConfig
from pausepoint.constants import INTERRUPT, WRITES_IDX_MAP
from pausepoint.serde import Serializer

__all__ = ["CompactingMemorySaver"]


class CompactingMemorySaver(BaseCheckpointSaver):
    """A thread-safe saver that keeps everything in process memory, compacted.

    Args:
        serde: The serializer values are stored with (a fresh
            [`Serializer`][pausepoint.serde.Serializer] by default). Graphs compiled with
            this saver register their state schemas' types with it.
        clock: Seconds since the epoch, by which leases expire (``lease_clock``).
        encryption: Accepted so that code naming a saver's ``encryption=`` runs
            with this one too, and kept as ``encryption``; nothing is sealed: this
            saver holds values decoded, in the process that holds the keys, where
            encryption at rest protects nothing (docs/security.md).

    Leases hold among the threads and tasks of this process, which is all that can
    share an in-memory saver; a fenced write checks and writes under one lock.
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
        self.encryption = encryption
        self.lease_clock = clock
        self._lock = threading.Lock()
        self._leases = LocalLeases(self._lock)
        # thread_id -> checkpoint_id -> stored, for the root namespace; and
        # thread_id -> checkpoint_ns -> checkpoint_id -> stored for subgraphs' namespaces
        # (most threads have none: one dict less each).
        self._root: dict[str, dict[str, Stored]] = {}
        self._nested: dict[str, dict[str, dict[str, Stored]]] = {}
        # thread_id -> what it put lately (see Recent), for the threads put to most
        # recently, oldest first: at most _RECENT_THREADS, so a paused thread does not
        # keep its state's objects alive for ever, and its checkpoints get compacted.
        self._recent: dict[str, Recent] = {}
        # Small immutable parts that recur across checkpoints and threads (key tuples,
        # version tuples, metadata encodings, versions_seen entries): one object for all
        # equal ones. At most _SHARED_MAX, then it starts over. Keys hold the types of
        # numbers where equal is not enough (1 == 1.0 == True).
        self._shared: dict[Any, Any] = {}
        # thread_id -> the root checkpoint holding its latest "__interrupt__" write, until
        # a newer root checkpoint comes: the threads list_pending reads (a superset of
        # those waiting; it checks each one's head), so it never scans idle threads.
        self._waiting: dict[str, str] = {}

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """See [`pausepoint.checkpoint.base`][]."""
        thread, ns, checkpoint_id = config_keys(config)
        with self._lock:
            by_id = self._by_id(thread, ns)
            if not by_id:
                return None
            if checkpoint_id is None:
                checkpoint_id = max(by_id)
            stored = by_id.get(checkpoint_id)
            if stored is None:
                return None
            return self._tuple(thread, ns, checkpoint_id, stored)

    def _by_id(self, thread: str, ns: str) -> dict[str, Stored] | None:
        if not ns:
            return self._root.get(thread)
        nested = self._nested.get(thread)
        return nested.get(ns) if nested is not None else None

    def _namespaces(self, thread: str) -> Iterator[tuple[str, dict[str, Stored]]]:
        root = self._root.get(thread)
        if root is not None:
            yield "", root
        yield from self._nested.get(thread, {}).items()

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
            rows = self._select(query)
        for n, row in enumerate(rows):
            if limit is not None and n >= limit:
                return
            yield row

    def _select(self, query: ListQuery) -> list[CheckpointTuple]:
        out: list[CheckpointTuple] = []
        threads = [query.thread] if query.thread is not None else [*self._root, *self._nested]
        for thread in dict.fromkeys(threads):
            for ns, by_id in self._namespaces(thread):
                for cid in sorted(by_id, reverse=True):
                    if not query.admits(ns, cid):
                        continue
                    stored = by_id[cid]
                    if query.filter and not query.matches(self._metadata(stored.metadata)):
                        continue
                    out.append(self._tuple(thread, ns, cid, stored))
        out.sort(key=lambda t: t.checkpoint["id"], reverse=True)
        return out

    def _tuple(self, thread: str, ns: str, cid: str, stored: Stored) -> CheckpointTuple:
        parent = (
            {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": pid}}
            if (pid := stored.parent_id)
            else None
        )
        serde = self.serde
        new = _new_write
        writes: list[PendingWrite] = (
            [
                new(
                    PendingWrite,
                    (task_id, chan, thaw(serde, value) if type(value) in THAWED else value),
                )
                for (task_id, _idx), (chan, value) in stored.writes.items()
            ]
            if stored.writes
            else []
        )
        keys, *kept = stored.values
        recent = self._recent.get(thread)
        if recent is not None and (known := recent.encoded.get(ns)):
            kept = whole_if_known(keys, kept, known)
        values = dict(
            zip(keys, [thaw(serde, v) if type(v) in THAWED else v for v in kept], strict=True)
        )
        return CheckpointTuple(
            config={
                "configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": cid}
            },
            checkpoint=stored.checkpoint(values),
            metadata=self._metadata(stored.metadata),
            parent_config=parent,  # type: ignore[arg-type]
            pending_writes=writes,
        )

    def commit(self, step: StepCommit[At]) -> At:
        """See [`pausepoint.checkpoint.base`][]: all encoded first, so all or nothing.

        A ref's keys are read as they are (a config dict's are checked into a ref),
        and the stored checkpoint's ref is made of them: no config dict a step.
        """
        at, writes, last, first, lease, release, if_head = step
        check_release(lease, release)
        ref = ref_of(at)
        thread, ns, parent_id = ref
        recent = known = head = tail = None  # recent: set whenever a checkpoint is stored
        linear = False  # known describes the parent: its values are the bases to grow from
        if first is not None or last is not None:
            recent = self._recent.get(thread) or Recent()  # left as it is if encoding fails
            known = recent.encoded.get(ns)
            linear = known is not None and recent.last.get(ns) == parent_id
        if first is not None:
            head, known = self._keep_checkpoint(
                first, known, None, None if linear else self._stored(ref)
            )
        target = parent_id if head is None else head.id  # what the writes go to
        if writes and target is None:  # before encoding, as the other savers check
            raise ValueError("put_writes needs a config with a 'checkpoint_id'")
        found: Found = {}  # a large value written and in the checkpoint is encoded once
        frozen = [
            (task.task_id, self._frozen_writes(task.writes, task.task_id, task.task_path, found))
            for task in writes
        ]
        if last is not None:
            before = None if head is not None or linear else self._stored(ref)
            tail, known = self._keep_checkpoint(last, known, found, before)
        done = tail or head
        if recent is not None and known is not None and done is not None:
            recent.encoded[ns] = known
            recent.last[ns] = done.id
        with self._lock:
            if lease is not None:
                self._leases.fence(thread, lease, self.lease_clock())
            by_id = self._by_id(thread, ns)
            if if_head and target is not None:
                check_head(by_id, thread, ns, target)
            parent = by_id.get(parent_id) if by_id and parent_id is not None else None
            if head is not None and recent is not None:
                by_id = self._put(thread, ns, by_id, head, parent, parent_id, recent)
                parent = head
            if frozen:  # one parent: found for all the writes or for none
                self._add_writes(parent, thread, ns, target, frozen)
            if tail is not None and recent is not None:
                self._put(thread, ns, by_id, tail, parent, target, recent)
            if release:
                self._leases.drop(thread)  # fenced above: the owner's own
        return at if done is None else in_form(at, ref.at(done.id))

    def _stored(self, ref: CheckpointRef) -> Stored | None:
        """The checkpoint ``ref`` names, if stored (read without the lock: one dict get).

        Only a hint for what a new checkpoint's values may share or grow from
        (`grow`): whatever it holds is immutable, and stays valid if it is dropped.
        """
        thread, ns, checkpoint_id = ref
        by_id = self._by_id(thread, ns) if checkpoint_id is not None else None
        return by_id.get(checkpoint_id) if by_id and checkpoint_id is not None else None

    def _keep_checkpoint(
        self,
        put: CheckpointPut,
        known: dict[str, Encoded] | None,
        found: Found | None,
        parent: Stored | None,
    ) -> tuple[Stored, dict[str, Encoded]]:
        """A checkpoint as it is kept, and the encodings of its values made or reused."""
        checkpoint, metadata, _ = put
        values, versions = checkpoint["channel_values"], checkpoint["channel_versions"]
        kept, encoded = keep_values(self.serde, values, versions, known, found, parent)
        updated = checkpoint.get("updated_channels")
        stored = Stored(
            checkpoint,
            (tuple(values), *kept),
            dict(versions),
            dict(checkpoint["versions_seen"]),
            None if updated is None else tuple(updated),
            plain_metadata(metadata) or self.serde.dumps(metadata, label="metadata"),
        )
        return stored, encoded

    def _put(
        self,
        thread: str,
        ns: str,
        by_id: dict[str, Stored] | None,
        stored: Stored,
        parent: Stored | None,
        parent_id: str | None,
        recent: Recent,
    ) -> dict[str, Stored]:
        """Store a checkpoint after ``parent_id`` (locked); returns the namespace's dict."""
        if by_id is None:
            if ns:
                by_id = self._nested.setdefault(thread, {})[ns] = {}
            else:
                by_id = self._root[thread] = {}
        # A parent found shares its id string (its key) with this checkpoint.
        stored.parent_id = parent.id if parent is not None else parent_id
        _put_in(by_id, stored)
        if not ns and (asked := self._waiting.get(thread)) is not None and asked < stored.id:
            del self._waiting[thread]  # a newer head: its questions no longer wait
        # Most recent thread last; the oldest leaves when full, compacted.
        recent.fresh.append(stored)
        self._recent.pop(thread, None)
        self._recent[thread] = recent
        if len(self._recent) > _RECENT_THREADS:
            self._compact(self._recent.pop(next(iter(self._recent))).fresh)
        return by_id

    def _compact(self, fresh: list[Stored]) -> None:
        """Keep the checkpoints of a thread that went idle in their small, shared form.

        A put copies the version maps as they are (one fast C call each); once the
        thread has not been put to for ``_RECENT_THREADS`` other threads' puts, its
        new checkpoints are packed: every part that recurs across checkpoints and
        threads (key tuples, small version maps, ``versions_seen`` entries,
        ``updated_channels``, metadata encodings) becomes one shared object. 1,000
        threads paused by one ``interrupt()`` and resumed: 6.7 KB each before, 3.2 KB
        after. Readers see equal content either way. Called with the lock held.
        """
        shared = self._shared
        if len(shared) > _SHARED_MAX:
            shared.clear()  # bounded, never a leak: later ones share afresh
        share = shared.setdefault
        # id of an entry -> its shared one (during this call)
        entries: dict[int, ChannelVersions] = {}
        for stored in fresh:
            names = stored.values[0]
            stored.values = (share(names, names), *stored.values[1:])
            stored.versions = pack_versions(shared, stored.versions)
            stored.seen = pack_seen(shared, stored.seen, entries)
            if stored.updated is not None:
                stored.updated = share(stored.updated, stored.updated)
            meta = stored.metadata
            if type(meta) is not bytes:  # idle: the encoding is smaller than the items
                meta = self.serde.dumps(self._metadata(meta), label="metadata")
            stored.metadata = share(meta, meta) if len(meta) <= _SHARED_BLOB else meta

    def _metadata(self, kept: Meta) -> CheckpointMetadata:
        """The metadata a kept form stands for, as a new dict."""
        if type(kept) is bytes:
            return self.serde.loads(kept)
        return {key: {} if value is EMPTY else value for key, value in kept}  # type: ignore[return-value]

    def _frozen_writes(
        self,
        writes: Sequence[tuple[str, object]],
        task_id: str,
        task_path: str,
        found: Found | None = None,
    ) -> list[tuple[str, object]]:
        serde, plain = self.serde, FROZEN
        # An immutable value (most writes: a number, a name, an edge's None) is kept
        # as it is without a call to freeze.
        return [
            (ch, v) if type(v) in plain else (ch, freeze(serde, ch, v, task_id, task_path, found))
            for ch, v in writes
        ]

    def _add_writes(
        self,
        parent: Stored | None,
        thread: str,
        ns: str,
        checkpoint_id: str | None,
        frozen: list[tuple[str, list[tuple[str, object]]]],
    ) -> None:
        """Keep tasks' frozen writes with their checkpoint (locked); a clear error if none."""
        if parent is None:
            raise KeyError(f"no checkpoint {checkpoint_id!r} in thread {thread!r} namespace {ns!r}")
        if parent.writes is None:
            parent.writes = {}
        for task_id, copied in frozen:
            if _keep_writes(parent.writes, task_id, copied) and not ns:
                self._note_question(thread, checkpoint_id)

    def _note_question(self, thread: str, checkpoint_id: str | None) -> None:
        """Index a root checkpoint that holds a question (locked; see ``_waiting``)."""
        if checkpoint_id is None:
            return
        asked = self._waiting.get(thread)
        if asked is None or asked < checkpoint_id:
            self._waiting[thread] = checkpoint_id

    def _pending_heads(self) -> Iterator[CheckpointTuple]:
        # Only threads in the index: the others' heads hold no "__interrupt__" write.
        with self._lock:
            threads = list(self._waiting)
        for thread in threads:
            if (head := self.get_tuple({"configurable": {"thread_id": thread}})) is not None:
                yield head

    def delete_thread(self, thread_id: str) -> None:
        """See [`pausepoint.checkpoint.base`][]."""
        thread = str(thread_id)
        with self._lock:
            self._root.pop(thread, None)
            self._nested.pop(thread, None)
            self._recent.pop(thread, None)
            self._waiting.pop(thread, None)
            self._leases.drop(thread)

    def _prune_request(self, request: Request) -> object:
        """A prune's deletions under the lock: lease and head checked, then dropped."""
        if not isinstance(request, ApplyPlan):
            return super()._prune_request(request)
        thread = request.thread_id
        with self._lock:
            spaces: dict[str, dict[str, Any]] = {"": self._root.get(thread, {})}
            spaces.update(self._nested.get(thread, {}))
            done = apply_to_dicts(request, spaces, self._leases.held(thread, self.lease_clock()))
            if done == "busy":
                return done
            if request.whole:
                for table in (self._root, self._nested, self._recent, self._waiting):
                    table.pop(thread, None)
                self._leases.drop(thread)
            else:
                if thread in self._nested:
                    self._nested[thread] = {ns: ids for ns, ids in spaces.items() if ns}
                if (recent := self._recent.get(thread)) is not None:
                    _forget_dropped(recent, spaces)
            return done

    async def _aprune_request(self, request: Request) -> object:
        return self._prune_request(request)

    def acquire_lease(
        self, thread_id: str, owner: str, ttl: float, *, nudge: bool = False
    ) -> LeaseClaim:
        """See [`BaseCheckpointSaver.acquire_lease`][]."""
        return self._leases.acquire(thread_id, owner, ttl, nudge, self._lease_now)

    def renew_lease(self, thread_id: str, owner: str, ttl: float | None = None) -> bool:
        """See [`BaseCheckpointSaver.renew_lease`][]."""
        return self._leases.renew(thread_id, owner, ttl, self._lease_now)

    def release_lease(self, thread_id: str, owner: str) -> bool:
        """See [`BaseCheckpointSaver.release_lease`][]."""
        return self._leases.release(thread_id, owner)

    def get_lease(self, thread_id: str) -> Lease | None:
        """See [`BaseCheckpointSaver.get_lease`][]."""
        return self._leases.get(thread_id, self._lease_now)


# PendingWrite's own __new__ is a Python-level function; tuple's is not (a checkpoint
# read makes one per pending write).
_new_write = cast(
    "Callable[[type[PendingWrite], tuple[str, str, object]], PendingWrite]",
    tuple.__new__,  # pyright: ignore[reportUnknownMemberType]
)

_RECENT_THREADS = 32
"""Threads whose last put ``CompactingMemorySaver`` remembers (see ``Recent``)."""

_SHARED_MAX = 4096
"""Parts ``CompactingMemorySaver._shared`` remembers before it starts over."""

_SHARED_BLOB = 256
"""Metadata encodings up to this many bytes are shared (most steps' are ~40)."""


def _forget_dropped(recent: Recent, spaces: dict[str, dict[str, Any]]) -> None:
    """Let a thread's recent puts hold nothing a prune dropped (locked).

    Its fresh checkpoints wait there to be compacted, and the last put's values are
    bases to grow from: a dropped one kept there would keep its values (and the
    chains under them) alive until the thread goes idle.
    """
    alive = {id(stored) for by_id in spaces.values() for stored in by_id.values()}
    recent.fresh = [stored for stored in recent.fresh if id(stored) in alive]
    for ns, checkpoint_id in list(recent.last.items()):
        if checkpoint_id not in spaces.get(ns, {}):
            del recent.last[ns]
            recent.encoded.pop(ns, None)


def _put_in(by_id: dict[str, Stored], stored: Stored) -> None:
    """Store ``stored`` (locked); an id put again keeps the writes made against it."""
    old = by_id.get(stored.id)
    if old is not None and old.writes:
        stored.writes = old.writes
    by_id[stored.id] = stored


def _keep_writes(
    kept: dict[tuple[str, int], tuple[str, object]], task_id: str, copied: list[tuple[str, object]]
) -> bool:
    """Keep a task's frozen writes: ordinary ones once, special ones replaced (locked).

    Returns whether one of them is a question (an ``__interrupt__`` write), for the
    index of waiting threads: found in this loop, no pass of its own.
    """
    asked = False
    for n, (channel, value) in enumerate(copied):
        idx = WRITES_IDX_MAP.get(channel, n)
        key = (task_id, idx)
        if idx >= 0 and key in kept:
            continue
        kept[key] = (channel, value)
        asked = asked or idx == _INTERRUPT_IDX
    return asked


_INTERRUPT_IDX = WRITES_IDX_MAP[INTERRUPT]
