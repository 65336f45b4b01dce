"""Schema version 10: a step's write stored as a reference to the value row holding it.

The chat of ``test_blobs`` (a list grown by two messages a turn) on SQLite and
PostgreSQL: the nodes' writes of new messages are stored as references to the delta
rows that insert the same bytes, and a large value written whole as a reference to
its full row (``_write_refs``). Every checkpoint's pending writes read back as on
``InMemorySaver``, through a saver holding nothing; a delta stored as a full value
instead, a prune, a copy, sealing and damaged rows are handled; a database of version
9 migrates and its plain writes read as before.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any, TypedDict

import pytest
from tests.savers import test_blobs
from tests.savers.blob_rows import _inflated, dangling, orphans  # pyright: ignore[reportPrivateUsage]
from tests.savers.test_blobs import Chat, _observed  # pyright: ignore[reportPrivateUsage]
from xxhash import xxh3_64_hexdigest

from pausepoint import START, Command, InMemorySaver, StateGraph, interrupt
from pausepoint.checkpoint import _sql, _write_refs
from pausepoint.checkpoint._dialect import MIGRATIONS
from pausepoint.checkpoint._sql_prune import collect_unreferenced_flow
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import CheckpointDecodeError
from pausepoint.serde import Serializer
from pausepoint.types import Interrupt

from .blob_rows import execute
from .test_packing import saver

__all__ = ["saver"]  # the fixture: a SQLite file's or PostgreSQL's saver per test

REF = _write_refs.REF


def _text(seed: str) -> str:
    """~600 characters that deflate to about half (a message that is not one word)."""
    return random.Random(seed).randbytes(300).hex()


def _chat(saver: Any) -> Any:
    def ask(state: Chat) -> Chat:
        return {"messages": [{"role": "user", "content": interrupt("next?")}]}

    def reply(state: Chat) -> Chat:
        return {"messages": [{"role": "ai", "content": _text(str(len(state["messages"])))}]}

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
    graph.invoke({"messages": [], "notes": _text("notes") * 8}, config)
    for turn in range(turns):
        graph.invoke(Command(resume=f"turn {turn} {_text(str(turn))}"), config)
    return graph, config


def _forget(saver: Any) -> None:
    """As another process reads: nothing held of what this saver wrote."""
    saver._codec.chains = type(saver._codec.chains)()  # pyright: ignore[reportPrivateUsage]


def _writes(saver: Any, config: Any) -> list[list[tuple[str, Any]]]:
    """Every checkpoint's pending writes (channel, value), newest checkpoint first.

    A question's id (made from its checkpoint's, which differs between savers) left out.
    """
    return [[(w.channel, _plain(w.value)) for w in t.pending_writes] for t in saver.list(config)]


def _plain(value: Any) -> Any:
    if isinstance(value, tuple) and all(isinstance(i, Interrupt) for i in value):
        return tuple(i.value for i in value)  # pyright: ignore[reportUnknownVariableType]
    return value


def _references(saver: Any, thread: str) -> list[tuple[Any, ...]]:
    return execute(
        saver,
        "SELECT checkpoint_id, task_id, idx, channel, value, task_path FROM pausepoint_writes"
        " WHERE thread_id = ? AND type = ? ORDER BY seq",
        (thread, REF),
    )


def _cell(cell: Any) -> str:
    return _inflated(bytes(cell)).decode("ascii")


def test_appended_messages_are_stored_once_and_read_back(saver: Any) -> None:
    graph, config = _run(saver, "chat", 12)
    ref_graph, ref_config = _run(InMemorySaver(), "chat", 12)
    expected = _writes(ref_graph.checkpointer, ref_config)
    assert _writes(saver, config) == expected
    refs = _references(saver, "chat")
    messages = [r for r in refs if r[3] == "messages"]
    # Both nodes' messages, but where the list was stored whole again (by size).
    assert len(messages) >= 12
    assert {r[3] for r in refs} == {"messages", "notes"}  # the input's `notes`: whole
    assert all(len(bytes(r[4])) < 90 for r in refs)  # for ~650 bytes of message each
    assert {_cell(r[4]).split(" ")[3] for r in messages} == {"l"}  # a list's items, in []
    assert all(r[5] == "" for r in refs)  # no task path
    _forget(saver)
    assert _writes(saver, config) == expected
    assert _observed(graph, config) == _observed(ref_graph, ref_config)


def test_a_reference_to_a_delta_stored_as_a_full_value_reads_it_from_the_value(
    saver: Any,
) -> None:
    """A delta whose base was gone is stored as a full value under the same version."""
    _graph, config = _run(saver, "chat", 8)
    expected = _writes(saver, config)
    messages = [r for r in _references(saver, "chat") if r[3] == "messages"]
    version = _cell(messages[-1][4]).rsplit(" ", 4)[0]
    encodings = {
        xxh3_64_hexdigest(blob): blob
        for blob in (
            Serializer().dumps(t.checkpoint["channel_values"]["messages"])
            for t in saver.list(config)
            if "messages" in t.checkpoint["channel_values"]
        )
    }
    execute(
        saver,
        "UPDATE pausepoint_blobs SET type = 'ppjson/1', base = NULL, value = ?"
        " WHERE thread_id = 'chat' AND channel = 'messages' AND version = ?",
        (encodings[version.rpartition(":")[2]], version),
    )
    _forget(saver)
    assert _writes(saver, config) == expected


class Report(TypedDict, total=False):
    report: str


def test_a_large_value_written_whole_is_stored_once(saver: Any) -> None:
    big = "".join(chr(97 + (i * 13) % 26) for i in range(300_000))

    def write(state: Report) -> Report:
        return {"report": big}

    builder = StateGraph(Report)
    builder.add_node("write", write)
    builder.add_edge(START, "write")
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "big"}}
    graph.invoke({"report": "draft"}, config)
    (ref,) = _references(saver, "big")
    assert ref[3] == "report"
    assert _cell(ref[4]).split(" ")[1:4] == ["300002", "0", "-"]  # the whole encoding
    written = execute(saver, "SELECT sum(length(value)) FROM pausepoint_writes")[0][0]
    assert written < 1_000  # the 300 KB are in the value row only
    _forget(saver)
    assert any(("report", big) in writes for writes in _writes(saver, config))
    assert graph.get_state(config).values["report"] == big


def test_prune_keeps_the_value_rows_a_remaining_write_references(saver: Any) -> None:
    graph, config = _run(saver, "chat", 6)
    _run(saver, "other", 2)
    cid = _references(saver, "chat")[-1][0]
    parent = {"configurable": {"thread_id": "chat", "checkpoint_ns": "", "checkpoint_id": cid}}
    expected = [(w.channel, w.value) for w in saver.get_tuple(parent).pending_writes]
    # The checkpoints after the one the writes belong to go (as a prune of a fork may
    # leave it): only the writes reference the newest value rows now.
    execute(
        saver,
        "DELETE FROM pausepoint_checkpoints WHERE thread_id = 'chat' AND checkpoint_id > ?",
        (cid,),
    )
    dialect = _sql.SQLITE if isinstance(saver, SqliteSaver) else _sql.POSTGRES
    codec = saver._codec  # pyright: ignore[reportPrivateUsage]
    deleted = saver._run(collect_unreferenced_flow(dialect, codec, "chat"), write=True)  # pyright: ignore[reportPrivateUsage]
    assert deleted >= 0
    assert orphans(saver, "chat") == set()
    assert dangling(saver, "chat") == set()
    _forget(saver)
    assert [(w.channel, w.value) for w in saver.get_tuple(parent).pending_writes] == expected
    assert graph.get_state(config).config["configurable"]["checkpoint_id"] == cid


def test_copy_thread_and_delete_keep_the_references_working(saver: Any) -> None:
    _graph, config = _run(saver, "src", 6)
    expected = _writes(saver, config)
    saver.copy_thread("src", "dst")
    saver.delete_thread("src")
    assert execute(saver, "SELECT count(*) FROM pausepoint_writes WHERE thread_id = 'src'") == [
        (0,)
    ]
    _forget(saver)
    assert _writes(saver, {"configurable": {"thread_id": "dst"}}) == expected
    assert orphans(saver, "dst") == set()
    assert dangling(saver, "dst") == set()


@pytest.mark.parametrize("damage", ["malformed", "digest", "moved", "missing row"])
def test_damaged_references_are_decode_errors_naming_the_thread(saver: Any, damage: str) -> None:
    _graph, config = _run(saver, "victim", 6)
    _graph, bystander = _run(saver, "bystander", 4)
    expected = _writes(saver, bystander)
    cid, task_id, idx, _channel, cell, _path = _references(saver, "victim")[-1]
    version, back, to, wrap, digest = _cell(cell).rsplit(" ", 4)
    if damage == "missing row":
        execute(
            saver,
            "DELETE FROM pausepoint_blobs WHERE thread_id = 'victim' AND version = ?",
            (version,),
        )
    else:
        if damage == "malformed":
            text = "not a reference"
        elif damage == "digest":
            text = f"{version} {back} {to} {wrap} {'0' * 8}"
        else:
            text = f"{version} {int(back) + 1} {int(to) + 1} {wrap} {digest}"
        execute(
            saver,
            "UPDATE pausepoint_writes SET value = ? WHERE thread_id = 'victim'"
            " AND checkpoint_id = ? AND task_id = ? AND idx = ?",
            (text.encode(), cid, task_id, idx),
        )
    _forget(saver)
    with pytest.raises(CheckpointDecodeError, match="thread 'victim'"):
        _writes(saver, config)
    assert _writes(saver, bystander) == expected


def test_sealed_references_bind_their_slot(tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    from pausepoint.crypto import KeyRing, new_key

    keys = KeyRing({"k1": new_key()})
    with SqliteSaver.from_conn_string(str(tmp_path / "s.db"), encryption=keys) as saver:
        _graph, config = _run(saver, "chat", 6)
        ref_graph, ref_config = _run(InMemorySaver(), "chat", 6)
        assert _writes(saver, config) == _writes(ref_graph.checkpointer, ref_config)
        refs = _references(saver, "chat")
        assert len(refs) >= 6
        assert all(bytes(r[4])[:4] == b"\x00pp\xe5" for r in refs)  # sealed, no plaintext
        saver.copy_thread("chat", "copy")
        _forget(saver)
        copy = {"configurable": {"thread_id": "copy"}}
        assert _writes(saver, copy) == _writes(saver, config)
        (a, b) = refs[-2:]  # two references' cells swapped: each opens only in its slot
        where = "thread_id = 'chat' AND checkpoint_id = ? AND task_id = ? AND idx = ?"
        execute(saver, f"UPDATE pausepoint_writes SET value = ? WHERE {where}", (b[4], *a[:3]))
        execute(saver, f"UPDATE pausepoint_writes SET value = ? WHERE {where}", (a[4], *b[:3]))
        with pytest.raises(CheckpointDecodeError, match="thread 'chat'"):
            _writes(saver, config)


def test_a_database_of_version_9_is_migrated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "old.db")
    with monkeypatch.context() as patch:  # writes stored whole, as version 9 stored them
        patch.setattr(_write_refs, "_reference", lambda blob, value: None)
        with SqliteSaver.from_conn_string(path) as saver:
            _graph, config = _run(saver, "chat", 6)
            assert _references(saver, "chat") == []
            old = _writes(saver, config)
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM pausepoint_migrations WHERE v >= 10")
    conn.commit()
    conn.close()
    with SqliteSaver.from_conn_string(path) as saver:
        applied = saver.conn.execute("SELECT max(v) FROM pausepoint_migrations").fetchall()
        assert applied == [(len(MIGRATIONS),)]
        assert len(MIGRATIONS) >= 10
        assert _writes(saver, config) == old  # plain writes read as before
        graph = _chat(saver)
        for turn in range(3):
            graph.invoke(Command(resume=f"after the upgrade {turn}"), config)
        assert len(_references(saver, "chat")) >= 2  # (after a restart: one full row)
        ref_graph, ref_config = _run(InMemorySaver(), "chat", 6)
        for turn in range(3):
            ref_graph.invoke(Command(resume=f"after the upgrade {turn}"), ref_config)
        _forget(saver)
        assert _writes(saver, config) == _writes(ref_graph.checkpointer, ref_config)


def test_a_write_that_deflates_shorter_than_its_reference_is_stored_deflated(
    saver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Messages of one letter repeated: ~20 bytes deflated, under a reference's ~37.
    monkeypatch.setattr(test_blobs, "TEXT", "a" * 600)
    graph, config = test_blobs._run(saver, "repeats", 8)  # pyright: ignore[reportPrivateUsage]
    refs = _references(saver, "repeats")
    assert [r for r in refs if r[3] == "messages"] == []
    ref_graph, ref_config = test_blobs._run(InMemorySaver(), "repeats", 8)  # pyright: ignore[reportPrivateUsage]
    assert _writes(saver, config) == _writes(ref_graph.checkpointer, ref_config)
    assert _observed(graph, config) == _observed(ref_graph, ref_config)
