"""Issue 30: what a resumed run streams for the tasks of the step it resumes.

A step that paused keeps the writes of its tasks that finished (a sibling that did not
ask, a task answered by an earlier partial resume, a ``Send`` packet, a subgraph's own
finished node); a resume reuses them instead of running those tasks again. LangGraph
1.1.6 streams, when the resumed step starts, a ``task`` event (``tasks`` / ``debug``)
for *every* task of the step, then an ``updates`` chunk marked
``{"__metadata__": {"cached": True}}`` for each task whose writes it reuses — and no
``task_result`` for those. A task that finished before the pause gets its ``task``
event again on the resume, but never a second result.

pausepoint re-runs only the tasks a partial resume answers (DESIGN §4.6): a task still
waiting is not run again, yet the resumed step reports it as LangGraph's re-run does —
its ``task`` event, its interrupts in ``updates`` / ``values`` and a ``task_result``
carrying them — so the stream tells the same story; only the node-run counts differ
(tests/compat/test_differences.py).

``@task`` calls of an ``@entrypoint`` whose results were saved get their ``task``
event when the resumed entrypoint calls them again, and no ``updates`` or result.
"""

import operator
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import SAVERS, Scenarios, thread, unordered
from ._subgraph_kit import observe

scenario = Scenarios(savers=SAVERS, mask_task_ids=True)

DURABILITIES = ("sync", "async", "exit")
ALL_MODES = ["debug", "tasks", "updates", "values", "checkpoints"]


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _asker(lib: Any, runs: Counter[str], name: str) -> Any:
    def node(state: Log) -> dict[str, Any]:
        runs[name] += 1
        return {"log": [f"{name}={lib.interrupt(f'{name}?')}"]}

    return node


def _worker(runs: Counter[str], name: str) -> Any:
    def node(state: Log) -> dict[str, Any]:
        runs[name] += 1
        return {"log": [name]}

    return node


def _fan(lib: Any, workers: str, askers: str, **compile_kw: Any) -> Any:
    """START -> every worker (finishes) and every asker (interrupts) -> join."""
    runs: Counter[str] = Counter()
    b = lib.StateGraph(Log)
    names = [*workers, *askers]
    for n in workers:
        b.add_node(n, _worker(runs, n))
    for n in askers:
        b.add_node(n, _asker(lib, runs, n))
    b.add_node("join", _worker(runs, "join"))
    for n in names:
        b.add_edge(lib.START, n)
    b.add_edge(names, "join")
    return b.compile(**compile_kw), runs


def _ids(chunks: list[Any]) -> dict[str, str]:
    """Interrupt ids by question, from an ``updates`` stream (any namespace / shape)."""
    found: dict[str, str] = {}
    for chunk in chunks:
        data = chunk[-1] if isinstance(chunk, tuple) else chunk
        if isinstance(data, dict) and "data" in data and "type" in data:
            data = data["data"]
        if isinstance(data, dict):
            for i in data.get("__interrupt__", ()):
                found[i.value] = i.id
    return found


def _comparable(chunks: list[Any], durability: str) -> list[Any]:
    """``chunks`` (tuples or v2 parts) with two documented differences in checkpoint
    events taken out, from both libraries' records:

    - a finished task's ``interrupts``: LangGraph lists there the answered questions of
      the head checkpoint's tasks, pausepoint only those still waiting (DESIGN §4.3);
    - with durability "exit", ``parent_config``: LangGraph names the parent of the
      checkpoint the run started from, pausepoint the last one saved
      (docs/differences.md, "With durability "exit" ...").
    """

    def item(task: Any) -> Any:
        return {k: v for k, v in task.items() if k != "interrupts" or "result" not in task}

    def payload(p: dict[str, Any]) -> dict[str, Any]:
        p = {**p, "tasks": [item(t) for t in p["tasks"]]}
        return {**p, "parent_config": "hidden"} if durability == "exit" else p

    def data(mode: str, d: Any) -> Any:
        if mode == "checkpoints":
            return payload(d)
        if mode == "debug" and d["type"] == "checkpoint":
            return {**d, "payload": payload(d["payload"])}
        return d

    def chunk(c: Any) -> Any:
        if isinstance(c, dict) and "type" in c and "data" in c:  # a v2 part
            return {**c, "data": data(c["type"], c["data"])}
        if isinstance(c, tuple) and len(c) in (2, 3) and isinstance(c[-2], str):
            return (*c[:-1], data(c[-2], c[-1]))
        return c

    return [chunk(c) for c in chunks]


