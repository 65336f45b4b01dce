"""The server's own tables under ``$PAUSEPOINT_KEYS`` (issue 36, item 1 leftovers).

A real ``pausepoint serve`` (and, on PostgreSQL, a front end queueing runs for a real
``pausepoint worker``) driven by ``langgraph-sdk``: a canary in the input, the
question, the answer, thread metadata, run metadata, an assistant's config, context
and description, and ``configurable`` secrets appears 0 times in the raw SQLite file
(and its WAL) and in a ``pg_dump``; search by metadata works sealed. In process, on a
real SQLite file: a sealed cell moved to another row or column fails with a clear
error and nothing changes; rows stored in clear are refused, then ``pausepoint rekey``
seals them and everything reads.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import glob
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph_sdk")
pytest.importorskip("uvicorn")
pytest.importorskip("cryptography")

from langgraph_sdk import get_sync_client
from tests.crypto.conftest import KEY1, KEY2
from tests.server.serving import TOKEN, Served, free_port, pg_database, serve, server_env, stop
from tests.server.serving import wait_ok as wait_served

from pausepoint.cli import main
from pausepoint.crypto import KeyRing
from pausepoint.errors import CheckpointDecodeError
from pausepoint.server import sealing
from pausepoint.server.records import Assistant, RunRecord
from pausepoint.server.store import Store
from pausepoint.server.store_sqlite import SqliteDatabase

CANARY = "c4n4ry-5e41ed"
GRAPH = "approval=tests.server.graphs_http:approval"
KEYS = f"k1:{base64.b64encode(KEY1).decode()}"
SEALED = {
    "pausepoint_server_assistants": ("assistant_id", ("config", "context", "metadata")),
    "pausepoint_server_threads": ("thread_id", ("metadata",)),
    "pausepoint_server_runs": ("run_id", ("metadata", "kwargs", "result")),
    "pausepoint_server_events": ("run_id", ("data",)),
}


def _exercise(url: str) -> None:
    """Runs through the API carrying the canary everywhere; what reads it back."""
    with get_sync_client(url=url, api_key=TOKEN) as client:
        assistant = client.assistants.create(
            "approval",
            config={"configurable": {"api_token": f"{CANARY}-asecret"}},
            context={"tenant": f"{CANARY}-ctx"},
            metadata={"owner": f"{CANARY}-ameta"},
            description=f"{CANARY}-desc",
        )
        aid = assistant["assistant_id"]
        thread = client.threads.create(metadata={"customer": f"{CANARY}-tmeta"})
        tid = thread["thread_id"]
        paused: Any = client.runs.wait(
            tid, aid, input={"request": f"{CANARY}-input"},
            config={"configurable": {"db_password": f"{CANARY}-rsecret"}},
            metadata={"note": f"{CANARY}-rmeta"},
        )  # fmt: skip
        [question] = paused["__interrupt__"]
        assert question["value"] == {"question": f"Approve {CANARY}-input?"}
        parts = list(
            client.runs.stream(
                tid, aid, command={"resume": f"{CANARY}-answer"}, stream_mode="values"
            )
        )
        assert any(f"{CANARY}-answer" in str(p.data) for p in parts)
        state: Any = client.threads.get_state(tid)
        assert state["values"]["result"] == f"{CANARY}-input: {CANARY}-answer"
        # read back through the seal: records, search by sealed metadata, runs
        assert client.assistants.get(aid)["config"]["configurable"]["api_token"] == (
            f"{CANARY}-asecret"
        )
        found = client.threads.search(metadata={"customer": f"{CANARY}-tmeta"}, limit=100)
        assert [t["thread_id"] for t in found] == [tid]
        assert client.threads.search(metadata={"customer": "nobody"}, limit=100) == []
        runs = client.runs.list(tid)
        assert {r["metadata"].get("note") for r in runs} >= {f"{CANARY}-rmeta"}
        assert client.threads.get(tid)["status"] == "idle"


def _sqlite_cells(path: Path, *, events: bool = True) -> dict[str, list[tuple[Any, ...]]]:
    with contextlib.closing(sqlite3.connect(str(path))) as conn:
        return {
            table: conn.execute(f"SELECT {key}, {', '.join(cols)} FROM {table}").fetchall()
            for table, (key, cols) in SEALED.items()
            if events or not table.endswith("events")
        }


def _assert_sealed(cells: dict[str, list[tuple[Any, ...]]]) -> None:
    """Every user-data cell of the server's tables is sealed (or NULL)."""
    for table, rows in cells.items():
        assert rows, f"no rows in {table}"
        for row in rows:
            for cell in row[1:]:
                if cell is None or (table.endswith("events") and cell == "null"):
                    continue  # a run not ended yet; an END row (no data)
                assert str(cell).startswith(sealing.PREFIX), (table, row[0], cell[:40])


