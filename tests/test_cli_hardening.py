"""``pausepoint threads`` on bad days: crafted ids, corrupt rows, foreign files, prefixes.

The cases of ``shared/repro/answers/repro_cli.py`` and issue 18's CLI list, each run
on a real SQLite file through the real command line.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from pausepoint import Command
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.cli import main
from test_cli_threads import cli, graphs  # noqa: F401 (a fixture)

EVIL = "evil\x1b[2K\x1b[1A\x1b[32mnormal-2  done\x1b[0m\u202e"


@pytest.fixture
def db(tmp_path: Path, graphs: str) -> Path:  # noqa: F811
    from pausepoint.cli.threads import load_graph

    path = tmp_path / "threads.sqlite"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        approval = load_graph(f"{graphs}:approval").compile(checkpointer=saver)
        for thread in ("normal-1", EVIL, "normal-3"):
            approval.invoke({"topic": "pricing"}, {"configurable": {"thread_id": thread}})
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_ids_and_values_are_printed_with_control_characters_escaped(db: Path, capsys: Any):
    status, out, _ = cli(capsys, "list", "--db", str(db))
    assert status == 0
    assert "\x1b" not in out
    assert "\u202e" not in out
    assert "evil\\x1b[2K\\x1b[1A" in out
    status, out, _ = cli(capsys, "show", EVIL, "--db", str(db))
    assert status == 0
    assert "\x1b" not in out
    assert "\\u202e" in out
    status, out, _ = cli(capsys, "list", "--db", str(db), "--json")
    assert "\x1b" not in out
    assert "\u202e" not in out
    assert EVIL in [row["thread_id"] for row in json.loads(out)]  # JSON escapes round-trip


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("checkpoint = substr(checkpoint, 1, 20)", "CheckpointDecodeError"),
        ("checkpoint = 1000000000000", "not as text/bytes"),  # was a MemoryError
        ("metadata = 7", "CheckpointDecodeError"),
        ("type = 'pickle'", "CheckpointDecodeError"),
    ],
)
def test_one_corrupt_thread_is_a_row_of_its_own(db: Path, capsys: Any, damage: str, says: str):
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE pausepoint_checkpoints SET {damage} WHERE thread_id = 'normal-3'")
    status, out, err = cli(capsys, "list", "--db", str(db))
    assert status == 1, err
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "interrupted" in lines["normal-1"]
    assert "unreadable" in lines["normal-3"]
    rows = {
        r["thread_id"]: r for r in json.loads(cli(capsys, "list", "--db", str(db), "--json")[1])
    }
    assert rows["normal-1"]["status"] == "interrupted"
    assert rows["normal-3"]["status"] == "unreadable"
    assert says in rows["normal-3"]["errors"][0]
    assert "normal-3" in rows["normal-3"]["errors"][0]  # names the thread (and checkpoint)
    status, _, err = cli(capsys, "show", "normal-3", "--db", str(db))
    assert status == 2
    assert "Traceback" not in err
    assert "normal-3" in err
    assert "--graph" not in err  # the graph would not read a damaged row either


def test_reading_a_foreign_sqlite_file_changes_nothing_in_it(tmp_path: Path, capsys: Any):
    foreign = tmp_path / "invoices.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    before = _digest(foreign)
    for argv in (["list"], ["show", "t"], ["history", "t"]):
        status, _, err = cli(capsys, *argv, "--db", str(foreign))
        assert status == 2
        assert "not a pausepoint database" in err
    assert _digest(foreign) == before
    with sqlite3.connect(foreign) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
        assert tables == ["invoices"]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    status, _, err = cli(
        capsys, "resume", "t", "--value", '"yes"', "--graph", "x:y", "--db", str(foreign)
    )
    assert status == 2
    assert _digest(foreign) == before


def test_list_show_history_open_the_database_read_only(db: Path, capsys: Any):
    db.chmod(0o444)  # a write would fail loudly
    try:
        for argv in (["list"], ["show", "normal-1"], ["history", "normal-1"]):
            status, _, err = cli(capsys, *argv, "--db", str(db))
            assert status == 0, err
    finally:
        db.chmod(0o644)


def test_resume_map_takes_the_short_ids_list_shows(tmp_path: Path, graphs: str, capsys: Any):  # noqa: F811
    from pausepoint.cli.threads import load_graph

    path = tmp_path / "reviews.sqlite"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        reviews = load_graph(f"{graphs}:reviews").compile(checkpointer=saver)
        reviews.invoke({"topic": "post"}, {"configurable": {"thread_id": "r"}})
        state = reviews.get_state({"configurable": {"thread_id": "r"}})
    ids = {i.value: i.id for i in state.interrupts}
    legal = ids["review post/legal"]
    _, out, _ = cli(capsys, "list", "--db", str(path))
    assert legal[:8] in out
    argv = ["resume", "r", "--graph", f"{graphs}:reviews", "--db", str(path), "--json"]
    status, _, err = cli(capsys, *argv, "--map", json.dumps({"": "ok"}))  # every id's prefix
    assert status == 2
    assert "more than one" in err
    assert legal in err
    assert ids["review post/style"] in err
    status, _, err = cli(capsys, *argv, "--map", json.dumps({"zzzzzzzz": "ok"}))
    assert status == 2
    assert "zzzzzzzz" in err
    status, out, err = cli(capsys, *argv, "--map", json.dumps({legal[:8]: "ok"}))
    assert status == 0, err
    shown = json.loads(out)
    assert [i["value"] for i in shown["interrupts"]] == ["review post/style"]


def test_a_thread_at_a_static_breakpoint_says_so_and_how_to_continue(
    tmp_path: Path,
    graphs: str,  # noqa: F811
    capsys: Any,
):
    from pausepoint.cli.threads import load_graph

    path = tmp_path / "bp.sqlite"
    builder = load_graph(f"{graphs}:approval")
    with SqliteSaver.from_conn_string(str(path)) as saver:
        builder.compile(checkpointer=saver, interrupt_before=["check"]).invoke(
            {"topic": "faq"}, {"configurable": {"thread_id": "before"}}
        )
        builder.compile(checkpointer=saver, interrupt_after=["check"]).invoke(
            {"topic": "faq"}, {"configurable": {"thread_id": "after"}}
        )
    module = path.parent / f"{graphs}_bp.py"
    module.write_text(
        f"from {graphs} import approval\n"
        "before = approval.compile(interrupt_before=['check'])\n"
        "after = approval.compile(interrupt_after=['check'])\n",
        encoding="utf-8",
    )
    for thread, at in (("before", "before 'check'"), ("after", "after 'check'")):
        graph = f"{graphs}_bp:{thread}"
        status, out, err = cli(capsys, "show", thread, "--db", str(path), "--graph", graph)
        assert status == 0, err
        assert "paused" in out
        assert f"paused at a static breakpoint ({at})" in out
        assert f"pausepoint threads retry {thread} --graph {graph} --db {path}" in out
        rows = json.loads(cli(capsys, "list", "--db", str(path), "--graph", graph, "--json")[1])
        mine = next(r for r in rows if r["thread_id"] == thread)
        assert (mine["status"], mine["paused_at"]) == ("paused", at)
    status, out, _ = cli(capsys, "show", "before", "--db", str(path))  # no graph: cannot tell
    assert "running" in out
    assert "pausepoint threads retry before --graph MODULE:ATTRIBUTE" in out
    main(["threads", "retry", "before", "--db", str(path), "--graph", f"{graphs}_bp:before"])
    out = capsys.readouterr().out
    assert "interrupted" in out  # past the breakpoint, at the approval question
    assert Command  # the graph's own question now waits


TYPED = """
from dataclasses import dataclass
from typing import TypedDict

