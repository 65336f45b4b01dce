"""One save of the engine: `StepCommit`, the `CheckpointRef` it goes under, the default.

The engine writes to a saver through one method, ``commit(StepCommit)``
(``acommit``): a task's writes, a step's last writes with the step's checkpoint,
a new run's input checkpoint with its first step's. Inside the engine a
checkpoint's place travels as a `CheckpointRef`, not as a config dict; config
dicts are built only where LangGraph's methods take them (``put``, ``put_writes``,
``get_tuple``, ``list``) and at the public API. Kept out of
`pausepoint.checkpoint.base` (which re-exports the public names) so that module
stays the contract. A saver without ``commit`` gets one made of its other writes.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, cast, final, overload

from typing_extensions import TypeVar

from pausepoint.checkpoint._keys import config_keys, guard_kwargs, path_kwarg
from pausepoint.config import RunnableConfig

if TYPE_CHECKING:
    from pausepoint.checkpoint._protocol import SaverProtocol
    from pausepoint.checkpoint.base import (
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointPut,
        TaskWrites,
    )
    from pausepoint.types import Checkpointer

__all__ = [
    "At",
    "CheckpointRef",
    "PartsSaver",
    "StepCommit",
    "arun_parts",
    "as_config",
    "commit_by_parts",
    "committing",
    "in_form",
    "ref_of",
    "run_parts",
]


@final
class CheckpointRef(NamedTuple):
    """Where a checkpoint is (or goes): a thread, a namespace, a checkpoint id.

    The engine's form of a config's three keys, from the run's config to the
    saver's ``commit`` and back: a SQL saver reads them without parsing a dict, and
    a config dict is built (`config`) only where LangGraph's methods take one. A
    named tuple, as ``TaskWrites`` is: immutable, slotted, and one is made per saved
    step (a frozen dataclass took ~5x as long to make). Unpacks as
    ``config_keys`` returns.

    Attributes:
        thread_id: The thread.
        checkpoint_ns: The namespace ("" for the root graph).
        checkpoint_id: The checkpoint; None: the newest (a read), or none yet (a
            first checkpoint's parent).
    """

    thread_id: str
    checkpoint_ns: str = ""
    checkpoint_id: str | None = None

    @classmethod
    def of(cls, config: RunnableConfig) -> CheckpointRef:
        """The ref a config names (its keys checked as every saver checks them)."""
        return _new(cls, config_keys(config))

    def at(self, checkpoint_id: str | None) -> CheckpointRef:
        """The checkpoint ``checkpoint_id`` of the same thread and namespace."""
        return _new(CheckpointRef, (self[0], self[1], checkpoint_id))

    def config(self) -> RunnableConfig:
        """The config dict naming this checkpoint, as LangGraph's methods take it."""
        conf: dict[str, str] = {"thread_id": self[0], "checkpoint_ns": self[1]}
        if (checkpoint_id := self[2]) is not None:
            conf["checkpoint_id"] = checkpoint_id
        return {"configurable": conf}


# A ref made by ``tuple.__new__`` itself, without the named tuple's own ``__new__``
# (a Python frame, twice the cost): one is made per saved step.
if TYPE_CHECKING:

    def _new(cls: type[CheckpointRef], keys: tuple[str, str, str | None], /) -> CheckpointRef:
        """``tuple.__new__``, as the type checker should see it here."""
        ...

else:
    _new = tuple.__new__

At = TypeVar("At", CheckpointRef, RunnableConfig, default=RunnableConfig)
"""What a `StepCommit` goes under: a ref (the engine) or a config dict (a caller)."""


@overload
def in_form(given: CheckpointRef, ref: CheckpointRef) -> CheckpointRef: ...
@overload
def in_form(given: RunnableConfig, ref: CheckpointRef) -> RunnableConfig: ...
def in_form(
    given: CheckpointRef | RunnableConfig, ref: CheckpointRef
) -> CheckpointRef | RunnableConfig:
    """``ref`` in the form ``given`` has: itself, or its config dict."""
    return ref if type(given) is CheckpointRef else ref.config()


def as_config(at: CheckpointRef | RunnableConfig) -> RunnableConfig:
    """The config dict of ``at`` (a ref, or a config already)."""
    return at.config() if type(at) is CheckpointRef else at


def ref_of(at: CheckpointRef | RunnableConfig) -> CheckpointRef:
    """The ref of ``at`` (a config dict's keys checked, as ``config_keys`` does)."""
    return at if type(at) is CheckpointRef else CheckpointRef.of(at)


class StepCommit(NamedTuple, Generic[At]):
    """What one save stores, in this order, all or nothing where the saver can.

    1. ``first``: a checkpoint stored under ``config`` (as ``put`` would: its
       parent is the config's ``checkpoint_id``) — a new run's input checkpoint;
    2. ``writes``: tasks' writes against the checkpoint ``config`` names, or
       against ``first`` when given (as ``put_writes`` for each would);
    3. ``checkpoint``: a checkpoint after them, whose parent is that checkpoint.

    ``first`` without ``checkpoint`` stores a checkpoint and its own writes (a
    migrated checkpoint's, `pausepoint.loop.migrate`).

    A saver's ``commit`` returns the last checkpoint stored, or ``config`` when the
    commit stores none, in ``config``'s form: a `CheckpointRef` for a ref (the
    engine's), a config dict for a config dict. A named tuple, as ``TaskWrites`` and
    ``CheckpointPut`` are: one is made per save, and a frozen dataclass took ~4x as
    long to make (each field set through ``object.__setattr__``).

    Attributes:
        config: The checkpoint the writes (or ``first``) go under: a
            `CheckpointRef`, or a config dict.
        writes: Tasks' writes, each a [`TaskWrites`][pausepoint.checkpoint.base.TaskWrites].
        checkpoint: The checkpoint stored after the writes, if any.
        first: The checkpoint stored before the writes, if any.
        lease: Store only while this owner holds the thread's lease (a saver whose
            ``supports_leases`` is true), renewing it; else raise ``LeaseLostError``.
        release: Let the lease go once all is stored (needs ``lease``).
        if_head: Writes only (no checkpoint): store them only while ``config``'s
            checkpoint is the newest of its thread; else raise ``StaleCheckpointError``.
    """

    config: At
    writes: Sequence[TaskWrites] = ()
    checkpoint: CheckpointPut | None = None
    first: CheckpointPut | None = None
    lease: str | None = None
    release: bool = False
    if_head: bool = False


class _PartsSaver(Protocol):
    """The write methods `commit_by_parts` is made of (``BaseCheckpointSaver``'s)."""

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        lease: str | None = None,
        release: bool = False,
    ) -> RunnableConfig: ...

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
    ) -> None: ...

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
    ) -> RunnableConfig: ...

    def put_pair(
        self,
        config: RunnableConfig,
        first: CheckpointPut,
        writes: Sequence[TaskWrites],
        second: CheckpointPut,
        *,
        lease: str | None = None,
    ) -> RunnableConfig: ...