def _database_bytes(path: Path) -> bytes:
    parts = [path, path.with_name(path.name + "-wal")]
    return b"".join(p.read_bytes() for p in parts if p.exists())


def test_serve_on_sqlite_leaves_no_canary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAUSEPOINT_KEYS", KEYS)
    db = tmp_path / "served.sqlite"
    with serve(str(db), tmp_path / "serve.log", graphs=(GRAPH,)) as served:
        _exercise(served.url)
        assert _database_bytes(db).count(CANARY.encode()) == 0
    assert _database_bytes(db).count(CANARY.encode()) == 0
    _assert_sealed(_sqlite_cells(db))


def _pg_dump() -> str | None:
    found = shutil.which("pg_dump")
    if found:
        return found
    dumps = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_dump"))
    return dumps[-1] if dumps else None


@contextlib.contextmanager
def _queued(url: str, tmp: Path) -> Iterator[Served]:
    """A front end queueing runs on ``url`` and one ``pausepoint worker`` executing them."""
    port = free_port()
    front = [sys.executable, "-m", "pausepoint.cli", "serve", "--db", url]
    front += ["--port", str(port), "--token", TOKEN, f"--graph={GRAPH}"]
    worker = [sys.executable, "-m", "pausepoint.cli", "worker", "--db", url, f"--graph={GRAPH}"]
    with (tmp / "front.log").open("wb") as out:
        fp = subprocess.Popen(front, stdout=out, stderr=subprocess.STDOUT, env=server_env())
    with (tmp / "worker.log").open("wb") as out:
        wp = subprocess.Popen(worker, stdout=out, stderr=subprocess.STDOUT, env=server_env())
    served = Served(f"http://127.0.0.1:{port}", TOKEN, fp, tmp / "front.log", url)
    try:
        wait_served(served)
        deadline = time.monotonic() + 60
        while "pausepoint worker: graphs" not in (tmp / "worker.log").read_text(errors="replace"):
            assert wp.poll() is None, (tmp / "worker.log").read_text(errors="replace")
            assert time.monotonic() < deadline, "the worker did not start"
            time.sleep(0.05)
        yield served
    finally:
        stop(wp)
        stop(fp)