def _stream(drive: Any, graph: Any, inp: Any, **kw: Any) -> list[Any]:
    """``drive.stream`` on the scenario's thread, comparable (``_comparable``)."""
    return _comparable(drive.stream(graph, inp, thread(), **kw), kw.get("durability", "async"))


# --- a finished sibling ---------------------------------------------------------------


def _sibling(lib: Any, drive: Any, durability: str, **kw: Any) -> Any:
    g, runs = _fan(lib, "a", "b", checkpointer=drive.saver())
    first = _stream(drive, g, {"log": []}, stream_mode=ALL_MODES, durability=durability)
    resumed = _stream(
        drive, g, lib.Command(resume="B"), stream_mode=ALL_MODES, durability=durability, **kw
    )
    return {"first": unordered(first), "resumed": resumed, "runs": dict(runs)}


@scenario
def finished_sibling_sync(lib, drive):
    return _sibling(lib, drive, "sync")


@scenario
def finished_sibling_async(lib, drive):
    return _sibling(lib, drive, "async")


@scenario
def finished_sibling_exit(lib, drive):
    return _sibling(lib, drive, "exit")


@scenario
def finished_sibling_v2_parts(lib, drive):
    return _sibling(lib, drive, "async", version="v2")


@scenario
def finished_sibling_subgraphs_true(lib, drive):
    return _sibling(lib, drive, "async", subgraphs=True)


@scenario
def finished_sibling_tasks_mode_alone(lib, drive):
    g, _ = _fan(lib, "ab", "c", checkpointer=drive.saver())
    drive.stream(g, {"log": []}, thread())
    return _stream(drive, g, lib.Command(resume="C"), stream_mode="tasks")


# --- partial resumes: a task answered earlier, a task still waiting ---------------------


def _partial(lib: Any, drive: Any, durability: str) -> Any:
    g, _ = _fan(lib, "a", "bc", checkpointer=drive.saver())
    kw: dict[str, Any] = {"stream_mode": ALL_MODES, "durability": durability}
    first = _stream(drive, g, {"log": []}, **kw)
    ids = _ids(c for c in first if c[0] == "updates")
    # LangGraph runs b and c again in parallel: their events come in any order.
    part = _stream(drive, g, lib.Command(resume={ids["b?"]: "B"}), **kw)
    rest = _stream(drive, g, lib.Command(resume={ids["c?"]: "C"}), **kw)
    asked = [ids["b?"], ids["c?"]]  # numbered first: "first" is unordered
    return {"asked": asked, "first": unordered(first), "part": unordered(part), "rest": rest}


@scenario
def partial_resumes_sync(lib, drive):
    return _partial(lib, drive, "sync")


@scenario
def partial_resumes_async(lib, drive):
    return _partial(lib, drive, "async")


@scenario
def partial_resumes_exit(lib, drive):
    return _partial(lib, drive, "exit")


# --- Send packets ---------------------------------------------------------------------


