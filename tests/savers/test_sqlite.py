"""SQLite specifics: durability across connections and processes, schema, threads."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel

from pausepoint import END, START, StateGraph, interrupt
from pausepoint.checkpoint._dialect import MIGRATIONS, SchemaTooNewError
from pausepoint.checkpoint.sqlite import AsyncSqliteSaver, SqliteSaver
from pausepoint.errors import CheckpointDecodeError
from pausepoint.testing import make_checkpoint, make_metadata

from .graphs import Ask

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
        assert rows == [(v,) for v in range(1, len(MIGRATIONS) + 1)]


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


def durable_commits(sent: list[str]) -> tuple[int, int]:
    """``(durable, unsynced)`` commits among traced statements (PRAGMA synchronous=OFF).

    The saver's reads are deferred transactions (a plain ``BEGIN``): their ``COMMIT``
    writes nothing and is not counted; its writes start with ``BEGIN IMMEDIATE``.
    """
    durable = unsynced = 0
    synced, reading = True, False
    for statement in (s.strip().upper() for s in sent):
        if statement.startswith("PRAGMA SYNCHRONOUS="):
            synced = not statement.endswith("=OFF")
        elif statement.startswith("BEGIN"):
            reading = statement == "BEGIN"
        elif statement == "COMMIT" and not reading:
            durable, unsynced = (durable + 1, unsynced) if synced else (durable, unsynced + 1)
    return durable, unsynced


@pytest.mark.parametrize(("stream", "commits"), [(False, 4), (True, 7)])
def test_a_pause_and_resume_commit_four_times(tmp_path: Path, stream: bool, commits: int) -> None:
    # A step's last task writes are committed with the step's checkpoint (one fsync),
    # and the input checkpoint with the start step's (put_pair), unless a stream is
    # read: the caller's code then runs between them, so each is saved on its own.
    # Each run also takes its thread's lease (a commit without an fsync: a lease need
    # not survive a power cut) and lets it go with its last write (no commit of its own).
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
    assert durable_commits(sent) == (commits, 2)
    assert saver.get_lease("count") is None
    assert graph.get_state(cfg).values == {"question": "ship it?", "answer": "yes"}
    paused = [h for h in graph.get_state_history(cfg) if h.metadata["step"] == 0]
    assert [(t.name, t.result) for t in paused[0].tasks] == [("ask", {"answer": "yes"})]
    conn.close()


def _history(graph: Any, cfg: Any) -> list[tuple[Any, ...]]:
    """What a thread's history says, without ids or times: the parts savers must agree on."""
    ids = [h.config["configurable"]["checkpoint_id"] for h in graph.get_state_history(cfg)]
    shape: list[tuple[Any, ...]] = []
    for h in graph.get_state_history(cfg):
        parent = h.parent_config["configurable"]["checkpoint_id"] if h.parent_config else None
        tasks = [(t.name, t.error, t.result, [i.value for i in t.interrupts]) for t in h.tasks]
        shape.append((h.metadata, h.values, h.next, tasks, ids.index(parent) if parent else None))
    return shape


class _Pydantic(BaseModel):
    n: int


@dataclasses.dataclass
class _Data:
    n: int


def _unreadable() -> _Data:
    """An input whose fields cannot be read: it can be neither applied nor stored."""
    broken = _Data(1)
    del broken.n
    return broken


def _refuses(a: str, b: str) -> str:
    if b == "bad":
        raise ValueError("the reducer refused")
    return b


class _Reduced(TypedDict):
    x: Annotated[str, _refuses]