@pytest.mark.postgres
def test_serve_and_a_worker_on_postgres_leave_no_canary_in_a_pg_dump(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    pg_dump = _pg_dump()
    assert pg_dump, "pg_dump not found (it comes with the server scripts/postgres.sh installs)"
    monkeypatch.setenv("PAUSEPOINT_KEYS", KEYS)
    for url in pg_database("sealed_tables"):
        schema = url.rsplit("search_path%3D", 1)[1]
        with _queued(url, tmp_path) as served:
            _exercise(served.url)
        with psycopg.connect(url, autocommit=True) as conn:
            cells = {
                table: conn.execute(f"SELECT {key}, {', '.join(cols)} FROM {table}").fetchall()  # type: ignore[arg-type]
                for table, (key, cols) in SEALED.items()
            }
        _assert_sealed(cells)
        dump = subprocess.run(
            [pg_dump, "--no-owner", "-n", schema, url], capture_output=True, check=True
        ).stdout
        assert b"pausepoint_server_runs" in dump  # the dump holds the server's tables
        assert dump.count(CANARY.encode()) == 0


# --- in process, on a real SQLite file ------------------------------------------------------


def _assistant(aid: str, secret: str) -> Assistant:
    import datetime

    now = datetime.datetime.now(datetime.UTC)
    return Assistant(
        aid, "approval", {"configurable": {"api_key": secret}}, {"c": secret}, {"m": secret},
        "name", f"about {secret}", 1, now, now,
    )  # fmt: skip


def _run(run_id: str, thread_id: str, secret: str) -> RunRecord:
    import datetime

    now = datetime.datetime.now(datetime.UTC)
    return RunRecord(
        run_id, thread_id, "a1", "pending", {"m": secret}, {"input": secret}, "enqueue", now, now
    )


async def _fill(path: Path, sealer: KeyRing | None) -> Store:
    """Two assistants, two threads, a run on each: the records the tests tamper with."""
    store = Store(SqliteDatabase(str(path), sealer))
    await store.db.setup()
    for n in (1, 2):
        await store.put_assistant(_assistant(f"a{n}", f"{CANARY}-{n}"), if_exists="raise")
        await store.put_thread(f"t{n}", {"who": f"{CANARY}-{n}"}, time.time(), if_exists="raise")
        await store.create_run(
            _run(f"r{n}", f"t{n}", f"{CANARY}-{n}"), not_before=0.0, create_thread=False, stamp={}
        )
    return store


def _raw(path: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(str(path), isolation_level=None)) as conn:
        return conn.execute(sql, params).fetchall()


def _snapshot(path: Path) -> list[list[tuple[Any, ...]]]:
    return [_raw(path, f"SELECT * FROM {t} ORDER BY 1") for t in SEALED if "events" not in t]


async def _read_all(store: Store) -> None:
    for n in (1, 2):
        await store.thread(f"t{n}")
        await store.get_assistant(f"a{n}")
        await store.get_run(f"t{n}", f"r{n}")


@pytest.mark.asyncio
async def test_a_sealed_cell_moved_to_another_row_or_column_fails_and_changes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"
    ring = KeyRing({"k1": KEY1})
    store = await _fill(path, ring)
    await _read_all(store)
    swaps = [
        ("pausepoint_server_threads", "thread_id", "metadata", "metadata", ("t1", "t2")),
        ("pausepoint_server_runs", "run_id", "kwargs", "kwargs", ("r1", "r2")),
        ("pausepoint_server_runs", "run_id", "metadata", "kwargs", ("r1", "r1")),
        ("pausepoint_server_assistants", "assistant_id", "config", "config", ("a1", "a2")),
        ("pausepoint_server_assistants", "assistant_id", "context", "config", ("a1", "a1")),
    ]
    for table, key, src, dst, (one, two) in swaps:
        [[cell]] = _raw(path, f"SELECT {src} FROM {table} WHERE {key} = ?", one)
        [[kept]] = _raw(path, f"SELECT {dst} FROM {table} WHERE {key} = ?", two)
        _raw(path, f"UPDATE {table} SET {dst} = ? WHERE {key} = ?", cell, two)
        before = _snapshot(path)
        with pytest.raises(CheckpointDecodeError, match="moved from another row or column"):
            await _read_all(store)
        if table.endswith("threads"):  # a write through the record refuses too
            with pytest.raises(CheckpointDecodeError, match=f"the metadata of thread '{two}'"):
                await store.merge_thread_metadata(two, {"x": 1}, time.time())
        assert _snapshot(path) == before
        _raw(path, f"UPDATE {table} SET {dst} = ? WHERE {key} = ?", kept, two)
        await _read_all(store)
    await store.db.close()
    assert _database_bytes(path).count(CANARY.encode()) == 0


@pytest.mark.asyncio
async def test_events_are_sealed_to_their_run_and_number(tmp_path: Path) -> None:
    from pausepoint.server import event_rows

    path = tmp_path / "e.sqlite"
    ring = KeyRing({"k1": KEY1})
    db = SqliteDatabase(str(path), ring)
    await db.setup()
    await db.run(event_rows.setup(postgres=False), write=True)
    rows = [event_rows.row(ring, "r1", n, "values", {"v": f"{CANARY}-{n}"}, 1.0) for n in (1, 2)]
    rows.append(event_rows.row(ring, "r1", 3, event_rows.END, None, 1.0))
    await db.run(event_rows.insert(rows, postgres=False), write=True)
    got = await db.run(event_rows.after("r1", 0, 10, ring))
    assert [(e.id, e.data) for e in got] == [
        ("1", {"v": f"{CANARY}-1"}), ("2", {"v": f"{CANARY}-2"}), ("3", None),
    ]  # fmt: skip
    [[one]] = _raw(path, "SELECT data FROM pausepoint_server_events WHERE seq = 1")
    _raw(path, "UPDATE pausepoint_server_events SET data = ? WHERE seq = 2", one)
    with pytest.raises(CheckpointDecodeError, match="the data of event of run 'r1 #2'"):
        await db.run(event_rows.after("r1", 0, 10, ring))
    with pytest.raises(CheckpointDecodeError, match="has no keys"):
        await db.run(event_rows.after("r1", 0, 10, None))
    await db.close()
    assert _database_bytes(path).count(CANARY.encode()) == 0


def test_plaintext_rows_are_refused_then_rekey_seals_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line runs its own event loop: the store's calls each run in one too."""
    from pausepoint.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "p.sqlite"
    with SqliteSaver.from_conn_string(str(path)):  # the checkpoints' tables, as serve makes
        pass

    async def fill_plain() -> None:
        plain = await _fill(path, None)
        await plain.db.close()

    asyncio.run(fill_plain())
    assert _database_bytes(path).count(CANARY.encode()) > 0  # the control: in clear
    before = _snapshot(path)

    async def refused() -> None:
        refusing = Store(SqliteDatabase(str(path), KeyRing({"k1": KEY1})))
        with pytest.raises(CheckpointDecodeError, match="stored unencrypted and this server"):
            await refusing.thread("t1")
        with pytest.raises(CheckpointDecodeError, match="PAUSEPOINT_ALLOW_PLAINTEXT=1"):
            await refusing.get_run("t1", "r1")
        await refusing.db.close()

    asyncio.run(refused())
    assert _snapshot(path) == before

    async def migrating() -> None:  # read while migrating; a new row is sealed
        store = Store(SqliteDatabase(str(path), KeyRing({"k1": KEY1}, allow_plaintext=True)))
        await _read_all(store)
        await store.put_thread("t3", {"who": f"{CANARY}-3"}, time.time(), if_exists="raise")
        await store.db.close()

    asyncio.run(migrating())
    monkeypatch.setenv("PAUSEPOINT_KEYS", KEYS)
    assert main(["rekey", "--db", str(path), "--json", "--batch-size", "2"]) == 0
    report = capsys.readouterr().out
    assert '"resealed": 6' in report  # 2 assistants, 2 threads, 2 runs (t3 was sealed)
    assert '"current": 1' in report
    _assert_sealed(_sqlite_cells(path, events=False))

    async def sealed(ring: KeyRing) -> None:
        store = Store(SqliteDatabase(str(path), ring))
        await _read_all(store)
        assert (await store.thread("t3")).metadata == {"who": f"{CANARY}-3"}
        await store.db.close()

    asyncio.run(sealed(KeyRing({"k1": KEY1})))
    assert main(["rekey", "--db", str(path), "--json"]) == 0
    assert '"resealed": 0' in capsys.readouterr().out  # all current: nothing rewritten
    # rotation: a new first key; rekey moves every cell to it, the old key can go
    monkeypatch.setenv("PAUSEPOINT_KEYS", f"k2:{base64.b64encode(KEY2).decode()},{KEYS}")
    assert main(["rekey", "--db", str(path), "--json"]) == 0
    assert '"resealed": 7' in capsys.readouterr().out
    asyncio.run(sealed(KeyRing({"k2": KEY2})))


def test_serve_refuses_a_plaintext_database_until_rekeyed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "old.sqlite"
    monkeypatch.delenv("PAUSEPOINT_KEYS", raising=False)
    with (
        serve(str(db), tmp_path / "plain.log", graphs=(GRAPH,)) as served,
        get_sync_client(url=served.url, api_key=TOKEN) as client,
    ):
        thread = client.threads.create(metadata={"customer": f"{CANARY}-tmeta"})
        paused: Any = client.runs.wait(
            thread["thread_id"], "approval", input={"request": f"{CANARY}-input"}
        )
        assert paused["__interrupt__"]
    monkeypatch.setenv("PAUSEPOINT_KEYS", KEYS)
    refused = pytest.raises(RuntimeError, match="stored unencrypted and this server refuses")
    with refused, serve(str(db), tmp_path / "refused.log", graphs=(GRAPH,)):
        pass
    assert main(["rekey", "--db", str(db)]) == 0
    assert "0 unreadable" in capsys.readouterr().out
    with (
        serve(str(db), tmp_path / "sealed.log", graphs=(GRAPH,)) as served,
        get_sync_client(url=served.url, api_key=TOKEN) as client,
    ):
        [found] = client.threads.search(metadata={"customer": f"{CANARY}-tmeta"})
        resumed: Any = client.runs.wait(found["thread_id"], "approval", command={"resume": "yes"})
        assert resumed["result"] == f"{CANARY}-input: yes"
    _assert_sealed(_sqlite_cells(db))


def test_without_keys_a_secret_in_a_config_is_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sealing, "_warned", [])
    runs, assistants = "pausepoint_server_runs", "pausepoint_server_assistants"
    kwargs = {"input": {"api_key": "not a config"}, "config": {"configurable": {"x": 1}}}
    assert sealing.dump_cell(None, kwargs, runs, ("r1",), "kwargs").startswith("{")
    assert caplog.records == []  # a secret-looking key outside the config is data
    secret = {"config": {"configurable": {"API_Token": "s3cr3t"}}}
    assert "s3cr3t" in sealing.dump_cell(None, secret, runs, ("r2",), "kwargs")
    sealing.dump_cell(None, {"configurable": {"password": "p"}}, assistants, ("a1",), "config")
    [record] = caplog.records
    assert "the kwargs of run 'r2'" in record.getMessage()
    assert "PAUSEPOINT_KEYS" in record.getMessage()
    sealed = sealing.dump_cell(KeyRing({"k1": KEY1}), secret, runs, ("r3",), "kwargs")
    assert "s3cr3t" not in sealed
    assert len(caplog.records) == 1


