"""Corrupt and crafted rows fail as ``CheckpointDecodeError`` naming where they are.

A real graph run writes real rows on SQLite and PostgreSQL; Hypothesis damages one
column of one row of the "victim" thread (see :mod:`tests.savers.corruption`), and
every way of reading the thread — ``get_tuple``, ``list``, ``get_state``,
``get_state_history`` — either works or raises ``CheckpointDecodeError`` naming the
thread and the damaged checkpoint: never a raw ``JSONDecodeError``, ``TypeError``,
``KeyError``, ``MemoryError`` or ``RecursionError``. The "bystander" thread reads as
before, and once the row is restored the victim reads as before too.
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, assume, given, settings

from pausepoint import START, Command, StateGraph, interrupt
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import CheckpointDecodeError

from .corruption import MUTATIONS, Mutation

FAST = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
STRESS = settings(FAST, max_examples=1500)


class State(TypedDict, total=False):
    doc: str
    log: Annotated[list[str], operator.add]
    scan: bytes


SCAN = bytes(range(256)) * 300
"""A file large enough to be stored raw after the JSON (a framed row, serde/frames.py)."""


def _ask(name: str) -> Callable[[State], State]:
    def ask(state: State) -> State:
        return {"log": [f"{name}:{interrupt({'q': state['doc'], 'who': name})}"]}

    return ask


def _graph(saver: Any) -> Any:
    b = StateGraph(State)
    b.add_node("draft", lambda s: {"log": ["drafted"], "scan": SCAN})
    b.add_node("legal", _ask("legal"))
    b.add_node("finance", _ask("finance"))
    b.add_edge(START, "draft")
    b.add_edge("draft", "legal")
    b.add_edge("draft", "finance")
    return b.compile(checkpointer=saver)


def _run(graph: Any, thread: str) -> None:
    config = {"configurable": {"thread_id": thread}}
    out = graph.invoke({"doc": f"contract of {thread}"}, config)
    first = out["__interrupt__"][0]
    graph.invoke(Command(resume={first.id: "ok"}), config)  # one answered, one waiting


@dataclass
class World:
    """A database holding two paused threads, and a way to change its rows."""

    saver: Any
    graph: Any
    execute: Callable[[str, tuple[Any, ...]], list[Any]]
    postgres: bool


def _sqlite_world(tmp_path: Path) -> Iterator[World]:
    with SqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as saver:

        def execute(sql: str, params: tuple[Any, ...]) -> list[Any]:
            with saver.conn:
                return saver.conn.execute(sql, params).fetchall()

        yield World(saver, _graph(saver), execute, postgres=False)


def _postgres_world(request: pytest.FixtureRequest) -> Iterator[World]:
    import psycopg

    from pausepoint.checkpoint.postgres import PostgresSaver

    kwargs: dict[str, Any] = request.getfixturevalue("pg_kwargs")
    url: str = request.getfixturevalue("pg_url")
    with psycopg.connect(url, **kwargs) as conn, psycopg.connect(url, **kwargs) as admin:
        saver = PostgresSaver(conn)
        saver.setup()

        def execute(sql: str, params: tuple[Any, ...]) -> list[Any]:
            cur = admin.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []

        yield World(saver, _graph(saver), execute, postgres=True)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    make = _sqlite_world(tmp_path) if request.param == "sqlite" else _postgres_world(request)
    w = next(make)
    _run(w.graph, "victim")
    _run(w.graph, "bystander")
    yield w
    make.close()


_KEYS = {
    "checkpoints": ("checkpoint_id", "thread_id = ? AND checkpoint_id = ?"),
    "writes": ("seq", "thread_id = ? AND seq = ?"),
}


def _target(world: World, m: Mutation) -> tuple[Any, str, Any]:
    """The damaged row's key, the checkpoint it belongs to, and the column's old value."""
    key, _ = _KEYS[m.table]
    # JSONB comes back parsed: read it as the text it is restored from.
    column = f"{m.column}::text" if world.postgres and m.column == "metadata" else m.column
    rows = world.execute(
        f"SELECT {key}, checkpoint_id, {column} FROM pausepoint_{m.table} "
        f"WHERE thread_id = 'victim' ORDER BY {key}",
        (),
    )
    return rows[m.row % len(rows)]


def _set(world: World, m: Mutation, key: Any, value: Any) -> None:
    where = _KEYS[m.table][1]
    sql = f"UPDATE pausepoint_{m.table} SET {m.column} = ? WHERE {where}"
    world.execute(sql, (value, "victim", key))


def _reads(world: World, checkpoint_id: str) -> dict[str, Callable[[], Any]]:
    at = {"configurable": {"thread_id": "victim", "checkpoint_id": checkpoint_id}}
    head = {"configurable": {"thread_id": "victim"}}
    return {
        "get_tuple(at)": lambda: world.saver.get_tuple(at),
        "get_tuple(head)": lambda: world.saver.get_tuple(head),
        "list": lambda: list(world.saver.list(head)),
        "get_state(at)": lambda: world.graph.get_state(at),
        "get_state(head)": lambda: world.graph.get_state(head),
        "history": lambda: list(world.graph.get_state_history(head)),
    }


def _state(world: World, thread: str) -> Any:
    snap = world.graph.get_state({"configurable": {"thread_id": thread}})
    return snap.values, snap.next, [i.value for i in snap.interrupts]


def _check(world: World, m: Mutation) -> None:
    assume(not (world.postgres and m.sqlite_only))
    before = {t: _state(world, t) for t in ("victim", "bystander")}
    key, checkpoint_id, old = _target(world, m)
    try:
        _set(world, m, key, m.apply(old))
    except Exception as exc:  # the database refuses a few values (NULL, NUL in JSONB)
        refused = isinstance(exc, sqlite3.IntegrityError) or type(exc).__module__.startswith(
            "psycopg"
        )
        assume(not refused)
        raise
    try:
        for name, read in _reads(world, checkpoint_id).items():
            try:
                read()
                assert not (m.must_fail and name == "get_tuple(at)"), (name, m.make)
            except CheckpointDecodeError as exc:
                message = str(exc)
                assert "'victim'" in message, (name, m.make, message)
                assert repr(checkpoint_id) in message, (name, m.make, message)
        assert _state(world, "bystander") == before["bystander"]
        assert world.saver.get_tuple({"configurable": {"thread_id": "bystander"}}) is not None
    finally:
        _set(world, m, key, old)
    assert _state(world, "victim") == before["victim"]


@FAST
@given(m=MUTATIONS)
def test_a_damaged_row_is_a_decode_error_naming_it(world: World, m: Mutation) -> None:
    _check(world, m)


@pytest.mark.stress
@STRESS
@given(m=MUTATIONS)
def test_a_damaged_row_is_a_decode_error_naming_it_stress(world: World, m: Mutation) -> None:
    _check(world, m)
