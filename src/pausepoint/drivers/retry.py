"""Retry decisions shared by both drivers (pure: the drivers do the sleeping)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from pausepoint.types import RetryPolicy

__all__ = ["retry_delay"]


def retry_delay(policies: Sequence[RetryPolicy], attempt: int, exc: Exception) -> float | None:
    """Seconds to wait before attempt ``attempt + 1``, or ``None`` to give up.

    ``attempt`` counts the attempts made so far (1 after the first failure). The
    first policy whose ``retry_on`` matches ``exc`` applies.
    """
    policy = next((p for p in policies if _matches(p, exc)), None)
    if policy is None or attempt >= policy.max_attempts:
        return None
    interval = min(
        policy.max_interval, policy.initial_interval * policy.backoff_factor ** (attempt - 1)
    )
    if policy.jitter:
        interval += random.uniform(0, 1)
    return interval


def _matches(policy: RetryPolicy, exc: Exception) -> bool:
    retry_on = policy.retry_on
    if isinstance(retry_on, type):
        return isinstance(exc, retry_on)
    if isinstance(retry_on, Sequence):
        return isinstance(exc, tuple(retry_on))  # pyright: ignore[reportUnknownArgumentType]
    return bool(retry_on(exc))
