"""The spans of a run: their tree, their attributes, their status (both drivers)."""

from __future__ import annotations

import itertools
import operator
import subprocess
import sys
from typing import Annotated, Any, TypedDict

import pytest
from opentelemetry.trace import StatusCode
from tests.conftest import Driver
from tests.otel.conftest import Spans, parent_of, span_id, trace_id

import pausepoint.otel
from pausepoint import END, START, Command, InMemorySaver, Send, StateGraph, interrupt
from pausepoint.func import entrypoint, task


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def cfg(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def chain(*names: str, saver: Any = None) -> Any:
    graph = StateGraph(State)
    for name in names:
        graph.add_node(name, lambda _s, n=name: {"log": [n]})
    graph.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        graph.add_edge(a, b)
    graph.add_edge(names[-1], END)
    return graph.compile(checkpointer=saver if saver is not None else InMemorySaver())


def test_a_chain_is_a_run_with_a_step_per_node_and_a_node_in_each(drive: Driver, spans: Spans):
    graph = chain("a", "b", "c")
    assert drive.invoke(graph, {"log": []}, cfg("t1")) == {"log": ["a", "b", "c"]}
    run = spans.one("run LangGraph")
    assert parent_of(run) is None
    steps = {s.attributes["pausepoint.step"]: s for s in spans.all() if s.name.startswith("step ")}
    nodes = {s.name: s for s in spans.all() if s.name.startswith("node ")}
    assert set(nodes) == {"node a", "node b", "node c"}
    for node in nodes.values():
        step = steps[node.attributes["pausepoint.step"]]
        assert parent_of(node) == span_id(step)
        assert parent_of(step) == span_id(run)
        assert node.status.status_code == StatusCode.OK
        assert node.attributes["pausepoint.thread_id"] == "t1"
        assert step.attributes["pausepoint.checkpoint_id"]
    assert [nodes[f"node {n}"].attributes["pausepoint.step"] for n in "abc"] == [1, 2, 3]
    assert {trace_id(s) for s in spans.all()} == {trace_id(run)}
    assert run.status.status_code == StatusCode.OK
    assert run.attributes["pausepoint.thread_id"] == "t1"
    assert run.attributes["gen_ai.conversation.id"] == "t1"
    state = drive.get_state(graph, cfg("t1"))
    head = state.config["configurable"]["checkpoint_id"]
    assert run.attributes["pausepoint.checkpoint_id"] == head
    assert "pausepoint.paused" not in run.attributes


def test_stream_is_a_run_too(drive: Driver, spans: Spans):
    graph = chain("a", "b")
    drive.stream(graph, {"log": []}, cfg("s"), stream_mode="updates")
    assert spans.one("run LangGraph").status.status_code == StatusCode.OK
    assert sorted(n for n in spans.names() if n.startswith("node ")) == ["node a", "node b"]


def test_subgraphs_nest_under_their_parent_nodes_span(drive: Driver, spans: Spans):
    inner = _named_chain("inner", "leaf")
    middle = StateGraph(State)
    middle.add_node("inner_node", inner)
    middle.add_edge(START, "inner_node")
    middle.add_edge("inner_node", END)
    middle_graph = middle.compile(name="middle")
    outer = StateGraph(State)
    outer.add_node("middle_node", middle_graph)
    outer.add_edge(START, "middle_node")
    outer.add_edge("middle_node", END)
    graph = outer.compile(checkpointer=InMemorySaver(), name="outer")

    assert drive.invoke(graph, {"log": []}, cfg("sub")) == {"log": ["leaf"]}
    root = spans.one("run outer")
    middle_run = spans.one("run middle")
    inner_run = spans.one("run inner")
    assert parent_of(middle_run) == span_id(spans.one("node middle_node"))
    assert parent_of(inner_run) == span_id(spans.one("node inner_node"))
    assert parent_of(spans.one("node leaf")) is not None
    # depth 2: leaf's node span → its step → inner's run → inner_node → ... → the root run
    chain_up = _ancestors(spans, spans.one("node leaf"))
    assert [s.name for s in chain_up if s.name.startswith("run ")] == [
        "run inner",
        "run middle",
        "run outer",
    ]
    assert chain_up[-1] is root
    assert inner_run.attributes["pausepoint.checkpoint_ns"].startswith("middle_node:")


def test_task_calls_nest_under_their_callers_span(drive: Driver, spans: Spans):
    user = spans.provider.get_tracer("user")

    @task
    def square(x: int) -> int:
        with user.start_as_current_span("inside square"):
            return x * x

    @entrypoint(checkpointer=InMemorySaver())
    def total(numbers: list[int]) -> int:
        return sum(f.result() for f in [square(n) for n in numbers])

    assert drive.invoke(total, [1, 2, 3], cfg("f")) == 14
    caller = spans.one("node total")
    calls = spans.named("task square")
    assert len(calls) == 3
    for call in calls:
        assert parent_of(call) == span_id(caller)
        assert call.status.status_code == StatusCode.OK
        assert call.attributes["pausepoint.node"] == "square"
    assert {parent_of(s) for s in spans.named("inside square")} == {span_id(c) for c in calls}


def test_send_fan_out_is_one_step_with_a_node_span_per_packet(drive: Driver, spans: Spans):
    def fan(_: State) -> list[Send]:
        return [Send("work", {"log": [str(n)]}) for n in range(3)]

    graph = StateGraph(State)
    graph.add_node("work", lambda s: {"log": [f"w{s['log'][0]}"]})
    graph.add_conditional_edges(START, fan, ["work"])
    graph.add_edge("work", END)
    app = graph.compile(checkpointer=InMemorySaver())
    assert sorted(drive.invoke(app, {"log": []}, cfg("send"))["log"]) == ["w0", "w1", "w2"]
    works = spans.named("node work")
    assert len(works) == 3
    assert len({parent_of(w) for w in works}) == 1
    assert len({w.attributes["pausepoint.task_id"] for w in works}) == 3
    step = next(s for s in spans.all() if s.context and s.context.span_id == parent_of(works[0]))
    assert parent_of(step) == span_id(spans.one("run LangGraph"))


def test_an_interrupt_ends_the_run_ok_and_paused(drive: Driver, spans: Spans):
    graph = _asking_graph()
    out = drive.invoke(graph, {"log": []}, cfg("ask"))
    assert len(out["__interrupt__"]) == 1
    run = spans.one("run LangGraph")
    assert run.status.status_code == StatusCode.OK
    assert run.attributes["pausepoint.paused"] is True
    assert run.attributes["pausepoint.questions"] == 1
    ask = spans.one("node ask")
    assert ask.status.status_code == StatusCode.OK
    assert ask.attributes["pausepoint.interrupted"] is True
    assert not [s for s in spans.all() if s.status.status_code == StatusCode.ERROR]
    spans.clear()
    drive.invoke(graph, Command(resume="yes"), cfg("ask"))
    resumed = spans.one("run LangGraph")
    assert "pausepoint.paused" not in resumed.attributes
    assert resumed.attributes["pausepoint.answers"] == 1
    assert [link.context.span_id for link in resumed.links] == [span_id(ask)]


def test_a_pause_in_a_subgraph_is_ok_at_every_level(drive: Driver, spans: Spans):
    inner = _asking_graph(name="inner", saver=False)
    outer = StateGraph(State)
    outer.add_node("sub", inner)
    outer.add_edge(START, "sub")
    outer.add_edge("sub", END)
    graph = outer.compile(checkpointer=InMemorySaver(), name="outer")
    drive.invoke(graph, {"log": []}, cfg("nested"))
    assert not [s for s in spans.all() if s.status.status_code == StatusCode.ERROR]
    assert spans.one("run inner").attributes["pausepoint.paused"] is True
    assert spans.one("run outer").attributes["pausepoint.paused"] is True
    asked = spans.one("node ask")
    spans.clear()
    drive.invoke(graph, Command(resume="yes"), cfg("nested"))
    inner_run = spans.one("run inner")  # the run that answers the subgraph's question
    assert [link.context.span_id for link in inner_run.links] == [span_id(asked)]


def test_a_task_calls_question_links_from_the_call_that_takes_its_answer(
    drive: Driver, spans: Spans
):
    @task
    def approve(item: str) -> str:
        return interrupt(f"approve {item}?")

    @entrypoint(checkpointer=InMemorySaver())
    def flow(item: str) -> str:
        return approve(item).result()

    assert drive.invoke(flow, "x", cfg("tq"))["__interrupt__"][0].value == "approve x?"
    asked = spans.one("task approve")
    assert asked.attributes["pausepoint.interrupted"] is True
    spans.clear()
    assert drive.invoke(flow, Command(resume="ok"), cfg("tq")) == "ok"
    answering = spans.one("task approve")
    assert [link.context.span_id for link in answering.links] == [span_id(asked)]


def test_an_exception_sets_error(drive: Driver, spans: Spans):
    def boom(_: State) -> dict[str, Any]:
        raise ValueError("no luck")

    graph = StateGraph(State)
    graph.add_node("boom", boom)
    graph.add_edge(START, "boom")
    app = graph.compile(checkpointer=InMemorySaver())
    with pytest.raises(ValueError, match="no luck"):
        drive.invoke(app, {"log": []}, cfg("err"))
    for name in ("run LangGraph", "node boom"):
        span = spans.one(name)
        assert span.status.status_code == StatusCode.ERROR
        assert "ValueError" in (span.status.description or "")
    assert any(e.name == "exception" for e in spans.one("node boom").events)


def test_a_run_without_a_checkpointer_has_no_thread_attributes(spans: Spans):
    graph = StateGraph(State)
    graph.add_node("a", lambda _s: {"log": ["a"]})
    graph.add_edge(START, "a")
    assert graph.compile().invoke({"log": []}) == {"log": ["a"]}
    run = spans.one("run LangGraph")
    assert "pausepoint.thread_id" not in run.attributes
    assert spans.one("node a").status.status_code == StatusCode.OK


def test_uninstrumented_runs_make_no_spans(spans: Spans):
    pausepoint.otel.uninstrument()
    assert not pausepoint.otel.is_instrumented()
    chain("a").invoke({"log": []}, cfg("off"))
    assert spans.all() == []


_NO_TRACER = """
import pausepoint.otel
from pausepoint import InMemorySaver, StateGraph, START, interrupt, Command
from typing import TypedDict

class S(TypedDict):
    x: str

def ask(s):
    return {"x": interrupt("ok?")}

pausepoint.otel.instrument()  # the global provider: none is configured
assert pausepoint.otel.is_instrumented()
g = StateGraph(S)
g.add_node("ask", ask)
g.add_edge(START, "ask")
saver = InMemorySaver()
app = g.compile(checkpointer=saver)
c = {"configurable": {"thread_id": "t"}}
assert app.invoke({"x": ""}, c)["__interrupt__"]
assert "__asked_span__" not in {w.channel for w in saver.get_tuple(c).pending_writes}
assert app.invoke(Command(resume="yes"), c) == {"x": "yes"}
print("ok")
"""


def test_no_tracer_configured_no_spans_no_errors():
    """Instrumented, but no tracer provider set: runs work, nothing is stored for links."""
    done = subprocess.run(
        [sys.executable, "-c", _NO_TRACER], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


_PROVIDER_AFTER = """
import pausepoint.otel
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pausepoint import StateGraph, START
from typing import TypedDict

class S(TypedDict):
    x: str

g = StateGraph(S)
g.add_node("a", lambda s: {"x": s["x"] + "a"})
g.add_edge(START, "a")
app = g.compile()
pausepoint.otel.instrument()  # before any provider is configured
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
assert app.invoke({"x": ""}) == {"x": "a"}
assert exporter.get_finished_spans() == ()
trace.set_tracer_provider(provider)  # configured afterwards: the next run is traced
assert app.invoke({"x": ""}) == {"x": "a"}
print(sorted(s.name for s in exporter.get_finished_spans()))
"""


def test_a_global_provider_configured_after_instrument_is_used():
    done = subprocess.run(
        [sys.executable, "-c", _PROVIDER_AFTER], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['node a', 'run LangGraph', 'step 0', 'step 1']"


_EXTRA_ABSENT = """
import sys
sys.modules["opentelemetry"] = None  # as if the extra were not installed
import pausepoint
from pausepoint import StateGraph, START
try:
    import pausepoint.otel
except ImportError as exc:
    print(exc)
"""


def test_without_the_extra_the_import_error_names_it():
    done = subprocess.run(
        [sys.executable, "-c", _EXTRA_ABSENT], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "pausepoint.otel needs the 'otel' extra" in done.stdout
    assert "pip install 'pausepoint[otel]'" in done.stdout


_CORE_ALONE = """
import sys
from pausepoint import InMemorySaver, StateGraph, START, interrupt, Command
from typing import TypedDict

class S(TypedDict):
    x: str

g = StateGraph(S)
g.add_node("ask", lambda s: {"x": interrupt("ok?")})
g.add_edge(START, "ask")
app = g.compile(checkpointer=InMemorySaver())
c = {"configurable": {"thread_id": "t"}}
app.invoke({"x": ""}, c)
app.invoke(Command(resume="yes"), c)
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""


def test_the_core_never_imports_opentelemetry():
    done = subprocess.run(
        [sys.executable, "-c", _CORE_ALONE], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --- helpers ---------------------------------------------------------------------------


def _named_chain(name: str, node: str) -> Any:
    graph = StateGraph(State)
    graph.add_node(node, lambda _s: {"log": [node]})
    graph.add_edge(START, node)
    graph.add_edge(node, END)
    return graph.compile(name=name)


def _asking_graph(name: str = "LangGraph", saver: bool = True) -> Any:
    def ask(_: State) -> dict[str, Any]:
        return {"log": [f"ask:{interrupt('ship it?')}"]}

    graph = StateGraph(State)
    graph.add_node("prepare", lambda _s: {"log": ["prepare"]})
    graph.add_node("ask", ask)
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "ask")
    graph.add_edge("ask", END)
    return graph.compile(checkpointer=InMemorySaver() if saver else None, name=name)


def _ancestors(spans: Spans, span: Any) -> list[Any]:
    by_id = {span_id(s): s for s in spans.all()}
    out: list[Any] = []
    while (up := parent_of(span)) is not None:
        span = by_id[up]
        out.append(span)
    return out


def test_a_stream_closed_early_ends_its_spans_cancelled_not_failed(spans: Spans):
    graph = chain("a", "b", "c")
    stream = graph.stream({"log": []}, cfg("closed"), stream_mode="updates")
    assert next(stream) == {"a": {"log": ["a"]}}
    stream.close()
    run = spans.one("run LangGraph")
    assert run.attributes["pausepoint.cancelled"] is True
    assert run.status.status_code == StatusCode.UNSET
    assert not [s for s in spans.all() if s.status.status_code == StatusCode.ERROR]
    assert "node c" not in spans.names()


def test_the_provider_check_reads_the_apis_global():
    """`instrument()` without a provider asks each run whether one is set by reading the
    API's module global (the public call costs a failed environment lookup a run); with
    an API that lacks it, the check falls back to the public call: this says it moved."""
    import opentelemetry.trace as api

    assert getattr(api, "_TRACER_PROVIDER", "missing") is None  # no global set in tests
