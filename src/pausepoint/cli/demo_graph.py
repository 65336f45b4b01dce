"""The demo's graph: an agent proposes a risky change and waits for a person's approval.

Nothing here touches a real database: "executing" the change only describes it.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from pausepoint import END, START, Command, StateGraph, interrupt

__all__ = ["Change", "Decision", "build"]


class Change(TypedDict, total=False):
    """The demo's state."""

    request: str
    plan: dict[str, Any]
    decision: str
    result: str


class Decision(TypedDict):
    """The answer the review asks for (the inbox shows Approve / Edit / Reject for it)."""

    decision: Literal["approve", "edit", "reject"]
    plan: NotRequired[dict[str, Any]]
    reason: NotRequired[str]


def plan(state: Change) -> dict[str, Any]:
    """Turn the request into a concrete, risky plan (a stand-in for an LLM agent)."""
    return {
        "plan": {
            "action": "DELETE",
            "table": "users",
            "where": "last_login < '2024-01-01'",
            "rows": 1204,
        }
    }


def review(state: Change) -> Command[str]:
    """Pause until a person approves, edits or rejects the plan."""
    proposed = state.get("plan", {})
    raw: Any = interrupt(
        {
            "question": "The agent wants to run this change. Approve, edit or reject?",
            "request": state.get("request", ""),
            "plan": proposed,
        },
        response_schema=Decision,
    )
    answer: dict[str, Any] = raw if isinstance(raw, dict) else {"decision": str(raw)}  # pyright: ignore[reportUnknownVariableType]
    decision = str(answer.get("decision", ""))
    changes = answer.get("plan")
    if decision == "approve":
        return Command(goto="execute", update={"decision": "approved"})
    if decision == "edit" and isinstance(changes, dict):
        edited: dict[str, Any] = {**proposed, **changes}
        return Command(goto="execute", update={"decision": "edited", "plan": edited})
    reason = str(answer.get("reason", "no reason given"))
    return Command(goto=END, update={"decision": "rejected", "result": f"not run: {reason}"})


def execute(state: Change) -> dict[str, Any]:
    """Carry out the approved plan (simulated)."""
    p = state.get("plan", {})
    where = p.get("where", "")
    rows = p.get("rows", "?")
    return {"result": f"{p.get('action')} {rows} rows from {p.get('table')} where {where}"}


def build() -> StateGraph:
    """The demo graph, not yet compiled."""
    builder = StateGraph(Change)
    builder.add_node("plan", plan)
    builder.add_node("review", review)
    builder.add_node("execute", execute)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "review")
    builder.add_edge("execute", END)
    return builder