from pausepoint import START, StateGraph, interrupt


@dataclass
class Money:
    amount: int
    currency: str


class State(TypedDict, total=False):
    price: Money
    ok: str


def ask(state):
    return {"ok": interrupt("charge it?")}


builder = StateGraph(State)
builder.add_node("ask", ask)
builder.add_edge(START, "ask")
"""


def test_only_a_type_the_serializer_lacks_is_told_to_pass_the_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
):
    # A class from the graph's state schema reads with --graph; a corrupt row does not,
    # so its error must not send the reader there.
    (tmp_path / "typed_graph_mod.py").write_text(TYPED, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        from pausepoint.cli.threads import load_graph

        path = tmp_path / "typed.sqlite"
        with SqliteSaver.from_conn_string(str(path)) as saver:
            graph = load_graph("typed_graph_mod:builder").compile(checkpointer=saver)
            money = graph.builder.state_schema.__annotations__["price"]  # type: ignore[union-attr]
            graph.invoke({"price": money(30, "EUR")}, {"configurable": {"thread_id": "typed"}})
            graph.invoke({"ok": "-"}, {"configurable": {"thread_id": "plain"}})
        status, _, err = cli(capsys, "show", "typed", "--db", str(path))
        assert status == 2
        assert "not in this serializer's allowlist" in err
        assert "pass --graph MODULE:ATTRIBUTE" in err
        status, out, err = cli(
            capsys, "show", "typed", "--db", str(path), "--graph", "typed_graph_mod:builder"
        )
        assert status == 0, err
        assert "EUR" in out
        with sqlite3.connect(path) as conn:
            conn.execute(
                "UPDATE pausepoint_checkpoints SET checkpoint = 7 WHERE thread_id = 'plain'"
            )
        status, _, err = cli(capsys, "show", "plain", "--db", str(path))
        assert status == 2
        assert "the row is corrupt" in err
        assert "--graph" not in err
    finally:
        sys.modules.pop("typed_graph_mod", None)
