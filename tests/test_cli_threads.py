"""``pausepoint threads``: list, show, history and resume threads stored in a real database.

Threads are made by a small graph module written into the test's directory, so the
CLI imports it by ``module:attribute`` exactly as a user's would be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pausepoint import Command
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.cli import main
from pausepoint.cli.threads import compile_graph, load_graph
from pausepoint.cli.views import latest_checkpoints, view_of
from pausepoint.graph.compiled import CompiledStateGraph

GRAPHS = textwrap.dedent(
    '''
    """Graphs for the CLI tests."""

    import operator
    from typing import Annotated, TypedDict

    from pausepoint import END, START, Send, StateGraph, interrupt


    class State(TypedDict, total=False):
        topic: str
        approved: bool
        reviews: Annotated[list, operator.add]
        fail: bool


    def propose(state):
        return {"topic": state["topic"].strip()}


    def approve(state):
        answer = interrupt({"question": f"publish {state['topic']}?"})
        return {"approved": answer == "yes"}


    def check(state):
        if state.get("fail"):
            raise RuntimeError("the check service is down")
        return {}


    approval = StateGraph(State)
    approval.add_node("propose", propose)
    approval.add_node("check", check)
    approval.add_node("approve", approve)
    approval.add_edge(START, "propose")
    approval.add_edge("propose", "check")
    approval.add_edge("check", "approve")
    approval.add_edge("approve", END)
    compiled = approval.compile()


    def fan_out(state):
        topic = state["topic"]
        return [Send("review", {"topic": f"{topic}/{part}"}) for part in ("legal", "style")]


    def review(state):
        return {"reviews": [f"{state['topic']}: {interrupt('review ' + state['topic'])}"]}


    reviews = StateGraph(State)
    reviews.add_node("review", review)
    reviews.add_conditional_edges(START, fan_out)
    reviews.add_edge("review", END)


    class Holder:
        graph = reviews


    BROKEN = {"on": True}


    def form(state):
        kind = interrupt("refund or credit?")
        if BROKEN["on"] and kind != "refund":
            raise ValueError(f"unknown kind {kind!r}")
        return {"reviews": [kind, interrupt("which account?")]}


    forms = StateGraph(State)
    forms.add_node("form", form)
    forms.add_edge(START, "form")


    from pausepoint.func import entrypoint


    @entrypoint()
    def asked(topic: str) -> str:
        return f"{topic}: {interrupt('publish ' + topic + '?')}"


    not_a_graph = 42
    '''
)


@pytest.fixture
def graphs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The name of a freshly written graph module, importable for this test only."""
    name = f"cli_graphs_{uuid.uuid4().hex[:12]}"
    (tmp_path / f"{name}.py").write_text(GRAPHS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def make_threads(saver: Any, graphs: str) -> dict[str, Any]:
    """Four threads: paused once, finished, paused twice in parallel, failed."""
    approval = load_graph(f"{graphs}:approval").compile(checkpointer=saver)
    reviews = load_graph(f"{graphs}:reviews").compile(checkpointer=saver)
    approval.invoke({"topic": " pricing page "}, _config("paused"))
    approval.invoke({"topic": "faq"}, _config("finished"))
    approval.invoke(Command(resume="yes"), _config("finished"))
    reviews.invoke({"topic": "launch post"}, _config("parallel"))
    with pytest.raises(RuntimeError, match="service is down"):
        approval.invoke({"topic": "blog", "fail": True}, _config("failed"))
    return {"approval": approval, "reviews": reviews}


@pytest.fixture
def db(tmp_path: Path, graphs: str) -> Path:
    path = tmp_path / "threads.sqlite"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        make_threads(saver, graphs)
    return path


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["threads", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    status, out, err = cli(capsys, *argv, "--json")
    assert status == 0, err
    return json.loads(out)


# --- list ---------------------------------------------------------------------------------


def test_list_reports_each_threads_status_and_pending_values(db: Path, capsys: Any):
    rows = {r["thread_id"]: r for r in cli_json(capsys, "list", "--db", str(db))}
    assert set(rows) == {"paused", "finished", "parallel", "failed"}
    assert rows["paused"]["status"] == "interrupted"
    assert [i["value"] for i in rows["paused"]["interrupts"]] == [
        {"question": "publish pricing page?"}
    ]
    assert rows["finished"]["status"] == "done"
    assert rows["finished"]["next"] == []
    assert rows["parallel"]["status"] == "interrupted"
    assert sorted(i["value"] for i in rows["parallel"]["interrupts"]) == [
        "review launch post/legal",
        "review launch post/style",
    ]
    assert rows["failed"]["status"] == "failed"
    assert rows["failed"]["next"] == ["check"]
    assert "service is down" in rows["failed"]["errors"][0]


def test_list_table_is_aligned(db: Path, capsys: Any):
    status, out, _ = cli(capsys, "list", "--db", str(db))
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == ["THREAD", "STATUS", "STEP", "NEXT", "PENDING"]
    column = lines[0].index("STATUS")
    for line in lines[1:]:
        assert line[column - 2 : column] == "  "
        assert line[column:].split()[0] in ("failed", "interrupted", "done")
    assert '"question": "publish pricing page?"' in out


def test_list_filters_by_status(db: Path, capsys: Any):
    rows = cli_json(capsys, "list", "--db", str(db), "--status", "interrupted")
    assert sorted(r["thread_id"] for r in rows) == ["parallel", "paused"]
    status, out, _ = cli(capsys, "list", "--db", str(db), "--status", "done")
    assert status == 0
    assert out.split()[5:6] == ["finished"]


def test_an_empty_database_has_no_threads(tmp_path: Path, capsys: Any):
    path = tmp_path / "empty.sqlite"
    with SqliteSaver.from_conn_string(str(path)):
        pass
    assert cli(capsys, "list", "--db", str(path))[1] == "no threads\n"
    assert cli_json(capsys, "list", "--db", str(path)) == []


def test_db_defaults_to_the_environment(db: Path, capsys: Any, monkeypatch: Any):
    monkeypatch.setenv("PAUSEPOINT_DB", str(db))
    assert len(cli_json(capsys, "list")) == 4


def test_reading_without_the_graph_agrees_with_the_graph(tmp_path: Path, graphs: str):
    """The stored-data inference of next/status/interrupts matches get_state's."""
    with SqliteSaver.from_conn_string(str(tmp_path / "x.sqlite")) as saver:
        built = make_threads(saver, graphs)
        # Answer one of the two parallel reviews: one task done, one still pending.
        snap = built["reviews"].get_state(_config("parallel"))
        first = snap.interrupts[0]
        built["reviews"].invoke(Command(resume={first.id: "ok"}), _config("parallel"))
        for saved in latest_checkpoints(saver):
            graph = built[
                "reviews" if saved.config["configurable"]["thread_id"] == "parallel" else "approval"
            ]
            raw, exact = view_of(saved, None, latest=True), view_of(saved, graph, latest=True)
            assert (raw.status, raw.next, raw.interrupts) == (
                exact.status,
                exact.next,
                exact.interrupts,
            ), saved.config
            thread = saved.config["configurable"]["thread_id"]
            for old in saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}):
                raw, exact = view_of(old, None, latest=False), view_of(old, graph, latest=False)
                assert (raw.step, raw.source, raw.next) == (exact.step, exact.source, exact.next)


