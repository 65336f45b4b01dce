"""Stopping a run early, for both drivers: a cancelled ``ainvoke``, a stream closed early.

The caller is gone, so nothing more is streamed and nothing new starts; but the
run still owes what its durability promises. `wind_down` drives the loop to
its end from the effect it was waiting on when the stop came: it hands the loop
the outcomes of the step's tasks (finished, or cancelled by the async driver) by
throwing `pausepoint.loop.effects.Stopped` at it, lets it save their
writes, and then lets it end as a failed run ends (durability ``"exit"`` writes
its checkpoint, the thread's lease is let go). The driver carries out only the
effects this generator passes on, and raises its own stop afterwards.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from pausepoint.loop.effects import (
    Effect,
    Emit,
    NextOutcome,
    Outcome,
    ReleaseThread,
    Reply,
    RunTasks,
    SaveCheckpoint,
    SaverEffect,
    SaveWrites,
    Stopped,
)

__all__ = ["Written", "wind_down"]

Written = tuple[Reply, Exception | None]
"""What a driver sends back for a write: its result, or the error it raised."""


def wind_down(
    loop: Generator[Effect, Reply, object], effect: Effect | None, ready: Outcome | None = None
) -> Generator[NextOutcome | SaverEffect, Any, None]:
    """Drive ``loop``, stopped while waiting on ``effect``, to its end.

    Args:
        loop: The run's loop generator.
        effect: The effect the loop waits on (its answer was not sent).
        ready: For a lone task's `RunTasks` the sync driver ran in place,
            the outcome it did not send yet.

    Yields:
        `NextOutcome` (send back the next task outcome), or a saver write
        (``SaveWrites``, ``SaveCheckpoint``, ``ReleaseThread``: send back
        ``(result, error)``, as the drivers' ``_carry_out`` returns). A write the
        stop interrupted is made again: saver writes are idempotent.
    """
    try:
        while True:
            if type(effect) is NextOutcome:
                effect = loop.throw(Stopped((yield effect)))
            elif type(effect) is RunTasks and ready is not None:
                effect, ready = loop.throw(Stopped(ready)), None
            elif type(effect) is Emit:  # nobody reads the stream any more
                effect = loop.send(None)
            elif (
                type(effect) is SaveWrites
                or type(effect) is SaveCheckpoint
                or type(effect) is ReleaseThread
            ):
                written: Written = yield effect
                done, error = written
                effect = loop.throw(error) if error is not None else loop.send(done)
            else:  # nothing new starts (a step, a claim, a read, a wait)
                effect = loop.throw(Stopped())
    except BaseException:  # however the loop ends: the driver raises the caller's stop
        return