def _send(lib: Any, drive: Any, durability: str) -> Any:
    def review(item: dict[str, Any]) -> dict[str, Any]:
        if item["doc"] == "d2":
            return {"log": ["d2 auto"]}
        doc = item["doc"]
        return {"log": [f"{doc}:{lib.interrupt(doc + '?')}"]}

    b = lib.StateGraph(Log)
    b.add_node("plan", lambda s: {"log": ["plan"]})
    b.add_node("review", review)
    b.add_edge(lib.START, "plan")
    b.add_conditional_edges(
        "plan", lambda s: [lib.Send("review", {"doc": d}) for d in ("d1", "d2", "d3")]
    )
    g = b.compile(checkpointer=drive.saver())
    kw: dict[str, Any] = {"stream_mode": ["debug", "tasks", "updates"], "durability": durability}
    first = _stream(drive, g, {"log": []}, **kw)
    ids = _ids(c for c in first if c[0] == "updates")
    part = _stream(drive, g, lib.Command(resume={ids["d1?"]: "ok"}), **kw)
    rest = _stream(drive, g, lib.Command(resume={ids["d3?"]: "no"}), **kw)
    asked = [ids["d1?"], ids["d3?"]]  # numbered first: "first" is unordered
    return {"asked": asked, "first": unordered(first), "part": unordered(part), "rest": rest}


@scenario
def send_packets_sync(lib, drive):
    return _send(lib, drive, "sync")


@scenario
def send_packets_exit(lib, drive):
    return _send(lib, drive, "exit")


# --- inside subgraphs ---------------------------------------------------------------------


def _nested(lib: Any, runs: Counter[str], depth: int, inner: Any, **compile_kw: Any) -> Any:
    """``inner`` (compiled with ``compile_kw``) ``depth`` levels down: each level above
    runs ``m<k>`` then the next level, ``sub<k+1>``."""
    graph = inner.compile(**compile_kw)
    for level in range(depth - 1, 0, -1):
        b = lib.StateGraph(Log)
        b.add_node(f"m{level}", _worker(runs, f"m{level}"))
        b.add_node(f"sub{level + 1}", graph)
        b.add_edge(lib.START, f"m{level}")
        b.add_edge(f"m{level}", f"sub{level + 1}")
        graph = b.compile(**compile_kw)
    return graph


def _asking(lib: Any, runs: Counter[str], fan: bool) -> Any:
    """The innermost graph: ``before -> b`` (``b`` asks); with ``fan`` also ``a``
    beside ``b``, which finishes in the step that pauses."""
    b = lib.StateGraph(Log)
    b.add_node("before", _worker(runs, "before"))
    b.add_node("b", _asker(lib, runs, "b"))
    b.add_edge(lib.START, "before")
    b.add_edge("before", "b")
    if fan:
        b.add_node("a", _worker(runs, "a"))
        b.add_edge("before", "a")
    return b


def _in_subgraph(
    lib: Any, drive: Any, depth: int, durability: str, fan: bool = False, **compile_kw: Any
) -> Any:
    """Root ``sub1 || w``, the subgraph ``depth`` levels deep pausing; resumed."""
    runs: Counter[str] = Counter()
    root = lib.StateGraph(Log)
    # Added out of name order: a step's tasks stream by node name, a snapshot lists
    # them in graph order (tests/compat/test_task_order.py).
    root.add_node("w", _worker(runs, "w"))
    root.add_node("sub1", _nested(lib, runs, depth, _asking(lib, runs, fan), **compile_kw))
    root.add_edge(lib.START, "w")
    root.add_edge(lib.START, "sub1")
    g = root.compile(checkpointer=drive.saver())
    kw: dict[str, Any] = {"stream_mode": ALL_MODES, "durability": durability, "subgraphs": True}
    first = _stream(drive, g, {"log": []}, **kw)
    resumed = _stream(drive, g, lib.Command(resume="B"), **kw)
    return {"first": unordered(first), "resumed": resumed, "runs": dict(runs)}


@scenario
def subgraph_depth1_sync(lib, drive):
    return _in_subgraph(lib, drive, 1, "sync")


@scenario
def subgraph_depth2_async(lib, drive):
    return _in_subgraph(lib, drive, 2, "async")


@scenario
def subgraph_depth2_exit(lib, drive):
    return _in_subgraph(lib, drive, 2, "exit")