def test_answered_and_failed_after_answer_are_told_apart(tmp_path: Path, graphs: str, capsys):
    from pausepoint.testing import FaultySaver, InjectedFault

    path = tmp_path / "answers.sqlite"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        builder = load_graph(f"{graphs}:forms")
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"topic": "x"}, _config("answered"))
        dying = builder.compile(checkpointer=FaultySaver(saver, fail_on="put_writes", after=1))
        with pytest.raises(InjectedFault):  # the worker dies after the answer is stored
            dying.invoke(Command(resume="refund"), _config("answered"))
        graph.invoke({"topic": "y"}, _config("typo"))
        with pytest.raises(ValueError, match="unknown kind"):
            graph.invoke(Command(resume="refnud"), _config("typo"))
    db = str(path)
    for through in ([], ["--graph", f"{graphs}:forms"]):
        rows = {r["thread_id"]: r for r in cli_json(capsys, "list", "--db", db, *through)}
        assert rows["answered"]["status"] == "answered"
        assert rows["answered"]["interrupts"] == []
        (answer,) = rows["answered"]["answered"]
        assert (answer["position"], answer["question"], answer["answer"]) == (
            0,
            "refund or credit?",
            "refund",
        )
        assert rows["typo"]["status"] == "failed"
        assert [a["answer"] for a in rows["typo"]["answered"]] == ["refnud"]
        assert "unknown kind" in rows["typo"]["errors"][0]
    status, out, _ = cli(capsys, "show", "answered", "--db", db)
    assert status == 0
    assert "answered, run pending" in out
    assert '"refund"' in out
    listed = cli_json(capsys, "list", "--db", db, "--status", "answered")
    assert [r["thread_id"] for r in listed] == ["answered"]

    # retry continues with the stored answer: the next question is asked.
    data = cli_json(capsys, "retry", "answered", "--db", db, "--graph", f"{graphs}:forms")
    assert data["status"] == "interrupted"
    assert [i["value"] for i in data["interrupts"]] == ["which account?"]
    # A different answer to the failed question is refused, and changes nothing...
    status, _, err = cli(
        capsys, "resume", "typo", "--value", '"refund"', "--db", db, "--graph", f"{graphs}:forms"
    )
    assert status == 2
    assert "already has the answer 'refnud'" in err
    assert "threads resume --replace" in err
    assert cli_json(capsys, "show", "typo", "--db", db)["status"] == "failed"
    # ...unless it replaces the stored one.
    data = cli_json(
        capsys,
        "resume",
        "typo",
        "--replace",
        "--value",
        '"refund"',
        "--db",
        db,
        "--graph",
        f"{graphs}:forms",
    )
    assert data["status"] == "interrupted"
    assert data["answered"] == []
    assert [i["value"] for i in data["interrupts"]] == ["which account?"]


