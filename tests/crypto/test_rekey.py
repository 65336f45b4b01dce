"""Key rotation and migration with ``pausepoint rekey``: every row ends under the first key.

Real SQLite files (and PostgreSQL), the command line as a user runs it, a rekey
killed with SIGKILL and run again, and one running beside a worker that writes.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.crypto import rows
from tests.crypto.conftest import KEY1, KEY2
from tests.crypto.graphs import CANARY, answer, build, config, pause, run

from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.cli import main
from pausepoint.crypto import KeyRing

ROOT = Path(__file__).resolve().parents[2]


def _env(*keys: tuple[str, bytes]) -> str:
    return ",".join(f"{k}:{base64.b64encode(v).decode()}" for k, v in keys)


def _readable(path: Path, ring: KeyRing, threads: list[str]) -> None:
    with SqliteSaver.from_conn_string(str(path), encryption=ring) as saver:
        graph = build(saver)
        for thread in threads:
            assert graph.get_state(config(thread)).values["text"].startswith(CANARY)
            assert len(list(graph.get_state_history(config(thread)))) >= 3


def test_rotation_moves_every_row_to_the_new_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.db"
    with SqliteSaver.from_conn_string(str(path), encryption=KeyRing({"k1": KEY1})) as saver:
        run(saver, "t1")
        pause(saver, "t2")
    assert set(rows.key_ids(path)) == {"k1"}
    monkeypatch.setenv("PAUSEPOINT_KEYS", _env(("k2", KEY2), ("k1", KEY1)))
    assert main(["rekey", "--db", str(path)]) == 0
    assert "0 unreadable" in capsys.readouterr().out
    assert set(rows.key_ids(path)) == {"k2"}
    assert main(["rekey", "--db", str(path), "--json"]) == 0  # idempotent: nothing left
    assert '"resealed": 0' in capsys.readouterr().out
    only_new = KeyRing({"k2": KEY2})
    _readable(path, only_new, ["t1", "t2"])
    with SqliteSaver.from_conn_string(str(path), encryption=only_new) as saver:
        done = build(saver).invoke(answer(), config("t2"))  # the waiting question resumes
        assert done["text"] == f"{CANARY}-answered-{CANARY}-answer"
        [] = saver.list_pending().items
    monkeypatch.setenv("PAUSEPOINT_KEYS", _env(("k2", KEY2)))
    assert main(["threads", "list", "--db", str(path)]) == 0  # the other commands use the keys


def test_rekey_encrypts_a_plaintext_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "plain.db"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        run(saver, "t1")
        pause(saver, "t2")
    assert set(rows.key_ids(path)) == {"clear"}
    monkeypatch.setenv("PAUSEPOINT_KEYS", _env(("k1", KEY1)))
    assert main(["rekey", "--db", str(path), "--batch-size", "7"]) == 0
    assert set(rows.key_ids(path)) == {"k1"}
    _readable(path, KeyRing({"k1": KEY1}), ["t1", "t2"])
    # The old plaintext pages may linger in free pages until a VACUUM (docs/security.md).
    with rows.connect(path) as conn:
        conn.execute("VACUUM")
    assert rows.database_bytes(path).count(CANARY.encode()) == 0


def test_keys_from_a_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.db"
    with SqliteSaver.from_conn_string(str(path), encryption=KeyRing({"k1": KEY1})) as saver:
        pause(saver, "t1")
    (tmp_path / "my_keys.py").write_text(
        f"def ring():\n    return {{'k2': {KEY2!r}, 'k1': {KEY1!r}}}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("PAUSEPOINT_KEYS", raising=False)
    assert main(["rekey", "--db", str(path), "--keys", "my_keys:ring"]) == 0
    assert set(rows.key_ids(path)) == {"k2"}


def test_bad_keys_are_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.db"
    with SqliteSaver.from_conn_string(str(path), encryption=KeyRing({"k1": KEY1})) as saver:
        pause(saver, "t1")
    before = rows.snapshot(path)
    monkeypatch.delenv("PAUSEPOINT_KEYS", raising=False)
    assert main(["rekey", "--db", str(path)]) == 2
    assert "give the keys" in capsys.readouterr().err
    monkeypatch.setenv("PAUSEPOINT_KEYS", "k1:" + base64.b64encode(b"short").decode())
    assert main(["rekey", "--db", str(path)]) == 2
    assert "32 bytes" in capsys.readouterr().err
    monkeypatch.setenv("PAUSEPOINT_KEYS", _env(("k2", KEY2)))  # k1 missing: rows unreadable
    assert main(["rekey", "--db", str(path)]) == 1
    assert "cannot open pausepoint_checkpoints" in capsys.readouterr().err
    assert rows.snapshot(path) == before


def _many_threads(path: Path, count: int) -> None:
    with SqliteSaver.from_conn_string(str(path), encryption=KeyRing({"k1": KEY1})) as saver:
        graph = build(saver)
        for n in range(count):
            graph.invoke({"text": f"{CANARY}-{n}", "log": []}, config(f"t{n}"))


def test_a_rekey_killed_with_sigkill_finishes_when_run_again(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    _many_threads(path, 40)
    total = sum(rows.key_ids(path).values())
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "PAUSEPOINT_KEYS": _env(("k2", KEY2), ("k1", KEY1)),
    }
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("rekey_process.py")), str(path)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while proc.poll() is None and rows.key_ids(path).get("k2", 0) < total // 4:
            threading.Event().wait(0.01)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    halfway = rows.key_ids(path)
    assert set(halfway) <= {"k1", "k2"}  # each cell either as it was or re-sealed
    assert sum(halfway.values()) == total
    assert halfway.get("k2", 0) > 0
    assert halfway.get("k1", 0) > 0  # killed on the way (each row is a transaction of its own)
    _readable(path, KeyRing({"k2": KEY2, "k1": KEY1}), ["t0", "t39"])
    again = subprocess.run(
        [sys.executable, "-m", "pausepoint.cli", "rekey", "--db", str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert rows.key_ids(path) == {"k2": total}
    _readable(path, KeyRing({"k2": KEY2}), [f"t{n}" for n in range(40)])


def test_rekey_beside_a_worker_leaves_no_row_behind(tmp_path: Path) -> None:
    """A worker pauses and resumes threads while rekey runs: nothing is lost or unreadable."""
    path = tmp_path / "c.db"
    _many_threads(path, 10)
    both = KeyRing({"k2": KEY2, "k1": KEY1})
    worker_ring = KeyRing({"k1": KEY1, "k2": KEY2})  # a worker not yet given the new key first
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with SqliteSaver.from_conn_string(str(path), encryption=worker_ring) as saver:
                graph = build(saver)
                for n in range(10):
                    graph.invoke(answer(), config(f"t{n}"))
                    pause(saver, f"new{n}")
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=work)
    worker.start()
    with SqliteSaver.from_conn_string(str(path), encryption=both) as saver:
        while worker.is_alive():
            saver.rekey(batch_size=5)
    worker.join()
    assert errors == []
    with SqliteSaver.from_conn_string(str(path), encryption=both) as saver:
        report = saver.rekey()
        assert report.errors == []
        assert report.raced == 0
    assert set(rows.key_ids(path)) == {"k2"}
    _readable(path, KeyRing({"k2": KEY2}), [f"t{n}" for n in range(10)])
    with SqliteSaver.from_conn_string(str(path), encryption=KeyRing({"k2": KEY2})) as saver:
        assert len(saver.list_pending(limit=100).items) == 10


@pytest.mark.postgres
def test_rotation_on_postgres(pg_url: str, pg_kwargs: dict[str, Any]) -> None:
    import psycopg

    from pausepoint.checkpoint.postgres import PostgresSaver

    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn, encryption=KeyRing({"k1": KEY1}))
        saver.setup()
        run(saver, "t1")
        pause(saver, "t2")
        plain = PostgresSaver(conn)
        run(plain, "p1")  # rows in clear, sealed by the rekey too
        rotated = PostgresSaver(conn, encryption=KeyRing({"k2": KEY2, "k1": KEY1}))
        report = rotated.rekey(batch_size=4)
        assert report.errors == []
        assert report.resealed > 0
        assert rotated.rekey().resealed == 0
        only_new = PostgresSaver(conn, encryption=KeyRing({"k2": KEY2}))
        graph = build(only_new)
        for thread in ("t1", "t2", "p1"):
            assert graph.get_state(config(thread)).values["text"].startswith(CANARY)
        done = graph.invoke(answer(), config("t2"))
        assert done["text"] == f"{CANARY}-answered-{CANARY}-answer"
        only_new.copy_thread("t1", "t1-copy")
        assert graph.get_state(config("t1-copy")).values["text"].startswith(CANARY)


@pytest.mark.asyncio
async def test_arekey_on_the_async_sqlite_saver(tmp_path: Path) -> None:
    from pausepoint.checkpoint.sqlite import AsyncSqliteSaver

    path = tmp_path / "a.db"
    with SqliteSaver.from_conn_string(str(path), encryption=KeyRing({"k1": KEY1})) as saver:
        run(saver, "t1")
        pause(saver, "t2")
    ring = KeyRing({"k2": KEY2, "k1": KEY1})
    async with AsyncSqliteSaver.from_conn_string(str(path), encryption=ring) as saver:
        report = await saver.arekey(batch_size=3)
        assert (report.errors, report.raced) == ([], 0)
        assert report.resealed > 0
        assert (await saver.arekey()).resealed == 0
    assert set(rows.key_ids(path)) == {"k2"}
    _readable(path, KeyRing({"k2": KEY2}), ["t1", "t2"])


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_arekey_on_the_async_postgres_saver(pg_url: str, pg_kwargs: dict[str, Any]) -> None:
    """The same batches as ``rekey`` (`rekey_steps`), run on the async connection."""
    import psycopg

    from pausepoint.checkpoint.postgres import AsyncPostgresSaver, PostgresSaver

    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn, encryption=KeyRing({"k1": KEY1}))
        saver.setup()
        run(saver, "t1")
        pause(saver, "t2")
        run(PostgresSaver(conn), "p1")  # in clear: sealed by the rekey too
    ring = KeyRing({"k2": KEY2, "k1": KEY1})
    async with await psycopg.AsyncConnection.connect(pg_url, **pg_kwargs) as aconn:
        asaver = AsyncPostgresSaver(aconn, encryption=ring)
        report = await asaver.arekey(batch_size=4)
        assert (report.errors, report.raced) == ([], 0)
        assert report.resealed > 0
        assert (await asaver.arekey()).resealed == 0
    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        graph = build(PostgresSaver(conn, encryption=KeyRing({"k2": KEY2})))
        for thread in ("t1", "t2", "p1"):
            assert graph.get_state(config(thread)).values["text"].startswith(CANARY)
