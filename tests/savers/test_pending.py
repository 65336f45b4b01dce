"""``list_pending``: the waiting questions across threads, in every saver.

Each test runs on InMemorySaver, SQLite and PostgreSQL (sync), and the truth it is
checked against is ``graph.get_state(config).interrupts`` of each thread.
"""

from __future__ import annotations

import asyncio
import datetime
import operator
import sqlite3
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest

from pausepoint import Command, InMemorySaver, Send, StateGraph, interrupt
from pausepoint.checkpoint import PendingPage, PendingQuestion
from pausepoint.checkpoint.base import BaseCheckpointSaver
from pausepoint.checkpoint.compact import CompactingMemorySaver
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.constants import START


class S(TypedDict):
    x: int
    got: Annotated[list[int], operator.add]


def _ask(state: S) -> dict[str, Any]:
    first = interrupt({"q": "first?", "x": state["x"]})
    second = interrupt("second?")
    return {"got": [int(first) + int(second)]}


def _fan(state: S) -> list[Send]:
    return [Send("ask", {"x": n}) for n in range(state["x"])]


def build(saver: Any) -> Any:
    """Fan out to ``x`` tasks, each asking two questions one after the other."""
    g = StateGraph(S)
    g.add_node("ask", _ask)
    g.add_conditional_edges(START, _fan)
    return g.compile(checkpointer=saver)


