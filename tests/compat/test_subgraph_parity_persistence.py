"""Issue 16, families 1 and 6: how a subgraph persists, and subgraphs called in a node.

Family 1: ``compile(checkpointer=None)`` (the parent's saver, state per parent run),
``checkpointer=True`` (a stateful subgraph: the stable namespace ``<node>``, state kept
across parent runs), ``checkpointer=False`` (no checkpoints) — at depth 1 to 3, for two
parallel subgraph nodes and for a subgraph in a loop. Family 6: a compiled graph invoked
inside a node function is a subgraph too (``get_state(subgraphs=True)`` nests it).

Every scenario records what a user can see: results, the nested head snapshot, the
root's and each subgraph's history and the namespaces the saver holds.

LangGraph 1.1.6 quirk left out on purpose: two parallel ``Send`` packets to one
``checkpointer=True`` subgraph node share its namespace, both start from the same saved
state and the second to finish overwrites the first's (one call's state is lost on the
next run). Two *different* nodes holding the same stateful graph are covered instead.

Also not encoded: a history task's ``state`` for a ``checkpointer=True`` subgraph names
the per-task namespace ``"<node>:<task id>"`` where nothing is saved (see
``hide_stateful_task_states``); a stateful level under a ``checkpointer=False`` level is
saved but cannot be inspected through its namespace.
"""

import operator
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import SAVERS, Scenarios, catch, thread
from ._subgraph_kit import (
    START_VALUES,
    Logged,
    asker,
    counted,
    hide_stateful_task_states,
    nested,
    observe,
    rooted,
)
from ._subgraph_kit import (
    namespaces as saved_namespaces,
)

scenario = Scenarios(savers=SAVERS, mask_task_ids=True)

F1 = "issue 16 family 1: "
F6 = "issue 16 family 6: "


class Parent(TypedDict, total=False):
    n: int
    outs: Annotated[list[str], operator.add]


class SubIn(TypedDict):
    n: int


class SubOut(TypedDict):
    outs: list[str]


class Sub(TypedDict, total=False):
    n: int
    seen: Annotated[list[int], operator.add]
    outs: list[str]


def _count(state: Sub) -> dict[str, Any]:
    """Remember ``n`` and report everything remembered before it."""
    return {"seen": [state["n"]], "outs": [f"{state.get('seen', [])}+{state['n']}"]}


def counter(lib: Any, depth: int, checkpointer: Any, inner_checkpointer: Any = "same") -> Any:
    """A subgraph ``depth`` levels deep whose innermost node ``count`` remembers every
    ``n`` it saw in its own state (``seen``) and outputs only ``outs``."""
    leaf_cp = checkpointer if inner_checkpointer == "same" else inner_checkpointer
    b = lib.StateGraph(Sub, input_schema=SubIn, output_schema=SubOut)
    b.add_node("count", _count)
    b.add_edge(lib.START, "count")
    inner = b.compile(checkpointer=leaf_cp)
    for level in range(depth - 1, 0, -1):
        b = lib.StateGraph(Sub, input_schema=SubIn, output_schema=SubOut)
        b.add_node(f"sub{level + 1}", inner)
        b.add_edge(lib.START, f"sub{level + 1}")
        inner = b.compile(checkpointer=checkpointer)
    return inner


def _parent(lib: Any, saver: Any, child: Any) -> Any:
    b = lib.StateGraph(Parent)
    b.add_node("sub1", child)
    b.add_edge(lib.START, "sub1")
    return b.compile(checkpointer=saver)


def _three_runs(lib: Any, drive: Any, child: Any, stable: list[str]) -> dict[str, Any]:
    """Three parent runs on one thread; then every view of what was kept.

    ``stable``: the stable subgraph namespaces to inspect (``checkpointer=True``).
    """
    saver = drive.saver()
    g = _parent(lib, saver, child)
    outs = [drive.invoke(g, {"n": n}, thread()) for n in (1, 2, 3)]
    subs = {
        ns: {
            "state": catch(drive.get_state, g, thread(checkpoint_ns=ns), subgraphs=True),
            "history": catch(drive.history, g, thread(checkpoint_ns=ns)),
        }
        for ns in stable
    }
    # A history task's state config, passed back, shows the subgraph as it was then.
    task = next(t for h in drive.history(g, thread()) for t in h.tasks if t.name == "sub1")
    rec = {
        "outs": outs,
        "namespaces": saved_namespaces(drive, saver),
        "observed": observe(drive, g, thread()),
        "subs": subs,
        "task_state": catch(drive.get_state, g, task.state) if task.state else None,
    }
    return hide_stateful_task_states(rec, {ns.split("|")[-1] for ns in stable})


@scenario
def stateful_subgraph_keeps_state_depth1(lib, drive):
    return _three_runs(lib, drive, counter(lib, 1, True), ["sub1"])


