"""Graphs of the queue tests: every node's executions logged to a file per thread.

- ``chain``: ``one`` -> ``two`` -> ``ask`` (``interrupt``) -> ``three`` -> ``four``.
  Each node appends ``start <node>`` to the file ``log`` names (append-only, fsync'd:
  the order of the lines is the order of the executions, whichever process ran
  them), sleeps the state's ``pause`` seconds (so a kill lands mid-run), and adds
  its name to ``items``. ``ask`` logs ``answer <answer>`` after its ``interrupt``
  returns: the side effect after an answer.
- ``append``: one node adding the input's ``item`` to ``items`` (a thread's runs'
  order), logged as ``item <item>``.
- ``gated``: ``work`` waits for the file ``gate`` names (a run that stays running
  until the test lets it go), logged ``work <item>``.
- ``deadline``: ``ask`` asks with a deadline already passed and a ``TimeoutAnswer``;
  logs ``answer <answer>`` (the sweep's answer, exactly once).
"""

from __future__ import annotations

import asyncio
import datetime
import operator
from typing import Annotated, Any, TypedDict

from tests.server.graphs_http import wait_gate
from tests.server.run_graphs import count

from pausepoint import END, START, StateGraph, interrupt
from pausepoint.types import TimeoutAnswer

CHAIN = ("one", "two", "ask", "three", "four")


class State(TypedDict, total=False):
    log: str
    gate: str
    item: str
    answer: str
    pause: float
    items: Annotated[list[str], operator.add]


def _pause(state: State) -> float:
    return float(state.get("pause", 0.0))


def _step(name: str) -> Any:
    async def node(state: State) -> dict[str, Any]:
        count(state.get("log"), f"start {name}")
        await asyncio.sleep(_pause(state))
        return {"items": [name]}

    node.__name__ = name
    return node


async def ask(state: State) -> dict[str, Any]:
    count(state.get("log"), "start ask")
    answer = interrupt({"question": "go on?", "thread": state.get("log")})
    count(state.get("log"), f"answer {answer}")
    await asyncio.sleep(_pause(state))
    return {"answer": answer, "items": ["ask"]}


def chain() -> StateGraph:
    builder = StateGraph(State)
    previous = START
    for name in CHAIN:
        builder.add_node(name, ask if name == "ask" else _step(name))
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder


def _append(state: State) -> dict[str, Any]:
    count(state.get("log"), f"item {state.get('item')}")
    return {"items": [state.get("item", "")]}


def append() -> StateGraph:
    builder = StateGraph(State)
    builder.add_node("add", _append)
    builder.add_edge(START, "add")
    builder.add_edge("add", END)
    return builder


async def _work(state: State) -> dict[str, Any]:
    count(state.get("log"), f"work {state.get('item')}")
    await wait_gate(state.get("gate"))
    return {"items": [state.get("item", "")]}


def gated() -> StateGraph:
    builder = StateGraph(State)
    builder.add_node("work", _work)
    builder.add_edge(START, "work")
    builder.add_edge("work", END)
    return builder


def _expiring(state: State) -> dict[str, Any]:
    past = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
    answer = interrupt("late?", deadline=past, on_timeout=TimeoutAnswer("timed out"))
    count(state.get("log"), f"answer {answer}")
    return {"answer": answer}


def deadline() -> StateGraph:
    builder = StateGraph(State)
    builder.add_node("ask", _expiring)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder


GRAPHS = (
    "chain=tests.workers.graphs:chain",
    "append=tests.workers.graphs:append",
    "gated=tests.workers.graphs:gated",
    "deadline=tests.workers.graphs:deadline",
)
