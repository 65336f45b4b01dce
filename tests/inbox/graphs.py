"""The graphs the inbox tests answer: a typed approval, an untyped question, a busy node."""

from __future__ import annotations

import datetime
from typing import Any, Literal, NotRequired, TypedDict

from pausepoint import END, START, StateGraph, interrupt
from pausepoint.types import TimeoutAnswer


class Review(TypedDict):
    """The approval shape: a decision, and what an edit or a rejection adds."""

    decision: Literal["approve", "edit", "reject"]
    reason: NotRequired[str]
    rows: NotRequired[int]


class Change(TypedDict, total=False):
    request: str
    rows: int
    minutes: int  # a deadline, when set
    decision: str
    reason: str
    result: str


def review(state: Change) -> dict[str, Any]:
    """Ask for approval of the change, typed; with a deadline when the state has one."""
    minutes = state.get("minutes")
    terms: dict[str, Any] = {}
    if minutes:
        terms = {
            "deadline": datetime.timedelta(minutes=minutes),
            "on_timeout": TimeoutAnswer({"decision": "reject", "reason": "no answer in time"}),
        }
    answer = interrupt(
        {"question": f"Delete {state.get('rows', 0)} rows?", "request": state.get("request")},
        response_schema=Review,
        **terms,
    )
    update: dict[str, Any] = {"decision": answer["decision"]}
    if "rows" in answer:
        update["rows"] = answer["rows"]
    if "reason" in answer:
        update["reason"] = answer["reason"]
    return update


def execute(state: Change) -> dict[str, Any]:
    if state.get("rows") == 13:  # the tests' stand-in for a failing side effect
        raise RuntimeError("disk full")
    return {"result": f"{state.get('decision')}: {state.get('rows')} rows"}


def approval() -> StateGraph:
    """START -> review (asks) -> execute -> END."""
    builder = StateGraph(Change)
    builder.add_node("review", review)
    builder.add_node("execute", execute)
    builder.add_edge(START, "review")
    builder.add_edge("review", "execute")
    builder.add_edge("execute", END)
    return builder


class Note(TypedDict, total=False):
    text: Any
    reply: Any


def ask_free(state: Note) -> dict[str, Any]:
    """A question without a schema: any JSON answer goes."""
    return {"reply": interrupt({"question": state.get("text")})}


def untyped() -> StateGraph:
    builder = StateGraph(Note)
    builder.add_node("ask", ask_free)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder


Kind = Literal["approval", "untyped"]


def build(kind: Kind = "approval") -> StateGraph:
    """One of the graphs above, not compiled."""
    return approval() if kind == "approval" else untyped()


def start(graph: Any, thread: str, *, graph_id: str | None = None, **state: Any) -> Any:
    """Run a new thread until it asks; return its question (an Interrupt).

    ``graph_id`` goes into the checkpoint metadata: the name the inbox lists it under.
    """
    config: dict[str, Any] = {"configurable": {"thread_id": thread}}
    if graph_id:
        config["metadata"] = {"graph_id": graph_id}
    out = graph.invoke(state, config)
    (question,) = out["__interrupt__"]
    return question


class Mail(TypedDict, total=False):
    to: str
    allow: dict[str, bool]  # the question's config; all four allowed when unset
    as_list: bool  # ask with a list of one request, as Agent Inbox also accepts
    reply: Any  # the HumanResponse list the inbox sent back
    sent: Any


ALL_ALLOWED = {
    "allow_accept": True,
    "allow_edit": True,
    "allow_respond": True,
    "allow_ignore": True,
}


def confirm_mail(state: Mail) -> dict[str, Any]:
    """Ask in Agent Inbox's HumanInterrupt shape; read ``interrupt(...)[0]`` as it does."""
    request: dict[str, Any] = {
        "action_request": {"action": "send_email", "args": {"to": state.get("to"), "n": 2}},
        "config": state.get("allow") or ALL_ALLOWED,
        "description": "Send the weekly report?",
    }
    reply = interrupt([request] if state.get("as_list") else request)
    response = reply[0]
    sent: Any = None
    if response["type"] == "accept" or response["type"] == "edit":
        sent = response["args"]["args"]
    elif response["type"] == "response":
        sent = {"note": response["args"]}
    return {"reply": reply, "sent": sent}


def agent_inbox() -> StateGraph:
    """START -> confirm (asks a HumanInterrupt) -> END."""
    builder = StateGraph(Mail)
    builder.add_node("confirm", confirm_mail)
    builder.add_edge(START, "confirm")
    builder.add_edge("confirm", END)
    return builder


class Proposal(TypedDict, total=False):
    rows: int
    decision: str
    reason: str


def review_proposal(state: Proposal) -> dict[str, Any]:
    """An approval whose question carries the proposed ``rows``: the edit starts there."""
    answer = interrupt(
        {"question": "Delete these rows?", "rows": state.get("rows"), "reason": "cleanup"},
        response_schema=Review,
    )
    return {k: answer[k] for k in ("decision", "rows", "reason") if k in answer}


def proposal() -> StateGraph:
    builder = StateGraph(Proposal)
    builder.add_node("review", review_proposal)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    return builder


def confirm(state: Change) -> dict[str, Any]:
    """A second question after the review: the run that answers the first stops here."""
    answer = interrupt(
        {"question": f"Really delete {state.get('rows', 0)} rows?"}, response_schema=Review
    )
    return {"decision": answer["decision"]}


def two_questions() -> StateGraph:
    """START -> review (asks) -> confirm (asks again) -> execute -> END."""
    builder = StateGraph(Change)
    builder.add_node("review", review)
    builder.add_node("confirm", confirm)
    builder.add_node("execute", execute)
    builder.add_edge(START, "review")
    builder.add_edge("review", "confirm")
    builder.add_edge("confirm", "execute")
    builder.add_edge("execute", END)
    return builder
