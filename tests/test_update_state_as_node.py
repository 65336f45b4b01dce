"""``update_state``'s special ``as_node`` values and its default ``as_node``.

LangGraph 1.1.6 gives ``as_node`` three special values: ``"__input__"`` (the values
are a new run input), ``"__copy__"`` (a copy of the checkpoint as a sibling fork)
and ``END`` with ``values=None`` (finish the checkpoint's step: keep what finished
tasks wrote, drop the tasks still due). Without ``as_node`` the update is put on
the node that ran last — ``START`` when none has, which leaves a paused node due.

The scenarios run side by side on LangGraph (the oracle) and on pausepoint with
``InMemorySaver`` and a real SQLite file, through the sync and the async API, and
compare whole snapshots and histories. Invalid combinations are pausepoint's own
tests: a clear ``InvalidUpdateError`` and nothing written.
"""

from __future__ import annotations

import importlib
import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from compat._harness import catch, thread
from pausepoint.errors import InvalidUpdateError
from pausepoint.types import StateUpdate
from side_by_side import SideBySide

scenario = SideBySide()


class S(TypedDict):
    foo: str
    log: Annotated[list[str], operator.add]


def chain(lib: Any, saver: Any) -> Any:
    """START -> a -> ask (interrupt) -> END."""

    def ask(state: S) -> dict[str, Any]:
        return {"log": ["ask:" + lib.interrupt("q?")]}

    b = lib.StateGraph(S)
    b.add_node("a", lambda s: {"foo": s["foo"] + "+a", "log": ["a"]})
    b.add_node("ask", ask)
    b.add_edge(lib.START, "a")
    b.add_edge("a", "ask")
    return b.compile(checkpointer=saver)


def single_asker(lib: Any, saver: Any) -> Any:
    """START -> ask (interrupt): the graph of the default as_node reproducer."""

    def ask(state: S) -> dict[str, Any]:
        return {"foo": "asked:" + lib.interrupt("q?")}

    b = lib.StateGraph(S)
    b.add_node("ask", ask)
    b.add_edge(lib.START, "ask")
    return b.compile(checkpointer=saver)


def two_steps(lib: Any, saver: Any) -> Any:
    """START -> a -> b, no interrupts."""
    b = lib.StateGraph(S)
    b.add_node("a", lambda s: {"foo": s["foo"] + "+a", "log": ["a"]})
    b.add_node("b", lambda s: {"log": ["b"]})
    b.add_edge(lib.START, "a")
    b.add_edge("a", "b")
    return b.compile(checkpointer=saver)


def snap(s: Any) -> dict[str, Any]:
    return s._asdict()


def without_interrupts(s: Any) -> dict[str, Any]:
    """A snapshot but for its interrupts.

    An interrupt still waiting when the state is edited stays listed on the new
    checkpoint in pausepoint (docs/differences.md); LangGraph's node asks again.
    """
    d = s._asdict()
    d["interrupts"] = None
    d["tasks"] = [t._replace(interrupts=None) for t in s.tasks]
    return d


def history(drive: Any, g: Any, cfg: Any = None) -> list[Any]:
    return [snap(s) for s in drive.history(g, cfg or thread())]


def state_update(lib: Any, values: Any, as_node: Any) -> Any:
    return importlib.import_module(f"{lib.name}.types").StateUpdate(values, as_node)


START_INPUT = {"foo": "x", "log": []}


# --- the default as_node -----------------------------------------------------------------


@scenario
def default_as_node_leaves_a_paused_node_due(lib, drive, saver):
    g = single_asker(lib, saver)
    drive.invoke(g, START_INPUT, thread())
    new = drive.update_state(g, thread(), {"foo": "edited"})
    edited = without_interrupts(drive.get_state(g, new))
    out = drive.invoke(g, None, thread())
    return {"new": new, "edited": edited, "out": out, "history": history(drive, g)}


def default_as_node_on_an_input_checkpoint_is_start(lib, drive, saver):
    g = two_steps(lib, saver)
    drive.invoke(g, START_INPUT, thread())
    first = drive.history(g, thread())[-1]
    new = drive.update_state(g, first.config, {"foo": "D", "log": ["d"]})
    edited = snap(drive.get_state(g, new))
    out = drive.invoke(g, None, new)
    return {"edited": edited, "out": out, "history": history(drive, g)}


