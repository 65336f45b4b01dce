"""The graph the encryption tests run: a canary in state, a message, a question and an answer.

``run(saver, thread)`` pauses in a subgraph and resumes it, so every kind of row gets
written: checkpoints of two namespaces, ordinary and special writes, and (the message
list is large) rows of ``pausepoint_blobs``.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from pausepoint import END, START, Command, StateGraph, interrupt
from pausepoint.graph.message import add_messages

CANARY = "c4n4ry-7f3e"
"""A string that must never appear in clear in a database."""


class State(TypedDict, total=False):
    text: str
    messages: Annotated[list[Any], add_messages]
    log: Annotated[list[str], operator.add]


def _ask(state: State) -> State:
    answer = interrupt({"question": f"approve {CANARY}-question?"})
    return {"text": f"{CANARY}-answered-{answer}", "log": [f"{CANARY}-log"]}


def _inner() -> Any:
    inner = StateGraph(State)
    inner.add_node("ask", _ask)
    inner.add_edge(START, "ask")
    inner.add_edge("ask", END)
    return inner.compile()


def _start(state: State) -> State:
    return {"messages": [{"role": "user", "content": f"{CANARY}-message " * 400}]}


def build(saver: Any) -> Any:
    """The outer graph: ``start`` adds a long message, ``sub`` asks its question."""
    outer = StateGraph(State)
    outer.add_node("start", _start)
    outer.add_node("sub", _inner())
    outer.add_edge(START, "start")
    outer.add_edge("start", "sub")
    outer.add_edge("sub", END)
    return outer.compile(checkpointer=saver)


def config(thread: str) -> Any:
    """A run's config: its thread, a secret and a plain key in ``configurable``."""
    return {
        "configurable": {"thread_id": thread, "api_key": f"{CANARY}-secret", "user": f"{CANARY}-u"},
        "metadata": {"graph_id": "approvals"},
    }


def first_input() -> State:
    return {"text": f"{CANARY}-state", "log": []}


def answer() -> Command:
    return Command(resume=f"{CANARY}-answer")


def run(saver: Any, thread: str) -> Any:
    """Pause, check the question, resume; return the graph."""
    graph = build(saver)
    paused = graph.invoke(first_input(), config(thread))
    assert CANARY in str(paused["__interrupt__"][0].value)
    done = graph.invoke(answer(), config(thread))
    assert done["text"] == f"{CANARY}-answered-{CANARY}-answer"
    return graph


def pause(saver: Any, thread: str) -> Any:
    """Only pause (the question waits); return the graph."""
    graph = build(saver)
    graph.invoke(first_input(), config(thread))
    return graph
