"""A process that works on threads of the pending-questions tests (test_pending_index.py).

Run as ``python pending_worker.py <sqlite path | postgres URL> <command> <thread>``:

- ``ask``: start the thread: it fans out to two tasks, each asking two questions.
- ``answer <n>``: answer the thread's first waiting question, SIGKILLing this process
  right after the saver's ``n``-th write call returns (``n = 0``: never).
- ``count``: print how many saver write calls answering takes (a probe run).

The same script, run with pausepoint's main branch on ``PYTHONPATH``, writes a
database in the schema before the index existed (the migration test).
"""

from __future__ import annotations

import operator
import os
import signal
import sys
from typing import Annotated, Any, TypedDict

from pausepoint import Command, Send, StateGraph, interrupt
from pausepoint.constants import START


class S(TypedDict):
    x: int
    got: Annotated[list[int], operator.add]


def ask(state: S) -> dict[str, Any]:
    first = interrupt({"q": "first?", "x": state["x"]})
    second = interrupt("second?")
    return {"got": [int(first) + int(second)]}


def fan(state: S) -> list[Send]:
    return [Send("ask", {"x": n}) for n in range(state.get("x", 0))]


def build(saver: Any) -> Any:
    g = StateGraph(S)
    g.add_node("ask", ask)
    g.add_conditional_edges(START, fan)
    return g.compile(checkpointer=saver)


_WRITES = ("commit", "put", "put_writes")  # the engine writes with commit only


def killing(saver: Any, after: int) -> list[int]:
    """Make ``saver`` SIGKILL the process after its ``after``-th write call returns."""
    calls = [0]
    for name in _WRITES:
        method = getattr(saver, name)

        def wrapped(*args: Any, _method: Any = method, **kw: Any) -> Any:
            out = _method(*args, **kw)
            calls[0] += 1
            if calls[0] == after:
                os.kill(os.getpid(), signal.SIGKILL)
            return out

        setattr(saver, name, wrapped)
    return calls


def run(saver: Any, command: str, thread: str, after: int) -> None:
    config: Any = {"configurable": {"thread_id": thread}, "metadata": {"graph_id": "fan"}}
    graph = build(saver)
    if command == "ask":
        graph.invoke({"x": 2}, config)
        return
    calls = killing(saver, after)
    waiting = graph.get_state(config).interrupts
    if waiting:
        graph.invoke(Command(resume={waiting[0].question_id: 1}), config)
    if command == "count":
        print(calls[0])


def main() -> None:
    target, command, thread = sys.argv[1:4]
    after = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    if target.startswith("postgresql://"):
        import psycopg

        from pausepoint.checkpoint.postgres import PostgresSaver

        schema = os.environ["PENDING_SCHEMA"]
        opts = f"-c search_path={schema}"
        with psycopg.connect(target, autocommit=True, options=opts) as conn:
            saver = PostgresSaver(conn)
            saver.setup()
            run(saver, command, thread, after)
    else:
        from pausepoint.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(target) as saver:
            run(saver, command, thread, after)


if __name__ == "__main__":
    main()
