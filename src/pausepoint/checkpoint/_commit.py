"""One save of the engine: `StepCommit`, and how a saver without ``commit`` stores one.

The engine writes to a saver through one method, ``commit(StepCommit)``
(``acommit``): a task's writes, a step's last writes with the step's checkpoint,
a new run's input checkpoint with its first step's. Kept out of
`pausepoint.checkpoint.base` (which re-exports the public names) so that module
stays the contract.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from pausepoint.checkpoint._keys import guard_kwargs

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import CheckpointPut, TaskWrites
    from pausepoint.config import RunnableConfig

__all__ = [
    "PartsSaver",
    "StepCommit",
    "arun_parts",
    "commit_by_parts",
    "committing",
    "run_parts",
]


class StepCommit(NamedTuple):
    """What one save stores, in this order, all or nothing where the saver can.

    1. ``first``: a checkpoint stored under ``config`` (as ``put`` would: its
       parent is the config's ``checkpoint_id``) — a new run's input checkpoint;
    2. ``writes``: tasks' writes against the checkpoint ``config`` names, or
       against ``first`` when given (as ``put_writes`` for each would);
    3. ``checkpoint``: a checkpoint after them, whose parent is that checkpoint.

    A saver's ``commit`` returns the config of the last checkpoint stored, or
    ``config`` when the commit stores none. A named tuple, as ``TaskWrites`` and
    ``CheckpointPut`` are: one is made per save, and a frozen dataclass took ~4x as
    long to make (each field set through ``object.__setattr__``).

    Attributes:
        config: The checkpoint the writes (or ``first``) go under.
        writes: Tasks' writes, each a [`TaskWrites`][pausepoint.checkpoint.base.TaskWrites].
        checkpoint: The checkpoint stored after the writes, if any.
        first: The checkpoint stored before the writes, if any (needs ``checkpoint``).
        lease: Store only while this owner holds the thread's lease (a saver whose
            ``supports_leases`` is true), renewing it; else raise ``LeaseLostError``.
        release: Let the lease go once all is stored (needs ``lease``).
        if_head: Writes only (no checkpoint): store them only while ``config``'s
            checkpoint is the newest of its thread; else raise ``StaleCheckpointError``.
    """

    config: RunnableConfig
    writes: Sequence[TaskWrites] = ()
    checkpoint: CheckpointPut | None = None
    first: CheckpointPut | None = None
    lease: str | None = None
    release: bool = False
    if_head: bool = False


def commit_by_parts(saver: Any, step: StepCommit) -> RunnableConfig:
    """Store ``step`` with ``saver``'s other write methods, in the order it states.

    ``put_pair``/``put_after_writes`` where a checkpoint follows writes (their
    defaults are ``put_writes`` for each task, then ``put``; a saver that overrides
    them batches), ``put_writes`` for writes alone, ``put`` for a checkpoint alone.
    Guard keywords are passed only when set, so a saver whose methods predate them
    (and never gets them: its ``supports_leases`` is false) keeps working.
    """
    if step.release and step.lease is None:  # as the write methods refuse it
        raise ValueError("a write with release=True needs lease=owner: whose lease to let go")
    config, writes, second = step.config, step.writes, step.checkpoint
    if second is None:
        if len(writes) != 1:
            return run_parts(saver, step)
        task = writes[0]
        guard = guard_kwargs(step.lease, step.if_head, step.release)
        saver.put_writes(config, task.writes, task.task_id, task.task_path, **guard)
        return config
    if step.first is not None:
        if step.release:  # put_pair takes no release: the last put carries it
            return run_parts(saver, step)
        return saver.put_pair(config, step.first, writes, second, **guard_kwargs(step.lease))
    # No keywords to build without a lease: the common case, once a step.
    guard = _NONE if step.lease is None else guard_kwargs(step.lease, release=step.release)
    if writes:
        return saver.put_after_writes(config, writes, *second, **guard)
    return saver.put(config, *second, **guard)


_NONE: dict[str, Any] = {}


class PartsSaver:
    """A saver that has the protocol's methods but no ``commit``, given one.

    For a duck-typed saver that does not derive from ``BaseCheckpointSaver``: its
    commits are made of ``put_writes`` and ``put`` calls (``aput_writes``, ``aput``),
    in the order the engine relies on; anything else is the saver's own.
    """

    batches = False
    supports_leases = False

    def __init__(self, saver: Any) -> None:
        self.saver = saver

    def __getattr__(self, name: str) -> Any:
        return getattr(self.saver, name)

    def commit(self, step: StepCommit) -> RunnableConfig:
        """Store ``step`` with ``put_writes`` and ``put`` calls."""
        return run_parts(self.saver, step)

    async def acommit(self, step: StepCommit) -> RunnableConfig:
        """Store ``step`` with ``aput_writes`` and ``aput`` calls."""
        return await arun_parts(self.saver, step)


def committing(saver: Any) -> Any:
    """``saver`` itself when it has ``commit`` (or is no saver), else a `PartsSaver`."""
    # On the object, not its type: a proxy forwarding attributes forwards ``commit``.
    if saver is None or isinstance(saver, bool) or hasattr(saver, "commit"):
        return saver
    return PartsSaver(saver)


_Part = tuple[str, tuple[Any, ...], dict[str, Any]]


def _parts(step: StepCommit) -> Generator[_Part, Any, RunnableConfig]:
    """The ``put``/``put_writes`` calls that store ``step``, one at a time.

    Each call is fenced by the step's lease; its release goes with the last call.
    """
    config, last = step.config, step.checkpoint
    guard = guard_kwargs(step.lease)
    if step.first is not None:
        config = yield ("put", (config, *step.first), guard)
    final = len(step.writes) - 1
    for n, task in enumerate(step.writes):
        kw = guard_kwargs(step.lease, step.if_head, step.release and last is None and n == final)
        yield ("put_writes", (config, task.writes, task.task_id, task.task_path), kw)
    if last is not None:
        config = yield ("put", (config, *last), guard_kwargs(step.lease, release=step.release))
    return config


def run_parts(saver: Any, step: StepCommit) -> RunnableConfig:
    """Store ``step`` with ``saver``'s ``put_writes`` and ``put``."""
    calls = _parts(step)
    done: Any = None
    try:
        while True:
            name, args, kw = calls.send(done)
            done = getattr(saver, name)(*args, **kw)
    except StopIteration as stop:
        config: RunnableConfig = stop.value
        return config


async def arun_parts(saver: Any, step: StepCommit) -> RunnableConfig:
    """Store ``step`` with ``saver``'s ``aput_writes`` and ``aput``."""
    calls = _parts(step)
    done: Any = None
    try:
        while True:
            name, args, kw = calls.send(done)
            done = await getattr(saver, "a" + name)(*args, **kw)
    except StopIteration as stop:
        config: RunnableConfig = stop.value
        return config