# --- show and history ---------------------------------------------------------------------


def test_show_prints_values_next_and_interrupt_ids(db: Path, capsys: Any, graphs: str):
    status, out, _ = cli(capsys, "show", "parallel", "--db", str(db))
    assert status == 0
    assert "status      interrupted" in out
    assert "next        review, review" in out
    data = cli_json(capsys, "show", "parallel", "--db", str(db), "--graph", f"{graphs}:reviews")
    for pending in data["interrupts"]:
        assert len(pending["id"]) == 32
        assert pending["id"] in out
    assert data["values"]["topic"] == "launch post"
    assert data["next"] == ["review", "review"]


def test_show_through_the_graph(db: Path, capsys: Any, graphs: str):
    data = cli_json(capsys, "show", "paused", "--db", str(db), "--graph", f"{graphs}:approval")
    assert data["values"] == {"topic": "pricing page", "reviews": []}
    assert data["next"] == ["approve"]
    status, out, _ = cli(capsys, "show", "paused", "--db", str(db), "--graph", f"{graphs}:compiled")
    assert status == 0
    assert "values\n" in out


def test_show_prints_the_graph_version_label(tmp_path: Path, capsys: Any, graphs: str):
    """``compile(version=...)``'s label, stored with the checkpoint (issue 31)."""
    path = tmp_path / "labelled.sqlite"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        builder = load_graph(f"{graphs}:approval")
        builder.compile(checkpointer=saver, version="2026-12").invoke({"topic": "x"}, _config("v"))
        builder.compile(checkpointer=saver).invoke({"topic": "y"}, _config("plain"))
    for through in ((), ("--graph", f"{graphs}:approval")):
        status, out, _ = cli(capsys, "show", "v", "--db", str(path), *through)
        assert status == 0
        assert "graph version  2026-12" in out
        data = cli_json(capsys, "show", "v", "--db", str(path), *through)
        assert data["graph_version"] == "2026-12"
        status, out, _ = cli(capsys, "show", "plain", "--db", str(path), *through)
        assert "graph version" not in out
        assert (
            cli_json(capsys, "show", "plain", "--db", str(path), *through)["graph_version"] is None
        )


