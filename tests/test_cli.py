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
