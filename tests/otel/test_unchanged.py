"""Tracing changes nothing a user observes: state, tasks, interrupts, history, events.

The same scenario (a pause, a partial resume of parallel questions, the last answer)
runs untraced and traced; everything read back is compared with ids and times masked.
The one difference is in the saver's raw pending writes: the hidden ``__asked_span__``.
"""

from __future__ import annotations

import operator
import re
from typing import Annotated, Any, TypedDict

from tests.conftest import Driver
from tests.otel.conftest import Spans

import pausepoint.otel
from pausepoint import END, START, Command, InMemorySaver, Send, StateGraph, interrupt


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def build(saver: Any) -> Any:
    def ask(item: dict[str, Any]) -> dict[str, Any]:
        n = item["n"]
        return {"log": [f"{n}:{interrupt(f'ship {n}?')}"]}

    graph = StateGraph(State)
    graph.add_node("ask", ask)
    graph.add_conditional_edges(START, lambda _s: [Send("ask", {"n": n}) for n in range(2)])
    graph.add_edge("ask", END)
    return graph.compile(checkpointer=saver)


_IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}")
_TIMES = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+(\+00:00)?")


def masked(value: object) -> str:
    return _TIMES.sub("<time>", _IDS.sub("<id>", repr(value)))


def scenario(drive: Driver, graph: Any) -> list[str]:
    cfg: Any = {"configurable": {"thread_id": "same"}}
    seen = [masked(drive.stream(graph, {"log": []}, cfg, stream_mode=["updates", "tasks"]))]
    state = drive.get_state(graph, cfg)
    seen += [masked(state), masked(state.tasks), masked(state.interrupts)]
    first = state.interrupts[0].id
    partial = drive.stream(graph, Command(resume={first: "yes"}), cfg, stream_mode="debug")
    seen.append(masked(partial))
    seen.append(masked(drive.get_state(graph, cfg)))
    last = drive.get_state(graph, cfg).interrupts[0].id
    seen.append(masked(drive.invoke(graph, Command(resume={last: "no"}), cfg)))
    seen.append(masked(drive.history(graph, cfg)))
    return seen


def test_traced_and_untraced_runs_read_back_the_same(drive: Driver, spans: Spans):
    traced_saver = InMemorySaver()
    traced = scenario(drive, build(traced_saver))
    assert spans.all(), "the traced run made spans"
    pausepoint.otel.uninstrument()
    untraced_saver = InMemorySaver()
    plain = scenario(drive, build(untraced_saver))
    assert traced == plain
    # The raw pending writes differ only by the hidden write.
    assert _channels(traced_saver) - _channels(untraced_saver) == {"__asked_span__"}
    assert "__asked_span__" not in _channels(untraced_saver)


def _channels(saver: InMemorySaver) -> set[str]:
    cfg: Any = {"configurable": {"thread_id": "same"}}
    return {w.channel for t in saver.list(cfg) for w in t.pending_writes or ()}
