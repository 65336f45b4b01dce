"""A span's context as stored with a question: a W3C ``traceparent`` string.

``00-<trace id, 32 hex>-<span id, 16 hex>-<flags, 2 hex>``: the form every
OpenTelemetry propagator reads, so it outlives this version of pausepoint.
"""

from __future__ import annotations

import re

from opentelemetry.trace import SpanContext, TraceFlags

__all__ = ["from_traceparent", "to_traceparent"]

_FORM = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def to_traceparent(ctx: SpanContext) -> str:
    """``ctx`` as a ``traceparent`` string."""
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{ctx.trace_flags:02x}"


def from_traceparent(value: object) -> SpanContext | None:
    """The remote span context a stored ``traceparent`` names; None for anything else.

    A value this version does not read is no reason to fail a resume.
    """
    if not isinstance(value, str) or (m := _FORM.fullmatch(value)) is None:
        return None
    ctx = SpanContext(
        int(m[1], 16), int(m[2], 16), is_remote=True, trace_flags=TraceFlags(int(m[3], 16))
    )
    return ctx if ctx.is_valid else None