# LangGraph's aupdate_state picks START only on a thread with no checkpoint at all,
# and calls this update ambiguous (its update_state picks START): pausepoint's
# drivers both do as LangGraph's sync API does (docs/differences.md).
scenario.add(
    "default_as_node_on_an_input_checkpoint_is_start",
    default_as_node_on_an_input_checkpoint_is_start,
    oracle="sync",
)


def test_langgraph_async_update_state_drifted_here() -> None:
    """The oracle for the scenario above is LangGraph's sync API, because its async one
    refuses the update (this pins that, so the choice is revisited if LangGraph changes)."""
    from compat._harness import Drive, load_lib

    lib = load_lib("langgraph")
    drive = Drive("async")
    try:
        err = catch(
            default_as_node_on_an_input_checkpoint_is_start, lib, drive, lib.InMemorySaver()
        )
    finally:
        drive.close()
    assert err == ("raised", "InvalidUpdateError", None)


@scenario
def default_as_node_on_a_new_thread_is_start(lib, drive, saver):
    g = two_steps(lib, saver)
    new = drive.update_state(g, thread(), {"foo": "F", "log": ["f"]})
    edited = snap(drive.get_state(g, new))
    out = drive.invoke(g, None, thread())
    return {"new": new, "edited": edited, "out": out, "history": history(drive, g)}


@scenario
def default_as_node_after_a_run_is_the_last_node(lib, drive, saver):
    g = single_asker(lib, saver)
    drive.invoke(g, START_INPUT, thread())
    drive.invoke(g, lib.Command(resume="yes"), thread())
    new = drive.update_state(g, thread(), {"foo": "later"})
    return {"edited": snap(drive.get_state(g, new)), "out": drive.invoke(g, None, thread())}


# --- as_node="__input__" -----------------------------------------------------------------


@scenario
def input_on_a_finished_thread_runs_again_from_start(lib, drive, saver):
    g = two_steps(lib, saver)
    drive.invoke(g, START_INPUT, thread())
    new = drive.update_state(g, thread(), {"foo": "in", "log": ["i"]}, as_node="__input__")
    edited = snap(drive.get_state(g, new))
    out = drive.invoke(g, None, new)
    return {"new": new, "edited": edited, "out": out, "history": history(drive, g)}


@scenario
def input_on_a_paused_thread_keeps_the_paused_node_due(lib, drive, saver):
    g = chain(lib, saver)
    drive.invoke(g, START_INPUT, thread())
    new = drive.update_state(g, thread(), {"foo": "in", "log": ["i"]}, as_node="__input__")
    edited = without_interrupts(drive.get_state(g, new))
    out = drive.invoke(g, None, thread())
    return {"edited": edited, "out": out, "history": history(drive, g)}


@scenario
def input_on_a_new_thread_is_the_first_input(lib, drive, saver):
    g = two_steps(lib, saver)
    new = drive.update_state(g, thread(), {"foo": "z", "log": []}, as_node="__input__")
    edited = snap(drive.get_state(g, new))
    out = drive.invoke(g, None, thread())
    return {"new": new, "edited": edited, "out": out, "history": history(drive, g)}


@scenario
def input_on_a_historical_checkpoint_forks(lib, drive, saver):
    g = two_steps(lib, saver)
    drive.invoke(g, START_INPUT, thread())
    middle = drive.history(g, thread())[1]
    new = drive.update_state(g, middle.config, {"foo": "h", "log": []}, as_node="__input__")
    edited = snap(drive.get_state(g, new))
    out = drive.invoke(g, None, new)
    return {"edited": edited, "out": out, "history": history(drive, g)}


# --- as_node="__copy__" ------------------------------------------------------------------


