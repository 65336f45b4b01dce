"""History shows where interrupts happened (DESIGN §4.3).

``get_state(config)`` of a thread lists only the questions still waiting. A snapshot
addressed to one checkpoint — a ``get_state_history`` entry, or ``get_state`` of a
config naming a checkpoint id — shows that checkpoint as it was stored: the
interrupts raised there, answered since or not, as LangGraph does. So the recipe
``next(s for s in graph.get_state_history(config) if s.interrupts)`` finds the
checkpoint to fork from.

The history scenarios run side by side on LangGraph (the oracle) and on pausepoint
with ``InMemorySaver`` and a real SQLite file, through the sync and the async API.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from compat._harness import load_lib, thread
from side_by_side import SideBySide

scenario = SideBySide()


class S(TypedDict):
    log: Annotated[list[str], operator.add]


def one_question(lib: Any, saver: Any) -> Any:
    b = lib.StateGraph(S)
    b.add_node("ask", lambda s: {"log": [lib.interrupt("q?")]})
    b.add_edge(lib.START, "ask")
    return b.compile(checkpointer=saver)


def parallel(lib: Any, saver: Any) -> Any:
    def reviewer(name: str) -> Any:
        return lambda s: {"log": [f"{name}={lib.interrupt(name)}"]}

    b = lib.StateGraph(S)
    for name in "ab":
        b.add_node(name, reviewer(name))
        b.add_edge(lib.START, name)
    return b.compile(checkpointer=saver)


def two_questions(lib: Any, saver: Any) -> Any:
    def form(s: S) -> dict[str, Any]:
        name = lib.interrupt("name?")
        return {"log": [name, lib.interrupt("email?")]}

    b = lib.StateGraph(S)
    b.add_node("form", form)
    b.add_edge(lib.START, "form")
    return b.compile(checkpointer=saver)


def static(lib: Any, saver: Any) -> Any:
    b = lib.StateGraph(S)
    b.add_node("a", lambda s: {"log": ["a"]})
    b.add_node("b", lambda s: {"log": ["b"]})
    b.add_edge(lib.START, "a")
    b.add_edge("a", "b")
    return b.compile(checkpointer=saver, interrupt_before=["b"])


def where(drive: Any, g: Any) -> dict[str, Any]:
    """Where each checkpoint's interrupts are listed: history entries, get_state by id."""
    hist = drive.history(g, thread())
    found = next((s for s in hist if s.interrupts), None)
    return {
        "history": [
            (s.config, s.metadata, s.next, s.interrupts, [(t.name, t.interrupts) for t in s.tasks])
            for s in hist
        ],
        "by_id": [drive.get_state(g, s.config).interrupts for s in hist],
        "recipe_finds": found.config if found is not None else None,
    }


@scenario
def one_question_answered_and_finished(lib, drive, saver):
    g = one_question(lib, saver)
    drive.invoke(g, {"log": []}, thread())
    drive.invoke(g, lib.Command(resume="yes"), thread())
    return where(drive, g)


@scenario
def parallel_questions_partly_answered(lib, drive, saver):
    g = parallel(lib, saver)
    ids = {i.value: i.id for i in drive.invoke(g, {"log": []}, thread())["__interrupt__"]}
    drive.invoke(g, lib.Command(resume={ids["a"]: "A"}), thread())
    # Addressed by id, the paused head shows both questions, as stored; get_state of
    # the thread lists only "b" in pausepoint (a test below).
    return where(drive, g)


@scenario
def parallel_questions_all_answered(lib, drive, saver):
    g = parallel(lib, saver)
    ids = {i.value: i.id for i in drive.invoke(g, {"log": []}, thread())["__interrupt__"]}
    drive.invoke(g, lib.Command(resume={ids["a"]: "A"}), thread())
    drive.invoke(g, lib.Command(resume={ids["b"]: "B"}), thread())
    return where(drive, g)


@scenario
def two_questions_half_answered(lib, drive, saver):
    g = two_questions(lib, saver)
    drive.invoke(g, {"log": []}, thread())
    drive.invoke(g, lib.Command(resume="Ada"), thread())
    rec = where(drive, g)
    # A half-answered task stays in next in pausepoint (DESIGN §4.1): next is left out.
    rec["history"] = [(c, m, i, t) for c, m, _, i, t in rec["history"]]
    return rec


