"""A class defined in a script run as ``python app.py`` is read by other processes.

Run as a script, a class's module is ``__main__``; a process that imports the script
knows the same class as ``app.Incident``. Stored under its importable name, a value
written by either process is read by the other (real processes, a real SQLite file,
and ``pausepoint threads --graph app:builder``). Rows written before, under
``__main__.Incident``, are still read; a name nobody registered gets an error that
prints the exact ``register`` call.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pausepoint
from pausepoint.checkpoint._packing import unpack
from pausepoint.errors import CheckpointDecodeError
from pausepoint.serde import Serializer

APP = textwrap.dedent(
    """
    import dataclasses, json, sys
    from typing import TypedDict
    from pausepoint import START, Command, StateGraph, interrupt
    from pausepoint.checkpoint.sqlite import SqliteSaver

    @dataclasses.dataclass
    class Incident:
        title: str
        severity: int

    class State(TypedDict, total=False):
        incident: Incident
        verdict: str

    def triage(state: State) -> State:
        return {"verdict": interrupt(f"page someone for {state['incident'].title}?")}

    builder = StateGraph(State)
    builder.add_node("triage", triage)
    builder.add_edge(START, "triage")
    CONFIG = {"configurable": {"thread_id": "t1"}}

    def start(db: str) -> None:
        with SqliteSaver.from_conn_string(db) as saver:
            builder.compile(checkpointer=saver).invoke({"incident": Incident("disk", 2)}, CONFIG)

    def finish(db: str) -> None:
        with SqliteSaver.from_conn_string(db) as saver:
            graph = builder.compile(checkpointer=saver)
            incident = graph.get_state(CONFIG).values["incident"]
            assert type(incident) is Incident, type(incident)
            out = graph.invoke(Command(resume="yes"), CONFIG)
            print(json.dumps([type(incident).__module__, incident.title, out["verdict"]]))

    if __name__ == "__main__":
        {"start": start, "finish": finish}[sys.argv[1]](sys.argv[2])
    """
)


def _python(cwd: Path, *args: str) -> str:
    # This checkout's pausepoint, whatever the directory the process runs in.
    env = {**os.environ, "PYTHONPATH": str(Path(pausepoint.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def app(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text(APP)
    return tmp_path


def test_a_script_writes_and_an_importer_reads(app: Path) -> None:
    _python(app, "app.py", "start", "c.sqlite")
    with sqlite3.connect(app / "c.sqlite") as conn:
        rows = conn.execute("SELECT checkpoint FROM pausepoint_checkpoints").fetchall()
    blobs = [unpack(bytes(blob), "a checkpoint") for (blob,) in rows]  # deflated if small
    assert any(b'"app.Incident"' in blob for blob in blobs)
    assert not any(b"__main__" in blob for blob in blobs)
    out = _python(app, "-c", "import app; app.finish('c.sqlite')")
    assert json.loads(out) == ["app", "disk", "yes"]


def test_an_importer_writes_and_the_script_reads(app: Path) -> None:
    _python(app, "-c", "import app; app.start('c.sqlite')")
    out = _python(app, "app.py", "finish", "c.sqlite")
    assert json.loads(out) == ["__main__", "disk", "yes"]


def test_the_threads_cli_reads_a_scripts_types(app: Path) -> None:
    _python(app, "app.py", "start", "c.sqlite")
    cli = "from pausepoint.cli import main; main()"
    out = _python(
        app, "-c", cli, "threads", "show", "t1", "--graph", "app:builder", "--db", "c.sqlite"
    )
    assert "disk" in out
    assert "CheckpointDecodeError" not in out


@dataclasses.dataclass
class Incident:
    title: str


def test_a_row_naming_main_is_read_with_the_registered_class() -> None:
    ser = Serializer([Incident])
    payload = b'{"__pp__":"dataclass","v":["__main__.Incident",{"title":"disk"}]}'
    assert ser.loads(payload) == Incident("disk")


def test_an_unknown_class_error_prints_the_register_call() -> None:
    payload = b'{"__pp__":"dataclass","v":["__main__.Incident",{"title":"disk"}]}'
    with pytest.raises(CheckpointDecodeError) as caught:
        Serializer().loads(payload)
    assert "saver.serde.register(Incident, name='__main__.Incident')" in str(caught.value)
    # The call it prints fixes it.
    ser = Serializer()
    ser.register(Incident, name="__main__.Incident")
    assert ser.loads(payload) == Incident("disk")