def test_history_is_newest_first(db: Path, capsys: Any, graphs: str):
    rows = cli_json(capsys, "history", "finished", "--db", str(db))
    assert [r["step"] for r in rows] == [3, 2, 1, 0, -1]
    assert rows[-1]["source"] == "input"
    assert rows[-1]["next"] == ["__start__"]
    assert rows[0]["next"] == []
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = load_graph(f"{graphs}:approval").compile(checkpointer=saver)
        ids = [
            s.config["configurable"]["checkpoint_id"]
            for s in graph.get_state_history(_config("finished"))
        ]
    assert [r["checkpoint_id"] for r in rows] == ids
    status, out, _ = cli(capsys, "history", "finished", "--db", str(db), "--limit", "2")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == ["STEP", "SOURCE", "NEXT", "CHECKPOINT"]
    assert len(lines) == 3
    assert lines[1].split()[:2] == ["3", "loop"]


# --- resume -------------------------------------------------------------------------------


def test_resume_with_a_value_finishes_the_run(db: Path, capsys: Any, graphs: str):
    data = cli_json(
        capsys,
        "resume",
        "paused",
        "--value",
        '"yes"',
        "--db",
        str(db),
        "--graph",
        f"{graphs}:approval",
    )
    assert data["status"] == "done"
    assert data["values"]["approved"] is True
    assert cli_json(capsys, "show", "paused", "--db", str(db))["status"] == "done"


def test_resume_by_id_answers_part_then_the_rest(db: Path, capsys: Any, graphs: str):
    graph = f"{graphs}:Holder.graph"  # a dotted attribute works too
    pending = cli_json(capsys, "show", "parallel", "--db", str(db))["interrupts"]
    # Parallel tasks pause in the order they finish: pick the questions by value.
    by_value = {p["value"]: p["id"] for p in pending}
    first, second = by_value["review launch post/legal"], by_value["review launch post/style"]
    answer = json.dumps({first: "fine"})
    data = cli_json(
        capsys, "resume", "parallel", "--map", answer, "--db", str(db), "--graph", graph
    )
    assert data["status"] == "interrupted"
    assert [i["id"] for i in data["interrupts"]] == [second]
    status, out, err = cli(
        capsys,
        "resume",
        "parallel",
        "--map",
        json.dumps({second: "ok"}),
        "--db",
        str(db),
        "--graph",
        graph,
    )
    assert status == 0, err
    assert "status      done" in out
    reviews = cli_json(capsys, "show", "parallel", "--db", str(db))["values"]["reviews"]
    assert sorted(reviews) == ["launch post/legal: fine", "launch post/style: ok"]


def test_resume_a_compiled_graph(db: Path, capsys: Any, graphs: str):
    args = ("resume", "paused", "--value", '"no"', "--db", str(db), "--graph", f"{graphs}:compiled")
    data = cli_json(capsys, *args)
    assert data["values"]["approved"] is False


def test_resume_an_entrypoint(tmp_path: Path, capsys: Any, graphs: str):
    """An ``@entrypoint`` has no builder to compile again: it runs with the CLI's saver."""
    db = tmp_path / "entry.sqlite"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        asked = load_graph(f"{graphs}:asked")
        assert isinstance(asked, CompiledStateGraph)
        made = compile_graph(asked, saver)
        assert made.invoke("faq", _config("e"))["__interrupt__"][0].value == "publish faq?"
    args = ("resume", "e", "--value", '"yes"', "--db", str(db), "--graph", f"{graphs}:asked")
    data = cli_json(capsys, *args)
    assert data["values"] == {"": "faq: yes"}  # a value that is not a dict of channels
    assert data["status"] == "done"