def _copy_of(pick: int) -> Any:
    def run(lib: Any, drive: Any, saver: Any) -> Any:
        g = chain(lib, saver)
        drive.invoke(g, START_INPUT, thread())
        copied = drive.history(g, thread())[pick]
        new = drive.update_state(g, copied.config, None, as_node="__copy__")
        copy = snap(drive.get_state(g, new))
        out = drive.invoke(g, None, new)
        return {
            "new": new,
            "copy": copy,
            "sibling": copy["parent_config"] == copied.parent_config,
            "out": out,
            "history": history(drive, g),
        }

    return run


scenario.add("copy_of_a_paused_head_asks_again", _copy_of(0))
scenario.add("copy_of_a_checkpoint_with_finished_writes_reruns_them", _copy_of(1))
scenario.add("copy_of_the_input_checkpoint_has_no_parent", _copy_of(-1))


@scenario
def copy_of_the_head_by_thread_config(lib, drive, saver):
    g = two_steps(lib, saver)
    drive.invoke(g, START_INPUT, thread())
    new = drive.update_state(g, thread(), None, as_node="__copy__")
    return {"new": new, "copy": snap(drive.get_state(g, new)), "out": drive.invoke(g, None, new)}


def _brief(s: Any) -> tuple[Any, ...]:
    """Config, parent, metadata, next, values: not the tasks.

    LangGraph also stores an update's values as the result of the matching task of
    the checkpoint it builds on; pausepoint leaves that checkpoint as it was
    (docs/differences.md), so task results of the copy differ on purpose.
    """
    return (s.config, s.parent_config, s.metadata, s.next, s.values)


@scenario
def copy_with_updates_writes_a_fork_then_an_update(lib, drive, saver):
    g = two_steps(lib, saver)
    drive.invoke(g, START_INPUT, thread())
    middle = drive.history(g, thread())[1]
    upd = [({"foo": "Q"}, "b"), ({"log": ["z"]}, "a")]
    new = drive.update_state(g, middle.config, upd, as_node="__copy__")
    edited = snap(drive.get_state(g, new))
    out = drive.invoke(g, None, new)
    return {
        "edited": edited,
        "out": out,
        "history": [_brief(s) for s in drive.history(g, thread())],
    }


@scenario
def copy_with_one_update_without_as_node(lib, drive, saver):
    g = two_steps(lib, saver)
    drive.invoke(g, START_INPUT, thread())
    middle = drive.history(g, thread())[1]
    upd = [state_update(lib, {"foo": "Q"}, None)]
    new = drive.update_state(g, middle.config, upd, as_node="__copy__")
    return {"edited": snap(drive.get_state(g, new)), "out": drive.invoke(g, None, new)}


@scenario
def copy_with_an_empty_list_is_a_plain_copy(lib, drive, saver):
    g = two_steps(lib, saver)
    drive.invoke(g, START_INPUT, thread())
    middle = drive.history(g, thread())[1]
    new = drive.update_state(g, middle.config, [], as_node="__copy__")
    return {"copy": snap(drive.get_state(g, new)), "history": history(drive, g)}


# --- as_node=END -------------------------------------------------------------------------


def _end_of(pick: int | None) -> Any:
    def run(lib: Any, drive: Any, saver: Any) -> Any:
        g = chain(lib, saver)
        drive.invoke(g, START_INPUT, thread())
        where = thread() if pick is None else drive.history(g, thread())[pick].config
        new = drive.update_state(g, where, None, as_node=lib.END)
        ended = snap(drive.get_state(g, new))
        out = drive.invoke(g, None, new)
        return {"new": new, "ended": ended, "out": out, "history": history(drive, g)}

    return run


scenario.add("end_on_a_paused_head_drops_the_paused_task", _end_of(0))
scenario.add("end_on_the_thread_config", _end_of(None))
scenario.add("end_keeps_what_finished_tasks_wrote", _end_of(1))
scenario.add("end_on_the_input_checkpoint_applies_the_input", _end_of(-1))


@scenario
def end_on_a_new_thread(lib, drive, saver):
    g = two_steps(lib, saver)
    new = drive.update_state(g, thread(), None, as_node=lib.END)
    ended = snap(drive.get_state(g, new))
    return {"new": new, "ended": ended, "then": catch(drive.invoke, g, None, thread())}


