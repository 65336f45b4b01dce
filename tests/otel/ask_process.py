"""One side of a question asked in one process and answered in another (test_links.py).

Usage: python ask_process.py BACKEND DSN PHASE DRIVER SPANS_FILE [--plain]
BACKEND: sqlite or postgres; PHASE: ask (starts the run, which pauses) or answer
(``Command(resume="yes")``); DRIVER: sync or async. Every finished span is appended
to SPANS_FILE as one JSON line (ids in hex). With ``--plain`` the process is not
instrumented at all (no pausepoint.otel import).
"""

from __future__ import annotations

import asyncio
import json
import operator
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

from pausepoint.graph import END, START, StateGraph
from pausepoint.types import Command, interrupt


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def build() -> StateGraph[Any]:
    def ask(_: State) -> dict[str, Any]:
        return {"log": [f"ask:{interrupt('ship it?')}"]}

    graph = StateGraph(State)
    graph.add_node("prepare", lambda _s: {"log": ["prepare"]})
    graph.add_node("ask", ask)
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "ask")
    graph.add_edge("ask", END)
    return graph


def trace_to(path: Path) -> Any:
    """Instrument pausepoint with a provider whose spans go to ``path`` as JSON lines."""
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult as Result

    import pausepoint.otel

    class FileExporter(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> Result:
            with path.open("a") as f:
                for s in spans:
                    f.write(json.dumps(_record(s)) + "\n")
            return Result.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter()))
    pausepoint.otel.instrument(provider)
    return provider


def _record(span: Any) -> dict[str, Any]:
    return {
        "name": span.name,
        "trace_id": f"{span.context.trace_id:032x}",
        "span_id": f"{span.context.span_id:016x}",
        "status": span.status.status_code.name,
        "attributes": dict(span.attributes),
        "links": [
            {"trace_id": f"{ln.context.trace_id:032x}", "span_id": f"{ln.context.span_id:016x}"}
            for ln in span.links
        ],
    }


def run_sync(backend: str, dsn: str, inp: Any, config: Any) -> Any:
    if backend == "sqlite":
        from pausepoint.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(dsn) as saver:
            return build().compile(checkpointer=saver).invoke(inp, config)
    from pausepoint.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        return build().compile(checkpointer=saver).invoke(inp, config)


async def run_async(backend: str, dsn: str, inp: Any, config: Any) -> Any:
    if backend == "sqlite":
        from pausepoint.checkpoint.sqlite import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(dsn) as saver:
            return await build().compile(checkpointer=saver).ainvoke(inp, config)
    from pausepoint.checkpoint.postgres import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
        await saver.setup()
        return await build().compile(checkpointer=saver).ainvoke(inp, config)


def main() -> None:
    backend, dsn, phase, driver, spans_file = sys.argv[1:6]
    provider = None if "--plain" in sys.argv else trace_to(Path(spans_file))
    config: Any = {"configurable": {"thread_id": "asked-elsewhere"}}
    inp: Any = {"log": []} if phase == "ask" else Command(resume="yes")
    if driver == "sync":
        result = run_sync(backend, dsn, inp, config)
    else:
        result = asyncio.run(run_async(backend, dsn, inp, config))
    if provider is not None:
        provider.shutdown()
    print(json.dumps({"log": result["log"], "interrupts": len(result.get("__interrupt__", []))}))


if __name__ == "__main__":
    main()
