"""Values and ids no saver can store fail before anything is written (issue 18).

On every saver, PostgreSQL included: an int past Python's text limit is a
``SerializationError`` naming where it is; a thread id with a NUL character or over
``MAX_ID_BYTES`` is a ``ValueError``; ``123`` and ``"123"`` are one thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest

from pausepoint import START, InMemorySaver, StateGraph
from pausepoint.checkpoint.compact import CompactingMemorySaver
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.config import MAX_ID_BYTES
from pausepoint.errors import SerializationError


class S(TypedDict, total=False):
    x: Any


@pytest.fixture(
    params=["memory", "compact", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
    elif request.param == "compact":
        yield CompactingMemorySaver()
    elif request.param == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as sqlite_saver:
            yield sqlite_saver
    else:
        import psycopg

        from pausepoint.checkpoint.postgres import PostgresSaver

        kwargs: dict[str, Any] = request.getfixturevalue("pg_kwargs")
        with psycopg.connect(request.getfixturevalue("pg_url"), **kwargs) as conn:
            pg_saver = PostgresSaver(conn)
            pg_saver.setup()
            yield pg_saver


def _graph(saver: Any) -> Any:
    b = StateGraph(S)
    b.add_node("n", lambda s: {"x": s.get("x")})
    b.add_edge(START, "n")
    return b.compile(checkpointer=saver)


def _stored(saver: Any) -> list[Any]:
    return [t.config for t in saver.list(None)]


def test_an_int_too_long_to_write_names_its_place_and_writes_nothing(saver: Any) -> None:
    graph = _graph(saver)
    graph.invoke({"x": 1}, {"configurable": {"thread_id": "ok"}})
    before = _stored(saver)
    with pytest.raises(SerializationError, match=r"'x'.* cannot be stored: Exceeds the limit"):
        graph.invoke({"x": 10**5000}, {"configurable": {"thread_id": "big"}})
    assert _stored(saver) == before
    with pytest.raises(SerializationError, match=r"'x'"):
        graph.invoke({"x": [1, {"deep": 10**5000}]}, {"configurable": {"thread_id": "ok"}})
    assert _stored(saver) == before


@pytest.mark.parametrize(
    ("thread", "says"),
    [("a\x00b", "cannot contain a NUL"), ("t" * (MAX_ID_BYTES + 1), "at most 1024 bytes")],
)
def test_a_thread_id_no_database_keys_on_is_refused(saver: Any, thread: str, says: str) -> None:
    graph = _graph(saver)
    with pytest.raises(ValueError, match=says):
        graph.invoke({"x": 1}, {"configurable": {"thread_id": thread}})
    with pytest.raises(ValueError, match=says):
        saver.get_tuple({"configurable": {"thread_id": thread}})
    assert _stored(saver) == []
    graph.invoke({"x": 1}, {"configurable": {"thread_id": "é" * (MAX_ID_BYTES // 2)}})  # fits


def test_ids_are_text_123_and_the_string_123_are_one_thread(saver: Any) -> None:
    graph = _graph(saver)
    graph.invoke({"x": 1}, {"configurable": {"thread_id": 123}})
    assert graph.get_state({"configurable": {"thread_id": "123"}}).values == {"x": 1}
