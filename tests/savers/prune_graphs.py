"""A graph for the retention tests: parallel branches, a question, a subgraph asking too.

Every node counts its runs per thread in ``RUNS`` (a side effect), so a test can tell
that a resume after a prune re-ran nothing that had finished. ``build(pad=N)`` makes
each entry N characters longer: the list soon passes 4 KiB and the SQL savers store it
apart, its appends as deltas (``_sql_values``).
"""

from __future__ import annotations

import collections
import operator
from typing import Annotated, Any, TypedDict

from pausepoint import END, START, StateGraph, interrupt
from pausepoint.config import get_config

RUNS: collections.Counter[tuple[str, str]] = collections.Counter()
"""(thread id, node) -> completed runs."""


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _count(node: str) -> None:
    conf: dict[str, Any] = dict(get_config().get("configurable") or {})
    thread = str(conf["thread_id"])
    RUNS[thread, node] += 1


def _nodes(pad: int) -> tuple[Any, Any, Any]:
    filler = "".join(chr(97 + (i * 7) % 26) for i in range(pad))

    def work(state: State) -> dict[str, Any]:
        _count("work")
        return {"log": [f"w{len(state['log'])}{filler}"]}

    def ask(state: State) -> dict[str, Any]:
        answer = interrupt(f"ok {len(state['log'])}?")
        _count("ask")
        return {"log": [f"a:{answer}{filler}"]}

    def inner(state: State) -> dict[str, Any]:
        answer = interrupt("inner?")
        _count("inner")
        return {"log": [f"i:{answer}{filler}"]}

    return work, ask, inner


def build(saver: Any, *, stateful_sub: bool = False, pad: int = 0) -> Any:
    """START -> (work | ask) -> sub (a subgraph that asks) -> END."""
    _work, _ask, _inner = _nodes(pad)
    sub = StateGraph(State)
    sub.add_node("inner", _inner)
    sub.add_edge(START, "inner")
    sub.add_edge("inner", END)
    g = StateGraph(State)
    g.add_node("work", _work)
    g.add_node("ask", _ask)
    g.add_node("sub", sub.compile(checkpointer=True if stateful_sub else None))
    g.add_edge(START, "work")
    g.add_edge(START, "ask")
    g.add_edge(["work", "ask"], "sub")
    g.add_edge("sub", END)
    return g.compile(checkpointer=saver)


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}
