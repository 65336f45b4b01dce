"""A waiting question survives a deploy (issue 31, DESIGN §4.8): fingerprints and mismatches.

The corpus (tests/deploy_graphs.py) pauses threads on an old graph; each is then
loaded into an edited graph. Every destructive edit raises ``GraphMismatchError``
before anything is written, and ``get_state`` still shows the question; no harmless
edit is flagged; no pair completes silently.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

import deploy_graphs as corpus
from pausepoint import END, START, Command, InMemorySaver, StateGraph
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import GraphMismatchError, PausepointError

HERE = pathlib.Path(__file__).parent
PAIRS = [
    (name, edit, edit not in corpus.HARMLESS)
    for name, (_, destructive) in corpus.CORPUS.items()
    for edit in (*destructive, *corpus.HARMLESS)
]


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Any:
    if request.param == "memory":
        yield InMemorySaver()
        return
    with SqliteSaver.from_conn_string(str(tmp_path / "deploys.db")) as saver:
        yield saver


def _stored(saver: Any, config: Any) -> Any:
    """Everything stored for the thread, all namespaces: to check nothing was written."""
    rows = []
    for ns in _namespaces(saver, config):
        conf = {"configurable": {**config["configurable"], "checkpoint_ns": ns}}
        rows += [(t.config, t.checkpoint, t.metadata, t.pending_writes) for t in saver.list(conf)]
    return rows


def _namespaces(saver: Any, config: Any) -> list[str]:
    if isinstance(saver, InMemorySaver):
        return sorted(saver._threads[config["configurable"]["thread_id"]])  # pyright: ignore
    rows = saver.conn.execute(
        "SELECT DISTINCT checkpoint_ns FROM pausepoint_checkpoints WHERE thread_id = ?",
        (config["configurable"]["thread_id"],),
    ).fetchall()
    return sorted(r[0] for r in rows)


def _shows_the_question(snap: Any, name: str) -> None:
    """A mismatched thread never looks finished: its question and the mismatch show."""
    assert snap.next, "the thread looks finished"
    if name != "breakpoint":
        asked = snap.interrupts or any(t.answered for t in snap.tasks)
        assert asked, "the question vanished from get_state()"
    assert any(isinstance(t.error, GraphMismatchError) for t in snap.tasks)


@pytest.mark.parametrize(("name", "edit", "destructive"), PAIRS)
def test_corpus_times_edits(name: str, edit: str, destructive: bool, saver: Any) -> None:
    config = {"configurable": {"thread_id": f"{name}-{edit}"}}
    old = corpus.pause(name, saver, config)
    answer = corpus.answer_for(old, config)
    new = corpus.CORPUS[name][0](edit, saver)
    if not destructive:
        out = new.invoke(answer, config)
        assert "__interrupt__" not in (out if isinstance(out, dict) else {})
        assert new.get_state(config).next == ()
        return
    before = _stored(saver, config)
    for attempt in (
        lambda: new.invoke(answer, config),
        lambda: new.invoke(None, config),
        lambda: new.update_state(config, {"notes": ["x"]}),
    ):
        with pytest.raises(GraphMismatchError) as caught:
            attempt()
        assert config["configurable"]["thread_id"] in str(caught.value)
    assert _stored(saver, config) == before  # nothing was written
    _shows_the_question(new.get_state(config), name)


@pytest.mark.parametrize("name", list(corpus.CORPUS))
def test_same_graph_resumes_as_before(name: str, saver: Any) -> None:
    config = {"configurable": {"thread_id": name}}
    old = corpus.pause(name, saver, config)
    again = corpus.CORPUS[name][0](None, saver)
    assert again.spec.fingerprint == old.spec.fingerprint
    stored = saver.get_tuple(config).checkpoint
    assert stored["graph"]["fingerprint"] == old.spec.fingerprint
    again.invoke(corpus.answer_for(again, config), config)
    assert again.get_state(config).next == ()


def test_the_error_names_thread_checkpoint_pieces_and_fix() -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "t-1"}}
    corpus.pause("one", saver, config)
    head = saver.get_tuple(config).checkpoint["id"]
    new = corpus.one("rename", saver)
    with pytest.raises(GraphMismatchError) as caught:
        new.invoke(Command(resume="yes"), config)
    err = caught.value
    assert isinstance(err, PausepointError)
    assert (err.thread_id, err.checkpoint_id) == ("t-1", head)
    text = str(err)
    assert "'t-1'" in text
    assert repr(head) in text
    assert "'ask'" in text
    assert "question 0" in text  # the waiting question is named
    assert "docs/deploys.md" in text  # the fix
    assert [p.kind for p in err.problems] == ["node"]


def test_fingerprint_is_structural_and_has_a_label() -> None:
    a = corpus.one(None, None)
    b = corpus.one("body", None)
    assert a.spec.fingerprint == b.spec.fingerprint  # a node's body is not structure
    assert a.spec.fingerprint != corpus.one("rename", None).spec.fingerprint
    assert a.spec.fingerprint != corpus.one("reducer", None).spec.fingerprint
    assert a.spec.fingerprint != corpus.one("retype", None).spec.fingerprint
    labelled = corpus._chain(None).compile(version="2026-12")  # pyright: ignore[reportPrivateUsage]
    assert labelled.spec.fingerprint == a.spec.fingerprint
    assert labelled.spec.shape is not None
    assert labelled.spec.shape.version == "2026-12"
    before = corpus.breakpoint_(None, None).spec.fingerprint
    g = corpus._chain(None)  # pyright: ignore[reportPrivateUsage]
    assert g.compile(interrupt_before=["ask"]).spec.fingerprint != g.compile().spec.fingerprint
    assert before != a.spec.fingerprint
    outer = corpus.nested(None, None).spec.fingerprint
    assert outer != corpus.nested("rename", None).spec.fingerprint  # two levels down


def test_a_label_is_stored_with_the_fingerprint() -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "labelled"}}
    graph = corpus._chain(None).compile(checkpointer=saver, version="2026-12")  # pyright: ignore[reportPrivateUsage]
    graph.invoke(corpus.first_input("one"), config)
    stamp = saver.get_tuple(config).checkpoint["graph"]
    assert stamp["version"] == "2026-12"
    assert stamp["reducers"] == {"notes": "operator.add"}


def test_old_checkpoints_without_a_fingerprint_keep_working() -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "old"}}
    graph = corpus.pause("one", saver, config)
    for kept in saver._threads["old"][""].values():  # pyright: ignore
        kept.checkpoint.pop("graph", None)
    assert "graph" not in saver.get_tuple(config).checkpoint
    graph.invoke(Command(resume="yes"), config)
    assert graph.get_state(config).values["verdict"] == "yes"
    assert saver.get_tuple(config).checkpoint["graph"]["fingerprint"] == graph.spec.fingerprint


def test_a_pending_send_to_a_missing_node_is_listed() -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "s"}}
    corpus.pause("sends", saver, config)
    new = corpus.sends("remove", saver)
    snap = new.get_state(config)
    assert snap.next == ("ask", "ask", "ask")
    assert len(snap.interrupts) == 3
    with pytest.raises(GraphMismatchError) as caught:
        new.invoke(None, config)
    assert {p.kind for p in caught.value.problems} == {"send"}


def test_a_finished_thread_with_a_dropped_key_refuses_new_input() -> None:
    class Old(dict[str, Any]):
        pass

    from typing import TypedDict

    class S1(TypedDict):
        a: str
        b: str

    class S2(TypedDict):
        a: str

    def build(schema: Any) -> Any:
        g = StateGraph(schema)
        g.add_node("n", lambda s: {"a": s["a"] + "!"})
        g.add_edge(START, "n")
        g.add_edge("n", END)
        return g.compile(checkpointer=saver)

    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "f"}}
    build(S1).invoke({"a": "x", "b": "y"}, config)
    with pytest.raises(GraphMismatchError, match="'b'"):
        build(S2).invoke({"a": "z"}, config)
    assert build(S2).get_state(config).next == ()  # finished, and shown so


def test_a_question_in_a_subgraph_is_shown_with_subgraphs() -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "deep"}}
    corpus.pause("nested", saver, config)
    new = corpus.nested("rename", saver)
    snap = new.get_state(config, subgraphs=True)
    assert snap.interrupts
    assert snap.next == ("outer",)
    assert isinstance(snap.tasks[0].error, GraphMismatchError)
    with pytest.raises(GraphMismatchError, match="'ask'"):
        new.invoke(Command(resume="yes"), config)


def test_async_resume_refuses_too() -> None:
    import asyncio

    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "a"}}
    corpus.pause("one", saver, config)
    new = corpus.one("rename", saver)
    with pytest.raises(GraphMismatchError):
        asyncio.run(new.ainvoke(Command(resume="yes"), config))
    snap = asyncio.run(new.aget_state(config))
    assert snap.next == ("ask",)
    assert snap.interrupts


def _pause_elsewhere(url: str, name: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent / "src"), str(HERE)])}
    done = subprocess.run(
        [sys.executable, str(HERE / "deploy_graphs.py"), url, name],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "paused"


def _cross_process(saver: Any, url: str) -> None:
    for name in ("one", "nested"):
        _pause_elsewhere(url, name)
        config = {"configurable": {"thread_id": name}}
        new = corpus.CORPUS[name][0]("rename", saver)
        with pytest.raises(GraphMismatchError):
            new.invoke(corpus.answer_for(new, config), config)
        _shows_the_question(new.get_state(config), name)
        harmless = corpus.CORPUS[name][0]("body", saver)
        harmless.invoke(corpus.answer_for(harmless, config), config)
        assert harmless.get_state(config).values["verdict"].startswith("new body: yes")


def test_cross_process_sqlite(tmp_path: pathlib.Path) -> None:
    db = str(tmp_path / "x.db")
    with SqliteSaver.from_conn_string(db) as saver:
        saver.setup()
    with SqliteSaver.from_conn_string(db) as saver:
        _cross_process(saver, db)


def test_cross_process_postgres() -> None:
    url = os.environ.get("PAUSEPOINT_PG_URL")
    if not url:
        pytest.skip("PAUSEPOINT_PG_URL is not set (source /tmp/pgenv)")
    from pausepoint.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        for name in ("one", "nested"):
            saver.delete_thread(name)
        _cross_process(saver, url)
