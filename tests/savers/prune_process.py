"""A process the kill -9 test runs: make threads, prune them (to be killed), check them.

``make DB N [PAD]``: N threads, each with turns behind it and, every other one, a
question waiting (``PAD``: each log entry that much longer, so that the list is stored
apart, as deltas). ``prune DB``: prune every thread, one checkpoint per transaction, including
waiting ones (the slowest, most interruptible prune). ``check DB``: prune again (the
rerun), then every thread must read, show what it showed, and resume to its end, and
no value row may be left that no checkpoint needs.
"""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager
from typing import Any

from tests.savers.blob_rows import orphans
from tests.savers.prune_graphs import build, config

from pausepoint import Command


def _saver(db: str) -> AbstractContextManager[Any]:
    if db.startswith("postgres"):
        from pausepoint.checkpoint.postgres import PostgresSaver

        return PostgresSaver.from_conn_string(db)
    from pausepoint.checkpoint.sqlite import SqliteSaver

    return SqliteSaver.from_conn_string(db)


def make(saver: Any, n: int, pad: int) -> None:
    graph = build(saver, pad=pad)
    for k in range(n):
        c = config(f"k{k}")
        for turn in range(4):
            graph.invoke({"log": [f"{turn}"]}, c)
            graph.invoke(Command(resume="y"), c)
            graph.invoke(Command(resume="z"), c)
        if k % 2:
            graph.invoke({"log": ["open"]}, c)


def check(saver: Any, n: int) -> int:
    graph = build(saver)
    report = saver.prune(keep_last=1, include_waiting=True, batch_size=1)
    if report.errors:
        print("errors:", report.errors)
        return 1
    for k in range(n):
        c = config(f"k{k}")
        state = graph.get_state(c)
        if k % 2:
            if [str(i.value)[:3] for i in state.interrupts] != ["ok "]:
                print(f"k{k}: lost its question: {state}")
                return 1
            graph.invoke(Command(resume="y"), c)
            graph.invoke(Command(resume="z"), c)
            state = graph.get_state(c)
        if state.next or len(state.values["log"]) < 12:
            print(f"k{k}: not resumed to its end: {state}")
            return 1
        left = orphans(saver, f"k{k}")
        if left:
            print(f"k{k}: value rows no checkpoint needs: {sorted(left)}")
            return 1
    print(f"all {n} threads resumed")
    return 0


def main() -> int:
    what, db = sys.argv[1], sys.argv[2]
    with _saver(db) as saver:
        if hasattr(saver, "setup") and db.startswith("postgres"):
            saver.setup()
        if what == "make":
            make(saver, int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 0)
        elif what == "prune":
            saver.prune(keep_last=1, include_waiting=True, batch_size=1)
        else:
            return check(saver, 24)
    return 0


if __name__ == "__main__":
    sys.exit(main())
