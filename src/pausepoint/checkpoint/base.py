"""The saver protocol: how checkpoints and pending writes are stored.

A *checkpoint* is the state of one thread (and checkpoint namespace) at the start
of a superstep. *Pending writes* are the outputs of that step's tasks saved as
each task finishes, so a crash or an interrupt in one branch loses no sibling's
finished work. Savers store both; the engine decides what they mean.

Contracts every saver keeps (``pausepoint.testing`` checks them):

- ``put`` stores a checkpoint under ``(thread_id, checkpoint_ns, checkpoint["id"])``
  with its metadata and parent id (the config's ``checkpoint_id``), and returns the
  config that points at it.
- ``put_writes`` is idempotent for the same ``(thread, ns, checkpoint, task, idx)``:
  ordinary writes (idx 0, 1, …) are inserted once and later copies are ignored;
  special writes (``WRITES_IDX_MAP``: error −1, scheduled −2, interrupt −3,
  resume −4) are upserted, the newest value replacing the old one.
- ``get_tuple`` returns the checkpoint named by ``checkpoint_id``, or the newest of
  the thread and namespace when the config names none, with its pending writes in
  insertion order (by task, then idx); ``None`` if there is none.
- ``list`` yields newest first (by checkpoint id, which is time-ordered), filtered by
  config (thread, ns, checkpoint id), metadata ``filter`` (key equality), ``before``
  (ids strictly older than the given config's id) and ``limit``.
- ``put_after_writes`` stores task writes against the config's checkpoint and then a
  new checkpoint after it, as ``put_writes`` for each then ``put`` would, but all or
  nothing: a value that cannot be stored changes nothing. The database savers do it
  in one transaction (SQLite: one commit; PostgreSQL: one statement when the writes
  fit one). The engine uses it, for a saver whose ``batches_writes`` is true, for the
  last task of a step when nothing happens between that task's end and the step's
  checkpoint (no stream is being read).
- ``put_pair`` stores a checkpoint under the config (as ``put``), then task writes
  against it and a second checkpoint after it (as ``put_after_writes`` with the config
  that ``put`` returned), all or nothing; it returns the second checkpoint's config.
  The engine uses it, for a saver whose ``batches_checkpoints`` is true, to store a
  new run's input checkpoint with its start step's checkpoint (SQLite: one commit
  instead of two; PostgreSQL: one statement).
- ``delete_thread`` removes every checkpoint and write of a thread, in all namespaces.
- Values are stored so that later mutation of the caller's objects never changes
  what is stored.
- A checkpoint's ``versions_seen`` entries (the per-node dicts) are read-only once
  the checkpoint is handed to ``put``: the engine replaces an entry with a new dict
  rather than changing it, so a saver may keep the entries it is given without
  copying them (``InMemorySaver`` does; copying them made every step cost O(nodes)
  in Python). Code that calls ``put`` itself must do the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Literal, NamedTuple, Protocol, runtime_checkable

from typing_extensions import TypedDict

from pausepoint.config import RunnableConfig

__all__ = [
    "BaseCheckpointSaver",
    "ChannelVersions",
    "Checkpoint",
    "CheckpointMetadata",
    "CheckpointPut",
    "CheckpointTuple",
    "PendingWrite",
    "SaverProtocol",
    "TaskWrites",
    "Version",
    "empty_checkpoint",
]

Version = int
"""A channel version: increases by one with every update of the channel."""
ChannelVersions = dict[str, Version]

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


class CheckpointMetadata(TypedDict, total=False):
    """Metadata stored beside a checkpoint; ``source``/``step``/``parents`` always set."""

    source: Literal["input", "loop", "update", "fork"]
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
    return {
        "v": checkpoint["v"],
        "id": checkpoint["id"],
        "ts": checkpoint["ts"],
        "channel_values": dict(checkpoint["channel_values"]),
        "channel_versions": dict(checkpoint["channel_versions"]),
        "versions_seen": dict(checkpoint["versions_seen"]),
        "updated_channels": checkpoint.get("updated_channels"),
    }


@runtime_checkable
class SaverProtocol(Protocol):
    """What the engine needs from a saver (sync methods; async ones are ``a``-prefixed)."""

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


class BaseCheckpointSaver:
    """Base class of savers: sync methods to override, async ones defaulting to them.

    A subclass overrides the sync methods; the default async methods call them
    directly (fine for in-memory savers). Savers doing I/O override both: SQL text,
    row mapping and serialization are shared, only connection handling differs.
    """

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
    ) -> RunnableConfig:
        """See the module docstring for the contract."""
        raise NotImplementedError

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """See the module docstring for the contract."""
        raise NotImplementedError

    batches_writes: ClassVar[bool] = False
    """Whether :meth:`put_after_writes` saves a round trip or a commit over separate
    calls; the engine uses it only for savers that say so (the database savers)."""

    def put_after_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[TaskWrites],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """``put_writes`` for each of ``writes``, then ``put``; see the module docstring.

        This default is not all-or-nothing (a value the ``put`` refuses comes after the
        writes are stored): a saver overrides it to be (the conformance suite checks).
        """
        for task in writes:
            self.put_writes(config, task.writes, task.task_id, task.task_path)
        return self.put(config, checkpoint, metadata, new_versions)

    batches_checkpoints: ClassVar[bool] = False
    """Whether :meth:`put_pair` saves a commit or a round trip over ``put`` then
    ``put_after_writes``; the engine uses it only for savers that say so."""

    def put_pair(
        self,
        config: RunnableConfig,
        first: CheckpointPut,
        writes: Sequence[TaskWrites],
        second: CheckpointPut,
    ) -> RunnableConfig:
        """``put`` of ``first``, then ``put_after_writes`` of the rest under its config.

        Returns the second checkpoint's config. Like :meth:`put_after_writes`, this
        default is not all-or-nothing; a saver whose ``batches_checkpoints`` is true
        overrides it to be (the conformance suite checks).
        """
        saved = self.put(config, *first)
        return self.put_after_writes(saved, writes, *second)

    def delete_thread(self, thread_id: str) -> None:
        """See the module docstring for the contract."""
        raise NotImplementedError

    def get_next_version(self, current: Version | None, channel: str | None = None) -> Version:
        """The version after ``current`` (1 for a channel never written)."""
        return 1 if current is None else current + 1

    async def aget(self, config: RunnableConfig) -> Checkpoint | None:
        """Async :meth:`get`."""
        tup = await self.aget_tuple(config)
        return tup.checkpoint if tup else None

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        return self.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`."""
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`."""
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`."""
        self.put_writes(config, writes, task_id, task_path)

    async def aput_after_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[TaskWrites],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put_after_writes`."""
        return self.put_after_writes(config, writes, checkpoint, metadata, new_versions)

    async def aput_pair(
        self,
        config: RunnableConfig,
        first: CheckpointPut,
        writes: Sequence[TaskWrites],
        second: CheckpointPut,
    ) -> RunnableConfig:
        """Async :meth:`put_pair`."""
        return self.put_pair(config, first, writes, second)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        self.delete_thread(thread_id)


def config_keys(config: RunnableConfig) -> tuple[str, str, str | None]:
    """``(thread_id, checkpoint_ns, checkpoint_id)`` of a config; thread_id is required."""
    conf = config.get("configurable") or {}
    thread = conf.get("thread_id")
    if thread is None:
        raise ValueError(
            "the config has no 'thread_id': pass "
            "config={'configurable': {'thread_id': ...}} to use a checkpointer"
        )
    return str(thread), str(conf.get("checkpoint_ns", "")), conf.get("checkpoint_id")
