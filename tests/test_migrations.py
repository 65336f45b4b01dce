"""Declared migrations move a paused thread across a destructive deploy (issue 31, item 3).

Every destructive pair of the corpus (tests/deploy_graphs.py) gets the migrations
that say what changed (``deploy_graphs.migrated``): the thread paused on the old
graph resumes on the new one with the values and questions the unedited graph
gives, nothing finished runs again, and history shows the ``"migrate"`` checkpoint.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

import deploy_graphs as corpus
from pausepoint import END, START, Command, InMemorySaver, StateGraph, interrupt
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import GraphMismatchError, MigrationError
from pausepoint.migrations import StoredThread, migration, rename_channel, rename_node

PAIRS = [(name, edit) for name, (_, destructive) in corpus.CORPUS.items() for edit in destructive]
SAVERS = ["memory", "sqlite", "postgres"]


@pytest.fixture(params=SAVERS)
def saver(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
    elif request.param == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp_path / "m.db")) as saver:
            yield saver
    else:
        url = os.environ.get("PAUSEPOINT_PG_URL")
        if not url:
            pytest.skip("PAUSEPOINT_PG_URL is not set (source /tmp/pgenv)")
        from pausepoint.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
            yield saver


def _expected(name: str, edit: str) -> Any:
    """What the unedited graph gives the same pause and answer, as the edit shapes it."""
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "baseline"}}
    old = corpus.pause(name, saver, config)
    old.invoke(corpus.answer_for(old, config), config)
    values = old.get_state(config).values
    if not isinstance(values, dict):
        return values
    values = dict(values)  # pyright: ignore[reportUnknownArgumentType]
    match edit:
        case "drop_key":
            values.pop("topic", None)
        case "retype":
            values["topic"] = len("tides")
        case "reducer":
            values["notes"] = values["notes"][-3:]
        case "remove" if name != "sends":
            values.pop("verdict", None)
        case _:
            pass
    return values


def _unique(name: str, edit: str, saver: Any) -> dict[str, Any]:
    thread = f"m-{name}-{edit}-{os.getpid()}"
    if not isinstance(saver, InMemorySaver):
        saver.delete_thread(thread)
    return {"configurable": {"thread_id": thread}}


@pytest.mark.parametrize(("name", "edit"), PAIRS)
def test_every_destructive_pair_resumes_through_its_migration(
    name: str, edit: str, saver: Any
) -> None:
    config = _unique(name, edit, saver)
    old = corpus.pause(name, saver, config)
    asked = [i.value for i in old.get_state(config).interrupts]
    head = saver.get_tuple(config).checkpoint["id"]
    new = corpus.migrated(name, edit, saver)
    view = new.get_state(config)  # the move, shown, not written
    assert saver.get_tuple(config).checkpoint["id"] == head
    if edit == "remove" and name != "sends":
        assert view.interrupts == ()
    else:
        assert [i.value for i in view.interrupts] == asked  # the same questions
        assert view.next
    corpus.RUNS.clear()
    out = new.invoke(corpus.answer_for(new, config), config)
    assert "__interrupt__" not in (out if isinstance(out, dict) else {})
    assert corpus.RUNS["prep"] == 0  # nothing finished runs again
    final = new.get_state(config)
    assert final.next == ()
    assert final.values == _expected(name, edit)
    history = list(new.get_state_history(config))
    moved = [s for s in history if s.metadata and s.metadata.get("source") == "migrate"]
    assert len(moved) == 1
    assert moved[0].metadata["migrated_from"]["checkpoint_id"] == head
    assert (
        moved[0].config["configurable"]["checkpoint_id"]
        == view.config["configurable"]["checkpoint_id"]
    )
    stamp = saver.get_tuple(moved[0].config).checkpoint["graph"]
    assert stamp["fingerprint"] == new.spec.fingerprint


@pytest.mark.parametrize("name", ["one", "two_in_one", "sends", "nested", "functional"])
def test_an_answer_by_the_id_shown_before_the_deploy_answers_once(name: str) -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": name}}
    old = corpus.pause(name, saver, config)
    shown = old.get_state(config).interrupts  # what the person saw before the deploy
    new = corpus.migrated(name, "rename" if name != "nested" else "rename_subgraph", saver)
    corpus.RUNS.clear()
    answer = {i.id: f"yes {n}" for n, i in enumerate(shown)}
    new.invoke(Command(resume=answer), config)
    runs = corpus.RUNS["ask"]
    assert new.get_state(config).next == ()
    assert new.get_state(config).values == _expected(name, "rename")
    assert runs == (len(shown) if name != "functional" else 0)
    # Sending it again answers nothing new: one answer answers one question.
    with pytest.raises(Exception, match=r"no interrupt is pending|not pending"):
        new.invoke(Command(resume=answer), config)


def test_the_migrated_question_is_listed_by_its_new_id(tmp_path: pathlib.Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "l.db")) as saver:
        config = {"configurable": {"thread_id": "listed"}}
        corpus.pause("one", saver, config)
        new = corpus.migrated("one", "rename", saver)
        shown = new.get_state(config).interrupts
        new.update_state(config, {"notes": ["edited"]})  # an update moves the thread too
        listed = saver.list_pending().items
        assert [q.interrupt_id for q in listed] == [i.id for i in new.get_state(config).interrupts]
        assert [q.value for q in listed] == [i.value for i in shown]
        new.invoke(Command(resume={listed[0].question_id: "yes 0"}), config)
        assert new.get_state(config).values["verdict"] == "yes 0"
        assert saver.list_pending().items == []


def test_a_migration_that_leaves_a_mismatch_names_what_remains() -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "partial"}}
    corpus.pause("one", saver, config)
    head = saver.get_tuple(config).checkpoint["id"]
    g = corpus._chain("rename")  # pyright: ignore[reportPrivateUsage]
    new = g.compile(checkpointer=saver, migrations=[rename_channel("nothing", "else")])
    with pytest.raises(GraphMismatchError, match="'ask'") as caught:
        new.invoke(Command(resume="yes"), config)
    assert [p.kind for p in caught.value.problems] == ["node"]
    assert saver.get_tuple(config).checkpoint["id"] == head  # nothing written
    snap = new.get_state(config)
    assert snap.interrupts
    assert isinstance(snap.tasks[0].error, GraphMismatchError)


def test_a_migration_that_raises_names_itself_and_writes_nothing() -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "broken"}}
    corpus.pause("one", saver, config)
    before = list(saver.list(config))

    def broken(thread: StoredThread) -> None:
        raise ValueError("no such field")

    g = corpus._chain("rename")  # pyright: ignore[reportPrivateUsage]
    new = g.compile(
        checkpointer=saver,
        migrations=[rename_node("ask", "approve"), migration("split names", broken)],
    )
    with pytest.raises(MigrationError, match="split names") as caught:
        new.invoke(Command(resume="yes"), config)
    assert caught.value.label == "migration('split names')"
    assert isinstance(caught.value.__cause__, ValueError)
    assert "'broken'" in str(caught.value)
    assert list(saver.list(config)) == before
    assert new.get_state(config).interrupts  # shown unmoved, still waiting


def test_same_fingerprint_never_migrates() -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "same"}}
    corpus.pause("one", saver, config)
    calls: list[str] = []

    def spy(thread: StoredThread) -> None:
        calls.append("ran")

    g = corpus._chain(None).compile(  # pyright: ignore[reportPrivateUsage]
        checkpointer=saver, migrations=[migration("spy", spy)]
    )
    g.invoke(Command(resume="yes"), config)
    assert calls == []
    sources = [s.metadata["source"] for s in g.get_state_history(config) if s.metadata]
    assert "migrate" not in sources


def test_a_thread_moved_twice_chains_the_renames() -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "twice"}}

    def build(node: str, *moves: Any) -> Any:
        g = StateGraph(dict)  # pyright: ignore[reportArgumentType]
        g.add_node(node, lambda s: {"v": interrupt("go?")})
        g.add_edge(START, node)
        g.add_edge(node, END)
        return g.compile(checkpointer=saver, migrations=list(moves))

    build("a").invoke({"v": 0}, config)
    v3 = build("c", rename_node("a", "b"), rename_node("b", "c"))
    assert v3.get_state(config).next == ("c",)
    v3.invoke(Command(resume="ok"), config)
    assert v3.get_state(config).values == {"v": "ok"}


def test_subgraph_migration_moves_the_child_namespace(tmp_path: pathlib.Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "n.db")) as saver:
        config = {"configurable": {"thread_id": "deep"}}
        corpus.pause("nested", saver, config)
        new = corpus.migrated("nested", "rename", saver)
        snap = new.get_state(config, subgraphs=True)
        inner = snap.tasks[0].state
        assert inner is not None
        assert inner.tasks[0].state is not None
        assert inner.tasks[0].state.next == ("approve",)  # two levels down, moved
        assert [i.value for i in snap.interrupts] == ["question 0"]
        new.invoke(Command(resume="yes"), config)
        assert new.get_state(config).values["verdict"] == "yes"


def test_async_resume_migrates_too() -> None:
    import asyncio

    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "async"}}
    corpus.pause("one", saver, config)
    new = corpus.migrated("one", "rename", saver)
    asyncio.run(new.ainvoke(Command(resume="yes 0"), config))
    assert asyncio.run(new.aget_state(config)).values == _expected("one", "rename")


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_paused_in_one_process_migrated_and_resumed_in_another(
    kind: str, tmp_path: pathlib.Path
) -> None:
    from test_deploys import _pause_elsewhere  # pyright: ignore[reportPrivateUsage]

    if kind == "sqlite":
        url = str(tmp_path / "x.db")
        with SqliteSaver.from_conn_string(url) as saver:
            saver.setup()
        opened: Any = SqliteSaver.from_conn_string(url)
    else:
        url = os.environ.get("PAUSEPOINT_PG_URL", "")
        if not url:
            pytest.skip("PAUSEPOINT_PG_URL is not set (source /tmp/pgenv)")
        from pausepoint.checkpoint.postgres import PostgresSaver

        opened = PostgresSaver.from_conn_string(url)
    with opened as saver:
        if kind == "postgres":
            saver.setup()
            for name in ("one", "nested"):
                saver.delete_thread(name)
        for name, edit in (("one", "rename"), ("nested", "rename")):
            _pause_elsewhere(url, name)
            config = {"configurable": {"thread_id": name}}
            new = corpus.migrated(name, edit, saver)
            new.invoke(corpus.answer_for(new, config), config)
            assert new.get_state(config).values == _expected(name, edit)