@scenario
def two_questions_answered(lib, drive, saver):
    g = two_questions(lib, saver)
    drive.invoke(g, {"log": []}, thread())
    drive.invoke(g, lib.Command(resume="Ada"), thread())
    drive.invoke(g, lib.Command(resume="ada@example.com"), thread())
    return where(drive, g)


@scenario
def static_breakpoint_lists_no_interrupt(lib, drive, saver):
    g = static(lib, saver)
    drive.invoke(g, {"log": []}, thread())
    paused = where(drive, g)
    drive.invoke(g, None, thread())
    return {"paused": paused, "done": where(drive, g)}


@scenario
def head_lists_only_what_waits_but_older_checkpoints_what_was_raised(lib, drive, saver):
    g = one_question(lib, saver)
    drive.invoke(g, {"log": []}, thread())
    waiting = drive.get_state(g, thread()).interrupts
    drive.invoke(g, lib.Command(resume="yes"), thread())
    return {
        "waiting": waiting,
        "head": drive.get_state(g, thread()).interrupts,
        "older": [drive.get_state(g, s.config).interrupts for s in drive.history(g, thread())],
    }


@pytest.mark.compat
@pytest.mark.parametrize("driver", ["sync", "async"])
@pytest.mark.parametrize("name", scenario.names())
def test_same_as_langgraph(name: str, driver: str, memory_or_sqlite: Any) -> None:
    scenario.check(name, driver, memory_or_sqlite)


# --- pausepoint: the head lists what waits; a fork from history gets the new answer -------


def test_partly_answered_head_lists_what_waits(drive: Any, memory_or_sqlite: Any) -> None:
    lib = load_lib("pausepoint")
    g = parallel(lib, memory_or_sqlite)
    ids = {i.value: i.id for i in drive.invoke(g, {"log": []}, thread())["__interrupt__"]}
    drive.invoke(g, lib.Command(resume={ids["a"]: "A"}), thread())
    head = drive.get_state(g, thread())
    assert [i.value for i in head.interrupts] == ["b"]
    assert {t.name: [i.value for i in t.interrupts] for t in head.tasks} == {"a": [], "b": ["b"]}
    # The head's history entry and the head by id describe the same checkpoint, as stored:
    # both questions were raised there.
    (entry, *_) = drive.history(g, thread())
    assert [i.value for i in entry.interrupts] == ["a", "b"]
    assert [i.value for i in drive.get_state(g, entry.config).interrupts] == ["a", "b"]


def test_recipe_finds_the_checkpoint_to_fork_from(drive: Any, memory_or_sqlite: Any) -> None:
    lib = load_lib("pausepoint")
    g = one_question(lib, memory_or_sqlite)
    drive.invoke(g, {"log": []}, thread())
    drive.invoke(g, lib.Command(resume="yes"), thread())
    asked = next(s for s in drive.history(g, thread()) if s.interrupts)
    assert [i.value for i in asked.interrupts] == ["q?"]
    assert [i.value for t in asked.tasks for i in t.interrupts] == ["q?"]
    # Answering it again forks there (DESIGN §4.2): the new answer wins on the new branch.
    assert drive.invoke(g, lib.Command(resume="no"), asked.config) == {"log": ["no"]}
    assert drive.get_state(g, thread()).values == {"log": ["no"]}
    assert drive.get_state(g, thread()).interrupts == ()


def test_recipe_with_a_resume_map_from_history(drive: Any, memory_or_sqlite: Any) -> None:
    lib = load_lib("pausepoint")
    g = parallel(lib, memory_or_sqlite)
    ids = {i.value: i.id for i in drive.invoke(g, {"log": []}, thread())["__interrupt__"]}
    drive.invoke(g, lib.Command(resume={ids["a"]: "A"}), thread())
    drive.invoke(g, lib.Command(resume={ids["b"]: "B"}), thread())
    asked = next(s for s in drive.history(g, thread()) if s.interrupts)
    assert sorted(i.value for i in asked.interrupts) == ["a", "b"]
    again = {i.id: i.value.upper() + "2" for i in asked.interrupts}
    out = drive.invoke(g, lib.Command(resume=again), asked.config)
    assert sorted(out["log"]) == ["a=A2", "b=B2"]
