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