@pytest.fixture(params=["memory", "compact", "sqlite", "postgres"])
def saver(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
    elif request.param == "compact":
        yield CompactingMemorySaver()
    elif request.param == "sqlite":
        conn = sqlite3.connect(tmp_path / "p.db", check_same_thread=False)
        yield SqliteSaver(conn)
        conn.close()
    else:
        import psycopg

        from pausepoint.checkpoint.postgres import PostgresSaver

        kwargs = request.getfixturevalue("pg_kwargs")
        with psycopg.connect(request.getfixturevalue("pg_url"), **kwargs) as conn:
            pg = PostgresSaver(conn)
            pg.setup()
            yield pg


def cfg(thread: str, **metadata: Any) -> Any:
    return {"configurable": {"thread_id": thread}, "metadata": metadata}


def truth(graph: Any, threads: list[str]) -> set[tuple[str, str]]:
    """(thread, question id) of every question ``get_state`` shows as waiting."""
    return {(t, i.question_id) for t in threads for i in graph.get_state(cfg(t)).interrupts}


def listed(saver: BaseCheckpointSaver, **kw: Any) -> list[PendingQuestion]:
    out: list[PendingQuestion] = []
    cursor = kw.pop("cursor", None)
    while True:
        page = saver.list_pending(cursor=cursor, **kw)
        assert not page.errors
        out.extend(page.items)
        if page.next_cursor is None:
            return out
        cursor = page.next_cursor


def keys(items: list[PendingQuestion]) -> set[tuple[str, str]]:
    return {(q.thread_id, q.question_id) for q in items}


def test_lists_what_get_state_shows_and_follows_answers(saver: Any) -> None:
    graph = build(saver)
    threads = ["a", "b", "c"]
    for n, t in enumerate(threads):
        graph.invoke({"x": n + 1}, cfg(t, graph_id="fan", team=t))
    assert len(listed(saver)) == 6
    assert keys(listed(saver)) == truth(graph, threads)
    # Answer one question of b: its next question waits (position 1), the other stays.
    q = next(q for q in listed(saver) if q.thread_id == "b")
    graph.invoke(Command(resume={q.question_id: 1}), cfg("b"))
    assert keys(listed(saver)) == truth(graph, threads)
    assert {q.position for q in listed(saver) if q.thread_id == "b"} == {0, 1}
    # Answer everything of c: it finishes, nothing of c is listed.
    for q in [q for q in listed(saver) if q.thread_id == "c"]:
        graph.invoke(Command(resume={q.question_id: 2}), cfg("c"))
    for q in [q for q in listed(saver) if q.thread_id == "c"]:
        graph.invoke(Command(resume={q.question_id: 2}), cfg("c"))
    assert not [q for q in listed(saver) if q.thread_id == "c"]
    assert keys(listed(saver)) == truth(graph, threads)
    saver.delete_thread("a")
    assert {q.thread_id for q in listed(saver)} == {"b"}


def test_fields(saver: Any) -> None:
    graph = build(saver)
    before = datetime.datetime.now(datetime.UTC)
    graph.invoke({"x": 1}, cfg("t", graph_id="fan", team="red"))
    (q,) = listed(saver)
    (shown,) = graph.get_state(cfg("t")).interrupts
    assert (q.thread_id, q.checkpoint_ns, q.task_name) == ("t", "", "ask")
    assert q.question_id == shown.question_id == f"{shown.id}:0"
    assert q.value == {"q": "first?", "x": 0}
    assert q.graph == "fan"
    assert q.metadata["team"] == "red"
    assert q.checkpoint_id == graph.get_state(cfg("t")).config["configurable"]["checkpoint_id"]
    assert (
        before - datetime.timedelta(seconds=1) <= q.asked_at <= datetime.datetime.now(datetime.UTC)
    )
    assert (q.response_schema, q.deadline, q.on_timeout) == (None, None, None)
    graph.invoke(Command(resume={q.question_id: 5}), cfg("t"))
    (q2,) = listed(saver)
    assert (q2.position, q2.value, q2.task_id) == (1, "second?", q.task_id)


def test_filters_and_pages(saver: Any) -> None:
    graph = build(saver)
    graph.invoke({"x": 3}, cfg("old", graph_id="fan", team="red"))
    middle = datetime.datetime.now(datetime.UTC)
    graph.invoke({"x": 2}, cfg("new", graph_id="other", team="blue"))
    assert {q.thread_id for q in listed(saver, graph="fan")} == {"old"}
    assert {q.thread_id for q in listed(saver, metadata={"team": "blue"})} == {"new"}
    assert {q.thread_id for q in listed(saver, asked_before=middle)} == {"old"}
    assert listed(saver, metadata={"team": "green"}) == []
    assert listed(saver, due_by=datetime.datetime.now(datetime.UTC)) == []
    # Pages of 2: oldest first; a question asked between pages comes at the end.
    first = saver.list_pending(limit=2)
    assert [q.thread_id for q in first.items] == ["old", "old"]
    graph.invoke({"x": 1}, cfg("newest"))
    rest = listed(saver, cursor=first.next_cursor, limit=2)
    assert [q.thread_id for q in rest] == ["old", "new", "new", "newest"]
    assert len(keys(first.items + rest)) == 6


def test_bad_arguments(saver: Any) -> None:
    for kw in (
        {"limit": 0},
        {"limit": True},
        {"cursor": "nope"},
        {"asked_before": datetime.datetime(2020, 1, 1)},
        {"due_by": "2020"},
    ):
        with pytest.raises(ValueError, match="list_pending"):
            saver.list_pending(**kw)


def test_async_matches_sync(saver: Any) -> None:
    graph = build(saver)
    graph.invoke({"x": 2}, cfg("t"))
    page: PendingPage = asyncio.run(saver.alist_pending(limit=1))
    assert page.items == saver.list_pending(limit=1).items


class Typed(TypedDict):
    ok: bool


def _typed(state: S) -> dict[str, Any]:
    soon = datetime.timedelta(minutes=5) if state["x"] else datetime.timedelta(days=1)
    answer = interrupt({"x": state["x"]}, response_schema=Typed, deadline=soon, on_timeout="fail")
    return {"got": [int(answer["ok"])]}


def test_schema_deadline_and_due_by(saver: Any) -> None:
    g = StateGraph(S)
    g.add_node("ask", _typed)
    g.add_conditional_edges(START, _fan)
    graph = g.compile(checkpointer=saver)
    start = datetime.datetime.now(datetime.UTC)
    graph.invoke({"x": 2}, cfg("t"))
    items = listed(saver)
    assert len(items) == 2
    for q in items:
        assert q.response_schema is not None
        assert q.response_schema["properties"] == {"ok": {"type": "boolean"}}
        assert q.on_timeout == "fail"
        assert q.deadline is not None
        assert q.deadline.tzinfo is not None
    soon = start + datetime.timedelta(hours=1)
    (due,) = listed(saver, due_by=soon)
    assert due.value == {"x": 1}
    assert len(listed(saver, due_by=soon + datetime.timedelta(days=2))) == 2


def test_asked_before_across_many_rows(saver: Any) -> None:
    graph = build(saver)
    for n in range(12):
        graph.invoke({"x": 1}, cfg(f"t{n:02d}"))
        if n == 4:
            middle = datetime.datetime.now(datetime.UTC)
    assert [q.thread_id for q in listed(saver, asked_before=middle, limit=2)] == [
        f"t{n:02d}" for n in range(5)
    ]
    assert saver.list_pending(asked_before=middle, limit=5).next_cursor is None


class _Inner(TypedDict):
    x: int


def _inner_ask(state: _Inner) -> dict[str, Any]:
    return {"x": int(interrupt(f"inner {state['x']}?"))}


def _nested(saver: Any) -> Any:
    """A root graph whose ``review`` node (a pull task) and ``fan`` targets (pushed
    tasks) are a subgraph that asks: each question carries the subgraph's namespace."""
    inner = StateGraph(_Inner)
    inner.add_node("inner_ask", _inner_ask)
    inner.add_edge(START, "inner_ask")
    sub = inner.compile()
    g = StateGraph(_Inner)
    g.add_node("review", sub)
    g.add_node("fanned", sub)
    g.add_edge(START, "review")
    g.add_conditional_edges(START, lambda s: [Send("fanned", {"x": n}) for n in range(2)])
    return g.compile(checkpointer=saver)


def test_task_name_of_a_question_a_subgraph_asked(saver: Any) -> None:
    graph = _nested(saver)
    graph.invoke({"x": 7}, cfg("t"))
    found = listed(saver)
    waiting = graph.get_state(cfg("t")).tasks
    shown = {i.id for i in graph.get_state(cfg("t")).interrupts}
    assert {q.interrupt_id for q in found} == shown
    names = {t.id: t.name for t in waiting if t.interrupts}
    assert len(found) == 3
    # The root task that holds the question (the subgraph's node), not "".
    assert sorted(q.task_name for q in found) == ["fanned", "fanned", "review"]
    assert {q.task_id: q.task_name for q in found} == names


def test_task_id_formula_matches_the_loops() -> None:
    from pausepoint.checkpoint.questions import (
        _task_id,  # pyright: ignore[reportPrivateUsage]
    )
    from pausepoint.constants import PULL, PUSH
    from pausepoint.loop.tasks import task_id

    for kind, key in ((PULL, "node"), (PUSH, "3")):
        assert _task_id("1f0-abc", 4, "node", kind, key) == task_id(
            "1f0-abc", "", 4, "node", kind, key
        )


def test_task_name_of_a_subgraph_question_encrypted(tmp_path: Any) -> None:
    pytest.importorskip("cryptography")
    from pausepoint.crypto import KeyRing

    conn = sqlite3.connect(tmp_path / "e.db", check_same_thread=False)
    try:
        saver = SqliteSaver(conn, encryption=KeyRing({"k1": bytes(32)}))
        graph = _nested(saver)
        graph.invoke({"x": 7}, cfg("t"))
        assert sorted(q.task_name for q in listed(saver)) == ["fanned", "fanned", "review"]
    finally:
        conn.close()
