"""Listing waiting questions across many threads: ``list_pending`` vs a scan of ``list()``.

``pending(total, waiting, kind)`` stores ``total`` threads on one SQLite or PostgreSQL
saver, ``waiting`` of them (spread evenly) paused on a question, the others finished;
then each timed run reads the first page of 50 waiting questions, oldest first.
pausepoint reads its index (``saver.list_pending(limit=50)``); LangGraph 1.1.6 has no
index in its open-source savers, so its side does the nearest thing an application can:
scan ``saver.list(None)``, keep each thread's newest checkpoint whose ``"__interrupt__"``
write has no ``"__resume__"`` beside it, and sort by time. The floor is a dict lookup.

The threads are stored through the savers' own ``put``/``put_writes`` (what a run
stores for them), not by running graphs: 100,000 invokes would take minutes per side.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

from cases import Case, expect, open_saver
from xxhash import xxh3_128_hexdigest

PAGE = 50
_PULL_ASK = "('__pregel_pull', 'ask')"


def _kit(lib: SimpleNamespace) -> tuple[Any, Callable[[], dict[str, Any]]]:
    """``lib``'s Interrupt class and a fresh empty checkpoint maker."""
    if lib.family == "pausepoint":
        from pausepoint.checkpoint.base import empty_checkpoint
        from pausepoint.checkpoint.ids import new_stamp
        from pausepoint.types import Interrupt

        return Interrupt, lambda: dict(empty_checkpoint(*new_stamp()))
    from langgraph.checkpoint.base import empty_checkpoint as lg_empty
    from langgraph.checkpoint.base.id import uuid6
    from langgraph.types import Interrupt as LGInterrupt

    def fresh() -> dict[str, Any]:
        checkpoint: dict[str, Any] = dict(lg_empty())
        checkpoint["id"] = str(uuid6(clock_seq=-1))
        return checkpoint

    return LGInterrupt, fresh


def _populate(lib: SimpleNamespace, saver: Any, total: int, waiting: int) -> None:
    interrupt_cls, fresh = _kit(lib)
    every = max(total // waiting, 1)
    with _bulk(lib, getattr(saver, "conn", None)):
        for k in range(total):
            checkpoint = fresh()
            checkpoint["channel_values"] = {"question": f"q{k}", "answer": ""}
            config = {"configurable": {"thread_id": f"t{k:06d}", "checkpoint_ns": ""}}
            meta = {"source": "loop", "step": 1, "parents": {}, "graph_id": "bench"}
            saved = saver.put(config, checkpoint, meta, {})
            if k % every == 0 and k // every < waiting:
                # As a run of START -> ask stores it: the pull task "ask" asked.
                task = f"{k:08d}-0000-0000-0000-000000000000"
                asked = interrupt_cls(value=f"q{k}", id=xxh3_128_hexdigest(f"ask:{task}".encode()))
                saver.put_writes(saved, [("__interrupt__", (asked,))], task, _PULL_ASK)


@contextlib.contextmanager
def _bulk(lib: SimpleNamespace, conn: Any) -> Iterator[None]:
    """Store fast (untimed): SQLite without fsyncs, PostgreSQL in pipeline mode."""
    if isinstance(conn, sqlite3.Connection):
        conn.execute("PRAGMA synchronous=OFF")
        try:
            yield
        finally:
            conn.execute("PRAGMA synchronous=FULL")
    elif conn is not None and hasattr(conn, "pipeline"):
        with conn.pipeline():
            yield
    else:
        yield


def _scan(saver: Any) -> list[tuple[str, str]]:
    """LangGraph's nearest equivalent: the oldest waiting questions, from ``list()``."""
    heads: dict[str, Any] = {}
    for tup in saver.list(None):
        conf = tup.config["configurable"]
        if conf.get("checkpoint_ns", "") == "" and conf["thread_id"] not in heads:
            heads[conf["thread_id"]] = tup
    found: list[tuple[str, str]] = []
    for thread, tup in heads.items():
        writes = tup.pending_writes or []
        answered = {w[0] for w in writes if w[1] == "__resume__"}
        for task, channel, value in writes:
            if channel == "__interrupt__" and task not in answered:
                found.extend((tup.checkpoint["ts"], thread) for _ in value)
    return sorted(found)[:PAGE]


def pending(total: int, waiting: int, kind: str) -> Callable[[SimpleNamespace], Case]:
    def build(lib: SimpleNamespace) -> Case:
        saver = open_saver(lib, kind)
        _populate(lib, saver, total, waiting)
        want = min(PAGE, waiting)

        def run(i: int) -> int:
            if lib.family == "pausepoint":
                return len(saver.list_pending(limit=PAGE).items)
            return len(_scan(saver))

        return Case(run=run, check=lambda out: expect("questions on the page", out, want))

    return build


def pending_floor(total: int, waiting: int, kind: str) -> Callable[[], Case]:
    # The waiting questions kept in a list in asking order: the page is a slice.
    def build() -> Case:
        questions = [f"q{k}" for k in range(waiting)]
        return Case(
            run=lambda i: len(questions[:PAGE]),
            check=lambda out: expect("questions on the page", out, min(PAGE, waiting)),
        )

    return build
