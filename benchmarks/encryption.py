"""What encryption at rest costs: a pause/resume round trip on SQLite, with and without keys.

    python benchmarks/encryption.py            # 400 round trips a side, interleaved
    python benchmarks/encryption.py 2000

Both sides run the same graph on a real SQLite file (WAL, the saver's defaults): a
node asks a question (``interrupt``), the run pauses, and ``Command(resume=...)``
answers it on a fresh thread each time. One side's saver has
``encryption=KeyRing({"k1": key})``; the other none. The sides alternate in blocks of
ten round trips so that a slower moment of a shared machine falls on both; each
workload prints the median of the per-block means and the ratio (target: at most
1.3x, issue 36).

Workloads: ``small`` (a few short strings of state); ``chat`` (a 40-message
conversation in state, about 20 KB: large enough to be stored in the value rows, so
the full value and its deltas are sealed too).
"""

from __future__ import annotations

import operator
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from typing_extensions import TypedDict

from pausepoint import END, START, Command, StateGraph, interrupt
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.crypto import KeyRing

BLOCK = 10


class State(TypedDict, total=False):
    text: str
    answer: str
    chat: Annotated[list[str], operator.add]


def _ask(state: State) -> State:
    return {"answer": interrupt(f"approve {state.get('text', '')}?"), "chat": ["approved"]}


def _graph(saver: SqliteSaver) -> Any:
    builder = StateGraph(State)
    builder.add_node("ask", _ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=saver)


WORKLOADS: dict[str, State] = {
    "small": {"text": "order 7: 3 items, 42 EUR", "chat": []},
    "chat": {
        "text": "order 7",
        "chat": [f"message {n}: " + "lorem ipsum " * 40 for n in range(40)],
    },
}


def _block(graph: Any, state: State, start: int) -> tuple[float, float]:
    """Seconds for ``BLOCK`` round trips, one fresh thread each: wall clock, and CPU."""
    wall, cpu = time.perf_counter(), time.process_time()
    for n in range(start, start + BLOCK):
        config = {"configurable": {"thread_id": f"t{n}"}}
        graph.invoke(state, config)
        graph.invoke(Command(resume="yes"), config)
    return time.perf_counter() - wall, time.process_time() - cpu


Medians = tuple[float, float, float, float]
"""Median round trip without keys, with keys (wall clock); the same in CPU time."""


def measure(rounds: int) -> dict[str, Medians]:
    """Each workload's median round trip (seconds) without and with keys."""
    out: dict[str, Medians] = {}
    ring = KeyRing({"k1": bytes(range(32))})
    with tempfile.TemporaryDirectory() as tmp:
        for name, state in WORKLOADS.items():
            opened = [
                SqliteSaver.from_conn_string(str(Path(tmp) / f"{name}-{side}.db"), encryption=enc)
                for side, enc in (("plain", None), ("sealed", ring))
            ]
            savers = [o.__enter__() for o in opened]
            try:
                graphs = [_graph(s) for s in savers]
                for g in graphs:  # warm-up: imports, caches, the first pages of the files
                    _block(g, state, 10**6)
                times: list[list[tuple[float, float]]] = [[], []]
                for k in range(max(rounds // BLOCK, 1)):
                    order: list[int] = [0, 1] if k % 2 == 0 else [1, 0]
                    for side in order:
                        times[side].append(_block(graphs[side], state, k * BLOCK))
                wall = [statistics.median(t[0] for t in side) / BLOCK for side in times]
                cpu = [statistics.median(t[1] for t in side) / BLOCK for side in times]
                out[name] = (wall[0], wall[1], cpu[0], cpu[1])
            finally:
                for o in opened:
                    o.__exit__(None, None, None)
    return out


def _report(results: dict[str, Medians], say: Callable[[str], None]) -> None:
    say(f"{'workload':<10} {'clock':<6} {'no keys':>10} {'KeyRing':>10} {'ratio':>7}")
    for name, (plain, sealed, plain_cpu, sealed_cpu) in results.items():
        for clock, a, b in (("wall", plain, sealed), ("cpu", plain_cpu, sealed_cpu)):
            say(f"{name:<10} {clock:<6} {a * 1e3:>8.2f}ms {b * 1e3:>8.2f}ms {b / a:>6.2f}x")


if __name__ == "__main__":
    _report(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 400), print)