@scenario
def stateful_subgraph_depth2_sync(lib, drive):
    return _in_subgraph(lib, drive, 2, "sync", checkpointer=True)


@scenario
def subgraph_depth3_async(lib, drive):
    return _in_subgraph(lib, drive, 3, "async")


# --- a finished task is not run again (docs/differences.md) ---------------------------------
#
# LangGraph 1.1.6 reuses a paused step's finished writes only at the root of a resume
# given the thread alone: a subgraph's run starts as a replay (it runs the finished
# siblings of its paused step again), and so does a root run given a ``checkpoint_id``
# — the head's own config, ``graph.get_state(cfg).config``, included — which also runs
# a paused subgraph from its start. pausepoint reuses them everywhere.


def _updates_of(chunks: list[Any], node: str, depth: int) -> list[Any]:
    """The ``updates`` chunks naming ``node``, ``depth`` namespace levels down."""
    return [c[2] for c in chunks if c[1] == "updates" and len(c[0]) == depth and node in c[2]]


def _fan_inside(lib: Any, drive: Any, depth: int, **compile_kw: Any) -> Any:
    rec = _in_subgraph(lib, drive, depth, "async", fan=True, **compile_kw)
    return {
        "runs": rec["runs"],
        "a_updates": _updates_of(rec["resumed"], "a", depth),
        "a_results": [
            c[2]["payload"]["name"]
            for c in rec["resumed"]
            if c[1] == "debug" and c[2]["type"] == "task_result" and c[2]["payload"]["name"] == "a"
        ],
    }


def _sibling_ran(again: bool) -> Any:
    def check(rec: dict[str, Any]) -> None:
        assert rec["runs"]["a"] == (2 if again else 1), rec["runs"]
        assert (rec["runs"]["b"], rec["runs"]["w"]) == (2, 1), rec["runs"]
        update = {"a": {"log": ["a"]}}
        assert rec["a_updates"] == (
            [update] if again else [{**update, "__metadata__": {"cached": True}}]
        )
        assert rec["a_results"] == (["a"] if again else [])

    return check


@scenario.differs(langgraph=_sibling_ran(True), pausepoint=_sibling_ran(False))
def finished_sibling_in_subgraph_depth1(lib, drive):
    return _fan_inside(lib, drive, 1)


@scenario.differs(langgraph=_sibling_ran(True), pausepoint=_sibling_ran(False))
def finished_sibling_in_subgraph_depth2(lib, drive):
    return _fan_inside(lib, drive, 2)


@scenario.differs(langgraph=_sibling_ran(True), pausepoint=_sibling_ran(False))
def finished_sibling_in_stateful_subgraph_depth2(lib, drive):
    return _fan_inside(lib, drive, 2, checkpointer=True)


def _head_config_graph(lib: Any, drive: Any, runs: Counter[str], depth: int, stateful: Any) -> Any:
    """Root ``pre -> (sub1 || par) -> post``; ``sub1`` asks ``depth`` levels down
    (``depth`` 0: ``sub1`` is a plain node that asks)."""
    b = lib.StateGraph(Log)
    b.add_node("pre", _worker(runs, "pre"))
    if depth:
        b.add_node(
            "sub1", _nested(lib, runs, depth, _asking(lib, runs, False), checkpointer=stateful)
        )
    else:
        b.add_node("sub1", _asker(lib, runs, "b"))
    b.add_node("par", _worker(runs, "par"))
    b.add_node("post", _worker(runs, "post"))
    b.add_edge(lib.START, "pre")
    b.add_edge("pre", "sub1")
    b.add_edge("pre", "par")
    b.add_edge(["sub1", "par"], "post")
    return b.compile(checkpointer=drive.saver())


