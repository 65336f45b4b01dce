"""A worker's outcome of a run, taken from the run itself (issue 33).

`pausepoint.server.execute.known_outcome` answers the wait/join body and the thread's
status from the run's own end, without the `aget_state` read; it must be exactly what
that read gives (`outcome`), or None (then the read is made). Real SQLite files, the
server's own graphs, and graphs whose end the read shows differently (an output
schema narrower than the state; a pause).
"""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from tests.server.graphs_http import approval

from pausepoint import END, START, StateGraph, interrupt
from pausepoint.checkpoint.sqlite import AsyncSqliteSaver
from pausepoint.graph.compiled import CompiledStateGraph
from pausepoint.loop.run import RunResult
from pausepoint.server.execute import known_outcome, outcome
from pausepoint.types import Command

pytestmark = pytest.mark.asyncio


class Fan(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    asked: str


class Out(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def fan() -> StateGraph:
    """Two tasks in one step (one asks when ``ask`` is in the input), then a join."""

    def left(state: Fan) -> dict[str, Any]:
        if "ask" in state.get("items", []):
            return {"asked": interrupt("left?"), "items": ["left"]}
        return {"items": ["left"]}

    def right(state: Fan) -> dict[str, Any]:
        return {"items": ["right"]}

    def join(state: Fan) -> dict[str, Any]:
        return {"items": [f"joined {len(state.get('items', []))}"]}

    builder = StateGraph(Fan)
    builder.add_node("left", left)
    builder.add_node("right", right)
    builder.add_node("join", join)
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge(["left", "right"], "join")
    builder.add_edge("join", END)
    return builder


def narrowed() -> StateGraph:
    """The output schema leaves a state key out: the read shows it, the run does not."""

    def work(state: Fan) -> dict[str, Any]:
        return {"items": ["done"], "asked": "hidden"}

    builder = StateGraph(Fan, output_schema=Out)
    builder.add_node("work", work)
    builder.add_edge(START, "work")
    builder.add_edge("work", END)
    return builder


async def _run(graph: CompiledStateGraph, given: object, tid: str) -> list[RunResult]:
    result: list[RunResult] = []
    config: Any = {"configurable": {"thread_id": tid}}
    async for _ in graph.astream_outcome(given, config, result, stream_mode=["values"]):
        pass
    return result


async def _check(graph: CompiledStateGraph, given: object, tid: str) -> tuple[Any, str] | None:
    """What `known_outcome` says of the run: the read's own answer, or None."""
    known = known_outcome(graph, await _run(graph, given, tid))
    if known is not None:
        assert known == await outcome(graph, tid)
    return known


async def test_a_run_that_ends_is_known_and_a_pause_is_read(tmp_path: Path) -> None:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "k.sqlite")) as saver:
        asker = approval().compile(checkpointer=saver)
        assert await _check(asker, {"request": "deploy"}, "a") is None  # paused: read
        body, rest = await _check(asker, Command(resume="yes"), "a") or ({}, "")
        assert rest == "idle"
        assert body["request"] == "deploy"

        fanned = fan().compile(checkpointer=saver)
        assert await _check(fanned, {"items": ["go"]}, "f") is not None
        assert await _check(fanned, {"items": ["ask"]}, "g") is None  # a sibling paused
        known = await _check(fanned, Command(resume="sure"), "g")
        assert known is not None
        assert known[0]["asked"] == "sure"

        assert await _check(narrowed().compile(checkpointer=saver), {"items": []}, "n") is None
