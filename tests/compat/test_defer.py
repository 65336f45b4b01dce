"""``add_node(..., defer=True)`` on LangGraph 1.1.6 and pausepoint side by side.

A deferred node runs once, when nothing else is left to run, however many of its
edges fired in different steps. Each scenario records the ``updates`` stream and how
often each node ran, on both libraries, and the records must be equal.
"""

import asyncio
import operator
import sqlite3
from pathlib import Path
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import Lib, load_lib

pytestmark = pytest.mark.compat


class Docs(TypedDict):
    docs: Annotated[list[str], operator.add]


def _note(runs: list[str], name: str, out: dict[str, Any] | None = None) -> Any:
    def node(state: Docs) -> dict[str, Any]:
        runs.append(name)
        return out if out is not None else {}

    return node


def uneven(lib: Lib, runs: list[str], *, join_edge: bool = False, saver: Any = None) -> Any:
    """start → fast, start → pre → slow; both reach the deferred ``join``."""
    b = lib.StateGraph(Docs)
    b.add_node("start", _note(runs, "start"))
    b.add_node("fast", _note(runs, "fast", {"docs": ["fast"]}))
    b.add_node("pre", _note(runs, "pre"))
    b.add_node("slow", _note(runs, "slow", {"docs": ["slow"]}))
    b.add_node("join", _note(runs, "join", {"docs": ["joined"]}), defer=True)
    b.add_edge(lib.START, "start")
    b.add_edge("start", "fast")
    b.add_edge("start", "pre")
    b.add_edge("pre", "slow")
    if join_edge:
        b.add_edge(["fast", "slow"], "join")
    else:
        b.add_edge("fast", "join")
        b.add_edge("slow", "join")
    b.add_edge("join", lib.END)
    return b.compile(checkpointer=saver)


def record(lib_name: str, build: Any, *, is_async: bool = False) -> dict[str, Any]:
    lib = load_lib(lib_name)
    runs: list[str] = []
    graph = build(lib, runs)
    if is_async:

        async def collect() -> list[Any]:
            return [c async for c in graph.astream({"docs": []}, stream_mode="updates")]

        chunks = asyncio.run(collect())
    else:
        chunks = list(graph.stream({"docs": []}, stream_mode="updates"))
    return {"chunks": chunks, "runs": runs}


def same_on_both(build: Any, *, is_async: bool = False) -> dict[str, Any]:
    lg = record("langgraph", build, is_async=is_async)
    pp = record("pausepoint", build, is_async=is_async)
    assert pp == lg
    return pp


@pytest.mark.parametrize("is_async", [False, True])
def test_deferred_node_runs_once_after_uneven_branches(is_async: bool):
    out = same_on_both(uneven, is_async=is_async)
    assert out["runs"].count("join") == 1
    assert out["chunks"][-1] == {"join": {"docs": ["joined"]}}


def test_deferred_join_edge_waits_for_both():
    out = same_on_both(lambda lib, runs: uneven(lib, runs, join_edge=True))
    assert out["runs"][-1] == "join"


def test_deferred_node_in_a_loop_runs_once_per_round():
    def build(lib: Lib, runs: list[str]) -> Any:
        b = lib.StateGraph(Docs)
        b.add_node("a", _note(runs, "a", {"docs": ["a"]}))
        b.add_node("b", _note(runs, "b"))
        b.add_node("c", _note(runs, "c"))
        b.add_node("end", _note(runs, "end", {"docs": ["end"]}), defer=True)
        b.add_edge(lib.START, "a")
        b.add_edge("a", "b")
        b.add_edge("b", "c")
        b.add_edge("a", "end")
        b.add_edge("c", "end")
        b.add_conditional_edges("end", lambda s: "a" if len(s["docs"]) < 4 else lib.END)
        return b.compile()

    assert same_on_both(build)["runs"].count("end") == 2


def test_deferred_node_after_an_interrupt_on_a_sqlite_file(tmp_path: Path):
    """The held trigger is saved in the checkpoint and survives a pause (real SQLite)."""
    recorded = {}
    for name in ("langgraph", "pausepoint"):
        lib = load_lib(name)
        saver = _sqlite_saver(name, tmp_path / f"{name}.db")
        runs: list[str] = []

        def ask(state: Docs, lib: Lib = lib, runs: list[str] = runs) -> dict[str, Any]:
            runs.append("ask")
            return {"docs": [lib.interrupt("ok?")]}

        graph = uneven(lib, runs, saver=saver)
        b = graph.builder
        b.nodes.pop("slow")  # slow asks: fast's trigger of join is held meanwhile
        b.add_node("slow", ask)
        graph = b.compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": "t"}}
        first = list(graph.stream({"docs": []}, cfg, stream_mode="updates"))
        second = list(graph.stream(lib.Command(resume="yes"), cfg, stream_mode="updates"))
        recorded[name] = {
            "first": sorted(name for c in first for name in c),  # parallel: any order
            "second": second,
            "runs": runs,
            "final": graph.get_state(cfg).values,
        }
    assert recorded["pausepoint"] == recorded["langgraph"]
    assert recorded["pausepoint"]["runs"].count("join") == 1


def _sqlite_saver(lib_name: str, path: Path) -> Any:
    conn = sqlite3.connect(path, check_same_thread=False)
    if lib_name == "langgraph":
        from langgraph.checkpoint.sqlite import SqliteSaver

        return SqliteSaver(conn)
    from pausepoint.checkpoint.sqlite import SqliteSaver

    return SqliteSaver(conn)
