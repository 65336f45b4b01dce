"""Interrupt scenarios: one task pausing and resuming, forms, approvals, resume values."""

import operator
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import Scenarios, catch, thread

scenario = Scenarios()


class Logged(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def _ask_graph(lib: Any, runs: Counter[str], question: Any = "ok?", **compile_kw: Any) -> Any:
    """START -> prep -> ask (interrupt(question), logs the answer) -> done."""

    def prep(state: Logged) -> dict[str, Any]:
        runs["prep"] += 1
        return {"log": ["prep"]}

    def ask(state: Logged) -> dict[str, Any]:
        runs["ask"] += 1
        answer = lib.interrupt(question)
        runs["ask answered"] += 1
        return {"log": [f"answer={answer!r}"]}

    def done(state: Logged) -> dict[str, Any]:
        runs["done"] += 1
        return {"x": state["x"] + 1}

    b = lib.StateGraph(Logged)
    b.add_node("prep", prep)
    b.add_node("ask", ask)
    b.add_node("done", done)
    b.add_edge(lib.START, "prep")
    b.add_edge("prep", "ask")
    b.add_edge("ask", "done")
    return b.compile(checkpointer=lib.InMemorySaver(), **compile_kw)


def pending(drive: Any, g: Any, cfg: Any) -> dict[str, Any]:
    s = drive.get_state(g, cfg)
    return {"next": s.next, "interrupts": s.interrupts, "tasks": s.tasks, "step": s.metadata}


@scenario
def single_interrupt_returns_interrupt_in_output(lib, drive):
    runs: Counter[str] = Counter()
    g = _ask_graph(lib, runs)
    out = drive.invoke(g, {"x": 0, "log": []}, thread())
    return {"out": out, "runs": dict(runs)}


@scenario
def single_interrupt_resume_completes(lib, drive):
    runs: Counter[str] = Counter()
    g = _ask_graph(lib, runs)
    first = drive.invoke(g, {"x": 0, "log": []}, thread())
    out = drive.invoke(g, lib.Command(resume="yes"), thread())
    return {"first": first, "out": out, "runs": dict(runs), "after": pending(drive, g, thread())}


@scenario
def get_state_while_paused_shows_task_and_interrupt(lib, drive):
    g = _ask_graph(lib, Counter())
    drive.invoke(g, {"x": 0, "log": []}, thread())
    return drive.get_state(g, thread())._asdict()


@scenario
def structured_interrupt_value(lib, drive):
    question = {"action": "delete", "args": {"table": "t"}, "choices": ["yes", "no"]}
    g = _ask_graph(lib, Counter(), question=question)
    out = drive.invoke(g, {"x": 0, "log": []}, thread())
    return {"out": out, "value_is_same_object_shape": out["__interrupt__"][0].value == question}


@scenario
def resume_values_of_any_type(lib, drive):
    outs = []
    for i, value in enumerate([0, "", False, [1, 2], {"note": "plain"}, ("t", 1)]):
        g = _ask_graph(lib, Counter())
        drive.invoke(g, {"x": 0, "log": []}, thread(f"t{i}"))
        outs.append(drive.invoke(g, lib.Command(resume=value), thread(f"t{i}")))
    return outs


@scenario
def resume_dict_with_non_id_keys_is_a_plain_value(lib, drive):
    g = _ask_graph(lib, Counter())
    drive.invoke(g, {"x": 0, "log": []}, thread())
    value = {"approve": True, "0123456789abcdef": "short key"}
    return drive.invoke(g, lib.Command(resume=value), thread())


@scenario
def interrupt_without_checkpointer_is_still_reported(lib, drive):
    runs: Counter[str] = Counter()
    b = lib.StateGraph(Logged)
    b.add_node("ask", lambda s: runs.update(["ask"]) or {"log": [lib.interrupt("no saver")]})
    b.add_edge(lib.START, "ask")
    g = b.compile()
    return {"out": drive.invoke(g, {"x": 0, "log": []}), "runs": dict(runs)}


@scenario
def invoke_none_while_interrupt_pending_pauses_again(lib, drive):
    runs: Counter[str] = Counter()
    g = _ask_graph(lib, runs)
    first = drive.invoke(g, {"x": 0, "log": []}, thread())
    again = drive.invoke(g, None, thread())
    same_id = first["__interrupt__"][0].id == again["__interrupt__"][0].id
    return {"again": again, "same_id": same_id, "runs": dict(runs)}


@scenario
def interrupt_ids_differ_between_threads_and_match_state(lib, drive):
    g = _ask_graph(lib, Counter())
    a = drive.invoke(g, {"x": 0, "log": []}, thread("a"))["__interrupt__"][0].id
    b = drive.invoke(g, {"x": 0, "log": []}, thread("b"))["__interrupt__"][0].id
    in_state = drive.get_state(g, thread("a")).interrupts[0].id
    return {"a_ne_b": a != b, "state_matches": in_state == a, "is_32_hex": len(a) == 32}


@scenario
def multi_interrupt_form_resumed_step_by_step(lib, drive):
    runs: Counter[str] = Counter()

    def form(state: Logged) -> dict[str, Any]:
        runs["form"] += 1
        name = lib.interrupt("name?")
        email = lib.interrupt(f"email for {name}?")
        ok = lib.interrupt(f"confirm {name} <{email}>?")
        return {"log": [name, email, ok]}

    b = lib.StateGraph(Logged)
    b.add_node("form", form)
    b.add_edge(lib.START, "form")
    g = b.compile(checkpointer=lib.InMemorySaver())
    steps = [drive.invoke(g, {"x": 0, "log": []}, thread())]
    # next/result of a half-answered task differ on purpose: see test_differences
    snaps = [drive.get_state(g, thread()).interrupts]
    for answer in ("Ada", "ada@example.org", "yes"):
        steps.append(drive.invoke(g, lib.Command(resume=answer), thread()))
        snaps.append(drive.get_state(g, thread()).interrupts)
    ids = {s["__interrupt__"][0].id for s in steps[:3]}
    return {"steps": steps, "snaps": snaps, "one_id": len(ids) == 1, "runs": dict(runs)}


def _approval_graph(lib: Any, runs: Counter[str]) -> Any:
    def review(state: Logged) -> Any:
        runs["review"] += 1
        verdict = lib.interrupt({"question": "send the email?", "draft": state["log"][-1]})
        if verdict == "approve":
            return lib.Command(goto="send", update={"log": ["approved"]})
        return lib.Command(goto=lib.END, update={"log": [f"rejected: {verdict}"]})

    b = lib.StateGraph(Logged)
    b.add_node("draft", lambda s: {"log": ["draft v1"]})
    b.add_node("review", review, destinations=("send", lib.END))
    b.add_node("send", lambda s: {"x": 1, "log": ["sent"]})
    b.add_edge(lib.START, "draft")
    b.add_edge("draft", "review")
    return b.compile(checkpointer=lib.InMemorySaver())


@scenario
def approval_approved_routes_with_command(lib, drive):
    runs: Counter[str] = Counter()
    g = _approval_graph(lib, runs)
    paused = drive.invoke(g, {"x": 0, "log": []}, thread())
    out = drive.invoke(g, lib.Command(resume="approve"), thread())
    return {"paused": paused, "out": out, "runs": dict(runs)}


@scenario
def approval_rejected_ends_run(lib, drive):
    runs: Counter[str] = Counter()
    g = _approval_graph(lib, runs)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    out = drive.invoke(g, lib.Command(resume="too rude"), thread())
    return {"out": out, "runs": dict(runs), "next": drive.get_state(g, thread()).next}


@scenario
def conditional_interrupt_only_when_information_missing(lib, drive):
    class S(TypedDict, total=False):
        pref: str
        plan: str

    def gather(state: S) -> dict[str, Any]:
        pref = state.get("pref") or lib.interrupt("A, B or C?")
        return {"pref": pref, "plan": f"plan {pref}"}

    b = lib.StateGraph(S)
    b.add_node("gather", gather)
    b.add_edge(lib.START, "gather")
    g = b.compile(checkpointer=lib.InMemorySaver())
    given = drive.invoke(g, {"pref": "B"}, thread("given"))
    missing = drive.invoke(g, {}, thread("missing"))
    answered = drive.invoke(g, lib.Command(resume="C"), thread("missing"))
    return {"given": given, "missing": missing, "answered": answered}


@scenario
def side_effects_before_interrupt_run_again_on_resume(lib, drive):
    effects: list[str] = []

    def node(state: Logged) -> dict[str, Any]:
        effects.append("before")
        answer = lib.interrupt("go?")
        effects.append(f"after {answer}")
        return {"log": [answer]}

    b = lib.StateGraph(Logged)
    b.add_node("node", node)
    b.add_edge(lib.START, "node")
    g = b.compile(checkpointer=lib.InMemorySaver())
    drive.invoke(g, {"x": 0, "log": []}, thread())
    out = drive.invoke(g, lib.Command(resume="go"), thread())
    return {"out": out, "effects": effects}


@scenario
def two_nodes_interrupt_in_sequence(lib, drive):
    b = lib.StateGraph(Logged)
    b.add_node("first", lambda s: {"log": [lib.interrupt("first?")]})
    b.add_node("second", lambda s: {"log": [lib.interrupt("second?")]})
    b.add_edge(lib.START, "first")
    b.add_edge("first", "second")
    g = b.compile(checkpointer=lib.InMemorySaver())
    one = drive.invoke(g, {"x": 0, "log": []}, thread())
    two = drive.invoke(g, lib.Command(resume="1st"), thread())
    three = drive.invoke(g, lib.Command(resume="2nd"), thread())
    ids_differ = one["__interrupt__"][0].id != two["__interrupt__"][0].id
    return {"one": one, "two": two, "three": three, "ids_differ": ids_differ}


@scenario
def interrupt_inside_cycle_each_iteration_new_id(lib, drive):
    def loop(state: Logged) -> dict[str, Any]:
        word = lib.interrupt(f"word {state['x']}?")
        return {"x": state["x"] + 1, "log": [word]}

    b = lib.StateGraph(Logged)
    b.add_node("loop", loop)
    b.add_edge(lib.START, "loop")
    b.add_conditional_edges("loop", lambda s: lib.END if s["log"][-1] == "stop" else "loop")
    g = b.compile(checkpointer=lib.InMemorySaver())
    outs = [drive.invoke(g, {"x": 0, "log": []}, thread())]
    for word in ("a", "b", "stop"):
        outs.append(drive.invoke(g, lib.Command(resume=word), thread()))
    ids = [o["__interrupt__"][0].id for o in outs[:3]]
    return {"outs": outs, "distinct_ids": len(set(ids))}


@scenario
def resume_with_update_and_goto(lib, drive):
    runs: Counter[str] = Counter()
    g = _ask_graph(lib, runs)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    cmd = lib.Command(resume="r", update={"x": 40, "log": ["injected"]})
    out = drive.invoke(g, cmd, thread())
    return {"out": out, "runs": dict(runs)}


@scenario
def recursion_limit_budget_is_per_invocation(lib, drive):
    def node(state: Logged) -> dict[str, Any]:
        if state["x"] in (2, 4):
            lib.interrupt(f"at {state['x']}")
        return {"x": state["x"] + 1}

    b = lib.StateGraph(Logged)
    b.add_node("node", node)
    b.add_edge(lib.START, "node")
    b.add_conditional_edges("node", lambda s: "node" if s["x"] < 6 else lib.END)
    g = b.compile(checkpointer=lib.InMemorySaver())
    cfg = {**thread(), "recursion_limit": 3}
    outs = [drive.invoke(g, {"x": 0, "log": []}, cfg)]
    outs.append(catch(drive.invoke, g, lib.Command(resume="go"), cfg))
    outs.append(catch(drive.invoke, g, lib.Command(resume="go"), cfg))
    return outs


@scenario
def interrupt_outside_a_node_raises(lib, drive):
    return {"err": catch(lib.interrupt, "nobody is listening")}


@scenario
def async_node_interrupt_and_resume(lib, drive):
    async def ask(state: Logged) -> dict[str, Any]:
        return {"log": [lib.interrupt("async?")]}

    def sync_ask(state: Logged) -> dict[str, Any]:
        return {"log": [lib.interrupt("sync?")]}

    b = lib.StateGraph(Logged)
    b.add_node("ask", ask if drive.is_async else sync_ask)
    b.add_edge(lib.START, "ask")
    g = b.compile(checkpointer=lib.InMemorySaver())
    first = drive.invoke(g, {"x": 0, "log": []}, thread())
    return {"first": first, "out": drive.invoke(g, lib.Command(resume="ans"), thread())}


test_interrupts_basic = scenario.test()