def test_a_resumed_run_that_fails_exits_1(db: Path, capsys: Any, graphs: str):
    # "failed" is not paused: a resume has nothing to answer and changes nothing.
    status, _, err = cli(
        capsys, "resume", "failed", "--value", "1", "--db", str(db), "--graph", f"{graphs}:approval"
    )
    assert status == 2
    assert "no interrupt is pending" in err
    assert "failed and runs again on graph.invoke(None, config)" in err


# --- errors ---------------------------------------------------------------------------------


def test_a_missing_database_is_an_error_and_is_not_created(tmp_path: Path, capsys: Any):
    path = tmp_path / "nope.sqlite"
    status, out, err = cli(capsys, "list", "--db", str(path))
    assert (status, out) == (2, "")
    assert "does not exist" in err
    assert not path.exists()
    status, _, err = cli(capsys, "list", "--db", str(tmp_path))
    assert status == 2
    assert "is a directory" in err


def test_a_file_that_is_not_sqlite_is_an_error(tmp_path: Path, capsys: Any):
    path = tmp_path / "notes.txt"
    path.write_text("just some text, long enough to be read as a header " * 4)
    status, _, err = cli(capsys, "list", "--db", str(path))
    assert status == 2
    assert "cannot read" in err


@pytest.mark.parametrize("command", ["show", "history"])
def test_an_unknown_thread_is_an_error(db: Path, capsys: Any, command: str):
    status, out, err = cli(capsys, command, "nobody", "--db", str(db))
    assert (status, out) == (2, "")
    assert "no thread 'nobody'" in err


def test_resume_of_an_unknown_thread_is_an_error(db: Path, capsys: Any, graphs: str):
    args = ("resume", "nobody", "--value", "1", "--db", str(db), "--graph", f"{graphs}:approval")
    status, _, err = cli(capsys, *args)
    assert status == 2
    assert "no thread 'nobody'" in err


@pytest.mark.parametrize(
    ("flag", "text", "message"),
    [
        ("--value", "yes", "--value is not valid JSON"),
        ("--map", "{oops", "--map is not valid JSON"),
        ("--map", '["a list"]', "--map wants a non-empty JSON object"),
    ],
)
def test_invalid_json_is_an_error(
    db: Path, capsys: Any, graphs: str, flag: str, text: str, message: str
):
    args = ("resume", "paused", flag, text, "--db", str(db), "--graph", f"{graphs}:approval")
    status, _, err = cli(capsys, *args)
    assert status == 2
    assert message in err
    assert cli_json(capsys, "show", "paused", "--db", str(db))["status"] == "interrupted"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_colon_here", "--graph wants MODULE:ATTRIBUTE"),
        ("no_such_module_xyz:graph", "cannot import module 'no_such_module_xyz'"),
        ("{graphs}:missing", "has no attribute 'missing'"),
        ("{graphs}:not_a_graph", "not a StateGraph or a compiled graph"),
    ],
)
def test_a_bad_graph_target_is_an_error(
    db: Path, capsys: Any, graphs: str, target: str, message: str
):
    status, _, err = cli(
        capsys, "show", "paused", "--db", str(db), "--graph", target.format(graphs=graphs)
    )
    assert status == 2
    assert message in err


def test_a_bad_resume_is_an_error_that_changes_nothing(db: Path, capsys: Any, graphs: str):
    graph = f"{graphs}:reviews"
    before = cli_json(capsys, "history", "parallel", "--db", str(db))
    status, _, err = cli(
        capsys, "resume", "parallel", "--value", '"ok"', "--db", str(db), "--graph", graph
    )
    assert status == 2
    assert "multiple pending interrupts" in err
    bad = json.dumps({"0" * 32: "ok"})
    status, _, err = cli(
        capsys, "resume", "parallel", "--map", bad, "--db", str(db), "--graph", graph
    )
    assert status == 2
    assert "is no question's id" in err
    assert cli_json(capsys, "history", "parallel", "--db", str(db)) == before


