"""Turning the spans on and off: `instrument`, `uninstrument`, `is_instrumented`."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from opentelemetry import trace
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, TracerProvider

from pausepoint.observing import OBSERVING, set_observer
from pausepoint.otel.spans import SpanObserver

__all__ = ["instrument", "is_instrumented", "uninstrument"]

_SCOPE = "pausepoint"


def instrument(tracer_provider: TracerProvider | None = None) -> None:
    """Report every run started from now on as spans, in this process.

    Args:
        tracer_provider: Where spans go. None: OpenTelemetry's global provider,
            looked up at each run, so one configured after this call is used, and
            while none is configured a run makes no span and pays one check.

    Calling it again replaces the provider. Runs already started keep theirs.
    """
    if tracer_provider is None:
        # (This loads a provider OTEL_PYTHON_TRACER_PROVIDER names, as a global one.)
        tracer = trace.get_tracer(_SCOPE, _version())
        observer = SpanObserver(tracer, _global_configured)
    else:
        tracer = tracer_provider.get_tracer(_SCOPE, _version())
        observer = SpanObserver(tracer, _always)
    set_observer(observer)


def uninstrument() -> None:
    """Stop making spans for runs started from now on (a no-op if not instrumented)."""
    if isinstance(OBSERVING.observer, SpanObserver):
        set_observer(None)


def is_instrumented() -> bool:
    """Whether `instrument` is in effect."""
    return isinstance(OBSERVING.observer, SpanObserver)


_GLOBAL = "_TRACER_PROVIDER"
"""``opentelemetry.trace``'s module global holding the provider once one is set."""
_UNKNOWN = object()


def _global_configured() -> bool:
    """A tracer provider has been set globally (the API's default records nothing).

    Asked when each run starts. The API's own answer, ``get_tracer_provider()``, looks
    an environment variable up while none is set, and a missing ``os.environ`` key
    raises and catches two ``KeyError``s: most of what an instrumented run paid with
    no provider (benchmarks/README.md, "OpenTelemetry's cost"). So the API's module
    global is read first: None means nothing set (`instrument` loaded any provider the
    environment names); an API without that global is asked the public way.
    """
    provider = getattr(trace, _GLOBAL, _UNKNOWN)
    if provider is None:
        return False
    if provider is _UNKNOWN:  # pragma: no cover - another opentelemetry-api layout
        provider = trace.get_tracer_provider()
    return not isinstance(provider, ProxyTracerProvider | NoOpTracerProvider)


def _always() -> bool:
    return True


def _version() -> str | None:
    try:
        return version("pausepoint")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return None
