"""The saver protocol: how checkpoints and pending writes are stored.

A *checkpoint* is the state of one thread (and checkpoint namespace) at the start
of a superstep. *Pending writes* are the outputs of that step's tasks saved as
each task finishes, so a crash or an interrupt in one branch loses no sibling's
finished work. Savers store both; the engine decides what they mean.

A saver implements ``get_tuple``, ``list`` and ``delete_thread``, and its writes in
one of two ways: ``commit``, the engine's one write (`InMemorySaver`, the reference,
does), of which [`BaseCheckpointSaver`][] then makes ``put``, ``put_writes``,
``put_after_writes``, ``put_pair`` and their async forms; or LangGraph's ``put`` and
``put_writes``, of which it makes ``commit`` (every LangGraph-style saver). A saver
that implements neither is told so by each write (``NotImplementedError``). A subclass
overriding ``put``/``put_writes`` of a saver with a ``commit`` is committed through them
(`pausepoint.checkpoint._overrides`), as LangGraph calls them for every write.

Contracts every saver keeps (``pausepoint.testing`` checks them):

- ``put`` stores a checkpoint under ``(thread_id, checkpoint_ns, checkpoint["id"])`` with
  its metadata and parent id (the config's ``checkpoint_id``), and returns its config.
- ``put_writes`` is idempotent for the same ``(thread, ns, checkpoint, task, idx)``:
  ordinary writes (idx 0, 1, …) are inserted once and later copies are ignored;
  special writes (``WRITES_IDX_MAP``: error −1, scheduled −2, interrupt −3,
  resume −4) are upserted, the newest value replacing the old one.
- ``get_tuple`` returns the checkpoint named by ``checkpoint_id``, or the newest of
  the thread and namespace when the config names none, with its pending writes in
  insertion order (by task, then idx); ``None`` if there is none.
- ``list`` yields newest first (by checkpoint id, which is time-ordered), filtered by
  config (thread, ns, checkpoint id), metadata ``filter`` (key equality), ``before``
  (ids strictly older than the given config's id) and ``limit``. It may read a page at a
  time (the SQL savers do, ``_sql_list``): a checkpoint stored or deleted while the caller
  iterates is listed as its page finds it (a new one, newer than the first page: not).
- ``commit(StepCommit)`` is the engine's one write: a checkpoint under the config
  (``first``), then task writes against it (or against the config's checkpoint),
  then a checkpoint after them, as ``put``/``put_writes`` calls in that order would
  store them, and returns the last checkpoint's config (the config if none), in the
  form the commit's config has: a [`CheckpointRef`][] (the engine's), or a dict. A
  saver's own ``commit`` stores it all or nothing (the in-memory savers: under one
  lock; SQLite: one transaction; PostgreSQL: one statement when the writes fit one);
  one made of ``put``/``put_writes`` does not (the conformance suite's ``atomic``). A
  saver whose ``batches`` is true gets more in each (one commit costs about what one
  part would). ``put_after_writes`` (writes, then a checkpoint) and ``put_pair`` (a
  checkpoint, writes, a checkpoint) are its older forms, kept for callers.
- ``delete_thread`` removes every row of a thread, in all namespaces: checkpoints,
  writes, its lease and index rows. ``prune`` and ``copy_thread``: see ``_retention``.
- Values are stored so that later mutation of the caller's objects never changes what is stored.
- A checkpoint's ``versions_seen`` entries (the per-node dicts) are read-only once
  the checkpoint is handed to ``commit`` or ``put``: the engine replaces an entry
  with a new dict rather than changing it, so a saver may keep the entries it is
  given without copying them (``InMemorySaver`` does; copying them made every step
  cost O(nodes) in Python). Code that calls ``put`` itself must do the same.

Single-writer threads (a saver whose ``supports_leases`` is true; see docs/persistence.md):

- A thread has at most one *lease*: an owner token and an expiry. ``acquire_lease``
  takes it, in one atomic step, when nobody holds it, when it has expired, or when the
  same owner holds it (a renewal); otherwise it changes nothing, except that with
  ``nudge=True`` the live holder's lease is marked *nudged*. It returns a
  [`LeaseClaim`][]: whether it was acquired, and the lease in force afterwards.
- ``renew_lease`` extends the owner's lease (expired or not, while nobody took it
  over); ``release_lease`` gives it up and says whether it was nudged while held;
  ``get_lease`` is the unexpired lease.
- Fenced writes: ``commit``, ``put``, ``put_writes``, ``put_after_writes`` and
  ``put_pair`` given ``lease=owner`` write only if ``owner`` still holds the
  thread's lease — expired or not, as long as no other owner took it over —
  renewing it by its ttl in the same atomic step; otherwise they write nothing and raise
  [`LeaseLostError`][pausepoint.errors.LeaseLostError].
- A fenced write given ``release=True`` (``commit`` without ``first``, ``put``, ``put_writes``)
  also lets the lease go, in the same atomic step, once it has written: a run's last
  write, so ending a run costs no round trip of its own. Without ``lease=`` it is a
  ``ValueError``.
- ``put_writes(..., if_head=True)`` writes only if the config's checkpoint is still the
  newest of its thread and namespace; otherwise it writes nothing and raises
  [`StaleCheckpointError`][pausepoint.errors.StaleCheckpointError].
- Expiry is judged by one clock for all workers: the database's for PostgreSQL, the
  saver's ``lease_clock`` (``time.time`` unless replaced) for SQLite and memory.
- Optional: ``acquire_lease(..., read=config)`` also reads ``get_tuple(config)`` once
  the lease is taken — a read that shows every write committed before the claim —
  and returns it in ``LeaseClaim.checkpoint`` with ``LeaseClaim.read`` true (the
  engine's first read of a run, folded into its claim: PostgreSQL does both in one
  statement, SQLite in one transaction). ``read`` is a `CheckpointRef` (the engine's)
  or a config dict. The engine passes ``read=`` only to a saver whose
  ``acquire_lease`` takes the keyword.

Waiting questions: ``list_pending`` (``alist_pending``) lists them across threads
(see [`PendingListing`][pausepoint.checkpoint._pending.PendingListing] and docs/pending.md).
The engine passes ``lease=`` and ``if_head=`` only to a saver whose ``supports_leases``
is true. [`BaseCheckpointSaver`][]'s lease methods work within one process only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Literal, NamedTuple, NotRequired

from typing_extensions import TypedDict

from pausepoint.checkpoint._commit import (
    At,
    CheckpointRef,
    StepCommit,
    arun_parts,
    as_config,
    commit_by_parts,
    in_form,
    ref_of,
    run_parts,
)
from pausepoint.checkpoint._keys import config_keys, guard_kwargs, path_kwarg
from pausepoint.checkpoint._leases import Lease, LeaseClaim, LocalLeases
from pausepoint.checkpoint._overrides import commits_async, honour_overrides, no_writes
from pausepoint.checkpoint._pending import PendingListing
from pausepoint.checkpoint._protocol import SaverProtocol
from pausepoint.checkpoint._retention import Retention
from pausepoint.config import RunnableConfig

__all__ = [
    "At",
    "BaseCheckpointSaver",
    "ChannelVersions",
    "Checkpoint",
    "CheckpointMetadata",
    "CheckpointPut",
    "CheckpointRef",
    "CheckpointTuple",
    "Lease",
    "LeaseClaim",
    "PendingWrite",
    "SaverProtocol",
    "StepCommit",
    "TaskWrites",
    "Version",
    "as_config",
    "config_keys",
    "empty_checkpoint",
    "guard_kwargs",
    "in_form",
    "ref_of",
]

Version = int
"""A channel version: increases by one with every update of the channel."""
ChannelVersions = dict[str, Version]
"""The version of each channel, by channel name."""

CHECKPOINT_FORMAT = 1
"""Version of the checkpoint dict layout (``Checkpoint["v"]``); see docs/format.md."""


class Checkpoint(TypedDict):
    """A thread's state at the start of a superstep (LangGraph's field names)."""

    v: int
    id: str
    ts: str
    channel_values: dict[str, Any]
    channel_versions: ChannelVersions
    versions_seen: dict[str, ChannelVersions]
    updated_channels: list[str] | None
    graph: NotRequired[Mapping[str, Any]]
    """The stamp of the graph that wrote it (docs/deploys.md): read-only, shared."""


class CheckpointMetadata(TypedDict, total=False):
    """Metadata stored beside a checkpoint; ``source``/``step``/``parents`` always set."""

    source: Literal["input", "loop", "update", "fork", "migrate"]
    step: int
    parents: dict[str, str]


class PendingWrite(NamedTuple):
    """One write of a task, saved against the checkpoint of the step it ran in.

    A named tuple, so ``task_id, channel, value = write`` works as with LangGraph's
    plain tuples (and it is cheap to make: a checkpoint may carry hundreds).
    """

    task_id: str
    channel: str
    value: Any


class TaskWrites(NamedTuple):
    """One task's writes, as ``put_writes`` takes them (for ``put_after_writes``)."""

    task_id: str
    writes: Sequence[tuple[str, Any]]
    task_path: str = ""


