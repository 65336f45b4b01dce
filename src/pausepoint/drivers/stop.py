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
    Emit,
    NextOutcome,
    Outcome,
    ReleaseThread,
    RunTasks,
    SaveCheckpoint,
    SaveWrites,
    Stopped,
)

__all__ = ["wind_down"]

_SAVES = frozenset({SaveWrites, SaveCheckpoint, ReleaseThread})


def wind_down(
    loop: Generator[Any, Any, Any], effect: Any, ready: Outcome | None = None
) -> Generator[Any, Any, None]:
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
            kind: type[Any] = type(effect)  # pyright: ignore[reportUnknownVariableType]
            if kind is NextOutcome:
                effect = loop.throw(Stopped((yield effect)))
            elif kind is RunTasks and ready is not None:
                effect, ready = loop.throw(Stopped(ready)), None
            elif kind is Emit:  # nobody reads the stream any more
                effect = loop.send(None)
            elif kind in _SAVES:
                done, error = yield effect
                effect = loop.throw(error) if error is not None else loop.send(done)
            else:  # nothing new starts (a step, a claim, a read, a wait)
                effect = loop.throw(Stopped())
    except BaseException:  # however the loop ends: the driver raises the caller's stop
        return
