"""``pausepoint check`` on many waiting threads (issue 31): the pre-deploy check's speed.

``check(waiting, kind, edit)`` stores ``waiting`` threads paused on a question (a run
of START -> prep -> ask, asking in ``ask``) on one SQLite or PostgreSQL saver, then each
timed run checks them all against a graph (``pausepoint.deploys.check_threads``, what
``pausepoint check`` runs): ``same`` a graph with the same fingerprint (the fast path:
heads read in batches and compared), ``changed`` one whose ``ask`` node was renamed
(the slow path: every thread read whole, checked, and listed). Issue 31's bound: 10 s
per 10,000 waiting threads.

LangGraph 1.1.6 has no such check (a resume into the changed graph reports the thread
as finished): the workload runs on pausepoint only. The floor compares 10,000 stored
fingerprint strings with the graph's.

The threads are made by running the graph once and copying its rows under new thread
ids in SQL (untimed): 10,000 runs would take minutes per side.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

from cases import Case, expect, open_saver

_COPY = {
    "pausepoint_checkpoints": """thread_id, checkpoint_ns, checkpoint_id,
        parent_checkpoint_id, type, checkpoint, metadata""",
    "pausepoint_writes": """thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
        channel, type, value, task_path""",
}


class State(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]


def _prep(state: State) -> dict[str, Any]:
    return {"notes": ["prepared"]}


def graph(lib: SimpleNamespace, asked: str = "ask", saver: Any = None) -> Any:
    """START -> prep -> ``asked`` (a question) -> END."""

    def ask(state: State) -> dict[str, Any]:
        return {"notes": [lib.interrupt(f"publish {state['topic']}?")]}

    g = lib.StateGraph(State)
    g.add_node("prep", _prep)
    g.add_node(asked, ask)
    g.add_edge(lib.START, "prep")
    g.add_edge("prep", asked)
    g.add_edge(asked, lib.END)
    return g.compile(checkpointer=saver)


def populate(lib: SimpleNamespace, saver: Any, waiting: int) -> None:
    """``waiting`` threads (``t000000``...) paused at ``ask``: one run, its rows copied."""
    graph(lib, saver=saver).invoke({"topic": "tides", "notes": []}, _seed())
    conn = saver.conn
    sqlite = type(conn).__module__.startswith("sqlite3")
    numbers = (
        f"(WITH RECURSIVE r(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM r WHERE n < {waiting - 1})"
        " SELECT n FROM r) nums"
        if sqlite
        else f"generate_series(0, {waiting - 1}) AS nums(n)"
    )
    name = "printf('t%06d', nums.n)" if sqlite else "'t' || lpad(nums.n::text, 6, '0')"
    for table, columns in _COPY.items():
        rest = columns.split(",", 1)[1]
        conn.execute(
            f"INSERT INTO {table} ({columns}) SELECT {name}, {rest} FROM {table}, {numbers}"
            " WHERE thread_id = 'seed'"
        )
    conn.execute("DELETE FROM pausepoint_writes WHERE thread_id = 'seed'")
    conn.execute("DELETE FROM pausepoint_checkpoints WHERE thread_id = 'seed'")
    if sqlite:
        conn.commit()


def _seed() -> dict[str, Any]:
    return {"configurable": {"thread_id": "seed"}}


def check(waiting: int, kind: str, edit: str) -> Callable[[SimpleNamespace], Case]:
    def build(lib: SimpleNamespace) -> Case:
        from pausepoint.deploys import check_threads

        saver = open_saver(lib, kind)
        populate(lib, saver, waiting)
        new = graph(lib, "ask" if edit == "same" else "approve")
        want = 0 if edit == "same" else waiting

        def run(i: int) -> tuple[int, int]:
            report = check_threads(saver, new)
            return report.checked, len(report.cannot_resume)

        def verify(out: tuple[int, int]) -> str | None:
            return expect("threads checked", out[0], waiting) or expect(
                "threads that cannot resume", out[1], want
            )

        return Case(run=run, check=verify)

    return build


def check_floor(waiting: int) -> Callable[[], Case]:
    def build() -> Case:
        stored = {f"t{k:06d}": "bada8b5efd01176678d885226600c3e7" for k in range(waiting)}
        mine = "bada8b5efd01176678d885226600c3e7"

        def run(i: int) -> int:
            return sum(1 for fp in stored.values() if fp == mine)

        return Case(run=run, check=lambda out: expect("same fingerprints", out, waiting))

    return build
