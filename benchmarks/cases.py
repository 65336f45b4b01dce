"""What every workload module shares: the library namespace, ``Case``, ``Workload``.

A *library* is a namespace holding ``StateGraph, START, END, interrupt, Command,
InMemorySaver``, loaded from pausepoint or from LangGraph 1.1.6 by the same names, so
one function builds the same graph on either side, and ``memory_saver``: the class
of the in-memory saver the workloads use. For pausepoint that is the opt-in
``CompactingMemorySaver``, not the reference ``InMemorySaver`` (see README.md, "Which
in-memory saver"); ``PAUSEPOINT_BENCH_MEMORY=reference`` measures the reference.
``pausepoint@base`` is pausepoint too, imported in processes whose ``PYTHONPATH``
starts with an older source tree (``run.py --baseline-src``), so a change can be
measured against its base in one run. ``floor`` is not a graph library: it is the
same work done in plain Python (dict updates in a loop, a dict as the store), so
each ratio to it says how far a library is from the limit.

This module stays light on purpose: ``coldstart.py`` imports it in every fresh
interpreter it times.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypedDict

LIBRARIES = ("pausepoint", "langgraph")
FLOOR = "floor"
BASE = "pausepoint@base"  # pausepoint from the --baseline-src tree


def family(name: str) -> str:
    """The package a library name imports: ``pausepoint@base`` is pausepoint."""
    return name.split("@", 1)[0]


def load_library(name: str) -> SimpleNamespace:
    """Import the graph names of ``name`` (pausepoint, pausepoint@base or langgraph).

    The namespace's ``name`` is the library's name as given (it tags thread ids and
    results); ``family`` is the package it came from.
    """
    if family(name) == "pausepoint":
        from pausepoint.checkpoint.memory import InMemorySaver
        from pausepoint.graph import END, START, StateGraph
        from pausepoint.types import Command, interrupt
    elif name == "langgraph":
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.graph import END, START, StateGraph
        from langgraph.types import Command, interrupt
    else:
        raise ValueError(f"unknown library {name!r}; expected one of {(*LIBRARIES, BASE)}")
    return SimpleNamespace(
        name=name,
        family=family(name),
        StateGraph=StateGraph,
        START=START,
        END=END,
        interrupt=interrupt,
        Command=Command,
        InMemorySaver=InMemorySaver,
        memory_saver=_memory_saver(name, InMemorySaver),
    )


def _memory_saver(name: str, reference: type[Any]) -> type[Any]:
    """The in-memory saver the workloads use on ``name``: pausepoint's compacting one.

    An older tree (``pausepoint@base``) may predate it; its ``InMemorySaver`` was then
    the compacting one.
    """
    if family(name) != "pausepoint" or os.environ.get(MEMORY_ENV) == "reference":
        return reference
    try:
        from pausepoint.checkpoint.compact import CompactingMemorySaver
    except ImportError:
        return reference
    return CompactingMemorySaver


MEMORY_ENV = "PAUSEPOINT_BENCH_MEMORY"
"""Set to ``reference`` to run pausepoint's in-memory workloads on ``InMemorySaver``."""


# --------------------------------------------------------------------------- records


@dataclass
class Case:
    """One workload built on one side, ready to run.

    ``run(i)`` does one timed iteration (``i`` is unique per iteration, used as the
    thread id); ``check(result)`` returns an error message or ``None``; ``cleanup(i)``
    runs outside the timed region; ``node_runs`` counts node-body executions.
    ``clock(result)``, when set, is the measured time in seconds (for workloads that
    time a child process themselves); otherwise the wall time of ``run`` is used.
    ``probe()``, when set, runs once after the first run, untimed, and returns extra
    figures (bytes of memory) that the report shows in their own table.
    ``rerun_first``: a clocked workload slower than twice the budget runs once more
    before its single timed run, since its first may have written bytecode caches;
    off where the clock starts after every import (the throughput workloads).
    """

    run: Callable[[int], Any]
    check: Callable[[Any], str | None]
    cleanup: Callable[[int], None] = lambda i: None
    node_runs: list[int] = field(default_factory=lambda: [0])
    clock: Callable[[Any], float] | None = None
    probe: Callable[[], dict[str, float]] | None = None
    rerun_first: bool = True


@dataclass(frozen=True)
class Target:
    """An issue's target for the pausepoint / LangGraph ratio of one measurement.

    ``explicit`` is False where the issue names no target for this exact workload and
    the nearest one (``source``) is applied as a reading aid.
    """

    ratio: float
    source: str
    explicit: bool = True

    def label(self) -> str:
        return f"≤ {self.ratio:.3g}" + ("" if self.explicit else " (implied)")


OVERHEAD = Target(0.1, "per-superstep overhead and interrupt round trip")
FAN_OUT = Target(0.1, "fan-out of 100 with partial resumes")
IMPORT = Target(0.1, "import of the everyday names")
DATABASE = Target(0.5, "SQLite / PostgreSQL round trip")
MEMORY = Target(0.5, "peak memory for 1,000 paused threads")
IMPLIED = Target(0.1, "per-superstep overhead and interrupt round trip", explicit=False)
# Issue 35 (replacing issue 15's 2.5x): resumes per second at least 3x LangGraph's,
# i.e. time <= 1/3 of LangGraph's.
RESUME_RATE = Target(1 / 3, "issue 35: resumes/s at least 3x LangGraph's")


