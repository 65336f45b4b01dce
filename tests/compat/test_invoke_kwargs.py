"""Issue 30, item 4: ``invoke``/``ainvoke`` take ``subgraphs=``, ``debug=`` and ``print_mode=``.

LangGraph 1.1.6 runs ``invoke`` through ``stream``, so these keywords work there too:
``subgraphs=True`` with another ``stream_mode`` returns namespaced chunks (with
``values``, the result is the run's output); ``debug=True`` (and ``compile(debug=True)``)
prints every ``updates`` and ``values`` chunk to stdout — ``[mode]`` in bold, a
subgraph's namespace in yellow with ``subgraphs=True``, the payload's ``repr`` —
which pausepoint prints the same way. ``batch``/``abatch`` and ``with_config`` hand
them on. The scenarios record what a run returns and what it printed.

Deliberate difference: with ``subgraphs=True`` in ``values`` mode LangGraph lists a
subgraph's interrupt twice in ``__interrupt__`` (once as the subgraph reported it,
once as the root did); pausepoint lists it once (docs/differences.md).
"""

import contextlib
import io
import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import SAVERS, Scenarios, catch, load_lib, thread

scenario = Scenarios(savers=SAVERS, mask_task_ids=True)


class Notes(TypedDict, total=False):
    notes: Annotated[list[str], operator.add]


def _outer(lib: Any, *, ask: bool = False, **compile_kw: Any) -> Any:
    """``pre`` then subgraph ``sub`` (``write``, and ``ask`` that pauses when asked)."""

    def asking(state: Notes) -> Notes:
        return {"notes": [lib.interrupt("q?")]}

    inner = lib.StateGraph(Notes)
    inner.add_node("write", lambda s: {"notes": ["inner"]})
    inner.add_edge(lib.START, "write")
    if ask:
        inner.add_node("ask", asking)
        inner.add_edge("write", "ask")
    outer = lib.StateGraph(Notes)
    outer.add_node("pre", lambda s: {"notes": ["pre"]})
    outer.add_node("sub", inner.compile())
    outer.add_edge(lib.START, "pre")
    outer.add_edge("pre", "sub")
    return outer.compile(**compile_kw)


