"""SQLite writers of one file queue on its lock file (``_sqlite_writers``, issue 35).

A saver waits for the file's writer turn before ``BEGIN IMMEDIATE`` and gives it back
once the transaction is over, so pausepoint's writers wake one another instead of
polling through SQLite's busy handler. These tests hold the turn by hand (an ``flock``
on the lock file, as another writer would) and check that a write waits for it
rather than failing, that a dead holder frees it, and that a forked child queues
behind its parent.
"""

from __future__ import annotations

import fcntl
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pausepoint
from pausepoint.checkpoint._sqlite_writers import lock_path
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.testing import make_checkpoint, make_metadata

CONFIG: Any = {"configurable": {"thread_id": "t"}}


def _saver(path: Path, timeout: float = 0.0) -> SqliteSaver:
    # timeout 0: a write that met SQLite's lock taken would fail at once ("database
    # is locked"); one that waits for its turn never meets it.
    return SqliteSaver(sqlite3.connect(path, check_same_thread=False, timeout=timeout))


def _held(path: Path) -> int:
    """Take the file's writer turn as another writer would: an exclusive flock."""
    fd = os.open(lock_path(str(path)), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_a_write_waits_for_the_turn_and_then_stores(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    saver = _saver(path)
    reader = sqlite3.connect(path)
    fd = _held(path)
    done: list[object] = []

    def write() -> None:
        try:
            done.append(saver.put(CONFIG, make_checkpoint({"a": 1}), make_metadata(0), {}))
        except Exception as exc:  # reported below, not lost in the thread
            done.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        writer.join(0.3)
        assert writer.is_alive(), f"the write did not wait for the turn: {done}"
        (count,) = reader.execute("SELECT count(*) FROM pausepoint_checkpoints").fetchone()
        assert count == 0  # nothing written while another writer holds the turn
    finally:
        os.close(fd)  # closing the descriptor gives the turn back
    writer.join()
    assert len(done) == 1, done
    assert not isinstance(done[0], Exception), done
    got = saver.get_tuple(CONFIG)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"a": 1}
    reader.close()
    saver.conn.close()


def test_a_killed_holder_frees_the_turn(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    saver = _saver(path)
    code = (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({lock_path(str(path))!r}, os.O_RDWR | os.O_CREAT, 0o644)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(600)\n"
    )
    args = [sys.executable, "-c", code]
    with subprocess.Popen(args, stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline().strip() == "held"
        finally:
            holder.send_signal(signal.SIGKILL)  # the turn is held: it dies with it
            holder.wait()
    saver.put(CONFIG, make_checkpoint({"a": 2}), make_metadata(0), {})
    got = saver.get_tuple(CONFIG)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"a": 2}
    saver.conn.close()


_FORKED = """
import os, select, sys
from pausepoint.checkpoint._sqlite_writers import WriterTurns
turns = WriterTurns(sys.argv[1])
fd = turns.take()  # opened before the fork: the child inherits the descriptor
r, w = os.pipe()
pid = os.fork()
if pid == 0:  # the child takes the turn through the object it inherited
    turns.give(turns.take())
    os.write(w, b"taken")
    os._exit(0)
early = select.select([r], [], [], 0.3)[0]
turns.give(fd)
print("early" if early else "queued", os.read(r, 5).decode(), os.waitpid(pid, 0)[1])
"""


def test_a_forked_child_queues_behind_its_parent(tmp_path: Path) -> None:
    # In a process of its own: a fork from the test process (threads) is not safe.
    env = {**os.environ, "PYTHONPATH": str(Path(pausepoint.__file__).parents[1])}
    args = [sys.executable, "-c", _FORKED, str(tmp_path / "c.db")]
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    assert done.stdout.split() == ["queued", "taken", "0"], done.stderr


def test_no_lock_file_for_a_read_only_or_in_memory_saver(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    saver = _saver(path, timeout=5.0)
    saver.put(CONFIG, make_checkpoint({"a": 3}), make_metadata(0), {})
    assert Path(lock_path(str(path))).exists()  # made by the first write
    os.remove(lock_path(str(path)))
    saver.conn.close()
    with SqliteSaver.from_conn_string(str(path), read_only=True) as reader:
        assert reader.get_tuple(CONFIG) is not None
    assert not Path(lock_path(str(path))).exists()
    memory = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
    memory.put(CONFIG, make_checkpoint({"a": 4}), make_metadata(0), {})
    assert memory.get_tuple(CONFIG) is not None
    memory.conn.close()
