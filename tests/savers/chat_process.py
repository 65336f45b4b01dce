"""A chat thread written turn after turn, until killed: run by test_blobs.py.

Usage: python chat_process.py BACKEND DSN THREAD. BACKEND is sqlite or postgres.
Each turn answers the question and adds two messages (appended to a list: stored as
deltas, ``_sql_values``); the test kills the process with SIGKILL mid-way.
"""

from __future__ import annotations

import operator
import sys
from typing import Annotated, Any, TypedDict

from pausepoint.checkpoint.base import BaseCheckpointSaver
from pausepoint.graph import START, StateGraph
from pausepoint.types import Command, interrupt

TEXT = "".join(chr(97 + (i * 7) % 26) for i in range(600))


class Chat(TypedDict, total=False):
    messages: Annotated[list[str], operator.add]


def chat(saver: BaseCheckpointSaver) -> Any:
    def ask(state: Chat) -> Chat:
        return {"messages": [f"user: {interrupt('next?')}"]}

    def reply(state: Chat) -> Chat:
        return {"messages": [f"ai {len(state['messages'])}: {TEXT}"]}

    b = StateGraph(Chat)
    b.add_node("ask", ask)
    b.add_node("reply", reply)
    b.add_edge(START, "ask")
    b.add_edge("ask", "reply")
    b.add_edge("reply", "ask")
    return b.compile(checkpointer=saver)


def open_saver(kind: str, dsn: str) -> BaseCheckpointSaver:
    if kind == "sqlite":
        import sqlite3

        from pausepoint.checkpoint.sqlite import SqliteSaver

        return SqliteSaver(sqlite3.connect(dsn, check_same_thread=False, isolation_level=None))
    import psycopg

    from pausepoint.checkpoint.postgres import PostgresSaver

    saver = PostgresSaver(psycopg.connect(dsn, autocommit=True, prepare_threshold=None))
    saver.setup()
    return saver


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 1_000_000}


def to_question(graph: Any, conf: Any) -> None:
    """Run the thread on to its question: start it, or finish a step a kill cut short."""
    state = graph.get_state(conf)
    if not state.next:
        graph.invoke({"messages": []}, conf)
    elif not any(task.interrupts for task in state.tasks):
        graph.invoke(None, conf)


def main(kind: str, dsn: str, thread: str) -> None:
    graph = chat(open_saver(kind, dsn))
    to_question(graph, config(thread))
    turn = 0
    while True:
        graph.invoke(Command(resume=f"{turn} {TEXT}"), config(thread))
        turn += 1


if __name__ == "__main__":
    main(*sys.argv[1:4])