@scenario
def stateful_subgraph_keeps_state_depth2(lib, drive):
    return _three_runs(lib, drive, counter(lib, 2, True), ["sub1", "sub1|sub2"])


@scenario
def stateful_subgraph_keeps_state_depth3(lib, drive):
    stable = ["sub1", "sub1|sub2", "sub1|sub2|sub3"]
    return _three_runs(lib, drive, counter(lib, 3, True), stable)


@scenario
def stateless_subgraph_starts_fresh_each_run_depth2(lib, drive):
    return _three_runs(lib, drive, counter(lib, 2, None), [])


@scenario
def no_checkpoint_subgraph_depth2(lib, drive):
    return _three_runs(lib, drive, counter(lib, 2, False), [])


@scenario
def stateful_inside_no_checkpoint_level(lib, drive):
    # Not inspected through "sub1|sub2": LangGraph saves the stateful level's
    # checkpoints there but its get_state/get_state_history cannot find that
    # namespace behind the checkpointer=False level (ValueError "Subgraph ... not found").
    return _three_runs(lib, drive, counter(lib, 2, False, inner_checkpointer=True), [])


@scenario
def stateful_inside_stateless_level(lib, drive):
    return _three_runs(lib, drive, counter(lib, 2, None, inner_checkpointer=True), [])


@scenario
def stateful_subgraphs_in_parallel(lib, drive):
    saver = drive.saver()
    child = counter(lib, 1, True)
    b = lib.StateGraph(Parent)
    b.add_node("left", child)
    b.add_node("right", child)
    b.add_edge(lib.START, "left")
    b.add_edge(lib.START, "right")
    g = b.compile(checkpointer=saver)
    outs = [drive.invoke(g, {"n": n}, thread()) for n in (1, 2)]
    return {
        "outs": outs,
        "namespaces": saved_namespaces(drive, saver),
        "left": drive.history(g, thread(checkpoint_ns="left")),
        "right": drive.get_state(g, thread(checkpoint_ns="right")),
    }


def _looped(lib: Any, drive: Any, checkpointer: Any, stable: bool = False) -> dict[str, Any]:
    """``sub1 -> inc`` while ``n % 3``: the subgraph runs twice per parent run."""
    saver = drive.saver()
    b = lib.StateGraph(Parent)
    b.add_node("sub1", counter(lib, 1, checkpointer))
    b.add_node("inc", lambda s: {"n": s["n"] + 1})
    b.add_edge(lib.START, "sub1")
    b.add_edge("sub1", "inc")
    b.add_conditional_edges("inc", lambda s: "sub1" if s["n"] % 3 else lib.END)
    g = b.compile(checkpointer=saver)
    outs = [drive.invoke(g, {"n": n}, thread()) for n in (1, 4)]
    rec = {
        "outs": outs,
        "namespaces": saved_namespaces(drive, saver),
        "history": drive.history(g, thread()),
    }
    if stable:
        rec["sub"] = drive.history(g, thread(checkpoint_ns="sub1"))
        return hide_stateful_task_states(rec, {"sub1"})
    return rec


@scenario
def stateful_subgraph_in_a_loop(lib, drive):
    return _looped(lib, drive, True, stable=True)


@scenario
def stateless_subgraph_in_a_loop(lib, drive):
    return _looped(lib, drive, None)


@scenario
def no_checkpoint_subgraph_in_a_loop(lib, drive):
    return _looped(lib, drive, False)


# --- stateful subgraphs that interrupt ----------------------------------------------------


