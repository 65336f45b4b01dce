"""The namespace of each graph run a task starts (issue 30, item 1), pinned.

The differential scenarios (tests/compat/test_subgraph_parity_namespaces.py) compare
namespaces by shape. These pin what threads stored before runs were counted rely on:
a task's first subgraph run keeps the task's namespace, ``node:<task id>``, exactly,
and the ids of the questions asked in it (hashes of that namespace) are unchanged —
so a thread paused in a first subgraph by an older pausepoint resumes.
"""

import operator
from typing import Annotated, Any, TypedDict

from xxhash import xxh3_128_hexdigest

from pausepoint import START, Command, InMemorySaver, StateGraph, interrupt
from pausepoint.loop.namespaces import nested_ns, stateful_ns


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _asker(tag: str) -> Any:
    b = StateGraph(Log)
    b.add_node("q", lambda s: {"log": [f"{tag}={interrupt(tag)}"]})
    b.add_edge(START, "q")
    return b.compile()


def test_nested_ns_numbers_runs_after_the_first() -> None:
    assert nested_ns("fill:t1", 0, stateful=False) == "fill:t1"
    assert nested_ns("fill:t1", 2, stateful=False) == "fill:t1|2"
    assert nested_ns("outer:t1|1|inner:t2", 0, stateful=True) == "outer|inner"
    assert nested_ns("outer:t1|inner:t2", 1, stateful=True) == "outer|inner|1"
    assert stateful_ns("outer|1", keep_runs=True) == "outer|1"
    assert stateful_ns("outer:t1|1") == "outer"


def test_first_subgraph_run_keeps_the_task_namespace_and_question_id() -> None:
    a, b = _asker("a"), _asker("b")

    def fill(state: Log) -> Log:
        return {"log": a.invoke({"log": []})["log"] + b.invoke({"log": []})["log"]}

    saver = InMemorySaver()
    builder = StateGraph(Log)
    builder.add_node("fill", fill)
    builder.add_edge(START, "fill")
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "old-thread"}}
    out = graph.invoke({"log": []}, config)

    task = graph.get_state(config).tasks[0]
    first_ns = f"fill:{task.id}"
    assert {t.config["configurable"]["checkpoint_ns"] for t in saver.list(None)} == {"", first_ns}
    inner = graph.get_state(config, subgraphs=True).tasks[0].state
    assert inner.config["configurable"]["checkpoint_ns"] == first_ns
    asked = inner.tasks[0]
    assert out["__interrupt__"][0].id == xxh3_128_hexdigest(f"{first_ns}|q:{asked.id}".encode())

    # The second run asks under "|1"; both answers arrive.
    second = graph.invoke(Command(resume="Ada"), config)
    assert [i.value for i in second["__interrupt__"]] == ["b"]
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in saver.list(None)}
    assert namespaces == {"", first_ns, f"{first_ns}|1"}
    assert graph.invoke(Command(resume="ada@x.org"), config) == {"log": ["a=Ada", "b=ada@x.org"]}


class Notes(TypedDict, total=False):
    notes: list[str]


def _two_shapes(*, new_node: bool = False, saver: Any = None) -> tuple[Any, Any, Any]:
    """A root whose node ``call`` runs ``z_first`` (its own state) then ``a_later``, a
    graph with a node ``inner`` running an asker: the graph its function names first
    (closure order) is ``a_later``, not the one its first run runs. ``new_node``: a
    harmless deploy (a node after ``call``)."""
    zb = StateGraph(Notes)
    zb.add_node("note", lambda s: {"notes": [f"z={interrupt('z')}"]})
    zb.add_edge(START, "note")
    z_first = zb.compile()
    ask = _asker("a")

    def inner(state: Log) -> Log:
        return ask.invoke({"log": []})

    lb = StateGraph(Log)
    lb.add_node("inner", inner)
    lb.add_edge(START, "inner")
    a_later = lb.compile()

    def call(state: Log) -> Log:
        z_first.invoke({"notes": []})
        return a_later.invoke({"log": []})

    builder = StateGraph(Log)
    builder.add_node("call", call)
    builder.add_edge(START, "call")
    if new_node:
        builder.add_node("after", lambda s: {"log": ["after"]})
        builder.add_edge("call", "after")
    return builder.compile(checkpointer=saver or InMemorySaver()), z_first, a_later


def test_each_run_is_read_with_the_graph_that_wrote_it() -> None:
    graph, _, a_later = _two_shapes()
    assert graph.nodes["call"].calls_graph is a_later  # LangGraph's pick: the first named
    config: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": []}, config)
    graph.invoke(Command(resume="Z"), config)  # now "a" waits in the second run
    tid = graph.get_state(config).tasks[0].id
    first = {"configurable": {"thread_id": "t", "checkpoint_ns": f"call:{tid}"}}
    later = {"configurable": {"thread_id": "t", "checkpoint_ns": f"call:{tid}|1"}}

    # The first run's namespace holds z_first's checkpoints: its state, its key.
    deep = graph.get_state(config, subgraphs=True).tasks[0].state
    assert (deep.values, deep.next) == ({"notes": ["z=Z"]}, ())
    assert [s.next for s in graph.get_state_history(first)] == [(), ("note",), ("__start__",)]
    # The second's, a_later's: its node waits with the question, the asker under it.
    state = graph.get_state(later, subgraphs=True)
    assert (state.next, [i.value for i in state.interrupts]) == (("inner",), ["a"])
    assert state.tasks[0].state.next == ("q",)
    assert [s.next for s in graph.get_state_history(later)][-2:] == [("inner",), ("__start__",)]
    inner_ns = state.tasks[0].state.config["configurable"]["checkpoint_ns"]
    assert inner_ns.startswith(f"call:{tid}|1|inner:")
    assert next(iter(graph.get_state_history(state.tasks[0].state.config))).next == ("q",)
    # An update there is written as a_later's node (not refused as another graph's).
    graph.update_state(later, {"log": ["edited"]}, as_node="inner")
    assert graph.get_state(later).values == {"log": ["edited"]}


def test_a_deploy_checks_each_run_with_the_graph_that_wrote_it() -> None:
    """Resumed after a harmless deploy, the thread paused in the second run is checked
    with the graphs that wrote each run's namespace: no false mismatch (``notes`` is a
    key of z_first's, not of the graph the function names first)."""
    saver = InMemorySaver()
    old, _, _ = _two_shapes(saver=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    old.invoke({"log": []}, config)
    old.invoke(Command(resume="Z"), config)
    new, _, _ = _two_shapes(new_node=True, saver=saver)
    assert new.get_state(config).tasks[0].error is None
    assert new.invoke(Command(resume="A"), config) == {"log": ["a=A", "after"]}
