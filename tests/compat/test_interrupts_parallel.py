"""Interrupt scenarios: several tasks paused in one superstep, resume by id, Send fan-out."""

import operator
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import Scenarios, catch, thread, unordered

scenario = Scenarios()


class Logged(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def parallel_reviews(lib: Any, runs: Counter[str], names: str = "ab", plain: str = "") -> Any:
    """START -> review_<n> for each n (each interrupts), plus ``plain`` nodes that don't;
    all join into ``merge``."""

    def reviewer(name: str) -> Any:
        def node(state: Logged) -> dict[str, Any]:
            runs[name] += 1
            answer = lib.interrupt(f"review {name}?")
            runs[f"{name} answered"] += 1
            return {"log": [f"{name}={answer}"]}

        return node

    def worker(name: str) -> Any:
        def node(state: Logged) -> dict[str, Any]:
            runs[name] += 1
            return {"log": [f"{name} worked"]}

        return node

    b = lib.StateGraph(Logged)
    nodes = [f"review_{n}" for n in names]
    for n in names:
        b.add_node(f"review_{n}", reviewer(n))
    for n in plain:
        b.add_node(f"work_{n}", worker(n))
        nodes.append(f"work_{n}")
    b.add_node("merge", lambda s: {"x": len(s["log"])})
    for n in nodes:
        b.add_edge(lib.START, n)
    b.add_edge(nodes, "merge")
    return b.compile(checkpointer=lib.InMemorySaver())


def ids_by_value(out: dict[str, Any]) -> dict[Any, str]:
    return {i.value: i.id for i in out["__interrupt__"]}


def shown(out: dict[str, Any]) -> dict[str, Any]:
    """An invoke output whose interrupt list order is not observable."""
    res = {k: (sorted(v) if k == "log" else v) for k, v in out.items()}
    if "__interrupt__" in out:
        res["__interrupt__"] = unordered(out["__interrupt__"])
    return res


@scenario
def parallel_interrupts_reported_together(lib, drive):
    runs: Counter[str] = Counter()
    g = parallel_reviews(lib, runs, "abc")
    out = drive.invoke(g, {"x": 0, "log": []}, thread())
    state = drive.get_state(g, thread())
    return {
        "out": shown(out),
        "runs": dict(runs),
        "next": state.next,
        "state_interrupts": state.interrupts,
        "tasks": state.tasks,
        "same_ids": {i.id for i in out["__interrupt__"]} == {i.id for i in state.interrupts},
    }


@scenario
def resume_all_parallel_interrupts_by_id_map(lib, drive):
    runs: Counter[str] = Counter()
    g = parallel_reviews(lib, runs, "abc")
    ids = ids_by_value(drive.invoke(g, {"x": 0, "log": []}, thread()))
    answers = {ids[f"review {n}?"]: n.upper() for n in "abc"}
    out = drive.invoke(g, lib.Command(resume=answers), thread())
    return {"out": shown(out), "runs": dict(runs), "next": drive.get_state(g, thread()).next}


@scenario
def partial_resume_by_id_then_the_rest(lib, drive):
    g = parallel_reviews(lib, Counter(), "ab")
    ids = ids_by_value(drive.invoke(g, {"x": 0, "log": []}, thread()))
    part = drive.invoke(g, lib.Command(resume={ids["review a?"]: "A"}), thread())
    state = drive.get_state(g, thread())
    mid = {"next": state.next, "results": sorted((t.name, repr(t.result)) for t in state.tasks)}
    rest = drive.invoke(g, lib.Command(resume={ids["review b?"]: "B"}), thread())
    return {"part": shown(part), "mid": mid, "rest": shown(rest)}


@scenario
def plain_resume_with_several_pending_is_runtime_error(lib, drive):
    g = parallel_reviews(lib, Counter(), "ab")
    drive.invoke(g, {"x": 0, "log": []}, thread())
    err = catch(drive.invoke, g, lib.Command(resume="same for all"), thread(), message=True)
    return {"err": err, "next": drive.get_state(g, thread()).next}


@scenario
def finished_sibling_is_not_rerun_on_resume(lib, drive):
    runs: Counter[str] = Counter()
    g = parallel_reviews(lib, runs, "a", plain="xy")
    first = drive.invoke(g, {"x": 0, "log": []}, thread())
    state = drive.get_state(g, thread())
    results = sorted((t.name, repr(t.result)) for t in state.tasks)
    out = drive.invoke(g, lib.Command(resume="fine"), thread())
    return {"first": shown(first), "results": results, "out": shown(out), "runs": dict(runs)}


@scenario
def single_pending_among_parallel_accepts_plain_value(lib, drive):
    runs: Counter[str] = Counter()
    g = parallel_reviews(lib, runs, "a", plain="x")
    drive.invoke(g, {"x": 0, "log": []}, thread())
    return {"out": drive.invoke(g, lib.Command(resume="plain"), thread()), "runs": dict(runs)}


def send_reviews(lib: Any, runs: Counter[str]) -> Any:
    def review(item: dict[str, Any]) -> dict[str, Any]:
        runs[item["doc"]] += 1
        verdict = lib.interrupt(f"approve {item['doc']}?")
        return {"log": [f"{item['doc']}:{verdict}"]}

    def dispatch(state: Logged) -> list[Any]:
        return [lib.Send("review", {"doc": d}) for d in ("d1", "d2", "d3")]

    b = lib.StateGraph(Logged)
    b.add_node("plan", lambda s: {"x": 3})
    b.add_node("review", review)
    b.add_node("report", lambda s: {"x": len(s["log"])})
    b.add_edge(lib.START, "plan")
    b.add_conditional_edges("plan", dispatch, ["review"])
    b.add_edge("review", "report")
    return b.compile(checkpointer=lib.InMemorySaver())


@scenario
def send_fan_out_interrupts_each_packet(lib, drive):
    runs: Counter[str] = Counter()
    g = send_reviews(lib, runs)
    out = drive.invoke(g, {"x": 0, "log": []}, thread())
    state = drive.get_state(g, thread())
    tasks = [(t.name, t.path[0], t.interrupts) for t in state.tasks]
    return {"out": shown(out), "next": state.next, "tasks": tasks, "runs": dict(runs)}


@scenario
def send_fan_out_resumed_by_id_map(lib, drive):
    runs: Counter[str] = Counter()
    g = send_reviews(lib, runs)
    ids = ids_by_value(drive.invoke(g, {"x": 0, "log": []}, thread()))
    resume = {i: v.split()[1].upper() for v, i in ids.items()}
    out = drive.invoke(g, lib.Command(resume=resume), thread())
    return {"out": shown(out), "runs": dict(runs)}


@scenario
def send_fan_out_partial_resume(lib, drive):
    g = send_reviews(lib, Counter())
    ids = ids_by_value(drive.invoke(g, {"x": 0, "log": []}, thread()))
    first = drive.invoke(g, lib.Command(resume={ids["approve d2?"]: "ok"}), thread())
    rest = {ids["approve d1?"]: "no", ids["approve d3?"]: "ok"}
    return {
        "first": shown(first),
        "final": shown(drive.invoke(g, lib.Command(resume=rest), thread())),
    }


@scenario
def parallel_interrupts_stream_updates(lib, drive):
    g = parallel_reviews(lib, Counter(), "ab", plain="x")
    chunks = drive.stream(g, {"x": 0, "log": []}, thread())
    ids = {
        c["__interrupt__"][0].value: c["__interrupt__"][0].id
        for c in chunks
        if "__interrupt__" in c
    }
    answers = {ids["review a?"]: 1, ids["review b?"]: 2}
    resumed = drive.stream(g, lib.Command(resume=answers), thread())
    return {"first": unordered(chunks), "resumed": [unordered(resumed[:-1]), resumed[-1]]}


@scenario
def parallel_form_and_single_interrupt_advance_independently(lib, drive):
    def form(state: Logged) -> dict[str, Any]:
        first = lib.interrupt("form 1?")
        second = lib.interrupt("form 2?")
        return {"log": [f"form {first} {second}"]}

    b = lib.StateGraph(Logged)
    b.add_node("form", form)
    b.add_node("single", lambda s: {"log": [f"single {lib.interrupt('single?')}"]})
    b.add_edge(lib.START, "form")
    b.add_edge(lib.START, "single")
    g = b.compile(checkpointer=lib.InMemorySaver())
    ids = ids_by_value(drive.invoke(g, {"x": 0, "log": []}, thread()))
    step = drive.invoke(g, lib.Command(resume={ids["form 1?"]: "x", ids["single?"]: "s"}), thread())
    last = drive.invoke(g, lib.Command(resume={ids["form 1?"]: "y"}), thread())
    return {"step": shown(step), "last": shown(last)}


test_interrupts_parallel = scenario.test()
