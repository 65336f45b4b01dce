"""Single-writer threads: one run advances a thread at a time (issue 15, DESIGN §6).

A root run with a saver first takes the thread's lease (``ClaimThread``) and lets
it go when it pauses or ends: with its last write where it can tell which that is
(``release`` on the effect: the step that ends the run, a paused step's last
outcome), else with a ``ReleaseThread`` of its own. The lease lives in the saver, so
it holds across threads, processes and machines; it expires unless renewed (each
fenced write renews it), so a worker that died does not hold the thread forever
(and the driver frees at once the lease of a dead process of this host); and
while the driver holds it, it fences the run's writes with it, so a run whose
lease expired and was taken over cannot write any more (``LeaseLostError``).

A run that finds the thread busy writes nothing. It raises ``ThreadBusyError`` at
once — unless it is a resume that only answers questions still waiting (a second
reviewer of a parallel step, say): such a run waits, up to ``lease_wait``
seconds, for the run in flight to pause or end, then runs as usual, so two people
answering two questions of one step at the same moment both get their answer
used and the step completes once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any

from pausepoint.errors import ThreadBusyError
from pausepoint.loop import begin
from pausepoint.loop.breakpoints import pauses_at
from pausepoint.loop.effects import ClaimThread, Effect, LoadCheckpoint, Sleep
from pausepoint.loop.state import RunState, restore_saved
from pausepoint.loop.tasks import Task, triggered_pulls
from pausepoint.types import Command

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import LeaseClaim
    from pausepoint.loop.persistence import Persistence
    from pausepoint.loop.state import RunSetup

__all__ = ["RunLease", "claim", "ends_with_step"]


_FIRST_PAUSE = 0.005
"""Seconds of the first wait for a busy thread; each next one doubles, to 0.25 s."""


@dataclasses.dataclass(frozen=True, slots=True)
class RunLease:
    """The lease a root run takes on its thread: whose it is and for how long."""

    thread_id: str
    owner: str
    """The lease owner: the run's process (see `pausepoint.drivers.owners`)."""
    run: str
    """A token unique to the run."""
    ttl: float
    """Seconds the lease lasts unless renewed; each fenced write renews it."""
    wait: float = 0.0
    """Seconds a resume answering only waiting questions waits for a busy thread."""


def claim(
    run: RunSetup, state: RunState, persist: Persistence, lease: RunLease
) -> Generator[Effect, Any, None]:
    """Take the thread's lease (waiting for it if the run may); raise if busy."""
    read = begin.root_read(run)
    effect = ClaimThread(lease.thread_id, lease.owner, lease.ttl, lease.run, read)
    got: LeaseClaim = yield effect
    if not got.acquired and lease.wait > 0 and (yield from _only_answers_waiting(run)):
        waited, pause = 0.0, _FIRST_PAUSE
        while not got.acquired and waited < lease.wait:
            yield Sleep(pause)
            waited, pause = waited + pause, min(pause * 2, 0.25)
            got = yield effect
    if not got.acquired:
        raise ThreadBusyError(lease.thread_id, got.holder.expires_at)
    persist.lease_taken()
    if got.read:  # the saver read the thread with the claim: begin.load uses it
        state.read_ahead = (read, got.checkpoint)


def _only_answers_waiting(run: RunSetup) -> Generator[Effect, Any, bool]:
    """Whether the run's input is a resume that answers only questions still waiting.

    Read from the thread's newest checkpoint; a refused resume (an answer that
    conflicts with a stored one, an unknown id, ...) raises its error now, with
    nothing written, as it would once the thread is free. The run's own state is
    left as new: it reads the thread again when it holds the lease.
    """
    cmd: object = run.input
    if not isinstance(cmd, Command) or run.cfg.checkpoint_id:
        return False
    given: Command[Any] = cmd  # pyright: ignore[reportUnknownVariableType]
    if given.resume is None or given.update is not None or given.goto:
        return False
    saved = yield LoadCheckpoint(run.cfg.with_checkpoint(None))
    if saved is None:
        return False
    # Read into a state of its own: the run starts as new once it holds the thread.
    scratch = RunState()
    restore_saved(run, scratch, saved)
    begin.check_answers(run, scratch, given.resume)
    return any(answers is not None for answers in scratch.answered.values())


def ends_with_step(
    run: RunSetup, state: RunState, persist: Persistence, ran: Sequence[Task]
) -> bool:
    """Whether the checkpoint this step is about to save is the run's last write.

    So it lets the lease go with it (``SaveCheckpoint.release``): no round trip of
    its own to end the run. True when the run holds the lease and saves as it goes,
    and no step follows: no task is triggered, or ``interrupt_after`` pauses here.
    Any other way out (a breakpoint before the next step, the recursion limit, an
    error) lets it go with a ``ReleaseThread`` of its own.
    """
    # Only where the saver lets the lease go with a checkpoint, in the same round trip
    # (``Persistence.releases_with_step``).
    if not persist.releases_with_step or state.step + 1 > state.stop:
        return False
    after = run.opts.interrupt_after
    if after and pauses_at(state.checkpoint, after, ran):
        return True
    pulls = triggered_pulls(run.spec, state.checkpoint, state.channels, state.updated)
    if pulls is None:  # pushes (Send): a step follows
        return False
    state.next_pulls = ((state.step + 1, state.epoch), pulls)  # the next step need not look again
    return not pulls
