"""``pausepoint threads pending``: the waiting questions across threads, in the terminal."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pausepoint import Command
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.cli import main

sys.path.insert(0, str(Path(__file__).parent / "savers"))
from pending_worker import build


def cfg(thread: str, graph: str | None = None) -> Any:
    meta = {"graph_id": graph} if graph else {}
    return {"configurable": {"thread_id": thread}, "metadata": meta}


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "app.db")
    with SqliteSaver.from_conn_string(path) as saver:
        graph = build(saver)
        graph.invoke({"x": 2}, cfg("a\x1b[31mred", "fan"))
        graph.invoke({"x": 1}, cfg("b"))
        graph.invoke({"x": 1}, cfg("done"))
        for _ in range(2):
            (q,) = graph.get_state(cfg("done")).interrupts
            graph.invoke(Command(resume={q.question_id: 1}), cfg("done"))
    return path


def test_table_escapes_control_characters(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["threads", "pending", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert out.count("a\\x1b[31mred") == 2
    assert out.splitlines()[0].split() == ["THREAD", "TASK", "QUESTION", "ASKED", "VALUE"]
    assert "done" not in out
    assert "next page" not in out


def test_json_graph_filter_and_pages(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["threads", "pending", "--db", db, "--graph", "fan", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {q["thread_id"] for q in data["items"]} == {"a\x1b[31mred"}
    assert all(q["question_id"].endswith(":0") and q["task_name"] == "ask" for q in data["items"])
    assert main(["threads", "pending", "--db", db, "--json", "--limit", "2"]) == 0
    first = json.loads(capsys.readouterr().out)
    cursor = first["next_cursor"]
    assert len(first["items"]) == 2
    assert cursor
    args = ["threads", "pending", "--db", db, "--json", "--cursor", cursor]
    assert main(args) == 0
    rest = json.loads(capsys.readouterr().out)
    assert [q["thread_id"] for q in rest["items"]] == ["b"]
    assert rest["next_cursor"] is None


def test_bad_cursor_and_limit_are_errors(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["threads", "pending", "--db", db, "--cursor", "nope"]) == 2
    assert "not a cursor" in capsys.readouterr().err
    assert main(["threads", "pending", "--db", db, "--limit", "0"]) == 2
    assert "limit" in capsys.readouterr().err


def test_a_corrupt_row_is_a_row_with_its_error(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    with SqliteSaver.from_conn_string(db) as saver:
        saver.conn.execute(
            "UPDATE pausepoint_writes SET value = X'00ff' WHERE thread_id = 'b' AND idx = -3"
        )
        saver.conn.commit()
    before = Path(db).read_bytes()
    assert main(["threads", "pending", "--db", db]) == 1
    out = capsys.readouterr().out
    assert "unreadable" in out
    assert "thread 'b'" in out
    assert out.splitlines()[-1].startswith("b ")
    assert out.count("a\\x1b[31mred") == 2
    assert Path(db).read_bytes() == before
