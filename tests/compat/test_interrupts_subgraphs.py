"""Interrupt scenarios: interrupts inside subgraphs (one and two levels), Command.PARENT."""

import operator
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import Scenarios, thread, unordered

scenario = Scenarios()


class Logged(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def _counted(runs: Counter[str], tag: str, fn: Any) -> Any:
    def node(state: Any) -> Any:
        runs[tag] += 1
        return fn(state)

    return node


def child_graph(lib: Any, runs: Counter[str], prefix: str = "c", **compile_kw: Any) -> Any:
    """before -> ask (interrupt) -> after, sharing the Logged keys with the parent."""
    b = lib.StateGraph(Logged)
    b.add_node(
        "before", _counted(runs, f"{prefix}.before", lambda s: {"log": [f"{prefix}.before"]})
    )
    b.add_node(
        "ask",
        _counted(runs, f"{prefix}.ask", lambda s: {"log": [f"{prefix}:{lib.interrupt(prefix)}"]}),
    )
    b.add_node("after", _counted(runs, f"{prefix}.after", lambda s: {"x": s["x"] + 1}))
    b.add_edge(lib.START, "before")
    b.add_edge("before", "ask")
    b.add_edge("ask", "after")
    return b.compile(**compile_kw)


def parent_graph(lib: Any, runs: Counter[str], child: Any, **compile_kw: Any) -> Any:
    b = lib.StateGraph(Logged)
    b.add_node("pre", _counted(runs, "pre", lambda s: {"log": ["pre"]}))
    b.add_node("child", child)
    b.add_node("post", _counted(runs, "post", lambda s: {"log": ["post"]}))
    b.add_edge(lib.START, "pre")
    b.add_edge("pre", "child")
    b.add_edge("child", "post")
    return b.compile(checkpointer=lib.InMemorySaver(), **compile_kw)


@scenario
def subgraph_interrupt_bubbles_to_root(lib, drive):
    runs: Counter[str] = Counter()
    g = parent_graph(lib, runs, child_graph(lib, runs))
    out = drive.invoke(g, {"x": 0, "log": []}, thread())
    return {"out": out, "runs": dict(runs)}


@scenario
def subgraph_interrupt_resume_reaches_inner_task(lib, drive):
    runs: Counter[str] = Counter()
    g = parent_graph(lib, runs, child_graph(lib, runs))
    drive.invoke(g, {"x": 0, "log": []}, thread())
    out = drive.invoke(g, lib.Command(resume="yes"), thread())
    return {"out": out, "runs": dict(runs), "next": drive.get_state(g, thread()).next}


@scenario
def subgraph_interrupt_get_state_flat_and_deep(lib, drive):
    runs: Counter[str] = Counter()
    g = parent_graph(lib, runs, child_graph(lib, runs))
    drive.invoke(g, {"x": 0, "log": []}, thread())
    flat = drive.get_state(g, thread())._asdict()
    deep = drive.get_state(g, thread(), subgraphs=True)._asdict()
    return {"flat": flat, "deep": deep}


def two_levels(lib: Any, runs: Counter[str]) -> Any:
    inner = child_graph(lib, runs, "inner")
    mid = lib.StateGraph(Logged)
    mid.add_node("m_pre", _counted(runs, "m_pre", lambda s: {"log": ["m_pre"]}))
    mid.add_node("inner", inner)
    mid.add_edge(lib.START, "m_pre")
    mid.add_edge("m_pre", "inner")
    return parent_graph(lib, runs, mid.compile())


@scenario
def interrupt_two_levels_deep_and_resume(lib, drive):
    runs: Counter[str] = Counter()
    g = two_levels(lib, runs)
    first = drive.invoke(g, {"x": 0, "log": []}, thread())
    deep = drive.get_state(g, thread(), subgraphs=True)
    inner_task = deep.tasks[0].state.tasks[0]
    out = drive.invoke(g, lib.Command(resume="deep answer"), thread())
    return {
        "first": first,
        "top_interrupts": deep.interrupts,
        "mid": (deep.tasks[0].state.next, deep.tasks[0].state.interrupts),
        "inner": (inner_task.name, inner_task.state.next, inner_task.state.interrupts),
        "out": out,
        "runs": dict(runs),
    }


def _two_questions(lib: Any, depth: int) -> Any:
    """A node asking two questions in a row, ``depth`` subgraphs below the root."""

    def ask(state: Any) -> Any:
        return {"log": [f"{lib.interrupt('first?')}+{lib.interrupt('second?')}"]}

    node: Any = ask
    for level in range(depth + 1):
        b = lib.StateGraph(Logged)
        b.add_node(f"level{level}", node)
        b.add_edge(lib.START, f"level{level}")
        node = b.compile(checkpointer=lib.InMemorySaver()) if level == depth else b.compile()
    return node


@scenario
def subgraph_questions_ids_one_to_three_levels_deep(lib, drive):
    """Issue 41, item 3: ``Interrupt.id`` of a subgraph's questions, at every depth,
    in the output, the root's snapshot and the asking level's, as LangGraph gives it."""
    found = {}
    for depth in (1, 2, 3):
        g = _two_questions(lib, depth)
        config = thread(f"d{depth}")
        first = drive.invoke(g, {"x": 0, "log": []}, config)
        shown = drive.get_state(g, config, subgraphs=True)
        asking = shown
        while asking.tasks and asking.tasks[0].state is not None:
            asking = asking.tasks[0].state
        second = drive.invoke(g, lib.Command(resume="a"), config)
        again = drive.get_state(g, config)
        out = drive.invoke(g, lib.Command(resume={again.interrupts[0].id: "b"}), config)
        found[depth] = {
            "first": first,
            "root": (shown.interrupts, [t.interrupts for t in shown.tasks]),
            "asking": asking.interrupts,
            "same_id": first["__interrupt__"][0].id == asking.interrupts[0].id,
            "second": second,
            "again": again.interrupts,
            "out": out,
        }
    return found


@scenario
def subgraph_interrupt_streamed_with_namespaces(lib, drive):
    runs: Counter[str] = Counter()
    g = parent_graph(lib, runs, child_graph(lib, runs))
    first = drive.stream(g, {"x": 0, "log": []}, thread(), subgraphs=True)
    resumed = drive.stream(g, lib.Command(resume="ok"), thread(), subgraphs=True)
    return {"first": first, "resumed": resumed}


@scenario
def subgraph_interrupt_values_stream(lib, drive):
    g = parent_graph(lib, Counter(), child_graph(lib, Counter()))
    first = drive.stream(g, {"x": 0, "log": []}, thread(), stream_mode="values")
    resumed = drive.stream(g, lib.Command(resume="ok"), thread(), stream_mode="values")
    return {"first": first, "resumed": resumed}


@scenario
def subgraph_with_its_own_breakpoint(lib, drive):
    runs: Counter[str] = Counter()
    child = child_graph(lib, runs, interrupt_before=["ask"])
    g = parent_graph(lib, runs, child)
    one = drive.invoke(g, {"x": 0, "log": []}, thread())
    deep = drive.get_state(g, thread(), subgraphs=True)
    two = drive.invoke(g, None, thread())
    three = drive.invoke(g, lib.Command(resume="r"), thread())
    inner = deep.tasks[0].state
    return {"one": one, "inner_next": inner.next, "two": two, "three": three, "runs": dict(runs)}


@scenario
def subgraph_invoked_inside_a_node_function(lib, drive):
    runs: Counter[str] = Counter()
    child = child_graph(lib, runs, "fn")

    def call_child(state: Logged) -> dict[str, Any]:
        runs["call_child"] += 1
        res = child.invoke({"x": state["x"], "log": []})
        return {"log": res["log"], "x": res["x"]}

    b = lib.StateGraph(Logged)
    b.add_node("call_child", call_child)
    b.add_edge(lib.START, "call_child")
    g = b.compile(checkpointer=lib.InMemorySaver())
    first = drive.invoke(g, {"x": 0, "log": []}, thread())
    out = drive.invoke(g, lib.Command(resume="inner"), thread())
    return {"first": first, "out": out, "runs": dict(runs)}


class LogOnly(TypedDict):
    log: Annotated[list[str], operator.add]


def log_only_child(lib: Any, runs: Counter[str], prefix: str) -> Any:
    b = lib.StateGraph(LogOnly)
    b.add_node(
        "ask", _counted(runs, prefix, lambda s: {"log": [f"{prefix}:{lib.interrupt(prefix)}"]})
    )
    b.add_edge(lib.START, "ask")
    return b.compile()


@scenario
def parallel_subgraphs_interrupt_and_resume_by_id(lib, drive):
    runs: Counter[str] = Counter()
    b = lib.StateGraph(Logged)
    b.add_node("left", log_only_child(lib, runs, "L"))
    b.add_node("right", log_only_child(lib, runs, "R"))
    b.add_edge(lib.START, "left")
    b.add_edge(lib.START, "right")
    g = b.compile(checkpointer=lib.InMemorySaver())
    first = drive.invoke(g, {"x": 0, "log": []}, thread())
    ids = {i.value: i.id for i in first["__interrupt__"]}
    part = drive.invoke(g, lib.Command(resume={ids["L"]: "l"}), thread())
    out = drive.invoke(g, lib.Command(resume={ids["R"]: "r"}), thread())
    return {
        "first": unordered(first["__interrupt__"]),
        "part": part,
        "out": {"x": out["x"], "log": sorted(out["log"])},
        # Node-run counts of partial resumes differ on purpose (DESIGN §4.6).
    }


def parent_command_graph(lib: Any, runs: Counter[str]) -> Any:
    def inner_decide(state: Logged) -> Any:
        runs["inner_decide"] += 1
        choice = lib.interrupt("where to?")
        return lib.Command(graph=lib.Command.PARENT, goto=choice, update={"log": [f"go {choice}"]})

    cb = lib.StateGraph(Logged)
    cb.add_node("inner_decide", inner_decide)
    cb.add_edge(lib.START, "inner_decide")
    b = lib.StateGraph(Logged)
    b.add_node("child", cb.compile(), destinations=("east", "west"))
    b.add_node("east", _counted(runs, "east", lambda s: {"x": 1}))
    b.add_node("west", _counted(runs, "west", lambda s: {"x": -1}))
    b.add_edge(lib.START, "child")
    return b.compile(checkpointer=lib.InMemorySaver())


@scenario
def command_parent_goto_from_subgraph_after_interrupt(lib, drive):
    runs: Counter[str] = Counter()
    g = parent_command_graph(lib, runs)
    first = drive.invoke(g, {"x": 0, "log": []}, thread())
    out = drive.invoke(g, lib.Command(resume="west"), thread())
    return {"first": first, "out": out, "runs": dict(runs)}


@scenario
def command_parent_streamed_updates(lib, drive):
    g = parent_command_graph(lib, Counter())
    first = drive.stream(g, {"x": 0, "log": []}, thread(), subgraphs=True)
    resumed = drive.stream(g, lib.Command(resume="east"), thread(), subgraphs=True)
    return {"first": first, "resumed": resumed}


@scenario
def subgraph_history_and_parent_metadata(lib, drive):
    g = parent_graph(lib, Counter(), child_graph(lib, Counter()))
    drive.invoke(g, {"x": 0, "log": []}, thread())
    hist = [(h.metadata, h.next, h.values) for h in drive.history(g, thread())]
    deep = drive.get_state(g, thread(), subgraphs=True)
    sub_cfg = deep.tasks[0].state.config
    sub_hist = [(h.metadata, h.next, h.values) for h in drive.history(g, sub_cfg)]
    return {"hist": hist, "sub_hist": sub_hist}


@scenario
def subgraph_durability_exit(lib, drive):
    runs: Counter[str] = Counter()
    g = parent_graph(lib, runs, child_graph(lib, runs))
    first = drive.invoke(g, {"x": 0, "log": []}, thread(), durability="exit")
    deep = drive.get_state(g, thread(), subgraphs=True)
    out = drive.invoke(g, lib.Command(resume="ok"), thread(), durability="exit")
    hist = [(h.metadata, h.next) for h in drive.history(g, thread())]
    inner = deep.tasks[0].state
    return {
        "first": first,
        "inner": (inner.next, inner.values, inner.interrupts),
        "out": out,
        "hist": hist,
        "runs": dict(runs),
    }


test_interrupts_subgraphs = scenario.test()