def _merge_in_place(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    a.update(b)  # changes the old value: history must not see it
    return a


class _Merged(TypedDict):
    seen: Annotated[dict[str, int], _merge_in_place]


class _StrictSqlite(SqliteSaver):
    """Refuses writes to a checkpoint it has not stored, as ``InMemorySaver`` does."""

    def put_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        if self.get_tuple(config) is None:
            raise KeyError(f"writes to a checkpoint not stored: {config}")
        super().put_writes(config, writes, task_id, task_path)


def _graphs(saver: Any) -> dict[str, Any]:
    """Graphs whose first steps pause or fail in every place the start step can."""

    def asks(state: Any) -> dict[str, Any]:
        return {"answer": interrupt(state["question"])}

    def node(state: Any) -> dict[str, Any]:
        return {}

    built: dict[str, Any] = {}
    for name, schema, fn in (
        ("ask", Ask, asks),
        ("model", _Pydantic, node),
        ("data", _Data, node),
        ("reducer", _Reduced, node),
        ("merge", _Merged, node),
    ):
        builder: Any = StateGraph(schema)
        builder.add_node("a", fn)
        builder.add_edge(START, "a")
        builder.add_edge("a", END)
        built[name] = builder.compile(checkpointer=saver)
    route: Any = StateGraph(Ask)
    route.add_node("a", asks)
    route.add_conditional_edges(START, lambda s: "a")
    built["routed"] = route.compile(checkpointer=saver)
    return built


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_input_checkpoint_saved_with_the_start_step_reads_as_before(
    tmp_path: Path, mode: str
) -> None:
    # SqliteSaver stores a new run's input checkpoint with its start step's
    # (put_pair); InMemorySaver does not. Whatever the first steps do (pause, an
    # input a node refuses, one that cannot be stored, a reducer that raises or
    # changes the old value in place, a conditional entry, new input over a paused
    # thread), both threads' histories must read the same, and no write may be
    # stored before its checkpoint.
    from pausepoint import Command, InMemorySaver

    async def call(graph: Any, given: Any, cfg: Any) -> str:
        try:
            out = await graph.ainvoke(given, cfg) if mode == "async" else graph.invoke(given, cfg)
        except Exception as exc:
            return f"raised {type(exc).__name__}"
        return "paused" if "__interrupt__" in out else "done"

    scripts: list[tuple[str, list[Any]]] = [
        ("ask", [{"question": "q?", "answer": ""}, Command(resume="yes")]),
        ("ask", [{"question": "q?", "answer": ""}, {"question": "again?", "answer": ""}]),
        ("model", [5]),
        ("data", [_unreadable()]),
        ("reducer", [{"x": "bad"}]),
        ("merge", [{"seen": {"a": 1}}, {"seen": {"b": 2}}, {"seen": {"c": 3}}]),
        ("routed", [{"question": "q?", "answer": ""}, Command(resume="yes")]),
    ]
    with _StrictSqlite.from_conn_string(str(tmp_path / "c.db")) as sqlite:
        seen: list[Any] = []
        for saver in (InMemorySaver(), sqlite):
            graphs = _graphs(saver)
            runs: list[Any] = []
            for n, (name, inputs) in enumerate(scripts):
                cfg: Any = {"configurable": {"thread_id": f"t{n}"}}
                said = [await call(graphs[name], given, cfg) for given in inputs]
                runs.append((name, said, _history(graphs[name], cfg)))
            seen.append(runs)
    assert seen[0] == seen[1]
    assert [said for _, said, _ in seen[1]] == [
        ["paused", "done"],
        ["paused", "paused"],
        ["raised InvalidUpdateError"],
        ["raised AttributeError"],
        ["raised ValueError"],
        ["done", "done", "done"],
        ["paused", "done"],
    ]


def test_read_only_changes_nothing_and_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    import hashlib

    path = tmp_path / "c.db"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        saver.put(CONFIG, make_checkpoint({"a": 1}), make_metadata(0), {})  # type: ignore[arg-type]
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with SqliteSaver.from_conn_string(str(path), read_only=True) as saver:
        got = saver.get_tuple(CONFIG)  # type: ignore[arg-type]
        assert got is not None
        assert saver.thread_ids() == [CONFIG["configurable"]["thread_id"]]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            saver.put(CONFIG, make_checkpoint({"a": 2}), make_metadata(1), {})  # type: ignore[arg-type]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    opened = SqliteSaver.from_conn_string(str(foreign), read_only=True)
    with pytest.raises(ValueError, match="not a pausepoint database"), opened:
        pass
    with sqlite3.connect(foreign) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["invoices"]
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO pausepoint_migrations (v) VALUES (99)")
    with pytest.raises(SchemaTooNewError), SqliteSaver.from_conn_string(str(path), read_only=True):
        pass


def test_thread_ids_are_newest_first_and_read_no_checkpoint(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        for thread in ("b", "a", "c"):
            config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
            saver.put(config, make_checkpoint(), make_metadata(0), {})
        sub: Any = {"configurable": {"thread_id": "only-sub", "checkpoint_ns": "x:1"}}
        saver.put(sub, make_checkpoint(), make_metadata(0), {})
        saver.conn.execute("UPDATE pausepoint_checkpoints SET checkpoint = 5 WHERE thread_id = 'a'")
        assert saver.thread_ids() == ["c", "a", "b"]
        with pytest.raises(CheckpointDecodeError, match="thread 'a'"):
            saver.get_tuple({"configurable": {"thread_id": "a"}})


class _Interleaved(SqliteSaver):
    """Runs ``between`` once, after its first statement that reads checkpoints."""

    between: Any = None

    def _execute(self, stmt: Any) -> Any:
        rows = super()._execute(stmt)
        if self.between is not None and "FROM pausepoint_checkpoints" in stmt.sql:
            between, self.between = self.between, None
            between()
        return rows


@pytest.mark.parametrize("read", ["get_tuple", "list"])
def test_a_read_sees_one_moment_while_another_connection_commits(tmp_path: Path, read: str) -> None:
    # Another process saves a checkpoint's last writes and the next checkpoint in one
    # commit. A read in between the reader's checkpoint row and its writes must not
    # show the old checkpoint as the newest with the writes that came with its successor.
    path = str(tmp_path / "c.db")
    with SqliteSaver.from_conn_string(path) as writer:
        first = writer.put(CONFIG, make_checkpoint({"a": 1}), make_metadata(0), {})  # type: ignore[arg-type]

        def commit_next_step() -> None:
            writer.put_writes(first, [("a", 2)], "task-1")
            writer.put(first, make_checkpoint({"a": 2}), make_metadata(1), {})

        reader = _Interleaved(sqlite3.connect(path, check_same_thread=False, isolation_level=None))
        reader.between = commit_next_step
        if read == "get_tuple":
            got = reader.get_tuple(CONFIG)  # type: ignore[arg-type]
            assert got is not None
            seen = [got]
        else:
            seen = list(reader.list(CONFIG))  # type: ignore[arg-type]
        assert reader.between is None, "the interleaving ran"
        assert [(t.config, t.pending_writes) for t in seen] == [(first, [])]
        assert not reader.conn.in_transaction
        # Read again, it sees the commit whole.
        assert [t.metadata["step"] for t in reader.list(CONFIG)] == [1, 0]  # type: ignore[arg-type]
        reader.conn.close()
