"""The ``pausepoint demo`` command: a pause that survives the process exiting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pausepoint.cli import main


def _demo(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pausepoint.cli", "demo", "--db", str(db), *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )


def test_pause_survives_process_exit_then_approve(tmp_path: Path):
    db = tmp_path / "demo.sqlite"
    first = _demo(db)
    assert first.returncode == 0, first.stderr
    assert "paused and saved" in first.stdout
    second = _demo(db)  # no terminal, no answer: stays paused
    assert "stays paused" in second.stdout
    third = _demo(db, "--approve")
    assert third.returncode == 0, third.stderr
    assert "Decision: approved" in third.stdout
    assert "DELETE 1204 rows from users" in third.stdout
    fourth = _demo(db)
    assert "already finished" in fourth.stdout


def test_edit_and_reject(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    db = str(tmp_path / "demo.sqlite")
    assert main(["demo", "--db", db, "--thread", "e"]) == 0
    assert main(["demo", "--db", db, "--thread", "e", "--edit", '{"rows": 10}']) == 0
    assert "DELETE 10 rows" in capsys.readouterr().out
    assert main(["demo", "--db", db, "--thread", "r"]) == 0
    assert main(["demo", "--db", db, "--thread", "r", "--reject", "too risky"]) == 0
    out = capsys.readouterr().out
    assert "Decision: rejected" in out
    assert "not run: too risky" in out
    assert main(["demo", "--db", db, "--thread", "r", "--restart"]) == 0
    assert "paused and saved" in capsys.readouterr().out


def test_bad_edit_json_is_a_clear_error_and_keeps_the_pause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    db = str(tmp_path / "demo.sqlite")
    assert main(["demo", "--db", db]) == 0
    assert main(["demo", "--db", db, "--edit", "{not json"]) == 2
    assert "--edit needs a JSON object" in capsys.readouterr().err
    assert main(["demo", "--db", db, "--edit", "[1, 2]"]) == 2
    assert main(["demo", "--db", db, "--approve"]) == 0
    assert "Decision: approved" in capsys.readouterr().out


def test_version_names_the_installed_release():
    from importlib import metadata

    done = subprocess.run(
        [sys.executable, "-m", "pausepoint.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.strip() == f"pausepoint {metadata.version('pausepoint')}"


def test_output_piped_into_a_reader_that_leaves_exits_quietly(tmp_path: Path):
    from pausepoint.checkpoint.sqlite import SqliteSaver
    from pausepoint.cli.demo_graph import build

    db = tmp_path / "demo.sqlite"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build().compile(checkpointer=saver)
        for n in range(3):
            graph.invoke({"request": "clean up"}, {"configurable": {"thread_id": f"t{n:04}"}})
    # `true` leaves before Python has started: every write meets a closed pipe.
    shell = f"{sys.executable} -m pausepoint.cli threads list --db {db} | true"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", shell],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr
    assert "BrokenPipe" not in done.stderr
    assert done.returncode in (0, 141)


def test_ctrl_d_at_the_prompt_exits_quietly_and_keeps_the_pause(tmp_path: Path):
    import os
    import pty

    db = tmp_path / "demo.sqlite"
    assert _demo(db).returncode == 0
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pausepoint.cli", "demo", "--db", str(db)],
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    seen = b""
    while b"[a]pprove" not in seen:
        seen += os.read(leader, 4096)
    os.write(leader, b"\x04")  # Ctrl-D: end of input
    assert proc.wait(timeout=60) == 130
    try:
        while chunk := os.read(leader, 4096):
            seen += chunk
    except OSError:  # the terminal closed with the process
        pass
    os.close(leader)
    assert b"Traceback" not in seen
    assert b"nothing more was saved" in seen
    assert "stays paused" in _demo(db).stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["threads", "list"],
        ["threads", "pending"],
        ["sweep", "--graph", "m:g"],
        ["inbox", "--graph", "m:g"],
    ],
)
def test_every_command_that_opens_a_database_takes_pausepoint_db(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    from pausepoint.cli import inbox, sweep, threads

    def parser() -> argparse.ArgumentParser:
        p = argparse.ArgumentParser(prog="pausepoint")
        commands = p.add_subparsers(dest="command", required=True)
        for module in (threads, sweep, inbox):
            module.add_parser(commands)
        return p

    monkeypatch.delenv("PAUSEPOINT_DB", raising=False)
    with pytest.raises(SystemExit):  # --db is required without the variable
        parser().parse_args(argv)
    monkeypatch.setenv("PAUSEPOINT_DB", "/tmp/x.sqlite")
    assert parser().parse_args(argv).db == "/tmp/x.sqlite"
