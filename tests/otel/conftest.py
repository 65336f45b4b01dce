"""Fixtures for the OpenTelemetry tests: an in-memory exporter, instrumented runs.

PostgreSQL tests need ``PAUSEPOINT_PG_URL`` (``eval "$(scripts/postgres.sh start)"``),
as tests/savers' do: they skip without it locally and fail without it in CI.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import pausepoint.otel


class Spans:
    """The spans the runs of a test made, finished ones only."""

    def __init__(self, exporter: InMemorySpanExporter, provider: TracerProvider) -> None:
        self.exporter = exporter
        self.provider = provider
        """The provider the runs report to (a user's own spans: ``provider.get_tracer``)."""

    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.all() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {self.names()}"
        return found[0]

    def names(self) -> list[str]:
        return [s.name for s in self.all()]

    def clear(self) -> None:
        self.exporter.clear()


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    ctx = span.context
    assert ctx is not None
    return ctx.span_id


def trace_id(span: ReadableSpan) -> int:
    ctx = span.context
    assert ctx is not None
    return ctx.trace_id


@pytest.fixture
def spans() -> Iterator[Spans]:
    """Runs instrumented with a provider of their own, recorded in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    pausepoint.otel.instrument(provider)
    try:
        yield Spans(exporter, provider)
    finally:
        pausepoint.otel.uninstrument()
        provider.shutdown()


@pytest.fixture(scope="session")
def pg_url() -> str:
    url = os.environ.get("PAUSEPOINT_PG_URL")
    if url:
        return url
    how = 'start a server with: eval "$(scripts/postgres.sh start)"'
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but PAUSEPOINT_PG_URL is not: {how}", pytrace=False)
    pytest.skip(f"PAUSEPOINT_PG_URL is not set; {how}")


@pytest.fixture
def pg_schema(pg_url: str) -> Iterator[str]:
    """A fresh, empty schema for one test, dropped afterwards."""
    import psycopg

    name = f"pp_otel_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")  # type: ignore[arg-type]
    yield name
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {name} CASCADE")  # type: ignore[arg-type]