def _many_plain(path: Path, n: int) -> None:
    from pausepoint.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(str(path)):
        pass

    async def fill() -> None:
        store = Store(SqliteDatabase(str(path), None))
        await store.db.setup()
        for i in range(n):
            await store.put_thread(
                f"t{i}", {"who": f"{CANARY}-{i}"}, time.time(), if_exists="raise"
            )
        await store.db.close()

    asyncio.run(fill())


def _thread_cells(path: Path) -> list[str]:
    return [r[0] for r in _raw(path, "SELECT metadata FROM pausepoint_server_threads")]


def test_a_rekey_of_the_server_tables_killed_with_sigkill_finishes_when_run_again(
    tmp_path: Path,
) -> None:
    import os
    import signal

    path = tmp_path / "k.sqlite"
    _many_plain(path, 400)
    env = {**server_env(), "PAUSEPOINT_KEYS": KEYS}
    script = Path(__file__).resolve().parents[1] / "crypto" / "rekey_process.py"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        while proc.poll() is None:
            sealed = sum(c.startswith(sealing.PREFIX) for c in _thread_cells(path))
            if sealed >= 20:
                break
            time.sleep(0.005)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    cells = _thread_cells(path)
    assert len(cells) == 400
    halfway = sum(c.startswith(sealing.PREFIX) for c in cells)
    assert 0 < halfway < 400  # killed on the way: a batch (1 row) a transaction
    assert all(c.startswith((sealing.PREFIX, "{")) for c in cells)  # whole cells only

    async def read(ring: KeyRing) -> list[Any]:
        store = Store(SqliteDatabase(str(path), ring))
        got = [(await store.thread(f"t{i}")).metadata["who"] for i in range(400)]
        await store.db.close()
        return got

    expected = [f"{CANARY}-{i}" for i in range(400)]
    assert asyncio.run(read(KeyRing({"k1": KEY1}, allow_plaintext=True))) == expected
    again = subprocess.run(
        [sys.executable, "-m", "pausepoint.cli", "rekey", "--db", str(path)],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert all(c.startswith(sealing.PREFIX) for c in _thread_cells(path))
    assert asyncio.run(read(KeyRing({"k1": KEY1}))) == expected


def test_rekey_leaves_a_row_a_server_changed_meanwhile(tmp_path: Path) -> None:
    """Each row is a compare-and-swap on the text read: a concurrent write wins."""
    from pausepoint.server.resealing import TABLES, rekey_batch

    path = tmp_path / "cas.sqlite"
    _many_plain(path, 2)
    ring = KeyRing({"k1": KEY1})
    threads = next(t for t in TABLES if t.name == "pausepoint_server_threads")
    with contextlib.closing(sqlite3.connect(str(path), isolation_level=None)) as conn:
        flow = rekey_batch(ring, threads, None, 10)
        select = next(flow)
        rows = conn.execute(select[0], tuple(select[1])).fetchall()
        first = flow.send(rows)
        # a server rewrites t0 between the read and the compare-and-swap
        conn.execute("UPDATE pausepoint_server_threads SET metadata = '{}' WHERE thread_id = 't0'")
        second = flow.send(conn.execute(first[0], tuple(first[1])).fetchall())
        try:
            flow.send(conn.execute(second[0], tuple(second[1])).fetchall())
        except StopIteration as stop:
            last, report = stop.value
        else:
            raise AssertionError("the batch should have ended")
    assert last is None
    assert (report.resealed, report.raced, report.current, report.errors) == (1, 1, 0, [])
    assert _raw(path, "SELECT metadata FROM pausepoint_server_threads WHERE thread_id = 't0'") == [
        ("{}",)
    ]
    assert sum(c.startswith(sealing.PREFIX) for c in _thread_cells(path)) == 1
