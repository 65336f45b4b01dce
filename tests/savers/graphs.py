"""Small graphs the saver tests run through a real saver."""

from __future__ import annotations

from typing import Any, TypedDict

from pausepoint import END, START, StateGraph, interrupt


class Ask(TypedDict):
    question: str
    answer: str


def ask_graph(saver: Any) -> Any:
    """START -> ask -> END, where ``ask`` puts ``question`` to a person."""

    def ask(state: Ask) -> dict[str, Any]:
        return {"answer": interrupt(state["question"])}

    builder = StateGraph(Ask)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=saver)
