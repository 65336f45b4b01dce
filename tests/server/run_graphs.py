"""Graphs of the service, worker, multitask and crash tests (helper X's).

- ``asker``: graphs_http's ``approval``: START -> ask (``interrupt``) -> finish (raises
  on the answer ``"boom"``).
- ``gated``: ``work`` appends a line to the file ``count`` names (a side effect the
  tests count), then waits for the file ``gate`` names to exist (polling, async):
  a run that stays running until the test lets it go, with no timing. Then ``after``
  appends the item to ``items``.
- ``steps``: ``one`` -> ``two`` (gated as above, counted) -> ``three``: each counted, for
  the crash tests (a node finished before the crash is not run again).
- ``review``: ``ask`` (a question) -> ``work`` (gated): a resume that stays running.
- ``nested``: a subgraph node (``child`` running ``inner``), for subgraph events.
"""

from __future__ import annotations

import operator
import os
from pathlib import Path
from typing import Annotated, Any, TypedDict

from tests.server.graphs_http import approval as asker
from tests.server.graphs_http import wait_gate

from pausepoint import END, START, StateGraph, interrupt


class Gated(TypedDict, total=False):
    item: str
    items: Annotated[list[str], operator.add]
    gate: str
    count: str


def count(path: str | None, line: str) -> None:
    """Append ``line`` to the file at ``path`` (the tests' side-effect counter)."""
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())


def counted(path: str | Path, line: str) -> int:
    """How many times ``line`` was appended to ``path``."""
    p = Path(path)
    return p.read_text().splitlines().count(line) if p.exists() else 0


async def work(state: Gated) -> dict[str, Any]:
    count(state.get("count"), f"work {state.get('item')}")
    await wait_gate(state.get("gate"))
    return {}


def after(state: Gated) -> dict[str, Any]:
    return {"items": [state.get("item", "")]}


def gated() -> StateGraph:
    builder = StateGraph(Gated)
    builder.add_node("work", work)
    builder.add_node("after", after)
    builder.add_edge(START, "work")
    builder.add_edge("work", "after")
    builder.add_edge("after", END)
    return builder


def one(state: Gated) -> dict[str, Any]:
    count(state.get("count"), "one")
    return {"items": ["one"]}


async def two(state: Gated) -> dict[str, Any]:
    count(state.get("count"), "two")
    await wait_gate(state.get("gate"))
    return {"items": ["two"]}


def three(state: Gated) -> dict[str, Any]:
    count(state.get("count"), "three")
    return {"items": ["three"]}


def steps() -> StateGraph:
    builder = StateGraph(Gated)
    builder.add_node("one", one)
    builder.add_node("two", two)
    builder.add_node("three", three)
    builder.add_edge(START, "one")
    builder.add_edge("one", "two")
    builder.add_edge("two", "three")
    builder.add_edge("three", END)
    return builder


class Review(TypedDict, total=False):
    answer: Any
    gate: str
    done: bool


def review_ask(state: Review) -> dict[str, Any]:
    return {"answer": interrupt("approve?")}


async def review_work(state: Review) -> dict[str, Any]:
    await wait_gate(state.get("gate"))
    return {"done": True}


def review() -> StateGraph:
    """``ask`` (a question) -> ``work`` (gated): a resume that stays running."""
    builder = StateGraph(Review)
    builder.add_node("ask", review_ask)
    builder.add_node("work", review_work)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "work")
    builder.add_edge("work", END)
    return builder


class Outer(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def inner_node(state: Outer) -> dict[str, Any]:
    return {"items": ["inner"]}


def nested() -> StateGraph:
    """``child`` is a compiled subgraph (one node, ``inner``): subgraph events."""
    inner = StateGraph(Outer)
    inner.add_node("inner", inner_node)
    inner.add_edge(START, "inner")
    inner.add_edge("inner", END)
    builder = StateGraph(Outer)
    builder.add_node("child", inner.compile())
    builder.add_edge(START, "child")
    builder.add_edge("child", END)
    return builder


GRAPHS = {
    "asker": asker(),
    "gated": gated(),
    "steps": steps(),
    "review": review(),
    "nested": nested(),
}