def commit_by_parts(saver: _PartsSaver, step: StepCommit[At]) -> At:
    """Store ``step`` with ``saver``'s other write methods, in the order it states.

    ``put_pair``/``put_after_writes`` where a checkpoint follows writes (their
    defaults are ``put_writes`` for each task, then ``put``; a saver that overrides
    them batches), ``put_writes`` for writes alone, ``put`` for a checkpoint alone.
    Guard keywords are passed only when set, so a saver whose methods predate them
    (and never gets them: its ``supports_leases`` is false) keeps working. A ref's
    config dict is built here: those methods are LangGraph's, and take one.
    """
    if step.release and step.lease is None:  # as the write methods refuse it
        raise ValueError("a write with release=True needs lease=owner: whose lease to let go")
    at, writes, second = step.config, step.writes, step.checkpoint
    config = at.config() if type(at) is CheckpointRef else at
    if second is None:
        if len(writes) != 1 or step.first is not None:
            return run_parts(saver, step)
        task = writes[0]
        guard = guard_kwargs(step.lease, step.if_head, step.release)
        guard.update(path_kwarg(saver, "put_writes", task.task_path))
        saver.put_writes(config, task.writes, task.task_id, **guard)
        return at
    if step.first is not None:
        if step.release:  # put_pair takes no release: the last put carries it
            return run_parts(saver, step)
        done = saver.put_pair(config, step.first, writes, second, **guard_kwargs(step.lease))
    else:
        # No keywords to build without a lease: the common case, once a step.
        guard = _NONE if step.lease is None else guard_kwargs(step.lease, release=step.release)
        if writes:
            done = saver.put_after_writes(config, writes, *second, **guard)
        else:
            done = saver.put(config, *second, **guard)
    return _stored(at, done, second)


_NONE: dict[str, Any] = {}


