"""OpenTelemetry spans for pausepoint runs: ``pip install 'pausepoint[otel]'``.

``instrument()`` makes every run from then on report spans (a run, its steps, its
nodes and ``@task`` calls) to a tracer provider; ``uninstrument()`` stops it. A
pause ends the run's span with status OK, and the run that answers a question
links to the span that asked it, across processes and days (docs/observability.md).
"""

from __future__ import annotations

try:
    import opentelemetry.trace as _trace
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError(
        f"pausepoint.otel needs the 'otel' extra ({exc.name} is missing): "
        "pip install 'pausepoint[otel]'"
    ) from exc

from pausepoint.otel.attributes import (
    ANSWERS,
    CHECKPOINT_ID,
    CHECKPOINT_NS,
    CONVERSATION_ID,
    GRAPH,
    INTERRUPTED,
    NODE,
    PAUSED,
    QUESTIONS,
    STEP,
    TASK_ID,
    THREAD_ID,
)
from pausepoint.otel.enabling import instrument, is_instrumented, uninstrument

del _trace  # imported only to name the missing extra

__all__ = [
    "ANSWERS",
    "CHECKPOINT_ID",
    "CHECKPOINT_NS",
    "CONVERSATION_ID",
    "GRAPH",
    "INTERRUPTED",
    "NODE",
    "PAUSED",
    "QUESTIONS",
    "STEP",
    "TASK_ID",
    "THREAD_ID",
    "instrument",
    "is_instrumented",
    "uninstrument",
]
