"""A graph run in a fresh interpreter by test_cross_process.py.

Usage: python graph_process.py BACKEND DSN PHASE SIDE_EFFECT_LOG
BACKEND is sqlite or postgres; PHASE is start, resume (answers the interrupt) or
continue (invoke(None) after a crash). Every node appends its name to the log
before doing anything else, so the test can count executions.
"""

from __future__ import annotations

import contextlib
import json
import operator
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from pausepoint.checkpoint.base import BaseCheckpointSaver
from pausepoint.errors import ThreadBusyError
from pausepoint.graph import END, START, StateGraph
from pausepoint.types import Command, interrupt


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def build(side_log: Path) -> StateGraph[Any]:
    def record(name: str) -> None:
        with side_log.open("a") as f:
            f.write(name + "\n")

    def first(_: State) -> dict[str, Any]:
        record("first")
        return {"log": ["first"]}

    def fast(_: State) -> dict[str, Any]:
        record("fast")
        return {"log": ["fast"]}

    def slow(_: State) -> dict[str, Any]:
        record("slow")
        gate = side_log.with_suffix(".go")
        while not gate.exists():  # the first process is killed while waiting here
            time.sleep(0.02)
        return {"log": ["slow"]}

    def ask(_: State) -> dict[str, Any]:
        record("ask")
        answer = interrupt({"question": "ship it?", "options": ("yes", "no")})
        return {"log": [f"ask:{answer}"]}

    graph = StateGraph(State)
    for name, fn in {"first": first, "fast": fast, "slow": slow, "ask": ask}.items():
        graph.add_node(name, fn)
    graph.add_edge(START, "first")
    graph.add_edge("first", "fast")
    graph.add_edge("first", "slow")
    graph.add_edge(["fast", "slow"], "ask")
    graph.add_edge("ask", END)
    return graph


@contextlib.contextmanager
def open_saver(backend: str, dsn: str) -> Iterator[BaseCheckpointSaver]:
    if backend == "sqlite":
        from pausepoint.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(dsn) as saver:
            yield saver
    else:
        from pausepoint.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(dsn) as saver:
            saver.setup()
            yield saver


LEASE_TTL = 1.0


def main() -> None:
    backend, dsn, phase, side_log = sys.argv[1:5]
    config: Any = {"configurable": {"thread_id": "cross-process"}}
    with open_saver(backend, dsn) as saver:
        # A short lease: a "continue" after a SIGKILL waits for the dead worker's
        # lease to expire (single-writer threads), then takes the thread over.
        graph = build(Path(side_log)).compile(checkpointer=saver, lease_ttl=LEASE_TTL)
        inputs: Any = {
            "start": {"log": []},
            "resume": Command(resume="yes"),
            "continue": None,
        }[phase]
        deadline = time.monotonic() + 10 * LEASE_TTL
        while True:
            try:
                result = graph.invoke(inputs, config)
                break
            except ThreadBusyError:
                if phase != "continue" or time.monotonic() > deadline:
                    raise
                time.sleep(LEASE_TTL / 5)
        print(
            json.dumps({"log": result["log"], "interrupts": len(result.get("__interrupt__", []))})
        )


if __name__ == "__main__":
    main()