@scenario
def end_after_parallel_tasks_one_finished(lib, drive, saver):
    def ask(state: S) -> dict[str, Any]:
        return {"log": ["ask:" + lib.interrupt("q?")]}

    b = lib.StateGraph(S)
    b.add_node("fine", lambda s: {"log": ["fine"]})
    b.add_node("ask", ask)
    b.add_node("after", lambda s: {"log": ["after"]})
    b.add_edge(lib.START, "fine")
    b.add_edge(lib.START, "ask")
    b.add_edge("fine", "after")
    g = b.compile(checkpointer=saver)
    drive.invoke(g, START_INPUT, thread())
    new = drive.update_state(g, thread(), None, as_node=lib.END)
    ended = snap(drive.get_state(g, new))
    return {"ended": ended, "out": drive.invoke(g, None, thread())}


# --- bulk_update_state with special values -----------------------------------------------


@scenario
def bulk_chain_of_special_supersteps(lib, drive, saver):
    g = two_steps(lib, saver)
    drive.invoke(g, START_INPUT, thread())
    steps = [
        [state_update(lib, {"foo": "I", "log": []}, "__input__")],
        [state_update(lib, {"log": ["s"]}, lib.START)],
        [state_update(lib, None, "__copy__")],
        [state_update(lib, {"foo": "A"}, "a")],
        [state_update(lib, None, lib.END)],
    ]
    new = drive.bulk_update_state(g, thread(), steps)
    out = drive.invoke(g, None, thread())
    return {
        "new": new,
        "out": out,
        "history": [_brief(s) for s in drive.history(g, thread())],
    }


# --- errors that LangGraph raises too ----------------------------------------------------


@scenario
def invalid_combinations_raise_as_in_langgraph(lib, drive, saver):
    g = two_steps(lib, saver)
    drive.invoke(g, START_INPUT, thread())

    def bulk(*updates: tuple[Any, Any]) -> Any:
        steps = [[state_update(lib, v, n) for v, n in updates]]
        return catch(drive.bulk_update_state, g, thread(), steps)

    return {
        "input_and_node": bulk(({"foo": "i"}, "__input__"), ({"foo": "j"}, "a")),
        "copy_and_node": bulk((None, "__copy__"), ({"foo": "j"}, "a")),
        "end_and_node": bulk((None, lib.END), ({"foo": "j"}, "a")),
        "two_without_as_node": bulk(({"foo": "j"}, "a"), ({"foo": "k"}, None)),
        "input_none": catch(drive.update_state, g, thread(), None, "__input__"),
        "end_with_values": catch(drive.update_state, g, thread(), {"foo": "e"}, lib.END),
        "unknown": catch(drive.update_state, g, thread(), {"foo": "e"}, "zzz"),
        "copy_new_thread": catch(drive.update_state, g, thread("new"), None, "__copy__"),
        "history": history(drive, g),
    }


@pytest.mark.compat
@pytest.mark.parametrize("driver", ["sync", "async"])
@pytest.mark.parametrize("name", scenario.names())
def test_same_as_langgraph(name: str, driver: str, memory_or_sqlite: Any) -> None:
    scenario.check(name, driver, memory_or_sqlite)


# --- pausepoint's errors: clear, and nothing written -------------------------------------


def stored(saver: Any, tid: str = "t") -> Any:
    """What a refused update must leave unchanged: every checkpoint and its writes."""
    out = []
    for t in saver.list(thread(tid)):
        writes = sorted((w.task_id, w.channel, repr(w.value)) for w in t.pending_writes or [])
        out.append((t.config, repr(t.checkpoint["channel_values"]), t.metadata, writes))
    return out


def _pp_graph(saver: Any) -> Any:
    from compat._harness import load_lib

    return chain(load_lib("pausepoint"), saver)