def _printed(call: Any, *args: Any, **kw: Any) -> dict[str, Any]:
    """What ``call`` returned (or raised) and the lines it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        got = catch(call, *args, **kw)
    return {"returned": got, "printed": out.getvalue().splitlines()}


def _printed_by_parallel_runs(call: Any, *args: Any, **kw: Any) -> dict[str, Any]:
    """`_printed` for runs that print at once (``batch``): their lines interleave in
    whatever order the threads run, in both libraries, so they are compared sorted."""
    seen = _printed(call, *args, **kw)
    return {**seen, "printed": sorted(seen["printed"])}


def _doubled_interrupts(record: Any) -> tuple[Any, int]:
    """pausepoint's record as LangGraph's: each interrupt in ``record["doubled"]``'s
    results listed twice (LangGraph's ``invoke(subgraphs=True)`` in values mode)."""
    found = 0

    def double(result: Any) -> Any:
        nonlocal found
        if isinstance(result, dict) and "__interrupt__" in result:
            found += 1
            return {**result, "__interrupt__": [i for i in result["__interrupt__"] for _ in "ab"]}
        if type(result).__name__ == "GraphOutput" and result.interrupts:
            found += 1
            return ("GraphOutput", result.value, [i for i in result.interrupts for _ in "ab"])
        return result

    doubled = {k: double(v) for k, v in record["doubled"].items()}
    return {**record, "doubled": doubled}, found


def _langgraph_output_as_tuple(record: Any) -> Any:
    """LangGraph's ``GraphOutput`` in the form ``_doubled_interrupts`` gives pausepoint's."""
    return {
        k: ("GraphOutput", v.value, list(v.interrupts)) if type(v).__name__ == "GraphOutput" else v
        for k, v in record.items()
    }


@scenario
def invoke_subgraphs_values_returns_the_output(lib, drive):
    g = _outer(lib)
    return {
        "plain": drive.invoke(g, {"notes": []}, subgraphs=True),
        "v2": drive.invoke(g, {"notes": []}, subgraphs=True, version="v2"),
        "output_keys": drive.invoke(g, {"notes": []}, subgraphs=True, output_keys="notes"),
    }


@scenario
def invoke_subgraphs_other_modes_returns_namespaced_chunks(lib, drive):
    g = _outer(lib)
    return {
        mode: drive.invoke(g, {"notes": []}, stream_mode=mode, subgraphs=True, version=v)
        for mode in ("updates", "values", "tasks", "custom")
        for v in ("v1", "v2")
    } | {
        "modes": drive.invoke(g, {"notes": []}, stream_mode=["updates", "values"], subgraphs=True),
    }


@scenario
def invoke_debug_prints_updates_and_values(lib, drive):
    g = _outer(lib)
    return {
        "debug": _printed(drive.invoke, g, {"notes": []}, debug=True),
        "debug_subgraphs": _printed(drive.invoke, g, {"notes": []}, debug=True, subgraphs=True),
        "debug_updates_mode": _printed(
            drive.invoke, g, {"notes": []}, stream_mode="updates", debug=True, subgraphs=True
        ),
        "debug_false": _printed(drive.invoke, g, {"notes": []}, debug=False),
        "print_mode": _printed(drive.invoke, g, {"notes": []}, print_mode=["tasks"]),
        "output_key": _printed(drive.invoke, g, {"notes": []}, debug=True, output_keys="notes"),
    }


@scenario
def stream_debug_prints_beside_what_it_yields(lib, drive):
    g = _outer(lib)
    return {
        "debug": _printed(drive.stream, g, {"notes": []}, stream_mode="tasks", debug=True),
        "subgraphs": _printed(
            drive.stream, g, {"notes": []}, stream_mode="custom", debug=True, subgraphs=True
        ),
        "print_mode": _printed(drive.stream, g, {"notes": []}, print_mode="updates"),
    }


@scenario
def compiled_with_debug_prints_every_run(lib, drive):
    g = _outer(lib, debug=True)
    inner = lib.StateGraph(Notes)
    inner.add_node("write", lambda s: {"notes": ["inner"]})
    inner.add_edge(lib.START, "write")
    outer = lib.StateGraph(Notes)
    outer.add_node("sub", inner.compile(debug=True))
    outer.add_edge(lib.START, "sub")
    return {
        "root": _printed(drive.invoke, g, {"notes": []}),
        "debug_false_does_not_win": _printed(drive.invoke, g, {"notes": []}, debug=False),
        "subgraph_compiled_with_debug": _printed(drive.invoke, outer.compile(), {"notes": []}),
    }


@scenario.viewed(_doubled_interrupts)
def invoke_subgraphs_with_a_paused_subgraph(lib, drive):
    g = _outer(lib, ask=True, checkpointer=drive.saver())
    v2 = drive.invoke(g, {"notes": []}, thread("v2"), subgraphs=True, version="v2")
    debugged = _printed(drive.invoke, g, {"notes": []}, thread("s"), debug=True, subgraphs=True)
    return {
        "doubled": {
            "paused": drive.invoke(g, {"notes": []}, thread(), subgraphs=True),
            "v2": v2 if lib.name == "pausepoint" else _langgraph_output_as_tuple({"v": v2})["v"],
            "debug": debugged["returned"],
        },
        "printed": _printed(drive.invoke, g, {"notes": []}, thread("p"), debug=True),
        "printed_subgraphs": debugged["printed"],
        "resumed": drive.invoke(g, lib.Command(resume="a"), thread(), subgraphs=True),
        "resumed_updates": drive.invoke(
            g, lib.Command(resume="a"), thread("s"), stream_mode="updates", subgraphs=True
        ),
        "state": drive.get_state(g, thread()),
    }


@scenario
def invoke_subgraphs_durability_inherited(lib, drive):
    """LangGraph's own test_subgraph_durability_inherited, for each durability."""

    class Inner(TypedDict):
        my_key: Annotated[str, operator.add]
        my_other_key: str

    class Outer(TypedDict):
        my_key: str

    counts = {}
    for durability in ("sync", "async", "exit"):
        saver = drive.saver()
        inner = lib.StateGraph(Inner)
        inner.add_node("inner_1", lambda s: {"my_key": " got here", "my_other_key": s["my_key"]})
        inner.add_node("inner_2", lambda s: {"my_key": " and there"})
        inner.add_edge(lib.START, "inner_1")
        inner.add_edge("inner_1", "inner_2")
        outer = lib.StateGraph(Outer)
        outer.add_node("inner", inner.compile(checkpointer=saver))
        outer.add_edge(lib.START, "inner")
        outer.add_conditional_edges(
            "inner", lambda s: "inner" if s["my_key"].count("there") < 2 else lib.END
        )
        g = outer.compile(checkpointer=saver)
        cfg = thread(durability)
        out = drive.invoke(g, {"my_key": ""}, cfg, subgraphs=True, durability=durability)
        counts[durability] = (out, len(drive.list_checkpoints(saver, cfg)))
    return counts


@scenario
def invoke_debug_with_breakpoint_and_max_concurrency(lib, drive):
    """LangGraph's test_max_concurrency pattern: ``debug=True`` with a breakpoint and
    ``max_concurrency``, then a plain resume."""
    builder = lib.StateGraph(Annotated[list, operator.add])
    builder.add_node("one", lambda s: ["1"])
    builder.add_node("two", lambda s: [s])
    builder.add_node("three", lambda s: ["3"])
    builder.add_edge(lib.START, "one")
    builder.add_conditional_edges("one", lambda s: [lib.Send("two", i) for i in range(5)])
    builder.add_edge("two", "three")
    g = builder.compile(checkpointer=drive.saver(), interrupt_before=["two"])
    cfg = {"max_concurrency": 2, **thread()}
    return {
        "paused": _printed(drive.invoke, g, ["0"], cfg, debug=True),
        "state": drive.get_state(g, cfg).values,
        "resumed": drive.invoke(g, None, cfg),
    }


@scenario
def batch_and_with_config_pass_the_keywords_on(lib, drive):
    g = _outer(lib)
    inputs = [{"notes": []}, {"notes": ["x"]}]

    def batch(**kw: Any) -> Any:
        if drive.is_async:
            return drive._run(g.abatch(inputs, **kw))
        return g.batch(inputs, **kw)

    bound = g.with_config(recursion_limit=10)
    return {
        "batch": _printed_by_parallel_runs(batch, debug=True),
        "batch_updates": batch(stream_mode="updates", subgraphs=True),
        "with_config": _printed(drive.invoke, bound, {"notes": []}, debug=True, subgraphs=True),
    }


test_scenario = scenario.test()


def test_unknown_keywords_are_still_refused():
    """LangGraph accepts and ignores a misspelt keyword; pausepoint refuses it."""
    g = _outer(load_lib("pausepoint"))
    with pytest.raises(TypeError, match="'subgraph'; did you mean 'subgraphs'"):
        g.invoke({"notes": []}, subgraph=True)
    with pytest.raises(TypeError, match="'debg'; did you mean 'debug'"):
        g.batch([{"notes": []}], debg=True)
    with pytest.raises(TypeError, match="'print_modes'; did you mean 'print_mode'"):
        list(g.stream({"notes": []}, print_modes="values"))
    with pytest.raises(ValueError, match="unknown print_mode \\['valeus'\\]"):
        g.invoke({"notes": []}, print_mode="valeus")