class CheckpointPut(NamedTuple):
    """A checkpoint to store and what ``put`` takes with it (for ``put_pair``)."""

    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    new_versions: ChannelVersions


class CheckpointTuple(NamedTuple):
    """A stored checkpoint with its config, metadata, parent and pending writes."""

    config: RunnableConfig
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    parent_config: RunnableConfig | None = None
    pending_writes: list[PendingWrite] | None = None


def empty_checkpoint(checkpoint_id: str, ts: str) -> Checkpoint:
    """A checkpoint with no channel values: the start of every new thread."""
    return {
        "v": CHECKPOINT_FORMAT,
        "id": checkpoint_id,
        "ts": ts,
        "channel_values": {},
        "channel_versions": {},
        "versions_seen": {},
        "updated_channels": None,
    }


def copy_checkpoint(checkpoint: Checkpoint) -> Checkpoint:
    """A copy whose dicts can be changed without touching ``checkpoint``'s.

    The ``versions_seen`` entries are shared, not copied: they are replaced, never
    edited (see the contracts above).
    """
    copied: Checkpoint = {
        "v": checkpoint["v"],
        "id": checkpoint["id"],
        "ts": checkpoint["ts"],
        "channel_values": dict(checkpoint["channel_values"]),
        "channel_versions": dict(checkpoint["channel_versions"]),
        "versions_seen": dict(checkpoint["versions_seen"]),
        "updated_channels": checkpoint.get("updated_channels"),
    }
    if "graph" in checkpoint:  # the stamp is read-only: shared, as versions_seen's entries
        copied["graph"] = checkpoint["graph"]
    return copied


