"""Graphs the HTTP and SDK tests serve (``--graph NAME=tests.server.graphs_http:...``).

- ``approval``: asks one question, then writes the answer: START -> ask -> finish
  (which raises on the answer ``"boom"``).
- ``gated``: asks, then ``work`` waits (async, polling) for the file named by the
  state's ``gate`` to exist: a thread that stays busy until the test lets it go, so
  racing runs meet a running one without any timing.
- ``triage``: Agent Inbox's shape: ``interrupt([HumanInterrupt])`` answered with a list
  of ``HumanResponse`` (accept / edit / response / ignore).
- ``twice``: one node asks two questions in turn (question ids ``<id>:0``, ``<id>:1``).
- ``ticker``: counts in a loop, a step at a time, until ``stop`` or a gate; for cancel.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, TypedDict

from pausepoint import END, START, StateGraph, interrupt


class Ask(TypedDict, total=False):
    request: str
    answer: Any
    result: str
    gate: str
    done: bool


def ask(state: Ask) -> dict[str, Any]:
    return {"answer": interrupt({"question": f"Approve {state.get('request')}?"})}


def finish(state: Ask) -> dict[str, Any]:
    if state.get("answer") == "boom":  # the tests' failing side effect
        raise RuntimeError("boom: the side effect failed")
    return {"result": f"{state.get('request')}: {state.get('answer')}"}


def approval() -> StateGraph:
    builder = StateGraph(Ask)
    builder.add_node("ask", ask)
    builder.add_node("finish", finish)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "finish")
    builder.add_edge("finish", END)
    return builder


async def wait_gate(gate: str | None) -> None:
    """Wait (polling, async) until the file ``gate`` names exists; at once if none."""
    while gate and not os.path.exists(gate):
        await asyncio.sleep(0.005)


async def work(state: Ask) -> dict[str, Any]:
    await wait_gate(state.get("gate"))
    return {"done": True}


def gated() -> StateGraph:
    builder = StateGraph(Ask)
    builder.add_node("ask", ask)
    builder.add_node("work", work)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "work")
    builder.add_edge("work", END)
    return builder


def ask_twice(state: Ask) -> dict[str, Any]:
    first = interrupt("first?")
    second = interrupt("second?")
    return {"answer": f"{first}+{second}"}


def twice() -> StateGraph:
    builder = StateGraph(Ask)
    builder.add_node("ask_twice", ask_twice)
    builder.add_edge(START, "ask_twice")
    builder.add_edge("ask_twice", END)
    return builder


class Email(TypedDict, total=False):
    subject: str
    outcome: str


def review_email(state: Email) -> dict[str, Any]:
    request = {
        "action_request": {"action": "send_email", "args": {"subject": state.get("subject")}},
        "config": {
            "allow_ignore": True,
            "allow_respond": True,
            "allow_edit": True,
            "allow_accept": True,
        },
        "description": "Send this email?",
    }
    response = interrupt([request])[0]
    kind, args = response["type"], response.get("args")
    if kind == "accept":
        return {"outcome": f"sent {state.get('subject')}"}
    if kind == "edit":
        return {"outcome": f"sent {args['args']['subject']}"}
    if kind == "response":
        return {"outcome": f"replied {args}"}
    return {"outcome": "ignored"}


def triage() -> StateGraph:
    builder = StateGraph(Email)
    builder.add_node("review_email", review_email)
    builder.add_edge(START, "review_email")
    builder.add_edge("review_email", END)
    return builder


class Count(TypedDict, total=False):
    n: int
    stop: int
    gate: str


async def tick(state: Count) -> dict[str, Any]:
    await asyncio.sleep(0.01)
    return {"n": state.get("n", 0) + 1}


def _again(state: Count) -> str:
    gate = state.get("gate")
    if gate and os.path.exists(gate):
        return END
    return "tick" if state.get("n", 0) < state.get("stop", 0) else END


def ticker() -> StateGraph:
    builder = StateGraph(Count)
    builder.add_node("tick", tick)
    builder.add_edge(START, "tick")
    builder.add_conditional_edges("tick", _again, ["tick", END])
    return builder