def test_resume_needs_a_graph_and_an_answer(db: Path, capsys: Any):
    with pytest.raises(SystemExit) as exit_info:
        main(["threads", "resume", "paused", "--value", "1", "--db", str(db)])
    assert exit_info.value.code == 2
    assert "--graph" in capsys.readouterr().err


# --- a real process -------------------------------------------------------------------------


def _run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PAUSEPOINT_DB"}
    return subprocess.run(
        [sys.executable, "-m", "pausepoint.cli", "threads", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_through_a_subprocess(db: Path, graphs: str):
    """The graph module is found in the current directory, as a user would run it."""
    listed = _run(db.parent, "list", "--db", db.name)
    assert listed.returncode == 0, listed.stderr
    assert "paused" in listed.stdout
    assert "interrupted" in listed.stdout
    done = _run(
        db.parent,
        "resume",
        "paused",
        "--value",
        '"yes"',
        "--graph",
        f"{graphs}:approval",
        "--db",
        db.name,
    )
    assert done.returncode == 0, done.stderr
    assert "status      done" in done.stdout
    missing = _run(db.parent, "show", "paused", "--db", "missing.sqlite")
    assert missing.returncode == 2
    assert "does not exist" in missing.stderr
    assert not (db.parent / "missing.sqlite").exists()


# --- PostgreSQL -----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_url() -> str:
    url = os.environ.get("PAUSEPOINT_PG_URL")
    if url:
        return url
    how = 'start a server with: eval "$(scripts/postgres.sh start)"'
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but PAUSEPOINT_PG_URL is not: {how}", pytrace=False)
    pytest.skip(f"PAUSEPOINT_PG_URL is not set; {how}")


@pytest.fixture
def pg_db(pg_url: str) -> Iterator[str]:
    """A URL whose connections see only a fresh schema, dropped afterwards."""
    import psycopg

    schema = f"pp_cli_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    sep = "&" if "?" in pg_url else "?"
    yield f"{pg_url}{sep}options=-csearch_path%3D{schema}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


@pytest.mark.postgres
def test_postgres_list_show_and_resume(pg_db: str, graphs: str, capsys: Any, tmp_path: Path):
    from pausepoint.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(pg_db) as saver:
        saver.setup()
        make_threads(saver, graphs)
    rows = {r["thread_id"]: r["status"] for r in cli_json(capsys, "list", "--db", pg_db)}
    assert rows == {
        "paused": "interrupted",
        "finished": "done",
        "parallel": "interrupted",
        "failed": "failed",
    }
    data = cli_json(
        capsys,
        "resume",
        "paused",
        "--value",
        '"yes"',
        "--db",
        pg_db,
        "--graph",
        f"{graphs}:approval",
    )
    assert data["status"] == "done"
    assert cli_json(capsys, "history", "paused", "--db", pg_db)[0]["next"] == []
    status, _, err = cli(capsys, "show", "nobody", "--db", pg_db)
    assert status == 2
    assert "no thread 'nobody'" in err
    listed = _run(tmp_path, "list", "--db", pg_db)
    assert listed.returncode == 0, listed.stderr
    assert "finished" in listed.stdout


@pytest.mark.postgres
def test_postgres_without_tables_is_an_error(pg_db: str, capsys: Any):
    status, _, err = cli(capsys, "list", "--db", pg_db)
    assert status == 2
    assert "no pausepoint tables" in err


@pytest.mark.postgres
def test_postgres_unreachable_is_an_error(pg_url: str, capsys: Any):
    status, _, err = cli(
        capsys, "list", "--db", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"
    )
    assert status == 2
    assert "cannot connect" in err
