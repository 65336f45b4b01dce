"""SQLite specifics: durability across connections and processes, schema, threads."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from pausepoint.checkpoint.sqlite import AsyncSqliteSaver, SqliteSaver
from pausepoint.testing import make_checkpoint, make_metadata

CONFIG = {"configurable": {"thread_id": "t"}}


def test_checkpoints_survive_reopening(tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    with SqliteSaver.from_conn_string(path) as saver:
        config = saver.put(CONFIG, make_checkpoint({"a": (1, 2)}), make_metadata(0), {})  # type: ignore[arg-type]
        saver.put_writes(config, [("a", {3})], "task-1")
    with SqliteSaver.from_conn_string(path) as saver:
        got = saver.get_tuple(CONFIG)  # type: ignore[arg-type]
        assert got is not None
        assert got.checkpoint["channel_values"] == {"a": (1, 2)}
        assert got.pending_writes is not None
        assert got.pending_writes[0].value == {3}


def test_another_process_reads_what_this_one_wrote(tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    code = textwrap.dedent(
        f"""
        from pausepoint.checkpoint.sqlite import SqliteSaver
        from pausepoint.testing import make_checkpoint, make_metadata
        with SqliteSaver.from_conn_string({path!r}) as saver:
            cfg = {{"configurable": {{"thread_id": "t"}}}}
            config = saver.put(cfg, make_checkpoint({{"from": "child"}}), make_metadata(0), {{}})
            saver.put_writes(config, [("__interrupt__", ("ask",))], "task-1")
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    with SqliteSaver.from_conn_string(path) as saver:
        got = saver.get_tuple(CONFIG)  # type: ignore[arg-type]
        assert got is not None
        assert got.checkpoint["channel_values"] == {"from": "child"}
        assert [w.value for w in got.pending_writes or []] == [("ask",)]


def test_schema_is_versioned_and_setup_is_idempotent(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        saver.setup()
        saver.setup()
        rows = saver.conn.execute("SELECT v FROM pausepoint_migrations").fetchall()
        assert rows == [(1,)]


def test_a_callers_legacy_mode_connection_works(tmp_path: Path) -> None:
    conn = sqlite3.connect(str(tmp_path / "c.db"), check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.put(CONFIG, make_checkpoint(), make_metadata(0), {})  # type: ignore[arg-type]
    assert not conn.in_transaction
    other = sqlite3.connect(str(tmp_path / "c.db"))
    assert other.execute("SELECT count(*) FROM pausepoint_checkpoints").fetchone() == (1,)
    other.close()
    conn.close()


def test_failed_write_rolls_back(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        config = saver.put(CONFIG, make_checkpoint(), make_metadata(0), {})  # type: ignore[arg-type]
        saver.conn.execute(
            "CREATE TRIGGER no_b BEFORE INSERT ON pausepoint_writes "
            "WHEN NEW.channel = 'b' BEGIN SELECT RAISE(ABORT, 'no b'); END"
        )
        with pytest.raises(sqlite3.IntegrityError):
            saver.put_writes(config, [("a", 1), ("b", 2)], "task-1")
        got = saver.get_tuple(config)
        assert got is not None
        assert got.pending_writes == []
        assert not saver.conn.in_transaction


@pytest.mark.asyncio
async def test_async_methods_do_not_block_the_event_loop(tmp_path: Path) -> None:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        held = threading.Event()
        release = threading.Event()

        def hold_connection() -> None:
            with saver._lock:  # pyright: ignore[reportPrivateUsage]
                held.set()
                release.wait(5)

        holder = threading.Thread(target=hold_connection)
        holder.start()
        held.wait(5)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.005)

        tick_task = asyncio.create_task(ticker())
        read = asyncio.create_task(saver.aget_tuple(CONFIG))  # type: ignore[arg-type]
        await asyncio.sleep(0.2)
        assert not read.done()
        assert ticks > 5
        release.set()
        assert await read is None
        tick_task.cancel()
        holder.join()


def test_writers_in_two_processes_do_not_lose_data(tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    with SqliteSaver.from_conn_string(path):
        pass
    code = textwrap.dedent(
        f"""
        import sys
        from pausepoint.checkpoint.sqlite import SqliteSaver
        from pausepoint.testing import make_checkpoint, make_metadata
        with SqliteSaver.from_conn_string({path!r}) as saver:
            for i in range(20):
                cfg = {{"configurable": {{"thread_id": sys.argv[1]}}}}
                saver.put(cfg, make_checkpoint(), make_metadata(i), {{}})
        """
    )
    start = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-c", code, name]) for name in ("p1", "p2")]
    assert [p.wait(60) for p in procs] == [0, 0]
    assert time.monotonic() - start < 60
    with SqliteSaver.from_conn_string(path) as saver:
        for name in ("p1", "p2"):
            assert len(list(saver.list({"configurable": {"thread_id": name}}))) == 20


@pytest.mark.parametrize(("stream", "commits"), [(False, 5), (True, 7)])
def test_a_pause_and_resume_commit_five_times(tmp_path: Path, stream: bool, commits: int) -> None:
    # A step's last task writes are committed with the step's checkpoint (one fsync),
    # unless a stream is read: the caller's code then runs between the two, so the
    # writes are saved first, on their own.
    from typing import Any

    from pausepoint import Command

    from .graphs import ask_graph

    conn = sqlite3.connect(tmp_path / "c.db", check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    sent: list[str] = []
    conn.set_trace_callback(sent.append)
    graph = ask_graph(saver)
    cfg: Any = {"configurable": {"thread_id": "count"}}
    for given in ({"question": "ship it?", "answer": ""}, Command(resume="yes")):
        if stream:
            list(graph.stream(given, cfg, stream_mode="updates"))
        else:
            graph.invoke(given, cfg)
    conn.set_trace_callback(None)
    assert sum(s.strip().upper() == "COMMIT" for s in sent) == commits
    assert graph.get_state(cfg).values == {"question": "ship it?", "answer": "yes"}
    paused = [h for h in graph.get_state_history(cfg) if h.metadata["step"] == 0]
    assert [(t.name, t.result) for t in paused[0].tasks] == [("ask", {"answer": "yes"})]
    conn.close()