@overload
def _stored(at: CheckpointRef, done: RunnableConfig, last: CheckpointPut) -> CheckpointRef: ...
@overload
def _stored(at: RunnableConfig, done: RunnableConfig, last: CheckpointPut) -> RunnableConfig: ...
def _stored(
    at: CheckpointRef | RunnableConfig, done: RunnableConfig, last: CheckpointPut
) -> CheckpointRef | RunnableConfig:
    """What ``commit`` returns for the config ``put`` returned: in ``at``'s form.

    ``put`` returns the config of the checkpoint it stored: its thread, namespace
    and ``checkpoint["id"]`` (the contract), so a ref of it is made from ``at``.
    """
    if type(at) is CheckpointRef:
        return _new(CheckpointRef, (at[0], at[1], last.checkpoint["id"]))
    return done


class PartsSaver:
    """A saver that has the protocol's methods but no ``commit``, given one.

    For a duck-typed saver that does not derive from ``BaseCheckpointSaver``: its
    commits are made of ``put_writes`` and ``put`` calls (``aput_writes``, ``aput``),
    in the order the engine relies on; anything else is the saver's own.
    """

    batches = False
    supports_leases = False

    def __init__(self, saver: object) -> None:
        self.saver = saver

    def __getattr__(self, name: str) -> Any:
        return getattr(self.saver, name)

    def commit(self, step: StepCommit[At]) -> At:
        """Store ``step`` with ``put_writes`` and ``put`` calls."""
        return run_parts(self.saver, step)

    async def acommit(self, step: StepCommit[At]) -> At:
        """Store ``step`` with ``aput_writes`` and ``aput`` calls."""
        return await arun_parts(self.saver, step)


def committing(saver: Checkpointer) -> SaverProtocol | None:
    """The saver a run writes with (None for ``None``, ``True``, ``False``).

    ``saver`` itself when it has ``commit``, else a `PartsSaver`.
    """
    if saver is None or isinstance(saver, bool):
        return None
    # On the object, not its type: a proxy forwarding attributes forwards ``commit``.
    if hasattr(saver, "commit"):
        return saver
    # A duck-typed saver the type does not admit (compile() accepts one with LangGraph's
    # methods): PartsSaver gives it the protocol, forwarding the rest by __getattr__.
    return cast("SaverProtocol", PartsSaver(saver))


_Part = tuple[str, tuple[object, ...], dict[str, Any]]


def _parts(step: StepCommit[At], with_path: bool) -> Generator[_Part, RunnableConfig | None, At]:
    """The ``put``/``put_writes`` calls that store ``step``, one at a time.

    Each call is fenced by the step's lease; its release goes with the last call.
    ``with_path``: pass each task's ``task_path`` (the saver's method takes it).
    Sent back: what each call returned (``put``: its checkpoint's config).
    """
    at, last = step.config, step.checkpoint
    config = as_config(at)
    guard = guard_kwargs(step.lease)
    if step.first is not None:
        config = yield ("put", (config, *step.first), guard)
        assert config is not None  # put returns its checkpoint's config
    final = len(step.writes) - 1
    for n, task in enumerate(step.writes):
        kw = guard_kwargs(step.lease, step.if_head, step.release and last is None and n == final)
        if with_path:
            kw["task_path"] = task.task_path
        yield ("put_writes", (config, task.writes, task.task_id), kw)
    if last is None:
        return at if step.first is None else _stored(at, config, step.first)
    done = yield ("put", (config, *last), guard_kwargs(step.lease, release=step.release))
    assert done is not None  # put returns its checkpoint's config
    return _stored(at, done, last)


def run_parts(saver: object, step: StepCommit[At]) -> At:
    """Store ``step`` with ``saver``'s ``put_writes`` and ``put``."""
    calls = _parts(step, bool(path_kwarg(saver, "put_writes", "")))
    done: RunnableConfig | None = None
    try:
        while True:
            name, args, kw = calls.send(done)
            done = getattr(saver, name)(*args, **kw)
    except StopIteration as stop:
        stored: At = stop.value
        return stored


async def arun_parts(saver: object, step: StepCommit[At]) -> At:
    """Store ``step`` with ``saver``'s ``aput_writes`` and ``aput``."""
    calls = _parts(step, bool(path_kwarg(saver, "aput_writes", "")))
    done: RunnableConfig | None = None
    try:
        while True:
            name, args, kw = calls.send(done)
            done = await getattr(saver, "a" + name)(*args, **kw)
    except StopIteration as stop:
        stored: At = stop.value
        return stored
