"""A chat thread written turn after turn, until killed: run by test_blobs.py.

Usage: python chat_process.py BACKEND DSN THREAD [framed]. BACKEND is sqlite or
postgres. Each turn answers the question and adds two messages (appended to a list:
stored as deltas, ``_sql_values``); with ``framed``, the reply also replaces an
attachment of 70 KB of bytes (a framed value: a value row of its own, referenced by
the checkpoint and by the step's write). The test kills the process with SIGKILL
mid-way.
"""

from __future__ import annotations

import operator
import os
import random
import signal
import subprocess
import sys
import time
from typing import Annotated, Any, TypedDict

from pausepoint.checkpoint.base import BaseCheckpointSaver
from pausepoint.graph import START, StateGraph
from pausepoint.types import Command, interrupt

TEXT = "".join(chr(97 + (i * 7) % 26) for i in range(600))


class Chat(TypedDict, total=False):
    messages: Annotated[list[str], operator.add]
    attachment: bytes


def attachment(n: int) -> bytes:
    """The reply's attachment at message ``n``: its number, then 70 KB of random bytes.

    Framed when stored (bytes of ``BLOB_FROM``, 64 KiB, or more).
    """
    return n.to_bytes(4, "big") + random.Random(n).randbytes(70_000)


def chat(saver: BaseCheckpointSaver, framed: bool = False) -> Any:
    def ask(state: Chat) -> Chat:
        return {"messages": [f"user: {interrupt('next?')}"]}

    def reply(state: Chat) -> Chat:
        n = len(state["messages"])
        if framed:
            return {"messages": [f"ai {n}: {TEXT}"], "attachment": attachment(n)}
        return {"messages": [f"ai {n}: {TEXT}"]}

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


def kill_midway(
    watcher: BaseCheckpointSaver, backend: tuple[str, str], thread: str, delay: float, *mode: str
) -> None:
    """Run this script on ``thread`` and SIGKILL it ``delay`` s after it passed step 6.

    ``watcher`` (a saver of the same database) reads the thread's head to see how far
    the process got.
    """
    proc = subprocess.Popen([sys.executable, __file__, *backend, thread, *mode])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            head = watcher.get_tuple(config(thread))
            if head is not None and head.metadata.get("step", 0) >= 6:
                break
            time.sleep(0.05)
        time.sleep(delay)
        assert proc.poll() is None, "the chat process ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()


def main(kind: str, dsn: str, thread: str, *mode: str) -> None:
    graph = chat(open_saver(kind, dsn), framed=mode == ("framed",))
    to_question(graph, config(thread))
    turn = 0
    while True:
        graph.invoke(Command(resume=f"{turn} {TEXT}"), config(thread))
        turn += 1


if __name__ == "__main__":
    main(*sys.argv[1:])
