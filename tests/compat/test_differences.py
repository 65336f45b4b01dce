"""Deliberate differences (DESIGN §4): each scenario pins LangGraph 1.1.6's behaviour and
asserts pausepoint's better one, in two separate tests (``...-langgraph`` and
``...-pausepoint``)."""

import dataclasses
import operator
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import Scenarios, exact, thread

scenario = Scenarios()


class Logged(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def one_question(lib: Any, runs: Counter[str] | None = None, checkpointer: bool = True) -> Any:
    runs = Counter() if runs is None else runs

    def ask(state: Logged) -> dict[str, Any]:
        runs["ask"] += 1
        return {"log": [lib.interrupt("ok?")]}

    b = lib.StateGraph(Logged)
    b.add_node("ask", ask)
    b.add_edge(lib.START, "ask")
    return b.compile(checkpointer=lib.InMemorySaver() if checkpointer else None)


def parallel(lib: Any, runs: Counter[str], names: str = "abc") -> Any:
    def reviewer(name: str) -> Any:
        def node(state: Logged) -> dict[str, Any]:
            runs[name] += 1
            return {"log": [f"{name}={lib.interrupt(name)}"]}

        return node

    b = lib.StateGraph(Logged)
    for n in names:
        b.add_node(n, reviewer(n))
        b.add_edge(lib.START, n)
    return b.compile(checkpointer=lib.InMemorySaver())


def fingerprint(drive: Any, g: Any, cfg: Any) -> Any:
    """What a bad resume must leave unchanged: head checkpoint, history, pending interrupts."""
    s = drive.get_state(g, cfg)
    return (s.config, s.next, s.interrupts, s.values, len(drive.history(g, cfg)))


# --- §4.1 a resume value is consumed once ------------------------------------------------


@scenario.differs(
    langgraph={"retry": {"log": ["A", "A"], "x": 0}, "runs": 3},
    pausepoint={
        "retry": {"__interrupt__": [("Interrupt", "second?", "<id1>")], "log": [], "x": 0},
        "runs": 3,
    },
)
def resume_value_consumed_once_after_node_failure(lib, drive):
    runs: Counter[str] = Counter()
    broken = {"on": True}

    def form(state: Logged) -> dict[str, Any]:
        runs["form"] += 1
        first = lib.interrupt("first?")
        if broken["on"]:
            raise ValueError("backend down")
        return {"log": [first, lib.interrupt("second?")]}

    b = lib.StateGraph(Logged)
    b.add_node("form", form)
    b.add_edge(lib.START, "form")
    g = b.compile(checkpointer=lib.InMemorySaver())
    drive.invoke(g, {"x": 0, "log": []}, thread())
    with pytest.raises(ValueError, match="backend down"):
        drive.invoke(g, lib.Command(resume="A"), thread())
    broken["on"] = False
    return {"retry": drive.invoke(g, None, thread()), "runs": runs["form"]}


def _check_new_answer_refused(rec: Any) -> None:
    assert rec["new_answer"][:2] == ("raised", "AlreadyAnsweredError"), rec
    # The refused answer changed nothing: the stored one is shown, nothing waits.
    assert rec["unchanged"] is True, rec
    assert rec["tasks"] == [("form", "failed", [], ["A"])], rec
    # The retry continues with the stored answer and asks the second question.
    assert rec["retry"] == {
        "__interrupt__": [("Interrupt", "second?", "<id1>")],
        "log": [],
        "x": 0,
    }, rec
    assert rec["runs"] == 3, rec


@scenario.differs(
    # LangGraph queues "B" behind the answer the node failed with: the retry feeds
    # "A" to the first question again and "B" to the second, which nobody saw.
    langgraph={
        "new_answer": {"log": ["A", "B"], "x": 0},
        "unchanged": False,
        "tasks": [("form", "failed", ["first?"], [])],
        "retry": {"log": ["A", "B"], "x": 0},
        "runs": 3,
    },
    pausepoint=_check_new_answer_refused,
)
def new_answer_after_node_failed_with_the_stored_one(lib, drive):
    runs: Counter[str] = Counter()
    broken = {"on": True}

    def form(state: Logged) -> dict[str, Any]:
        runs["form"] += 1
        first = lib.interrupt("first?")
        if broken["on"]:
            raise ValueError("backend down")
        return {"log": [first, lib.interrupt("second?")]}

    b = lib.StateGraph(Logged)
    b.add_node("form", form)
    b.add_edge(lib.START, "form")
    g = b.compile(checkpointer=lib.InMemorySaver())
    drive.invoke(g, {"x": 0, "log": []}, thread())
    with pytest.raises(ValueError, match="backend down"):
        drive.invoke(g, lib.Command(resume="A"), thread())
    broken["on"] = False
    before = fingerprint(drive, g, thread())
    state = drive.get_state(g, thread())
    new_answer = exact(drive.invoke, g, lib.Command(resume="B"), thread())
    unchanged = fingerprint(drive, g, thread()) == before
    tasks = [
        (
            t.name,
            "failed" if t.error else "ok",
            [i.value for i in t.interrupts],
            [a.value for a in getattr(t, "answered", ())],
        )
        for t in state.tasks
    ]
    retry = drive.invoke(g, None, thread())
    return {
        "new_answer": new_answer,
        "unchanged": unchanged,
        "tasks": tasks,
        "retry": retry,
        "runs": runs["form"],
    }


# --- §4.2 resuming a historical checkpoint forks -----------------------------------------


def _check_fork(rec: Any) -> None:
    assert rec["historical"] == {"log": ["B"], "x": 0}, rec
    assert rec["head_values"] == {"log": ["B"], "x": 0}, rec
    assert rec["old_branch_kept"] is True, rec


@scenario.differs(
    langgraph={
        "historical": {"log": ["A"], "x": 0},
        "head_values": {"log": ["A"], "x": 0},
        "old_branch_kept": True,
    },
    pausepoint=_check_fork,
)
def resume_sent_to_historical_checkpoint(lib, drive):
    g = one_question(lib)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    drive.invoke(g, lib.Command(resume="A"), thread())
    paused_at = next(h for h in drive.history(g, thread()) if h.next == ("ask",))
    historical = drive.invoke(g, lib.Command(resume="B"), paused_at.config)
    values = [h.values for h in drive.history(g, thread())]
    return {
        "historical": historical,
        "head_values": drive.get_state(g, thread()).values,
        "old_branch_kept": {"log": ["A"], "x": 0} in values,
    }


# --- §4.3 snapshots list only pending interrupts -----------------------------------------


def _snapshot_after_partial(lib: Any, drive: Any) -> Any:
    g = parallel(lib, Counter(), "ab")
    first = drive.invoke(g, {"x": 0, "log": []}, thread())
    ids = {i.value: i.id for i in first["__interrupt__"]}
    drive.invoke(g, lib.Command(resume={ids["a"]: "A"}), thread())
    s = drive.get_state(g, thread())
    return {
        "interrupts": [i.value for i in s.interrupts],
        "tasks": [(t.name, [i.value for i in t.interrupts], t.result) for t in s.tasks],
    }


@scenario.differs(
    langgraph={
        "interrupts": ["a", "b"],
        "tasks": [("a", ["a"], {"log": ["a=A"]}), ("b", ["b"], None)],
    },
    pausepoint={
        "interrupts": ["b"],
        "tasks": [("a", [], {"log": ["a=A"]}), ("b", ["b"], None)],
    },
)
def snapshot_after_partial_resume_lists_pending_only(lib, drive):
    return _snapshot_after_partial(lib, drive)


# A historical snapshot lists the interrupts raised at its checkpoint, as LangGraph's
# does (§4.3 narrowed by issue 16): that is parity, in test_subgraph_parity_forks.py.


# --- §4.4 bad resumes get clear errors and lose nothing ----------------------------------


def _bad_resume(lib: Any, drive: Any, make_cmd: Any, cfg: Any = None) -> Any:
    g = one_question(lib)
    first = drive.invoke(g, {"x": 0, "log": []}, thread())
    pending = first["__interrupt__"][0].id
    before = fingerprint(drive, g, thread())
    res = exact(drive.invoke, g, make_cmd(pending), cfg or thread())
    after = fingerprint(drive, g, thread())
    return _describe(lib, res, pending, before == after)


def _describe(lib: Any, res: Any, pending: str | None, unchanged: bool) -> Any:
    if isinstance(res, tuple) and res[:1] == ("raised",):
        err = getattr(lib.errors, res[1], None)
        base = getattr(lib.errors, "PausepointError", None)
        is_own = bool(err and base and issubclass(err, base))
        names_pending = pending is not None and pending in res[2]
        return {
            "raised": res[1],
            "own_error": is_own,
            "names_pending": names_pending,
            "unchanged": unchanged,
        }
    return {"returned": res, "unchanged": unchanged}


def _pp_error(name: str, names_pending: bool = True) -> dict[str, Any]:
    return {"raised": name, "own_error": True, "names_pending": names_pending, "unchanged": True}


@scenario.differs(
    langgraph={
        "returned": {"__interrupt__": [("Interrupt", "ok?", "<id1>")], "log": [], "x": 0},
        "unchanged": True,
    },
    pausepoint=_pp_error("UnknownInterruptIdError"),
)
def resume_map_with_unknown_interrupt_id(lib, drive):
    return _bad_resume(lib, drive, lambda pid: lib.Command(resume={"0" * 32: "x"}))


def _assert_own_resume_error(rec: Any) -> None:
    assert rec.get("own_error") is True, rec
    assert rec["unchanged"] is True, rec
    assert rec["names_pending"] is True, rec


@scenario.differs(
    langgraph={
        "returned": {"__interrupt__": [("Interrupt", "ok?", "<id1>")], "log": [], "x": 0},
        "unchanged": True,
    },
    pausepoint=_assert_own_resume_error,
)
def resume_with_empty_map(lib, drive):
    return _bad_resume(lib, drive, lambda pid: lib.Command(resume={}))


@scenario.differs(
    langgraph={
        "raised": "UnboundLocalError",
        "own_error": False,
        "names_pending": False,
        "unchanged": True,
    },
    pausepoint=_pp_error("InvalidCommandError", names_pending=False),
)
def empty_command_as_input(lib, drive):
    return _bad_resume(lib, drive, lambda pid: lib.Command())


@scenario.differs(
    langgraph={
        "raised": "InvalidUpdateError",
        "own_error": False,
        "names_pending": False,
        "unchanged": True,
    },
    pausepoint=_pp_error("InvalidCommandError", names_pending=False),
)
def command_parent_at_root(lib, drive):
    return _bad_resume(lib, drive, lambda pid: lib.Command(graph=lib.Command.PARENT, resume="x"))


@scenario.differs(
    langgraph={"returned": {"log": ["ok"], "x": 0}, "unchanged": True},
    pausepoint=_pp_error("NothingToResumeError", names_pending=False),
)
def resume_while_nothing_is_pending(lib, drive):
    g = one_question(lib)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    drive.invoke(g, lib.Command(resume="ok"), thread())
    before = fingerprint(drive, g, thread())
    res = exact(drive.invoke, g, lib.Command(resume="again"), thread())
    return _describe(lib, res, None, before == fingerprint(drive, g, thread()))


@scenario.differs(
    langgraph={
        "returned": {"__interrupt__": [("Interrupt", "ok?", "<id1>")], "log": []},
        "unchanged": False,
    },
    pausepoint=_pp_error("NothingToResumeError", names_pending=False),
)
def resume_on_fresh_thread(lib, drive):
    g = one_question(lib)
    before = drive.get_state(g, thread("fresh")).config
    res = exact(drive.invoke, g, lib.Command(resume="x"), thread("fresh"))
    return _describe(lib, res, None, before == drive.get_state(g, thread("fresh")).config)


@scenario.differs(
    langgraph={
        "raised": "RuntimeError",
        "own_error": False,
        "names_pending": False,
        "unchanged": True,
    },
    pausepoint=_pp_error("CheckpointerRequiredError", names_pending=False),
)
def resume_without_checkpointer(lib, drive):
    g = one_question(lib, checkpointer=False)
    res = exact(drive.invoke, g, lib.Command(resume="x"))
    rec = _describe(lib, res, None, True)
    if lib.name == "pausepoint" and "raised" in rec:
        # It still is the RuntimeError LangGraph raises, so existing handlers keep working.
        assert issubclass(getattr(lib.errors, rec["raised"]), RuntimeError)
    return rec


# --- §4.5 control-flow signals are not errors ---------------------------------------------


def _swallow_graph(lib: Any) -> Any:
    def careless(state: Logged) -> dict[str, Any]:
        try:
            answer = lib.interrupt("q")
        except Exception as exc:  # user code that catches too much
            return {"log": [f"swallowed {type(exc).__name__}"]}
        return {"log": [answer]}

    b = lib.StateGraph(Logged)
    b.add_node("careless", careless)
    b.add_edge(lib.START, "careless")
    return b.compile(checkpointer=lib.InMemorySaver())


@scenario.differs(
    langgraph={"out": {"log": ["swallowed GraphInterrupt"], "x": 0}, "base_exception": False},
    pausepoint={
        "out": {"__interrupt__": [("Interrupt", "q", "<id1>")], "log": [], "x": 0},
        "base_exception": True,
    },
)
def except_exception_cannot_swallow_interrupt(lib, drive):
    out = drive.invoke(_swallow_graph(lib), {"x": 0, "log": []}, thread())
    signal = lib.errors.GraphInterrupt
    return {"out": out, "base_exception": not issubclass(signal, Exception)}


# --- §4.6 a partial resume re-runs only what it answers -----------------------------------


@scenario.differs(
    langgraph={"runs": {"a": 2, "b": 3, "c": 4}, "total": 9, "log": ["a=A", "b=B", "c=C"]},
    pausepoint={"runs": {"a": 2, "b": 2, "c": 2}, "total": 6, "log": ["a=A", "b=B", "c=C"]},
)
def partial_resumes_one_by_one_rerun_only_answered(lib, drive):
    runs: Counter[str] = Counter()
    g = parallel(lib, runs, "abc")
    first = drive.invoke(g, {"x": 0, "log": []}, thread())
    ids = {i.value: i.id for i in first["__interrupt__"]}
    out = None
    for name in "abc":
        out = drive.invoke(g, lib.Command(resume={ids[name]: name.upper()}), thread())
    return {"runs": dict(runs), "total": sum(runs.values()), "log": sorted(out["log"])}


# --- §4.7 no pickle, no import-by-name ----------------------------------------------------


@dataclasses.dataclass
class Undeclared:
    """A dataclass that no state schema declares (it is stored under an ``Any`` key)."""

    n: int


class Loose(TypedDict):
    x: int
    anything: Any


def _check_refused(rec: Any) -> None:
    assert rec.get("raised") == "SerializationError", rec
    assert rec["own_error"] is True, rec


@scenario.differs(
    langgraph={
        "returned": {"anything": ("Undeclared", {"n": 1}), "x": 0},
        "values": {"anything": ("Undeclared", {"n": 1}), "x": 0},
    },
    pausepoint=_check_refused,
)
def undeclared_type_is_refused_at_write_time(lib, drive):
    b = lib.StateGraph(Loose)
    b.add_node("put", lambda s: {"anything": Undeclared(1)})
    b.add_edge(lib.START, "put")
    g = b.compile(checkpointer=lib.InMemorySaver())
    res = exact(drive.invoke, g, {"x": 0}, thread())
    rec = _describe(lib, res, None, True)
    if "returned" in rec:
        del rec["unchanged"]
        rec["values"] = drive.get_state(g, thread()).values
    return rec


test_differences = scenario.test()


# --- §4.3 a half-answered task is still pending ------------------------------------------


def _form(lib: Any) -> Any:
    def form(state: Logged) -> dict[str, Any]:
        name = lib.interrupt("name?")
        return {"log": [name, lib.interrupt(f"email for {name}?")]}

    b = lib.StateGraph(Logged)
    b.add_node("form", form)
    b.add_edge(lib.START, "form")
    return b.compile(checkpointer=lib.InMemorySaver())


@scenario.differs(
    # LangGraph counts the saved answer as the task's result: the paused task
    # vanishes from next and shows an empty result while it still waits.
    langgraph={"next": (), "result": {}, "pending": ["email for Ada?"]},
    pausepoint={"next": ("form",), "result": None, "pending": ["email for Ada?"]},
)
def half_answered_task_stays_in_next(lib, drive):
    g = _form(lib)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    drive.invoke(g, lib.Command(resume="Ada"), thread())
    s = drive.get_state(g, thread())
    return {
        "next": s.next,
        "result": s.tasks[0].result,
        "pending": [i.value for i in s.interrupts],
    }


@scenario.differs(
    # After an edit LangGraph's snapshot forgets the pause (the node will still
    # ask again); pausepoint keeps showing the question that waits for an answer.
    langgraph={"listed": [], "out": {"log": ["prep", "note", "y"], "x": 0}},
    pausepoint={"listed": ["ok?"], "out": {"log": ["prep", "note", "y"], "x": 0}},
)
def edited_paused_thread_still_lists_its_interrupt(lib, drive):
    def prep(state: Logged) -> dict[str, Any]:
        return {"log": ["prep"]}

    def ask(state: Logged) -> dict[str, Any]:
        return {"log": [lib.interrupt("ok?")]}

    b = lib.StateGraph(Logged)
    b.add_node("prep", prep)
    b.add_node("ask", ask)
    b.add_edge(lib.START, "prep")
    b.add_edge("prep", "ask")
    g = b.compile(checkpointer=lib.InMemorySaver())
    drive.invoke(g, {"x": 0, "log": []}, thread())
    drive.update_state(g, thread(), {"log": ["note"]})
    listed = [i.value for i in drive.get_state(g, thread()).interrupts]
    return {"listed": listed, "out": drive.invoke(g, lib.Command(resume="y"), thread())}
