"""The statements one resume sends to the database, counted on the real connection.

Issue 35: a resume's statements are the throughput of the SQL savers (each one a round
trip on PostgreSQL, a Python ``execute`` and a plan on SQLite), so their number is
pinned here and cannot grow back silently. A resume is ``invoke(Command(resume=...))``
of a thread paused at one question (``graphs.ask_graph``), with the default lease.

SQLite: the connection's trace callback, which reports every statement the saver runs
(BEGIN, COMMIT and PRAGMA included; a trigger program repeats its statement's text
and is left out). PostgreSQL: libpq's protocol trace of the saver's connection; every
statement is one ``Query`` (simple protocol: BEGIN, COMMIT) or one ``Bind`` (extended
protocol: a parameterized statement) message sent to the server.

A count that changes on purpose is changed here and in benchmarks/README.md
("Statements per resume").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pausepoint import Command
from pausepoint.checkpoint.postgres import PostgresSaver
from pausepoint.checkpoint.sqlite import SqliteSaver

from .graphs import ask_graph

PAUSE: Any = {"question": "ship it?", "answer": ""}
SQLITE_RESUME = 17
"""PRAGMA synchronous=OFF, BEGIN, the claim, COMMIT, PRAGMA synchronous back (the claim:
unsynced); BEGIN, the head with its writes, COMMIT (a read, outside the write lock);
BEGIN, the fence, the answer's write, COMMIT; BEGIN, the release as the fence, the last
writes, the checkpoint, COMMIT."""
POSTGRES_RESUME = 3
"""The claim with the head read; the answer's write, fenced; the last writes and the
checkpoint, with the release as the fence."""


def _sqlite_statements(conn: sqlite3.Connection, run: Callable[[], object]) -> list[str]:
    sent: list[str] = []
    conn.set_trace_callback(sent.append)
    try:
        run()
    finally:
        conn.set_trace_callback(None)
    # A trigger's program is reported with its statement's own text, right after it.
    return [s for n, s in enumerate(sent) if n == 0 or s != sent[n - 1]]


def _pg_statements(conn: Any, trace: Path, run: Callable[[], object]) -> list[str]:
    with trace.open("w") as out:
        conn.pgconn.trace(out.fileno())
        try:
            run()
        finally:
            conn.pgconn.untrace()
    sent: list[str] = []
    for line in trace.read_text().splitlines():
        fields = line.split("\t")
        if len(fields) > 3 and fields[1] == "F" and fields[3].startswith(("Query", "Bind")):
            sent.append(" ".join(fields[3:])[:200])
    return sent


def test_a_sqlite_resume_sends_its_pinned_statements(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "c.db", check_same_thread=False, isolation_level=None)
    saver = SqliteSaver(conn)
    graph = ask_graph(saver)
    cfg: Any = {"configurable": {"thread_id": "count"}}
    graph.invoke(PAUSE, cfg)
    sent = _sqlite_statements(conn, lambda: graph.invoke(Command(resume="yes"), cfg))
    assert len(sent) == SQLITE_RESUME, "\n".join(" ".join(s.split())[:120] for s in sent)
    assert graph.get_state(cfg).values == {"question": "ship it?", "answer": "yes"}
    assert saver.get_lease("count") is None
    conn.close()


@pytest.mark.postgres
def test_a_postgres_resume_sends_its_pinned_statements(
    tmp_path: Path, pg_url: str, pg_kwargs: dict[str, Any]
) -> None:
    import psycopg

    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        graph = ask_graph(saver)
        cfg: Any = {"configurable": {"thread_id": "count"}}
        graph.invoke(PAUSE, cfg)
        run = lambda: graph.invoke(Command(resume="yes"), cfg)  # noqa: E731
        sent = _pg_statements(conn, tmp_path / "trace", run)
        assert len(sent) == POSTGRES_RESUME, "\n".join(sent)
        assert graph.get_state(cfg).values == {"question": "ship it?", "answer": "yes"}
        assert saver.get_lease("count") is None
