"""A worker for tests/savers/test_single_writer_processes.py: resume one thread, report how.

    python race_process.py BACKEND TARGET THREAD ANSWER_KEY ANSWER SIDE_LOG START_AT

Waits until the wall clock reaches START_AT (so racers start together), resumes
THREAD with ``Command(resume={ANSWER_KEY: ANSWER})`` (ANSWER_KEY "-" for a plain
value) and prints one JSON line: {"outcome": "ok"|error class name, "log": [...]}.
The node appends "<answer> <pid>" to SIDE_LOG after ``interrupt()`` returns.
"""

from __future__ import annotations

import contextlib
import json
import operator
import os
import sys
import time
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

from pausepoint import START, Command, StateGraph, interrupt
from pausepoint.errors import AlreadyAnsweredError, ThreadBusyError


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def build(side_log: str) -> StateGraph[Any]:
    def reviewer(name: str) -> Any:
        def node(state: State) -> dict[str, Any]:
            answer = interrupt(f"review {name}")
            with open(side_log, "a") as f:  # one write: survives a crash once it returns
                f.write(f"{name}={answer} {os.getpid()}\n")
            time.sleep(0.2)  # the window a racing resume falls into
            return {"log": [f"{name}={answer}"]}

        return node

    def join(state: State) -> dict[str, Any]:
        with open(side_log, "a") as f:
            f.write(f"join {os.getpid()}\n")
        return {"log": ["joined"]}

    b = StateGraph(State)
    for n in ("a", "b"):
        b.add_node(n, reviewer(n))
        b.add_edge(START, n)
    b.add_node("join", join)
    b.add_edge(["a", "b"], "join")
    return b


@contextlib.contextmanager
def open_saver(backend: str, target: str) -> Iterator[Any]:
    if backend == "sqlite":
        from pausepoint.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(target) as saver:
            yield saver
    else:
        from pausepoint.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(target) as saver:
            saver.setup()
            yield saver


def main() -> None:
    backend, target, thread, key, answer, side_log, start_at = sys.argv[1:8]
    config: Any = {"configurable": {"thread_id": thread}}
    with open_saver(backend, target) as saver:
        graph = build(side_log).compile(checkpointer=saver, lease_wait=5)
        if key == "start":
            out = graph.invoke({"log": []}, config)
            print(json.dumps({"ids": {i.value: i.id for i in out["__interrupt__"]}}))
            return
        while time.time() < float(start_at):
            time.sleep(0.001)
        resume: Any = answer if key == "-" else {key: answer}
        try:
            out = graph.invoke(Command(resume=resume), config)
            print(json.dumps({"outcome": "ok", "log": out.get("log", [])}))
        except (ThreadBusyError, AlreadyAnsweredError) as exc:
            print(json.dumps({"outcome": type(exc).__name__, "log": []}))


if __name__ == "__main__":
    main()
