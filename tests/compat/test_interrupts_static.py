"""Interrupt scenarios: static breakpoints (interrupt_before / interrupt_after)."""

import operator
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import Scenarios, thread

scenario = Scenarios()


class Logged(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def _abc(lib: Any, runs: Counter[str], **compile_kw: Any) -> Any:
    """START -> a -> b -> c (each appends its name and bumps x)."""

    def make(tag: str) -> Any:
        def node(state: Logged) -> dict[str, Any]:
            runs[tag] += 1
            return {"log": [tag], "x": state["x"] + 1}

        return node

    b = lib.StateGraph(Logged)
    for tag in "abc":
        b.add_node(tag, make(tag))
    b.add_edge(lib.START, "a")
    b.add_edge("a", "b")
    b.add_edge("b", "c")
    return b.compile(checkpointer=lib.InMemorySaver(), **compile_kw)


def paused(drive: Any, g: Any) -> dict[str, Any]:
    s = drive.get_state(g, thread())
    return {"next": s.next, "tasks": s.tasks, "interrupts": s.interrupts, "meta": s.metadata}


def run_to_end(lib: Any, drive: Any, g: Any, inp: Any = None, **kw: Any) -> list[Any]:
    """Invoke, then keep invoking with None while paused; every output and pause."""
    outs = [drive.invoke(g, inp if inp is not None else {"x": 0, "log": []}, thread(), **kw)]
    for _ in range(6):
        if not drive.get_state(g, thread()).next:
            break
        outs.append(paused(drive, g))
        outs.append(drive.invoke(g, None, thread(), **kw))
    return outs


@scenario
def interrupt_before_at_compile(lib, drive):
    runs: Counter[str] = Counter()
    g = _abc(lib, runs, interrupt_before=["b"])
    return {"outs": run_to_end(lib, drive, g), "runs": dict(runs)}


@scenario
def interrupt_after_at_compile(lib, drive):
    runs: Counter[str] = Counter()
    g = _abc(lib, runs, interrupt_after=["a", "b"])
    return {"outs": run_to_end(lib, drive, g), "runs": dict(runs)}


@scenario
def interrupt_before_per_call(lib, drive):
    runs: Counter[str] = Counter()
    g = _abc(lib, runs)
    return {"outs": run_to_end(lib, drive, g, interrupt_before=["c"]), "runs": dict(runs)}


@scenario
def interrupt_after_per_call(lib, drive):
    runs: Counter[str] = Counter()
    g = _abc(lib, runs)
    return {"outs": run_to_end(lib, drive, g, interrupt_after=["a"]), "runs": dict(runs)}


@scenario
def interrupt_before_star_pauses_before_every_node(lib, drive):
    g = _abc(lib, Counter(), interrupt_before="*")
    outs = run_to_end(lib, drive, g)
    return [o.get("next", o) for o in outs]


@scenario
def interrupt_after_star_pauses_after_every_node(lib, drive):
    g = _abc(lib, Counter(), interrupt_after="*")
    outs = run_to_end(lib, drive, g)
    return [o.get("next", o) for o in outs]


@scenario
def breakpoint_resume_does_not_pause_again_at_same_point(lib, drive):
    runs: Counter[str] = Counter()
    g = _abc(lib, runs, interrupt_before=["b"])
    drive.invoke(g, {"x": 0, "log": []}, thread())
    first = drive.invoke(g, None, thread())
    return {"first": first, "next": drive.get_state(g, thread()).next, "runs": dict(runs)}


@scenario
def breakpoint_in_cycle_pauses_every_iteration(lib, drive):
    def tick(state: Logged) -> dict[str, Any]:
        return {"x": state["x"] + 1}

    b = lib.StateGraph(Logged)
    b.add_node("tick", tick)
    b.add_edge(lib.START, "tick")
    b.add_conditional_edges("tick", lambda s: "tick" if s["x"] < 3 else lib.END)
    g = b.compile(checkpointer=lib.InMemorySaver(), interrupt_before=["tick"])
    return [o.get("next", o) for o in run_to_end(lib, drive, g)]


@scenario
def static_breakpoint_stream_yields_empty_interrupt(lib, drive):
    g = _abc(lib, Counter(), interrupt_before=["b"], interrupt_after=["b"])
    modes = ["updates", "values"]
    first = drive.stream(g, {"x": 0, "log": []}, thread(), stream_mode=modes)
    second = drive.stream(g, None, thread(), stream_mode=modes)
    third = drive.stream(g, None, thread(), stream_mode=modes)
    return [first, second, third]


@scenario
def static_breakpoint_v2_stream_parts(lib, drive):
    g = _abc(lib, Counter(), interrupt_before=["b"])
    first = drive.stream(
        g, {"x": 0, "log": []}, thread(), stream_mode=["updates", "values"], version="v2"
    )
    return {"first": first, "v2_invoke": drive.invoke(g, None, thread(), version="v2")}


@scenario
def edit_state_at_breakpoint_then_continue(lib, drive):
    runs: Counter[str] = Counter()
    g = _abc(lib, runs, interrupt_before=["b"])
    drive.invoke(g, {"x": 0, "log": []}, thread())
    drive.update_state(g, thread(), {"x": 10, "log": ["human"]})
    edited = paused(drive, g)
    return {"edited": edited, "out": drive.invoke(g, None, thread()), "runs": dict(runs)}


@scenario
def breakpoint_before_node_that_calls_interrupt(lib, drive):
    def ask(state: Logged) -> dict[str, Any]:
        return {"log": [lib.interrupt("really?")]}

    b = lib.StateGraph(Logged)
    b.add_node("ask", ask)
    b.add_edge(lib.START, "ask")
    g = b.compile(checkpointer=lib.InMemorySaver(), interrupt_before=["ask"])
    one = drive.invoke(g, {"x": 0, "log": []}, thread())
    two = drive.invoke(g, None, thread())
    mid = paused(drive, g)
    three = drive.invoke(g, lib.Command(resume="really"), thread())
    return {"one": one, "two": two, "mid": mid, "three": three}


@scenario
def breakpoint_before_parallel_nodes(lib, drive):
    runs: Counter[str] = Counter()
    b = lib.StateGraph(Logged)
    for tag in ("l", "r"):
        b.add_node(tag, lambda s, tag=tag: runs.update([tag]) or {"log": [tag]})
    b.add_edge(lib.START, "l")
    b.add_edge(lib.START, "r")
    g = b.compile(checkpointer=lib.InMemorySaver(), interrupt_before=["r"])
    first = drive.invoke(g, {"x": 0, "log": []}, thread())
    state = paused(drive, g)
    out = drive.invoke(g, None, thread())
    return {"first": first, "state": state, "out": sorted(out["log"]), "runs": dict(runs)}


@scenario
def interrupt_after_last_node(lib, drive):
    runs: Counter[str] = Counter()
    g = _abc(lib, runs, interrupt_after=["c"])
    out = drive.invoke(g, {"x": 0, "log": []}, thread())
    state = paused(drive, g)
    again = drive.invoke(g, None, thread())
    return {"out": out, "state": state, "again": again, "runs": dict(runs)}


@scenario
def per_call_breakpoints_replace_compiled_ones(lib, drive):
    g = _abc(lib, Counter(), interrupt_before=["b"])
    out = drive.invoke(g, {"x": 0, "log": []}, thread(), interrupt_before=["c"])
    return {"out": out, "next": drive.get_state(g, thread()).next}


@scenario
def breakpoint_stream_of_interrupt_after_with_subgraphs_flag(lib, drive):
    g = _abc(lib, Counter(), interrupt_after=["a"])
    first = drive.stream(g, {"x": 0, "log": []}, thread(), subgraphs=True)
    return {"first": first, "rest": drive.stream(g, None, thread(), subgraphs=True)}


test_interrupts_static = scenario.test()