@dataclass(frozen=True)
class Workload:
    """A named measurement: how to build it on a library and, if any, on the floor.

    ``by_name``: ``build`` takes the library's name, not its namespace (the workload
    runs the library in a child process and must not import it itself). ``rounds``
    caps the alternating rounds for a workload whose one run takes seconds.
    ``per_run``: for a workload also reported as a rate, the operations in one run
    (resumes), so the report can show operations per second. ``pausepoint_only``:
    LangGraph has no counterpart (its cell shows "—").
    """

    name: str
    summary: str
    build: Callable[[Any], Case]
    floor: Callable[[], Case] | None = None
    target: Target | None = None
    by_name: bool = False
    rounds: int | None = None
    per_run: int | None = None
    pausepoint_only: bool = False


# --------------------------------------------------------------------------- helpers


def config(i: int | str, limit: int = 10_000) -> dict[str, Any]:
    return {"configurable": {"thread_id": f"t{i}"}, "recursion_limit": limit}


def forget(saver: Any) -> Callable[[int], None]:
    # Drop each finished thread outside the timed region, so a long run does not
    # time a saver that grows with the iteration count.
    if saver is None:
        return lambda i: None
    return lambda i: saver.delete_thread(f"t{i}")


def drop(store: dict[str, Any]) -> Callable[[int], None]:
    def cleanup(i: int) -> None:
        store.pop(f"t{i}", None)

    return cleanup


def expect(what: str, got: Any, want: Any) -> str | None:
    return None if got == want else f"wrong result: {what} is {got!r}, expected {want!r}"


class AskState(TypedDict):
    question: str
    answer: str


def ask_graph(lib: SimpleNamespace, saver: Any, runs: list[int]) -> Any:
    """START → ask → END, where ``ask`` puts ``question`` to a human via interrupt()."""

    def ask(state: AskState) -> dict[str, str]:
        runs[0] += 1
        return {"answer": lib.interrupt(state["question"])}

    builder = lib.StateGraph(AskState)
    builder.add_node("ask", ask)
    builder.add_edge(lib.START, "ask")
    builder.add_edge("ask", lib.END)
    return builder.compile(checkpointer=saver)


def open_saver(
    lib: SimpleNamespace,
    kind: str,
    where: str | None = None,
    busy_timeout: float = 5.0,
    schema: str | None = None,
) -> Any:
    """A saver of ``kind`` (memory, sqlite, postgres) from ``lib``'s own packages.

    ``where``: SQLite's file, by default a fresh one in a temporary directory (both
    libraries' savers come back ready: schema made, WAL on); PostgreSQL's URL, by
    default ``PAUSEPOINT_PG_URL``.
    ``busy_timeout``: seconds a SQLite connection waits for a lock (sqlite3's and
    both ``from_conn_string``'s default: 5).
    ``schema``: the PostgreSQL schema (namespace) holding the tables, by default one
    made for this process and dropped when it exits (see :func:`pg_schema`).
    """
    if kind == "memory":
        return lib.memory_saver()
    if kind == "sqlite":
        import sqlite3
        import tempfile

        if where is None:
            where = str(Path(tempfile.mkdtemp(prefix=f"bench-{lib.name}-")) / "bench.db")
        conn = sqlite3.connect(where, check_same_thread=False, timeout=busy_timeout)
        if lib.family == "pausepoint":
            from pausepoint.checkpoint.sqlite import SqliteSaver

            return SqliteSaver(conn)  # makes the schema and turns WAL on itself
        from langgraph.checkpoint.sqlite import SqliteSaver as LGSqliteSaver

        saver = LGSqliteSaver(conn)
        saver.setup()  # otherwise on first use: schema and WAL, as pausepoint's above
        return saver
    url = where or os.environ["PAUSEPOINT_PG_URL"]
    return _postgres_saver(lib, url, schema or _process_schema(url))


def _postgres_saver(lib: SimpleNamespace, url: str, schema: str) -> Any:
    import psycopg
    from psycopg.rows import dict_row

    # Both connect as their from_conn_string does: autocommit, statements prepared;
    # and both find their tables (unqualified names) in ``schema`` first.
    options = f"-c search_path={schema}"
    if lib.family == "pausepoint":
        from pausepoint.checkpoint.postgres import PostgresSaver

        conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, options=options)
        saver = PostgresSaver(conn)
    else:
        from langgraph.checkpoint.postgres import PostgresSaver as LGPostgresSaver

        conn = psycopg.connect(
            url, autocommit=True, prepare_threshold=0, row_factory=dict_row, options=options
        )
        saver = LGPostgresSaver(conn)  # pyright: ignore[reportArgumentType]
    saver.setup()
    return saver


@contextlib.contextmanager
def pg_schema(url: str) -> Iterator[str]:
    """A new, empty PostgreSQL schema for one run's tables, dropped with them on exit.

    The database is shared (other engineers' tests, other branches): a branch that
    migrated its tables to a newer version makes an older pausepoint refuse them,
    and a baseline (``pausepoint@base``) and the checkout may need different
    versions. A schema of its own per run keeps every library to a state of its own.
    """
    import uuid

    import psycopg
    from psycopg import sql

    name = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


_SCHEMAS: dict[str, str] = {}  # URL -> this process's schema


def _process_schema(url: str) -> str:
    # One schema for the whole process (a worker may open several savers), dropped
    # at exit; a worker killed by the runner's timeout leaves its bench_ schema behind.
    if url not in _SCHEMAS:
        import atexit

        context = pg_schema(url)
        _SCHEMAS[url] = context.__enter__()
        atexit.register(context.__exit__, None, None, None)
    return _SCHEMAS[url]
