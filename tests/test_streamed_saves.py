"""What a stream saves, and when (issue 33: a streamed run's commits).

Streaming only ``values`` reports nothing between a task's end and its step's
checkpoint, so a step's last writes are saved with its checkpoint, in one commit, as
``invoke`` does; the step's values are reported once both are saved. A stream that
reports a task's result (``updates``) saves the task's writes before that chunk.
Real SQLite files; the commits counted by a saver that counts its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import pytest

from pausepoint import END, START, StateGraph, interrupt
from pausepoint.checkpoint.base import StepCommit
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.graph.compiled import CompiledStateGraph
from pausepoint.types import Command


class Ask(TypedDict, total=False):
    request: str
    answer: str
    result: str


class CountingSaver(SqliteSaver):
    """A `SqliteSaver` that counts its commits (each a transaction)."""

    commits = 0

    def commit(self, step: StepCommit[Any]) -> Any:
        """Count, then commit."""
        self.commits += 1
        return super().commit(step)


def _graph(saver: SqliteSaver) -> CompiledStateGraph:
    def ask(state: Ask) -> dict[str, Any]:
        return {"answer": interrupt(f"approve {state.get('request')}?")}

    def finish(state: Ask) -> dict[str, Any]:
        return {"result": f"{state.get('request')}: {state.get('answer')}"}

    builder = StateGraph(Ask)
    builder.add_node("ask", ask)
    builder.add_node("finish", finish)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "finish")
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=saver)


@pytest.fixture
def saver(tmp_path: Path) -> Any:
    with CountingSaver.from_conn_string(str(tmp_path / "s.sqlite")) as s:
        yield s


def _round_trip(graph: CompiledStateGraph, saver: CountingSaver, tid: str, mode: str) -> int:
    """Commits of a pause and its resume, run with ``invoke`` or streamed in ``mode``."""
    config: Any = {"configurable": {"thread_id": tid}}
    before = saver.commits
    for given in ({"request": "deploy"}, Command(resume="yes")):
        if mode == "invoke":
            graph.invoke(given, config)
        else:
            list(graph.stream(given, config, stream_mode=mode))
    assert graph.get_state(config).values["result"] == "deploy: yes"
    return saver.commits - before


def test_a_values_stream_commits_as_invoke_does(saver: CountingSaver) -> None:
    graph = _graph(saver)
    invoked = _round_trip(graph, saver, "i", "invoke")
    assert _round_trip(graph, saver, "v", "values") == invoked
    assert _round_trip(graph, saver, "u", "updates") > invoked  # writes before chunks


def test_a_values_chunk_reports_what_is_saved(saver: CountingSaver) -> None:
    """At each ``values`` chunk the step it reports is saved: no finished task's writes
    wait for a checkpoint (a process killed there loses nothing the chunk showed)."""
    graph = _graph(saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    seen = 0
    for given in ({"request": "deploy"}, Command(resume="yes")):
        for chunk in graph.stream(given, config, stream_mode="values"):
            state = graph.get_state(config)
            if "__interrupt__" in chunk:
                continue
            seen += 1
            assert state.values == chunk
            assert all(t.result is None for t in state.tasks), state.tasks
    assert seen >= 3
