"""Crafted and corrupt payloads are rejected at read time, and nothing runs."""

from __future__ import annotations

import base64
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import CheckpointDecodeError, SerializationError
from pausepoint.serde import Serializer
from pausepoint.testing import make_checkpoint, make_metadata


@pytest.fixture
def trap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """Replace os.system/os.popen with recorders; the marker file must never appear."""
    marker = tmp_path / "pwned"
    calls: list[Any] = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(a) or 0)
    monkeypatch.setattr(os, "popen", lambda *a, **k: calls.append(a))
    yield marker
    assert calls == [], f"stored data ran code: {calls!r}"
    assert not marker.exists()


def crafted(marker: Path) -> list[str]:
    templates = [
        # Our own tags, pointed at a callable by name.
        '{"__pp__":"dataclass","v":["os.system",{"command":"CMD"}]}',
        '{"__pp__":"pydantic","v":["subprocess.Popen",{"args":"CMD"}]}',
        '{"__pp__":"enum","v":["os.system","CMD"]}',
        '{"__pp__":"namedtuple","v":["builtins.eval",["__import__(\'os\').system(\'CMD\')"]]}',
        '{"__pp__":"os.system","v":"CMD"}',
        '{"__pp__":"__import__","v":"os"}',
        # LangGraph's constructor format (its CVEs): only ever plain data here.
        '{"lc":2,"type":"constructor","id":["os","system"],"kwargs":{"command":"CMD"}}',
        '{"__pp__":"error","v":["os.system","CMD"]}',
    ]
    return [t.replace("CMD", f"touch {marker}") for t in templates]


def test_crafted_payloads_never_run_code(trap: Path) -> None:
    ser = Serializer()
    outcomes: list[str] = []
    for payload in crafted(trap):
        try:
            value = ser.loads(payload.encode())
        except CheckpointDecodeError:
            outcomes.append("rejected")
        else:
            # What decodes is inert data: a dict or a StoredError record.
            assert type(value).__module__ in ("builtins", "pausepoint.serde.stored_error")
            outcomes.append("data")
    assert outcomes == ["rejected"] * 6 + ["data", "data"]


def test_callable_names_are_rejected_with_a_clear_error() -> None:
    with pytest.raises(CheckpointDecodeError, match=r"'os\.system'.*not in this serializer"):
        Serializer().loads(b'{"__pp__":"dataclass","v":["os.system",{}]}')


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\x80\x81\xfe garbage",
        b"\x93\xa4pickle",
        b'{"a": [1, 2',
        b'{"__pp__":"tuple"}',
        b'{"__pp__":"tuple","v":[1],"x":2}',
        b'{"__pp__":["tuple"],"v":[1]}',
        b'{"__pp__":"bytes","v":"not base64!"}',
        b'{"__pp__":"float","v":"1e999"}',
        b'{"__pp__":"dict","v":[[1]]}',
        b'{"__pp__":"set","v":[[1]]}',
        b'{"__pp__":"datetime","v":["yesterday",0,null]}',
        b'{"__pp__":"datetime","v":["2024-01-01T00:00:00",0,"UTC"]}',
        b'{"__pp__":"zoneinfo","v":"../../etc/passwd"}',
        b"[" * 100_000,
    ],
)
def test_corrupt_payloads_raise_decode_error(payload: bytes) -> None:
    with pytest.raises(CheckpointDecodeError):
        Serializer().loads(payload)


def test_foreign_type_strings_are_rejected() -> None:
    ser = Serializer()
    for kind in ("msgpack", "pickle", "json", "ppjson/2"):
        with pytest.raises(CheckpointDecodeError, match=repr(kind)):
            ser.loads_typed((kind, b"[1]"))


# --- rows in a real SQLite database ------------------------------------------------------


@pytest.fixture
def saved(tmp_path: Path) -> Iterator[tuple[SqliteSaver, dict[str, Any]]]:
    with SqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        config = saver.put(
            {"configurable": {"thread_id": "t"}}, make_checkpoint({"a": 1}), make_metadata(0), {}
        )
        saver.put_writes(config, [("a", 2)], "task-1")
        yield saver, dict(config)


def _corrupt(saver: SqliteSaver, sql: str, *params: Any) -> None:
    with saver.conn:
        saver.conn.execute(sql, params)


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("UPDATE pausepoint_checkpoints SET checkpoint = ?", (os.urandom(64),)),
        ("UPDATE pausepoint_checkpoints SET type = 'msgpack'", ()),
        ("UPDATE pausepoint_checkpoints SET checkpoint = ?", (b"[1, 2]",)),
        ("UPDATE pausepoint_checkpoints SET metadata = 'not json'", ()),
        (
            "UPDATE pausepoint_checkpoints SET checkpoint = ?",  # a future checkpoint format
            (b'{"v":99,"id":"x","channel_values":{},"channel_versions":{},"versions_seen":{}}',),
        ),
        (
            "UPDATE pausepoint_writes SET value = ?",
            (b'{"__pp__":"dataclass","v":["os.system",{}]}',),
        ),
        ("UPDATE pausepoint_writes SET type = 'pickle'", ()),
    ],
)
def test_corrupt_rows_raise_decode_error(
    saved: tuple[SqliteSaver, dict[str, Any]], trap: Path, sql: str, params: tuple[Any, ...]
) -> None:
    saver, config = saved
    _corrupt(saver, sql, *params)
    with pytest.raises(CheckpointDecodeError):
        saver.get_tuple(config)  # type: ignore[arg-type]
    with pytest.raises(CheckpointDecodeError):
        list(saver.list(None))


def test_unknown_type_at_write_leaves_previous_checkpoint_intact(
    saved: tuple[SqliteSaver, dict[str, Any]],
) -> None:
    saver, config = saved

    class Opaque:
        pass

    bad = make_checkpoint({"good": 1, "bad": {"deep": [Opaque()]}})
    with pytest.raises(SerializationError, match=r"state key 'bad', at \['deep'\]\[0\]"):
        saver.put(config, bad, make_metadata(1), {})  # type: ignore[arg-type]
    with pytest.raises(SerializationError, match="key 'b' as returned by task 'task-2'"):
        saver.put_writes(config, [("a", 1), ("b", Opaque())], "task-2")  # type: ignore[arg-type]
    latest = saver.get_tuple({"configurable": {"thread_id": "t"}})
    assert latest is not None
    assert latest.config == config
    assert [w.task_id for w in latest.pending_writes or []] == ["task-1"]


def test_sqlite_file_from_a_newer_pausepoint_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "new.db")
    with SqliteSaver.from_conn_string(path):
        pass
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("INSERT INTO pausepoint_migrations (v) VALUES (99)")
    conn.close()
    with pytest.raises(RuntimeError, match="version 99"), SqliteSaver.from_conn_string(path):
        pass


def test_base64_payloads_stay_bytes() -> None:
    raw = base64.b64encode(b"\x00import os")
    assert Serializer().loads(b'{"__pp__":"bytes","v":"%s"}' % raw) == b"\x00import os"


def test_deep_nesting_is_a_clear_decode_error() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(CheckpointDecodeError, match="nested too deeply"):
        Serializer().loads(deep)