class Turns(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    turns: Annotated[list[str], operator.add]


def _memory_graph(lib: Any, drive: Any, checkpointer: Any) -> Any:
    """A subgraph ``mem`` that asks ``turn <k>?``, k counting its own earlier turns."""
    sb = lib.StateGraph(Turns)
    sb.add_node(
        "remember", lambda s: {"turns": [lib.interrupt(f"turn {len(s.get('turns', []))}?")]}
    )
    sb.add_edge(lib.START, "remember")
    b = lib.StateGraph(Turns)
    b.add_node("mem", sb.compile(checkpointer=checkpointer))
    b.add_edge(lib.START, "mem")
    return b.compile(checkpointer=drive.saver())


def _two_conversations(lib: Any, drive: Any, checkpointer: Any) -> list[Any]:
    g = _memory_graph(lib, drive, checkpointer)
    seen: list[Any] = []
    for answer in ("one", "two"):
        seen.append(drive.invoke(g, {"log": [answer]}, thread()))
        seen.append(observe(drive, g, thread()))
        seen.append(drive.invoke(g, lib.Command(resume=answer), thread()))
    seen.append(drive.history(g, thread(checkpoint_ns="mem")))
    return hide_stateful_task_states(seen, {"mem"} if checkpointer else set())


@scenario
def stateful_subgraph_interrupts_across_runs(lib, drive):
    return _two_conversations(lib, drive, True)


@scenario
def stateless_subgraph_interrupts_across_runs(lib, drive):
    return _two_conversations(lib, drive, None)


@scenario
def stateful_depth3_interrupt_resume_and_rerun(lib, drive):
    runs: Counter[str] = Counter()
    g = rooted(lib, drive, runs, nested(lib, runs, 3, checkpointer=True))
    seen = [drive.invoke(g, START_VALUES, thread()), observe(drive, g, thread())]
    seen.append(drive.invoke(g, lib.Command(resume="a"), thread()))
    seen.append(drive.invoke(g, {"x": 10, "log": ["again"]}, thread()))
    seen.append(observe(drive, g, thread()))
    seen.append(drive.history(g, thread(checkpoint_ns="sub1|sub2|sub3")))
    return hide_stateful_task_states({"seen": seen, "runs": dict(runs)}, {"sub1", "sub2", "sub3"})


# --- family 6: a subgraph invoked inside a node function ----------------------------------


def _wrapping(lib: Any, runs: Counter[str], name: str, graph: Any, is_async: bool) -> Any:
    """A node ``name`` whose function calls ``graph`` (``ainvoke`` on the async driver)."""
    if is_async:

        async def acall(state: Logged) -> dict[str, Any]:
            runs[name] += 1
            res = await graph.ainvoke({"x": state["x"], "log": [f"{name}-in"]})
            return {"log": res["log"], "x": res["x"]}

        return acall

    def call(state: Logged) -> dict[str, Any]:
        runs[name] += 1
        res = graph.invoke({"x": state["x"], "log": [f"{name}-in"]})
        return {"log": res["log"], "x": res["x"]}

    return call


def _called_in_node(lib: Any, drive: Any, runs: Counter[str], depth: int) -> Any:
    inner = asker(lib, runs, f"q{depth}")
    for level in range(depth - 1, 0, -1):
        b = lib.StateGraph(Logged)
        b.add_node(f"call{level + 1}", _wrapping(lib, runs, f"call{level + 1}", inner, False))
        b.add_edge(lib.START, f"call{level + 1}")
        inner = b.compile()
    b = lib.StateGraph(Logged)
    b.add_node("pre", counted(runs, "pre", lambda s: {"log": ["pre"]}))
    b.add_node("call1", _wrapping(lib, runs, "call1", inner, drive.is_async))
    b.add_edge(lib.START, "pre")
    b.add_edge("pre", "call1")
    return b.compile(checkpointer=drive.saver())


def _called_record(lib: Any, drive: Any, depth: int) -> dict[str, Any]:
    runs: Counter[str] = Counter()
    g = _called_in_node(lib, drive, runs, depth)
    first = drive.invoke(g, START_VALUES, thread())
    paused = observe(drive, g, thread())
    flat = drive.get_state(g, thread())
    out = drive.invoke(g, lib.Command(resume="r"), thread())
    return {
        "first": first,
        "paused": paused,
        "flat_tasks": flat.tasks,
        "out": out,
        "after": observe(drive, g, thread()),
        "runs": dict(runs),
    }


@scenario
def subgraph_called_in_node(lib, drive):
    return _called_record(lib, drive, 1)


@scenario
def subgraph_called_in_node_depth2(lib, drive):
    return _called_record(lib, drive, 2)


@scenario
def subgraph_called_in_node_depth3(lib, drive):
    return _called_record(lib, drive, 3)


# --- an interrupt inside a subgraph that saves nothing (checkpointer=False) ---------------


def _unsaved_asker(lib: Any, drive: Any, depth: int, in_node: bool) -> dict[str, Any]:
    """``nested(depth)`` compiled with ``checkpointer=False`` at every level, as the
    root's ``sub1`` node or run by its node function: the question reaches the root and
    the answer reaches the question (the subgraph runs again from its start)."""
    runs: Counter[str] = Counter()
    child = nested(lib, runs, depth, checkpointer=False)
    node = (lambda s: child.invoke(s)) if in_node else child  # noqa: PLW0108 (a function)
    g = rooted(lib, drive, runs, node)
    first = drive.invoke(g, START_VALUES, thread())
    deep = drive.get_state(g, thread(), subgraphs=True)
    resumed = drive.invoke(g, lib.Command(resume="a"), thread())
    return {
        "first": first,
        "deep": deep,
        "resumed": resumed,
        "head": observe(drive, g, thread()),
        "namespaces": saved_namespaces(drive, g.checkpointer),
        "runs": dict(runs),
    }


@scenario
def no_checkpoint_subgraph_interrupt_depth1(lib, drive):
    return _unsaved_asker(lib, drive, 1, in_node=False)


@scenario
def no_checkpoint_subgraph_interrupt_depth2(lib, drive):
    return _unsaved_asker(lib, drive, 2, in_node=False)


@scenario
def no_checkpoint_subgraph_interrupt_called_in_node(lib, drive):
    return _unsaved_asker(lib, drive, 1, in_node=True)


test_subgraph_parity_persistence = scenario.test()