class BaseCheckpointSaver(PendingListing, Retention):
    """Base class of savers: sync methods to override, async ones defaulting to them.

    A subclass overrides the reads, ``delete_thread`` and either ``commit`` or
    ``put`` and ``put_writes`` (see the module docstring); the other write methods
    default to those. The default async methods call the sync ones directly (fine
    for in-memory savers), or a saver's own ``acommit``. Savers doing I/O override
    both: SQL text, row mapping and serialization are shared, only connection
    handling differs.

    Leases: the default lease methods here keep leases in a dict of this saver
    object, so they hold only among the threads and tasks of one process using the
    same saver; ``supports_leases`` is false and the write methods do not fence. The
    engine passes ``lease=``/``if_head=`` to the write methods only of a saver whose
    ``supports_leases`` is true, so a saver that does not honour them need not
    accept them; one that sets it overrides all of them (the conformance suite
    checks that they are honoured atomically).
    """

    supports_leases: bool = False
    """Whether leases hold across processes and the write methods honour ``lease=``
    and ``if_head=`` atomically (true for pausepoint's savers)."""

    @property
    def lease_scope(self) -> str:
        """What this saver's threads live in: two savers with the same scope share threads.

        The engine lets one run of a process at a time advance a thread of a scope
        (runs in other processes are kept out by the lease itself). Default: this
        saver object alone; the SQLite and PostgreSQL savers name their database.
        """
        return f"{type(self).__qualname__}@{id(self):x}"

    lease_clock: Callable[[], float] = time.time
    """Seconds since the epoch, by which leases expire (not for PostgreSQL, which
    uses the database's clock). Tests replace it on the saver to skip time."""

    def get(self, config: RunnableConfig) -> Checkpoint | None:
        """The checkpoint the config names (or the newest), without its writes."""
        tup = self.get_tuple(config)
        return tup.checkpoint if tup else None

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """See the module docstring for the contract."""
        raise NotImplementedError

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """See the module docstring for the contract."""
        raise NotImplementedError

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
        """See the module docstring for the contract (``lease``, ``release``: fencing).

        This default is a [`commit`][] of the checkpoint, for a saver that implements
        ``commit`` (a saver implements that or this and ``put_writes``).
        """
        if (own := type(self).own_commit) is commit_by_parts:
            raise no_writes(self, "put")
        last = CheckpointPut(checkpoint, metadata, new_versions)
        return own(self, StepCommit(config, (), last, lease=lease, release=release))

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
        """See the module docstring (``lease``, ``release``, ``if_head``: guards).

        This default is a [`commit`][] of the writes, as ``put``'s is.
        """
        if (own := type(self).own_commit) is commit_by_parts:
            raise no_writes(self, "put_writes")
        task = (TaskWrites(task_id, writes, task_path),)
        own(self, StepCommit(config, task, lease=lease, release=release, if_head=if_head))

    batches: bool = False
    """Whether one [`commit`][] costs about what one part of it would (a database
    transaction or round trip): the engine then puts more in each, a new run's input
    checkpoint with its first step's and a lease's release with a step's checkpoint."""

    own_commit: ClassVar[Callable[..., Any]] = commit_by_parts
    """The ``commit`` this class or an ancestor implements (``commit_by_parts``: none,
    its ``put``/``put_writes`` are the writes): what the other write methods default to.
    Set when a subclass is defined; see `pausepoint.checkpoint._overrides`."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        honour_overrides(cls)

    commit = commit_by_parts
    """Store a [`StepCommit`][]; see the module docstring.

    This default, for a saver that implements ``put`` and ``put_writes`` instead (a
    function of the module ``_commit``, bound as a method without a call of its own:
    the engine calls it once a step), calls [`put_pair`][], [`put_after_writes`][],
    ``put_writes`` or ``put``; the first two default to ``put_writes`` for each task,
    then ``put``. Right for any such saver, all or nothing only where those are.
    """

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
        """``put_writes`` for each of ``writes``, then ``put``; see the module docstring.

        This default is a [`commit`][] for a saver that implements it. For one that
        implements ``put`` and ``put_writes`` it is those calls, ``lease`` passed on to
        each and ``release`` to the ``put``: not all or nothing (a value the ``put``
        refuses comes after the writes are stored) unless the saver overrides it to be
        (the conformance suite checks).
        """
        last = CheckpointPut(checkpoint, metadata, new_versions)
        step = StepCommit(config, writes, last, lease=lease, release=release)
        if (own := type(self).own_commit) is commit_by_parts:
            return run_parts(self, step)
        return own(self, step)

    def put_pair(
        self,
        config: RunnableConfig,
        first: CheckpointPut,
        writes: Sequence[TaskWrites],
        second: CheckpointPut,
        *,
        lease: str | None = None,
    ) -> RunnableConfig:
        """``put`` of ``first``, then ``put_after_writes`` of the rest under its config.

        Returns the second checkpoint's config. Like [`put_after_writes`][], this
        default is a [`commit`][] for a saver that implements it, else those calls: not
        all or nothing unless the saver overrides it to be (the conformance suite checks).
        """
        if (own := type(self).own_commit) is not commit_by_parts:
            return own(self, StepCommit(config, writes, second, first, lease=lease))
        guard = guard_kwargs(lease)
        saved = self.put(config, *first, **guard)
        return self.put_after_writes(saved, writes, *second, **guard)

    def delete_thread(self, thread_id: str) -> None:
        """See the module docstring for the contract."""
        raise NotImplementedError

    def acquire_lease(
        self, thread_id: str, owner: str, ttl: float, *, nudge: bool = False
    ) -> LeaseClaim:
        """Take the thread's lease for ``ttl`` seconds, or renew it if ``owner`` has it.

        Atomic: succeeds when no live lease is held by another owner; otherwise
        changes nothing, except that ``nudge=True`` marks the holder's lease nudged
        (its ``release_lease`` then returns true). This default holds within this
        process only (see the class docstring).

        Args:
            thread_id: The thread.
            owner: A token naming the run, unique among runs (a uuid4 hex, say).
            ttl: Seconds the lease lasts unless renewed; > 0.
            nudge: Mark a live holder's lease nudged if it cannot be taken.

        Returns:
            Whether it was acquired, and the lease in force afterwards.
        """
        return self._local_leases().acquire(thread_id, owner, ttl, nudge, self._lease_now)

    def renew_lease(self, thread_id: str, owner: str, ttl: float | None = None) -> bool:
        """Extend ``owner``'s lease by ``ttl`` (default: its own ttl) from now.

        An expired lease nobody took over is still ``owner``'s and is renewed.
        Returns false, changing nothing, when another owner took it (or none holds it).
        """
        return self._local_leases().renew(thread_id, owner, ttl, self._lease_now)

    def release_lease(self, thread_id: str, owner: str) -> bool:
        """Give up ``owner``'s lease (live or expired); whether it was nudged meanwhile.

        A true result means another caller stored something for the thread while the
        lease was held (and could not run it), so the releasing run should continue.
        Releasing a lease ``owner`` does not hold does nothing and returns false.
        """
        return self._local_leases().release(thread_id, owner)

    def get_lease(self, thread_id: str) -> Lease | None:
        """The thread's unexpired lease, or None if no run holds it."""
        return self._local_leases().get(thread_id, self._lease_now)

    def _lease_now(self) -> float:
        return self.lease_clock()

    def _local_leases(self) -> LocalLeases:
        table = self.__dict__.get("_local_lease_table")
        if table is None:
            with _LOCAL_LEASES_LOCK:
                table = self.__dict__.setdefault("_local_lease_table", LocalLeases())
        leases: LocalLeases = table
        return leases

    def get_next_version(self, current: Version | None, channel: str | None = None) -> Version:
        """The version after ``current`` (1 if never written); the engine does not call it."""
        return 1 if current is None else current + 1

    async def aget(self, config: RunnableConfig) -> Checkpoint | None:
        """Async [`get`][]."""
        tup = await self.aget_tuple(config)
        return tup.checkpoint if tup else None

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async [`get_tuple`][]."""
        return self.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async [`list`][]."""
        for item in self.list(config, filter=filter, before=before, limit=limit):
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
        """Async [`put`][]: an ``acommit`` where the saver has its own, else ``put``."""
        if commits_async(self, BaseCheckpointSaver.acommit):
            last = CheckpointPut(checkpoint, metadata, new_versions)
            return await self.acommit(StepCommit(config, (), last, lease=lease, release=release))
        guard = guard_kwargs(lease, False, release)
        return self.put(config, checkpoint, metadata, new_versions, **guard)

    async def aput_writes(
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
        """Async [`put_writes`][]: an ``acommit`` where the saver has its own."""
        if commits_async(self, BaseCheckpointSaver.acommit):
            task = (TaskWrites(task_id, writes, task_path),)
            step = StepCommit(config, task, lease=lease, release=release, if_head=if_head)
            await self.acommit(step)
            return
        guard = guard_kwargs(lease, if_head, release)
        guard.update(path_kwarg(self, "put_writes", task_path))
        self.put_writes(config, writes, task_id, **guard)

    async def aput_after_writes(
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
        """Async [`put_after_writes`][]: an ``acommit`` where the saver has its own."""
        if commits_async(self, BaseCheckpointSaver.acommit):
            last = CheckpointPut(checkpoint, metadata, new_versions)
            step = StepCommit(config, writes, last, lease=lease, release=release)
            return await self.acommit(step)
        guard = guard_kwargs(lease, False, release)
        return self.put_after_writes(config, writes, checkpoint, metadata, new_versions, **guard)

    async def aput_pair(
        self,
        config: RunnableConfig,
        first: CheckpointPut,
        writes: Sequence[TaskWrites],
        second: CheckpointPut,
        *,
        lease: str | None = None,
    ) -> RunnableConfig:
        """Async [`put_pair`][]: an ``acommit`` where the saver has its own."""
        if commits_async(self, BaseCheckpointSaver.acommit):
            return await self.acommit(StepCommit(config, writes, second, first, lease=lease))
        return self.put_pair(config, first, writes, second, **guard_kwargs(lease))

    async def acommit(self, step: StepCommit[At]) -> At:
        """Async [`commit`][].

        The sync one when ``aput_writes`` is this class's (then it calls the sync
        methods, or is the saver's own ``commit``); else ``aput_writes`` and ``aput``
        calls, a saver's own async I/O.
        """
        if type(self).aput_writes is BaseCheckpointSaver.aput_writes:
            return self.commit(step)
        return await arun_parts(self, step)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async [`delete_thread`][]."""
        self.delete_thread(thread_id)

    async def aacquire_lease(
        self, thread_id: str, owner: str, ttl: float, *, nudge: bool = False
    ) -> LeaseClaim:
        """Async [`acquire_lease`][]."""
        return self.acquire_lease(thread_id, owner, ttl, nudge=nudge)

    async def arenew_lease(self, thread_id: str, owner: str, ttl: float | None = None) -> bool:
        """Async [`renew_lease`][]."""
        return self.renew_lease(thread_id, owner, ttl)

    async def arelease_lease(self, thread_id: str, owner: str) -> bool:
        """Async [`release_lease`][]."""
        return self.release_lease(thread_id, owner)

    async def aget_lease(self, thread_id: str) -> Lease | None:
        """Async [`get_lease`][]."""
        return self.get_lease(thread_id)


_LOCAL_LEASES_LOCK = threading.Lock()
"""Makes the first use of a saver's in-process lease table race-free."""
