"""Large channel values stored apart, once per version, appends as deltas (schema 7).

A chat-like thread (a list channel that grows by two messages a turn, one question a
turn) is run on SQLite and PostgreSQL and on the reference ``InMemorySaver``: every
checkpoint of the history reads back the same values, while the database stores the
list's appended items as deltas (``_sql_values``). Old rows (every value inside the
checkpoint) read as before; a value changed without a new version gets a row of its
own; a hint made stale by another process never breaks a thread; a missing or corrupt
row reads as ``CheckpointDecodeError`` naming the thread.
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from pausepoint import START, Command, InMemorySaver, StateGraph, interrupt
from pausepoint.checkpoint import _sql
from pausepoint.checkpoint._commit import CheckpointRef
from pausepoint.checkpoint._dialect import MIGRATIONS
from pausepoint.checkpoint.postgres import PostgresSaver
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import CheckpointDecodeError

from . import chat_process

TEXT = "".join(chr(97 + (i * 7) % 26) for i in range(600))


class Chat(TypedDict, total=False):
    messages: Annotated[list[dict[str, str]], operator.add]
    notes: str


def _chat(saver: Any) -> Any:
    def ask(state: Chat) -> Chat:
        return {"messages": [{"role": "user", "content": interrupt("next?")}]}

    def reply(state: Chat) -> Chat:
        return {"messages": [{"role": "ai", "content": f"{len(state['messages'])} {TEXT}"}]}

    b = StateGraph(Chat)
    b.add_node("ask", ask)
    b.add_node("reply", reply)
    b.add_edge(START, "ask")
    b.add_edge("ask", "reply")
    b.add_edge("reply", "ask")
    return b.compile(checkpointer=saver)


def _run(saver: Any, thread: str, turns: int) -> Any:
    graph = _chat(saver)
    config = {"configurable": {"thread_id": thread}, "recursion_limit": 10_000}
    graph.invoke({"messages": [], "notes": TEXT * 8}, config)
    for turn in range(turns):
        graph.invoke(Command(resume=f"turn {turn} {TEXT}"), config)
    return graph, config


def _observed(graph: Any, config: Any) -> list[Any]:
    return [
        (s.values, s.next, s.metadata["step"], [[i.value for i in t.interrupts] for t in s.tasks])
        for s in graph.get_state_history(config)
    ]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp_path / "c.db")) as opened:
            yield opened
        return
    import psycopg

    kwargs = request.getfixturevalue("pg_kwargs")
    with psycopg.connect(request.getfixturevalue("pg_url"), **kwargs) as conn:
        opened = PostgresSaver(conn)
        opened.setup()
        yield opened


def _execute(saver: Any, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    if isinstance(saver, SqliteSaver):
        with saver._lock:  # pyright: ignore[reportPrivateUsage]
            rows = saver.conn.execute(sql, params).fetchall()
            saver.conn.commit()
            return rows
    cur = saver.conn.execute(sql.replace("?", "%s"), params)
    return cur.fetchall() if cur.description else []


def test_history_reads_back_as_on_the_reference_saver(saver: Any) -> None:
    graph, config = _run(saver, "chat", 30)
    ref_graph, ref_config = _run(InMemorySaver(), "chat", 30)
    assert _observed(graph, config) == _observed(ref_graph, ref_config)
    kinds = dict(_execute(saver, "SELECT type, count(*) FROM pausepoint_blobs GROUP BY type"))
    assert kinds["delta"] > 40  # appends stored as deltas
    assert kinds["ppjson/1"] < 10  # a full value now and then (by size), and `notes` once
    # `notes` never changed: one row for all of its checkpoints.
    notes = _execute(saver, "SELECT count(*) FROM pausepoint_blobs WHERE channel = 'notes'")
    assert notes == [(1,)]


def test_stored_bytes_grow_with_what_a_turn_adds(saver: Any) -> None:
    _run(saver, "chat", 60)
    rows = _execute(saver, "SELECT sum(length(value)) FROM pausepoint_blobs")
    added = 60 * 2 * (len(TEXT) + 50)
    assert rows[0][0] < 4 * added  # the whole list per checkpoint would be ~60x


def test_a_saver_reads_what_it_wrote_last_from_memory(saver: Any) -> None:
    graph, config = _run(saver, "chat", 4)
    head = graph.get_state(config)
    _execute(saver, "UPDATE pausepoint_blobs SET value = ? WHERE channel = 'messages'", (b"[]",))
    assert graph.get_state(config) == head  # the head's encoding, held: no row read
    saver._codec.chains = type(saver._codec.chains)()  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(CheckpointDecodeError, match="thread 'chat'"):
        graph.get_state(config)  # a new process reads the (now damaged) rows


def test_held_encodings_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from pausepoint.checkpoint import _sql_values

    monkeypatch.setattr(_sql_values, "HELD", 10_000)
    chains = _sql_values.Chains()
    for n in range(5):
        blob = bytes([65 + n]) * 4_000
        link = _sql_values._Link(f"{n}:x", len(blob), 0, blob[-1:], 0, 0, len(blob), blob)  # pyright: ignore[reportPrivateUsage]
        chains.note(("t", "", f"c{n}"), link)
    held = {f"c{n}": f"{n}:x" for n in range(5)}
    assert sorted(chains.held(("t", ""), held)) == ["c3", "c4"]  # the newest 8,000 bytes
    assert chains.get(("t", "", "c0")) is not None  # the hint stays, its bytes went


def test_a_new_process_goes_on_with_deltas(saver: Any) -> None:
    graph, config = _run(saver, "chat", 5)
    saver._codec.chains = type(saver._codec.chains)()  # pyright: ignore[reportPrivateUsage]
    before = _execute(saver, "SELECT count(*) FROM pausepoint_blobs WHERE type = 'delta'")
    graph.get_state(config)  # reading the head notes what is stored
    graph.invoke(Command(resume="after a restart"), config)
    after = _execute(saver, "SELECT count(*) FROM pausepoint_blobs WHERE type = 'delta'")
    assert after[0][0] == before[0][0] + 2
    assert graph.get_state(config).values["messages"][-2]["content"] == "after a restart"


def test_a_stale_hint_never_breaks_a_thread(saver: Any) -> None:
    graph, config = _run(saver, "chat", 6)
    # Another process deletes the thread; this saver still remembers its encodings.
    _execute(saver, "DELETE FROM pausepoint_blobs")
    _execute(saver, "DELETE FROM pausepoint_writes")
    _execute(saver, "DELETE FROM pausepoint_checkpoints")
    graph, config = _run(saver, "chat", 7)
    ref_graph, ref_config = _run(InMemorySaver(), "chat", 7)
    assert _observed(graph, config) == _observed(ref_graph, ref_config)


def test_a_value_changed_without_a_new_version_gets_its_own_row(saver: Any) -> None:
    _graph, config = _run(saver, "chat", 2)
    head = saver.get_tuple(config)
    changed = dict(head.checkpoint)
    changed["channel_values"] = {**head.checkpoint["channel_values"], "notes": TEXT * 9}
    changed["id"] = head.checkpoint["id"][:-4] + "ffff"
    saver.put(head.config, changed, head.metadata, {})
    assert saver.get_tuple(config).checkpoint["channel_values"]["notes"] == TEXT * 9
    assert saver.get_tuple(head.config).checkpoint["channel_values"]["notes"] == TEXT * 8


def test_rows_stored_before_version_7_read_as_before(saver: Any) -> None:
    # A checkpoint row holding every value, as versions 1-6 wrote it.
    ref_graph, ref_config = _run(InMemorySaver(), "old", 3)
    dialect = _sql.SQLITE if isinstance(saver, SqliteSaver) else _sql.POSTGRES
    codec = saver._codec  # pyright: ignore[reportPrivateUsage]
    for saved in reversed(list(ref_graph.checkpointer.list(ref_config))):
        parent = (saved.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        ref = CheckpointRef("old", "", parent)
        row = _sql.put_params(dialect, codec, ref, saved.checkpoint, saved.metadata)
        _execute(saver, dialect.sql(_sql.CHECKPOINTS_INTO) + " VALUES (?, ?, ?, ?, ?, ?, ?)", row)
    assert _execute(saver, "SELECT count(*) FROM pausepoint_blobs") == [(0,)]
    assert [t.checkpoint for t in saver.list(ref_config)] == [
        t.checkpoint for t in ref_graph.checkpointer.list(ref_config)
    ]


def test_a_database_of_version_6_is_migrated(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    with SqliteSaver.from_conn_string(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE pausepoint_blobs")
    conn.execute("DELETE FROM pausepoint_migrations WHERE v >= 7")
    conn.commit()
    conn.close()
    with SqliteSaver.from_conn_string(path) as saver:
        graph, config = _run(saver, "chat", 3)
        assert len(graph.get_state(config).values["messages"]) == 6
        rows = saver.conn.execute("SELECT max(v) FROM pausepoint_migrations").fetchall()
        assert rows == [(len(MIGRATIONS),)]


@pytest.mark.postgres
def test_a_postgres_database_of_version_6_is_migrated(pg_url: str, pg_kwargs: Any) -> None:
    import psycopg

    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        old = PostgresSaver(conn)
        old.setup()
        conn.execute("DROP TABLE pausepoint_blobs")  # as version 6 left it
        conn.execute("DELETE FROM pausepoint_migrations WHERE v >= 7")
    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        graph, config = _run(saver, "chat", 3)
        assert len(graph.get_state(config).values["messages"]) == 6
        applied = conn.execute("SELECT max(v) FROM pausepoint_migrations").fetchall()
        assert applied == [(len(MIGRATIONS),)]
        assert _execute(saver, "SELECT count(*) FROM pausepoint_blobs") != [(0,)]


@pytest.mark.parametrize("damage", ["missing delta", "missing full", "corrupt", "bad type"])
def test_damaged_value_rows_are_decode_errors_naming_the_thread(saver: Any, damage: str) -> None:
    graph, config = _run(saver, "victim", 6)
    _run(saver, "bystander", 2)
    where = "thread_id = 'victim' AND channel = 'messages'"
    if damage == "missing delta":
        _execute(saver, f"DELETE FROM pausepoint_blobs WHERE {where} AND type = 'delta'")
    elif damage == "missing full":
        _execute(saver, f"DELETE FROM pausepoint_blobs WHERE {where} AND type <> 'delta'")
    elif damage == "corrupt":
        _execute(saver, f"UPDATE pausepoint_blobs SET value = ? WHERE {where}", (b"\xff{[",))
    else:
        _execute(saver, f"UPDATE pausepoint_blobs SET type = 'zip' WHERE {where}")
    # As another process reads them: the saver that wrote the head holds its encoding.
    saver._codec.chains = type(saver._codec.chains)()  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(CheckpointDecodeError, match="thread 'victim'"):
        graph.get_state(config)
    with pytest.raises(CheckpointDecodeError, match="thread 'victim'"):
        list(graph.get_state_history(config))
    bystander = {"configurable": {"thread_id": "bystander"}}
    assert len(graph.get_state(bystander).values["messages"]) == 4


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "chat.db")
    pg_url: str = request.getfixturevalue("pg_url")
    schema: str = request.getfixturevalue("pg_schema")
    return "postgres", f"{pg_url}?options=-csearch_path%3D{schema}"


def test_sigkill_while_writing_deltas_tears_nothing(backend: tuple[str, str]) -> None:
    # The process is killed at three moments of a stream of delta-writing commits; each
    # time every stored checkpoint reads whole, and the thread goes on where it stopped.
    saver = chat_process.open_saver(*backend)
    graph = chat_process.chat(saver)
    config = chat_process.config("killed")
    try:
        for delay in (0.4, 0.25, 0.55):
            chat_process.kill_midway(saver, backend, "killed", delay)
            for snapshot in graph.get_state_history(config):
                messages = snapshot.values["messages"]
                assert all(isinstance(m, str) for m in messages)
            chat_process.to_question(graph, config)
            count = len(graph.get_state(config).values["messages"])
            graph.invoke(Command(resume="after the kill"), config)
            after = graph.get_state(config).values["messages"]
            assert after[count] == "user: after the kill"
            assert len(after) == count + 2
        kinds = _execute(saver, "SELECT count(*) FROM pausepoint_blobs WHERE type = 'delta'")
        assert kinds[0][0] > 0
    finally:
        conn: Any = getattr(saver, "conn")  # noqa: B009
        conn.close()