BAD: dict[str, tuple[list[list[StateUpdate]], tuple[str, ...]]] = {
    "input with another update": (
        [[StateUpdate({"foo": "i"}, "__input__"), StateUpdate({"foo": "j"}, "a")]],
        ("'__input__'", "only update of its superstep"),
    ),
    "input after another update": (
        [[StateUpdate({"foo": "j"}, "a"), StateUpdate({"foo": "i"}, "__input__")]],
        ("'__input__'", "only update of its superstep"),
    ),
    "copy with another update": (
        [[StateUpdate({"foo": "j"}, "a"), StateUpdate(None, "__copy__")]],
        ("'__copy__'", "only update of its superstep"),
    ),
    "end with another update": (
        [[StateUpdate(None, "__end__"), StateUpdate({"foo": "j"}, "a")]],
        ("'__end__'", "only update of its superstep"),
    ),
    "input without values": ([[StateUpdate(None, "__input__")]], ("'__input__'", "None")),
    "input not a dict": ([[StateUpdate("text", "__input__")]], ("'__input__'", "dict")),  # type: ignore[arg-type]
    "copy with a dict": ([[StateUpdate({"foo": "c"}, "__copy__")]], ("'__copy__'", "dict")),
    "copy with a bad item": (
        [[StateUpdate([({"foo": "c"},)], "__copy__")]],  # type: ignore[arg-type]
        ("'__copy__'", "(values, as_node)"),
    ),
    "copy with an unknown node": (
        [[StateUpdate([({"foo": "c"}, "ghost")], "__copy__")]],  # type: ignore[arg-type]
        ("'ghost'", "does not exist"),
    ),
    "end with values": ([[StateUpdate({"foo": "e"}, "__end__")]], ("'__end__'", "values=None")),
    "unknown node": ([[StateUpdate({"foo": "e"}, "ghost")]], ("'ghost'", "does not exist")),
    "several updates without as_node": (
        [[StateUpdate({"foo": "j"}, "a"), StateUpdate({"foo": "k"}, None)]],
        ("as_node is required",),
    ),
    "a bad superstep after good ones": (
        [
            [StateUpdate({"foo": "ok"}, "a")],
            [StateUpdate(None, "__copy__")],
            [StateUpdate(None, "__input__")],
        ],
        ("superstep 3", "'__input__'"),
    ),
    "no supersteps": ([], ("No supersteps provided",)),
    "an empty superstep": (
        [[StateUpdate(None, "__copy__")], []],
        ("superstep 2", "No updates provided"),
    ),
}
REFUSED_AS_VALUE_ERROR = {"no supersteps", "an empty superstep"}
"""LangGraph raises ``ValueError`` for these; pausepoint keeps its type and text."""


@pytest.mark.parametrize("case", list(BAD))
def test_invalid_update_raises_and_writes_nothing(case: str, drive: Any, memory_or_sqlite: Any):
    saver = memory_or_sqlite
    g = _pp_graph(saver)
    drive.invoke(g, START_INPUT, thread())
    before = stored(saver)
    supersteps, words = BAD[case]
    kind = ValueError if case in REFUSED_AS_VALUE_ERROR else InvalidUpdateError
    with pytest.raises(kind) as caught:
        drive_bulk(drive, g, thread(), supersteps)
    for word in words:
        assert word in str(caught.value), (word, str(caught.value))
    assert stored(saver) == before


def drive_bulk(drive: Any, g: Any, cfg: Any, supersteps: Any) -> Any:
    import asyncio

    if drive.kind == "sync":
        return g.bulk_update_state(cfg, supersteps)
    return asyncio.run(g.abulk_update_state(cfg, supersteps))


def test_copy_of_a_missing_checkpoint_raises_and_writes_nothing(drive: Any, memory_or_sqlite: Any):
    saver = memory_or_sqlite
    g = _pp_graph(saver)
    with pytest.raises(InvalidUpdateError, match="no checkpoint to copy"):
        drive.update_state(g, thread("empty"), None, "__copy__")
    assert stored(saver, "empty") == []


def test_copy_values_that_langgraph_ignores_are_refused(drive: Any, memory_or_sqlite: Any):
    """LangGraph 1.1.6 drops a dict given to ``__copy__`` silently; pausepoint says so."""
    g = _pp_graph(memory_or_sqlite)
    drive.invoke(g, START_INPUT, thread())
    with pytest.raises(InvalidUpdateError, match="list of"):
        drive.update_state(g, thread(), {"foo": "lost?"}, "__copy__")
