"""A graph with a deadline, for tests/test_deadlines.py (also run by ``pausepoint sweep``).

The node asks a question due an hour after it is first asked; on expiry the sweeper
answers ``"timed out"`` (state ``policy="answer"``), fails it (``"fail"``), or
answers ``"boom"``, on which the node raises (``"boom"``). After
``interrupt()`` returns (or raises), the node appends one line to the file named by
state ``log``, so a test counts how many times a timeout was acted on, across
threads and processes.
"""

from __future__ import annotations

import datetime
import os
from typing import Any, TypedDict

from pausepoint import END, START, StateGraph, interrupt
from pausepoint.errors import DeadlineExpiredError
from pausepoint.types import TimeoutAnswer

HOUR = datetime.timedelta(hours=1)


class State(TypedDict, total=False):
    policy: str
    log: str
    out: Any


def _note(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def ask(state: State) -> State:
    policy: Any = {"answer": TimeoutAnswer("timed out"), "boom": TimeoutAnswer("boom")}.get(
        state["policy"], "fail"
    )
    try:
        got = interrupt(
            "approve?", response_schema={"type": "string"}, deadline=HOUR, on_timeout=policy
        )
    except DeadlineExpiredError:
        _note(state["log"], "expired")
        return {"out": "escalated"}
    _note(state["log"], f"answered {got}")
    if got == "boom":
        raise RuntimeError("the node failed after its timeout answer")
    return {"out": got}


builder = StateGraph(State)
builder.add_node("ask", ask)
builder.add_edge(START, "ask")
builder.add_edge("ask", END)