def _resume_with_head_config(lib: Any, drive: Any, depth: int, stateful: Any = None) -> Any:
    runs: Counter[str] = Counter()
    g = _head_config_graph(lib, drive, runs, depth, stateful)
    drive.invoke(g, {"log": []}, thread())
    head = drive.get_state(g, thread()).config
    runs.clear()
    out = drive.invoke(g, lib.Command(resume="B"), head)
    return {"out": out, "runs": dict(runs), "seen": observe(drive, g, thread())}


def _head_resumed(again: bool, depth: int) -> Any:
    """``par`` (and, in a subgraph, the nodes before the question) ran again or not."""
    finished = ["par", *(f"m{k}" for k in range(1, depth)), *(["before"] if depth else [])]

    def check(rec: dict[str, Any]) -> None:
        expected = dict.fromkeys(finished, 1 if again else 0)
        assert {k: rec["runs"].get(k, 0) for k in finished} == expected, rec["runs"]
        assert (rec["runs"]["b"], rec["runs"]["post"]) == (1, 1), rec["runs"]
        assert rec["seen"]["state"][1]["next"] == (), rec["seen"]

    return check


@scenario.differs(langgraph=_head_resumed(True, 0), pausepoint=_head_resumed(False, 0))
def resume_with_head_config_plain(lib, drive):
    return _resume_with_head_config(lib, drive, 0)


@scenario.differs(langgraph=_head_resumed(True, 1), pausepoint=_head_resumed(False, 1))
def resume_with_head_config_subgraph_depth1(lib, drive):
    return _resume_with_head_config(lib, drive, 1)


@scenario.differs(langgraph=_head_resumed(True, 2), pausepoint=_head_resumed(False, 2))
def resume_with_head_config_subgraph_depth2(lib, drive):
    return _resume_with_head_config(lib, drive, 2)


@scenario.differs(langgraph=_head_resumed(True, 2), pausepoint=_head_resumed(False, 2))
def resume_with_head_config_stateful_subgraph_depth2(lib, drive):
    return _resume_with_head_config(lib, drive, 2, stateful=True)


def _head_config_seen(lib: Any, drive: Any, depth: int, stateful: Any = None) -> Any:
    """What the user sees of a resume given the head's config, but the run counts: the
    same on both libraries (no fork, the same result, snapshots and histories)."""
    rec = _resume_with_head_config(lib, drive, depth, stateful)
    del rec["runs"]
    return rec


@scenario
def resume_with_head_config_plain_seen(lib, drive):
    return _head_config_seen(lib, drive, 0)


@scenario
def resume_with_head_config_subgraph_depth2_seen(lib, drive):
    return _head_config_seen(lib, drive, 2)


@scenario
def resume_with_head_config_stateful_subgraph_depth2_seen(lib, drive):
    return _head_config_seen(lib, drive, 2, stateful=True)


# --- @task calls in an @entrypoint ----------------------------------------------------------


def _entrypoint(lib: Any, drive: Any, durability: str) -> Any:
    func = __import__(f"{lib.name}.func", fromlist=["entrypoint", "task"])
    runs: Counter[str] = Counter()

    @func.task
    def double(x: int) -> int:
        runs["double"] += 1
        return 2 * x

    @func.task
    def ask(x: int) -> Any:
        return lib.interrupt(f"ok {x}?")

    @func.entrypoint(checkpointer=drive.saver())
    def flow(n: int) -> list[Any]:
        a = double(n).result()
        return [a, ask(a).result()]

    kw: dict[str, Any] = {"stream_mode": ALL_MODES, "durability": durability}
    first = _stream(drive, flow, 3, **kw)
    resumed = _stream(drive, flow, lib.Command(resume="yes"), **kw)
    return {"first": first, "resumed": resumed, "runs": dict(runs)}


@scenario
def entrypoint_task_calls_sync(lib, drive):
    return _entrypoint(lib, drive, "sync")


@scenario
def entrypoint_task_calls_async(lib, drive):
    return _entrypoint(lib, drive, "async")


@scenario
def entrypoint_task_calls_exit(lib, drive):
    return _entrypoint(lib, drive, "exit")


test_resume_events = scenario.test()
