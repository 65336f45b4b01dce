"""What the loop asks its driver to do, and what the driver sends back.

The loop is a generator of these effects. Each one says what the driver must
send back into the generator when it is done (``None`` where nothing is said).

Effects are read-only by contract. The ones made on every step or task are not
``frozen`` dataclasses: a frozen ``__init__`` sets each field through
``object.__setattr__``, which made them ~3x dearer to create (~4% of a step).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeAlias, final

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import (
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointPut,
        CheckpointRef,
        CheckpointTuple,
        LeaseClaim,
        TaskWrites,
    )
    from pausepoint.config import RunnableConfig
    from pausepoint.loop.prepare import ExecTask
    from pausepoint.loop.tasks import Task

__all__ = [
    "NO_KWARGS",
    "Call",
    "ClaimThread",
    "Effect",
    "Emit",
    "LoadCheckpoint",
    "NextOutcome",
    "Outcome",
    "ReleaseThread",
    "Reply",
    "RunTasks",
    "SaveCheckpoint",
    "SaveWrites",
    "SaverEffect",
    "Sleep",
    "Stopped",
]

NO_KWARGS: Mapping[str, object] = MappingProxyType({})
"""The ``kwargs`` of a `Call` that passes none (shared, read-only)."""


@final
@dataclasses.dataclass(frozen=True, slots=True)
class LoadCheckpoint:
    """Fetch a checkpoint tuple with ``saver.get_tuple(config)``; send it back (or None).

    With ``before`` (a checkpoint id), the newest of the config's namespace older
    than it: ``saver.list(config, before=..., limit=1)`` (a subgraph in a replay).
    ``config``: a `CheckpointRef` (the run's), or a caller's config dict (state
    inspection, ``update_state``); the driver builds the dict those methods take.
    """

    config: CheckpointRef | RunnableConfig
    before: str | None = None


@final
@dataclasses.dataclass(slots=True)
class SaveCheckpoint:
    """Store this checkpoint under ``config`` (a ``saver.commit``); send back where it is.

    What is sent back has ``config``'s form: a `CheckpointRef` for a ref (the run's
    own saves), a config dict for a dict (``update_state``'s).

    With ``writes``, those task writes are saved against ``config``'s checkpoint
    first, in the same commit. With ``first``, ``first`` is stored under ``config``,
    and the writes and this checkpoint after it (a new run's input checkpoint with
    its start step's; a saver whose ``batches`` is true).
    """

    config: CheckpointRef | RunnableConfig
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    new_versions: ChannelVersions
    writes: Sequence[TaskWrites] = ()
    first: CheckpointPut | None = None
    release: bool = False
    """The run's last write: let the thread's lease go with it (see ``SaveWrites``)."""
    own_writes: Sequence[TaskWrites] = ()
    """Writes against this checkpoint itself, stored with it in one commit (a migrated
    checkpoint and its tasks' writes: `pausepoint.loop.migrate`)."""


@final
@dataclasses.dataclass(slots=True)
class SaveWrites:
    """Store a task's writes against ``config``'s checkpoint: one ``saver.commit``.

    With ``if_head``, only if ``config``'s checkpoint is still the newest of its
    thread (``StepCommit.if_head``; a saver whose ``supports_leases`` is true): an
    answer stored while another run holds the thread.
    """

    config: CheckpointRef | RunnableConfig
    writes: Sequence[tuple[str, object]]
    task_id: str
    task_path: str
    if_head: bool = False
    release: bool = False
    """The run's last write: the driver lets the thread's lease go with it, in the same
    commit (``StepCommit.release``) where the saver fences writes, else right after it;
    the loop counts the lease as gone once the write is done."""


@final
@dataclasses.dataclass(frozen=True, slots=True)
class ClaimThread:
    """``saver.acquire_lease(thread_id, owner, ttl)``; send back the `LeaseClaim`.

    While the driver holds a lease it fences the run's writes with it (``lease=``, on
    a saver whose ``supports_leases`` is true), and it releases a lease the loop did
    not release itself (the run was closed or cancelled) when it stops.
    """

    thread_id: str
    owner: str
    """The lease's owner: the run's process (`pausepoint.drivers.owners`)."""
    ttl: float
    run: str
    """The run's own token: which run of the process holds the thread."""
    read: CheckpointRef | None = None
    """Read this checkpoint with the claim where the saver can (``acquire_lease(read=)``)."""


@final
@dataclasses.dataclass(frozen=True, slots=True)
class ReleaseThread:
    """``saver.release_lease(thread_id, owner)``, for the run ``run``."""

    thread_id: str
    owner: str
    run: str


@final
@dataclasses.dataclass(frozen=True, slots=True)
class Sleep:
    """Wait ``seconds`` (without blocking an event loop); send back None."""

    seconds: float


@final
@dataclasses.dataclass(slots=True)
class Emit:
    """Hand a stream chunk to the caller: ``(namespace, mode, payload)``."""

    ns: tuple[str, ...]
    mode: str
    payload: object


@final
@dataclasses.dataclass(slots=True)
class RunTasks:
    """Start running these tasks concurrently; send back None, then answer `NextOutcome`s.

    A driver may instead run a lone task to its end at once and send back its
    `Outcome` (after passing on the stream chunks it made); no
    `NextOutcome` follows then. Not when ``live``: the caller reads chunks
    the tasks make while they run (``custom``, ``messages``, subgraphs, an
    entrypoint's calls), so they must reach it before the task ends.
    """

    tasks: Sequence[ExecTask]
    live: bool = False


@final
@dataclasses.dataclass(frozen=True, slots=True)
class NextOutcome:
    """Wait for the next started task to finish; send back its `Outcome`."""


@final
@dataclasses.dataclass(slots=True)
class Outcome:
    """A finished task: its writes, or the exception it ended with (never both)."""

    task: Task
    writes: Sequence[tuple[str, object]] = ()
    error: BaseException | None = None


class Stopped(BaseException):
    """Thrown into the loop by a driver whose run is stopped early.

    A cancelled ``ainvoke``, a stream closed before its end: the driver stops
    starting work and throws this at the loop's pending effect. Where the loop
    waits for a task's outcome (`NextOutcome`, or the lone task of
    `RunTasks`), ``outcome`` carries it: the loop takes it, keeps taking
    the step's outcomes (each sent the same way), then ends as a failed run does,
    saving what its durability owes. Anywhere else ``outcome`` is None and the
    loop ends at once, the same way. A driver then raises its own stop
    (``CancelledError``, ``GeneratorExit``), never this.
    """

    def __init__(self, outcome: Outcome | None = None) -> None:
        super().__init__()
        self.outcome = outcome

    def taken(self) -> Outcome:
        """The outcome carried; with none, raise this again (the loop ends now)."""
        if self.outcome is None:
            raise self
        return self.outcome


@final
@dataclasses.dataclass(slots=True)
class Call:
    """Inside a task body: call a user function (sync or async) and send back its result.

    ``sync`` is used by the sync driver, ``async_`` (when set) by the async driver;
    with no ``async_`` the async driver runs ``sync`` in a worker thread.
    """

    sync: Callable[..., Any]
    async_: Callable[..., Any] | None
    args: tuple[object, ...]
    kwargs: Mapping[str, object]


SaverEffect = LoadCheckpoint | SaveCheckpoint | SaveWrites | ClaimThread | ReleaseThread | Sleep
"""What a driver carries out with its saver (or its clock): ``perform``'s input."""

Effect = SaverEffect | RunTasks | NextOutcome | Emit
"""Everything the loop yields to its driver."""

Reply: TypeAlias = (
    "CheckpointTuple | CheckpointRef | RunnableConfig | LeaseClaim | Outcome | bool | None"
)
"""What a driver sends back into the loop for an effect (each effect's docstring says
which): a read checkpoint, where a checkpoint was saved, a lease claim, a task's
outcome, whether a released lease was nudged, or nothing."""
