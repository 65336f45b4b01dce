"""A pytest plugin that runs a whole session instrumented, spans recorded in memory.

``pytest -p tests.otel.instrument_all tests/compat/...``: every run of the session
makes spans and stores each question's asking span (``__asked_span__``), so the
differential tests prove that tracing changes nothing a user observes (state,
history, tasks, interrupts, stream events) against LangGraph.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import pausepoint.otel

EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider()
_PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))


def pytest_configure(config: pytest.Config) -> None:
    pausepoint.otel.instrument(_PROVIDER)


_SEEN = {"spans": 0, "links": 0}


@pytest.fixture(autouse=True)
def _spans_of_this_test_only() -> Iterator[None]:
    """Keep the exporter's memory small: each test starts with none recorded."""
    assert pausepoint.otel.is_instrumented(), "a test uninstrumented the session"
    EXPORTER.clear()
    yield
    finished = EXPORTER.get_finished_spans()
    _SEEN["spans"] += len(finished)
    _SEEN["links"] += sum(len(s.links) for s in finished)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminalreporter.write_line(
        f"pausepoint.otel: every run instrumented; {_SEEN['spans']} spans recorded, "
        f"{_SEEN['links']} links from answers to the spans that asked"
    )
