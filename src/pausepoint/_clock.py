"""The clock deadlines are read against: the wall clock, or one a caller sets.

A deadline given as a ``timedelta`` is resolved when its question is first asked,
and the sweeper decides what has expired, both against `utc_now`. The clock is a
context variable rather than an argument of ``compile()`` or a config key because
the reading happens deep inside a running node (``interrupt()``), in worker
threads and asyncio tasks that copy the caller's context, and in subgraphs: a
context variable reaches all of them with no plumbing, and ``with use_clock(...)``
scopes it to one test or one request. Importing nothing of pausepoint, it can be
imported anywhere.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable, Generator
from contextvars import ContextVar

__all__ = ["Clock", "use_clock", "utc_now"]

Clock = Callable[[], datetime.datetime]
"""A function returning the current time, timezone-aware."""

_CLOCK: ContextVar[Clock | None] = ContextVar("pausepoint_clock", default=None)


def utc_now() -> datetime.datetime:
    """The current time in UTC: the clock set by `use_clock`, else the wall clock.

    Raises:
        ValueError: The set clock returned a naive datetime.
    """
    clock = _CLOCK.get()
    if clock is None:
        return datetime.datetime.now(datetime.UTC)
    return as_utc(clock(), "the clock given to use_clock()")


def as_utc(moment: datetime.datetime, what: str) -> datetime.datetime:
    """``moment`` in UTC; a naive datetime is refused (its zone would be a guess)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(
            f"{what} is a naive datetime ({moment.isoformat()}): its time zone would be a "
            "guess. Give an aware one, e.g. datetime.now(UTC) or "
            "datetime(2030, 1, 1, tzinfo=UTC)"
        )
    return moment.astimezone(datetime.UTC)


@contextlib.contextmanager
def use_clock(clock: Clock | datetime.datetime) -> Generator[None]:
    """Read deadlines against ``clock`` inside the ``with`` block (tests, simulations).

    A context variable, not an argument of ``compile()`` or a config key: the clock is
    read inside a running node (``interrupt()`` resolving a ``timedelta``), in worker
    threads and asyncio tasks, and in subgraphs, which all copy the caller's context;
    so one ``with`` reaches them all, and ends with the block.

    Args:
        clock: A function returning the current (aware) time, or a fixed aware
            ``datetime``. Worker threads and asyncio tasks started inside the block
            see it too (they copy the caller's context).
    """
    if isinstance(clock, datetime.datetime):
        fixed = as_utc(clock, "the time given to use_clock()")
        clock = lambda: fixed  # noqa: E731
    token = _CLOCK.set(clock)
    try:
        yield
    finally:
        _CLOCK.reset(token)
