"""Issue 30, items 1 and 7: which checkpoint namespace each subgraph run of a task uses,
and which saver a subgraph with a saver of its own saves to.

Item 1: a node function that runs two compiled subgraphs (two different ones, the same
one twice, one in a loop) gives each run its own namespace, as LangGraph 1.1.6 does: the
first run's is the task's, ``node:<task id>``, each later one adds ``|<n>``
(``node:<task id>|1``). Before, every run shared the first one's, so after the first
subgraph's question was answered the second found its finished checkpoint and never
asked. Each scenario answers every question in turn and records what a user observes:
results (or stream chunks with ``subgraphs=True``), ``get_state`` with and without
``subgraphs=True`` while each subgraph waits, the namespaces saved, the root's history
and each subgraph namespace's history. The calls nest: at depth ``d`` the root's node
runs a subgraph asking ``z1`` and then the level below, whose node does the same, down
to the innermost node, which runs the two subgraphs — so ``|1`` also appears in the
middle of a namespace.

Item 7: a subgraph compiled with a saver of its own and run inside a parent (from a node
function, or as a node) saves to its parent's saver, as in LangGraph: its own is used
only when it runs as a root graph. So ``get_state(subgraphs=True)`` shows its snapshot,
and its history and ``update_state`` through the parent work as for any subgraph.
"""

import importlib
import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import SAVERS, Scenarios, catch, thread
from ._subgraph_kit import namespace_only, namespaces

scenario = Scenarios(savers=SAVERS, mask_task_ids=True)


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _asker(lib: Any, tag: str, **compile_kw: Any) -> Any:
    """A subgraph whose one node asks ``tag`` and logs the answer."""
    b = lib.StateGraph(Log)
    b.add_node("q", lambda s: {"log": [f"{tag}={lib.interrupt(tag)}"]})
    b.add_edge(lib.START, "q")
    return b.compile(**compile_kw)


def _caller(lib: Any, drive: Any, name: str, first: Any, second: Any) -> Any:
    """A graph whose node ``name`` runs ``first`` and then ``second`` from its function."""
    if drive.is_async:

        async def acall(state: Log) -> Log:
            one = await first.ainvoke({"log": []})
            two = await second.ainvoke({"log": []})
            return {"log": one["log"] + two["log"]}

        fn: Any = acall
    else:

        def call(state: Log) -> Log:
            one = first.invoke({"log": []})
            two = second.invoke({"log": []})
            return {"log": one["log"] + two["log"]}

        fn = call
    b = lib.StateGraph(Log)
    b.add_node(name, fn)
    b.add_edge(lib.START, name)
    return b


def _looper(lib: Any, drive: Any, sub: Any, times: int) -> Any:
    """A root graph whose node ``loop`` runs ``sub`` ``times`` times."""
    if drive.is_async:

        async def aloop(state: Log) -> Log:
            got: list[str] = []
            for _ in range(times):
                got += (await sub.ainvoke({"log": []}))["log"]
            return {"log": got}

        fn: Any = aloop
    else:

        def loop(state: Log) -> Log:
            got: list[str] = []
            for _ in range(times):
                got += sub.invoke({"log": []})["log"]
            return {"log": got}

        fn = loop
    b = lib.StateGraph(Log)
    b.add_node("loop", fn)
    b.add_edge(lib.START, "loop")
    return b.compile(checkpointer=drive.saver())


def _two_calls(lib: Any, drive: Any, depth: int, same: bool = False, **sub_kw: Any) -> Any:
    """The root graph: ``depth`` levels of nodes that each run two subgraphs.

    The innermost node runs ``a`` then ``b`` (``a`` twice when ``same``); a node above
    runs ``z<level>`` then the level below.
    """
    a = _asker(lib, "a", **sub_kw)
    inner = _caller(lib, drive, f"call{depth}", a, a if same else _asker(lib, "b", **sub_kw))
    for level in range(depth - 1, 0, -1):
        below = inner.compile(**sub_kw)
        inner = _caller(lib, drive, f"call{level}", _asker(lib, f"z{level}", **sub_kw), below)
    return inner.compile(checkpointer=drive.saver())


def _read_alike(ns: str, depth: int) -> bool:
    """Whether both libraries read namespace ``ns`` of a `_two_calls` graph of ``depth``
    with the graph that wrote it.

    Only the first run of ``call1`` (at depth 1, each run: two askers of one shape) is:
    its later runs (``|1``) run the level below, not the ``z1`` asker the function
    names first, so LangGraph reads them with that asker (no tasks) and finds no
    namespace under them (``call2``), while pausepoint reads each with the graph that
    wrote it (docs/differences.md; pinned by ``later_run_read_with_its_own_graph_*``).
    """
    parts = ns.split("|")
    names = [p.split(":")[0] for p in parts if not p.isdigit()]
    return names == ["call1"] and (depth == 1 or len(parts) == 1)


def _answer_all(
    lib: Any,
    drive: Any,
    g: Any,
    *,
    by_id: bool = False,
    stream: bool | list[str] = False,
    depth: int = 0,
) -> dict[str, Any]:
    """Run ``g`` and answer each question (``A0``, ``A1``, ...) until it ends.

    ``stream``: run with ``stream(subgraphs=True)`` (in these modes, or updates and
    values) rather than ``invoke``. ``depth``: ``g`` is a `_two_calls` graph of that
    depth; the histories of namespaces LangGraph reads with another graph are left out
    (`_read_alike`).
    """
    steps: list[Any] = []
    inp: Any = {"log": []}
    for i in range(12):
        if stream:
            modes = stream if isinstance(stream, list) else ["updates", "values"]
            out = drive.stream(g, inp, thread(), stream_mode=modes, subgraphs=True)
        else:
            out = drive.invoke(g, inp, thread())
        plain = drive.get_state(g, thread())
        deep = drive.get_state(g, thread(), subgraphs=True)
        steps.append({"out": out, "state": plain, "deep": deep})
        if not plain.next:
            break
        answer = f"A{i}"
        inp = lib.Command(resume={plain.interrupts[0].id: answer} if by_id else answer)
    saved = namespaces(drive, g.checkpointer)
    read = [ns for ns in saved if ns and (not depth or _read_alike(ns, depth))]
    subs = {ns: catch(drive.history, g, thread(checkpoint_ns=ns)) for ns in read}
    return {
        "steps": steps,
        "namespaces": saved,
        "history": drive.history(g, thread()),
        "sub_histories": subs,
    }


# --- item 1: several subgraph runs in one task ---------------------------------------------


@scenario
def two_subgraphs_in_one_node_depth1(lib, drive):
    return _answer_all(lib, drive, _two_calls(lib, drive, 1), depth=1)


@scenario
def two_subgraphs_in_one_node_depth2(lib, drive):
    return _answer_all(lib, drive, _two_calls(lib, drive, 2), depth=2)


@scenario
def two_subgraphs_in_one_node_depth3(lib, drive):
    return _answer_all(lib, drive, _two_calls(lib, drive, 3), depth=3)


@scenario
def same_subgraph_twice_in_one_node_depth1(lib, drive):
    return _answer_all(lib, drive, _two_calls(lib, drive, 1, same=True), depth=1)


@scenario
def same_subgraph_twice_in_one_node_depth2(lib, drive):
    return _answer_all(lib, drive, _two_calls(lib, drive, 2, same=True), depth=2)


@scenario
def two_subgraphs_answered_by_id_depth2(lib, drive):
    return _answer_all(lib, drive, _two_calls(lib, drive, 2), by_id=True, depth=2)


@scenario
def two_subgraphs_streamed_with_subgraphs_depth1(lib, drive):
    return _answer_all(lib, drive, _two_calls(lib, drive, 1), stream=True, depth=1)


@scenario
def two_subgraphs_streamed_with_subgraphs_depth3(lib, drive):
    return _answer_all(lib, drive, _two_calls(lib, drive, 3), stream=True, depth=3)


@scenario
def two_subgraphs_streamed_debug_events_depth2(lib, drive):
    """``checkpoints``/``tasks``/``debug`` events name each run's namespace and map."""
    modes = ["checkpoints", "tasks", "debug"]
    return _answer_all(lib, drive, _two_calls(lib, drive, 2), stream=modes, depth=2)


def _later_run(lib: Any, drive: Any, depth: int) -> dict[str, Any]:
    """Answer ``z1``: the root node's second run (``call1:<id>|1``, the level below, not
    the ``z1`` asker the function names first) now waits. Read that namespace (state,
    deep state, history, the history of the namespace under it), then answer everything
    and update it."""
    g = _two_calls(lib, drive, depth)
    drive.invoke(g, {"log": []}, thread())
    drive.invoke(g, lib.Command(resume="A0"), thread())
    saved = namespaces(drive, g.checkpointer)
    later = next(ns for ns in saved if ns.count("|") == 1 and ns.endswith("|1"))
    under = next(ns for ns in saved if ns.startswith(later + "|") and ns.count("|") == 2)
    rec: dict[str, Any] = {
        "state": drive.get_state(g, thread(checkpoint_ns=later)),
        "deep": drive.get_state(g, thread(checkpoint_ns=later), subgraphs=True),
        "history": drive.history(g, thread(checkpoint_ns=later)),
        "under": catch(drive.history, g, thread(checkpoint_ns=under)),
    }
    for i in range(1, 8):
        if not drive.get_state(g, thread()).next:
            break
        rec["final"] = drive.invoke(g, lib.Command(resume=f"A{i}"), thread())
    rec["update"] = catch(drive.update_state, g, thread(checkpoint_ns=later), {"log": ["e"]})
    rec["after_update"] = drive.get_state(g, thread(checkpoint_ns=later))
    return rec


def _read_with(waits: tuple[str, str] | None, final: list[str]) -> Any:
    """The check of `_later_run`'s record: the later run's namespace read with the graph
    that wrote it (``waits``: the node waiting there and its question; the namespace
    under it read too, and updated), or (None) with the first asker, which knows none
    of its nodes (nor the namespaces under it)."""

    def check(rec: dict[str, Any]) -> None:
        state, deep, history = rec["state"][1], rec["deep"][1], rec["history"]
        assert rec["final"] == {"log": final}, rec["final"]
        task_names = {t[1]["name"] for h in history for t in h[1]["tasks"]}
        if waits is None:
            assert (state["next"], state["tasks"], state["interrupts"]) == ((), (), ())
            assert deep["tasks"] == ()
            assert task_names == {"__start__"}, task_names
            assert rec["under"][:2] == ("raised", "ValueError"), rec["under"]
            # The update is written as the asker's node: now it waits to run there.
            assert rec["after_update"][1]["next"] == ("q",), rec["after_update"]
            return
        node, question = waits
        assert state["next"] == (node,), state
        assert [i[1] for i in state["interrupts"]] == [question], state
        assert deep["tasks"][0][1]["state"][1]["next"] == ("q",), deep["tasks"]
        assert node in task_names, task_names
        assert isinstance(rec["under"], list), rec["under"]
        assert rec["under"], rec["under"]
        assert isinstance(rec["update"], dict), rec["update"]  # the new config
        after = rec["after_update"][1]
        assert (after["values"]["log"][-1], after["next"]) == ("e", ()), after

    return check


# docs/differences.md: a node's function that runs two different subgraphs. LangGraph
# reads each run's namespace with the first graph the function names: the second run's
# shows no task and no question, the namespaces under it are "not found", and
# update_state there writes as the first graph's node (which then waits to run).
# pausepoint reads and updates each with the graph that wrote it (its checkpoints
# carry its fingerprint).
@scenario.differs(
    langgraph=_read_with(None, ["z1=A0", "a=A1", "b=A2"]),
    pausepoint=_read_with(("call2", "a"), ["z1=A0", "a=A1", "b=A2"]),
)
def later_run_read_with_its_own_graph_depth2(lib, drive):
    return _later_run(lib, drive, 2)


@scenario.differs(
    langgraph=_read_with(None, ["z1=A0", "z2=A1", "a=A2", "b=A3"]),
    pausepoint=_read_with(("call2", "z2"), ["z1=A0", "z2=A1", "a=A2", "b=A3"]),
)
def later_run_read_with_its_own_graph_depth3(lib, drive):
    return _later_run(lib, drive, 3)


def _replayed(lib: Any, drive: Any, depth: int) -> dict[str, Any]:
    """Answer every question, then replay the root checkpoint where the node asked
    (``invoke(None)``: each subgraph run starts afresh) and answer anew there; the new
    branch then goes on at the thread's head."""
    g = _two_calls(lib, drive, depth)
    first = _answer_all(lib, drive, g)
    old = next(h for h in drive.history(g, thread()) if h.next == ("call1",) and h.interrupts)
    outs = [drive.invoke(g, None, old.config)]
    for i in range(8):
        at = old.config if i == 0 else thread()
        out = catch(drive.invoke, g, lib.Command(resume=f"N{i}"), at)
        outs.append(out)
        if not isinstance(out, dict) or "__interrupt__" not in out:
            break
    return {
        "first": first["steps"][-1]["out"],
        "again": outs,
        "namespaces": namespaces(drive, g.checkpointer),
        "history": drive.history(g, thread()),
    }


@scenario
def replay_asks_again_in_a_second_subgraph_run(lib, drive):
    """The node's first subgraph run asks nothing, its second asks: a replay of the root
    checkpoint where it asked runs both afresh, so the question is asked again."""
    b = lib.StateGraph(Log)
    b.add_node("x", lambda s: {"log": ["x"]})
    b.add_edge(lib.START, "x")
    g = _caller(lib, drive, "call1", b.compile(), _asker(lib, "b"))
    g = g.compile(checkpointer=drive.saver())
    first = _answer_all(lib, drive, g)
    old = next(h for h in drive.history(g, thread()) if h.next == ("call1",) and h.interrupts)
    replayed = drive.invoke(g, None, old.config)
    return {
        "first": first["steps"][-1]["out"],
        "replayed": replayed,
        "state": drive.get_state(g, thread(), subgraphs=True),
        "namespaces": namespaces(drive, g.checkpointer),
    }


def _asked_again(questions: list[str], final: list[str]) -> Any:
    def check(rec: dict[str, Any]) -> None:
        *asked, last = rec["again"]
        assert [[i[1] for i in out["__interrupt__"]] for out in asked] == [[q] for q in questions]
        assert last == {"log": final}, last

    return check


# Both replay the node's subgraph runs afresh and ask each question again, in order. The
# first new answer goes to the old checkpoint: pausepoint forks there with it (DESIGN
# §4.2) and ends with the new answers; LangGraph asks the same questions (at depth 2 all
# but the last) and then ends with the old answers.
@scenario.differs(
    langgraph=_asked_again(["a", "b"], ["a=A0", "b=A1"]),
    pausepoint=_asked_again(["a", "b"], ["a=N0", "b=N1"]),
)
def replay_before_two_subgraphs_depth1(lib, drive):
    return _replayed(lib, drive, 1)


@scenario.differs(
    langgraph=_asked_again(["z1", "a"], ["z1=A0", "a=A1", "b=A2"]),  # "b" not asked
    pausepoint=_asked_again(["z1", "a", "b"], ["z1=N0", "a=N1", "b=N2"]),
)
def replay_before_two_subgraphs_depth2(lib, drive):
    return _replayed(lib, drive, 2)


@scenario
def subgraph_in_a_loop(lib, drive):
    return _answer_all(lib, drive, _looper(lib, drive, _asker(lib, "a"), 3))


@scenario
def stateful_subgraphs_twice_in_one_node_depth2(lib, drive):
    """``checkpointer=True``: the second run's namespace is ``node|1``, kept across runs."""
    g = _two_calls(lib, drive, 2, checkpointer=True)
    first = _answer_all(lib, drive, g, depth=2)
    again = catch(drive.invoke, g, {"log": []}, thread())
    return {"first": first, "again": again, "namespaces": namespaces(drive, g.checkpointer)}


@scenario
def unsaved_subgraph_counts_as_a_run(lib, drive):
    """A ``checkpointer=False`` subgraph run first still takes the task's namespace: the
    saved one run after it is the task's second run (``|1``), in events and checkpoints."""
    b = lib.StateGraph(Log)
    b.add_node("x", lambda s: {"log": ["x"]})
    b.add_edge(lib.START, "x")
    unsaved = b.compile(checkpointer=False)
    g = _caller(lib, drive, "call1", unsaved, _asker(lib, "b")).compile(checkpointer=drive.saver())
    return _answer_all(lib, drive, g, stream=True)


def _retried(lib: Any, drive: Any) -> dict[str, Any]:
    """A node runs ``x`` (no question), fails once, is retried, then runs ``b`` (asks)."""
    b = lib.StateGraph(Log)
    b.add_node("x", lambda s: {"log": ["x"]})
    b.add_edge(lib.START, "x")
    x, ask, attempts = b.compile(), _asker(lib, "b"), [0]

    def call(state: Log) -> Log:
        attempts[0] += 1
        got = x.invoke({"log": []})["log"]
        if attempts[0] == 1:
            raise ValueError("first attempt fails")
        return {"log": got + ask.invoke({"log": []})["log"]}

    policy = lib.RetryPolicy(initial_interval=0.001, jitter=False, retry_on=ValueError)
    g = lib.StateGraph(Log)
    g.add_node("call1", call, retry_policy=policy)
    g.add_edge(lib.START, "call1")
    graph = g.compile(checkpointer=drive.saver())
    first = drive.invoke(graph, {"log": []}, thread())
    final = drive.invoke(graph, lib.Command(resume="B"), thread())
    return {"first": first, "final": final, "namespaces": namespaces(drive, graph.checkpointer)}


def _retry_expect(final: list[str], runs: list[str]) -> Any:
    def check(rec: dict[str, Any]) -> None:
        assert [i[1] for i in rec["first"]["__interrupt__"]] == ["b"], rec["first"]
        assert rec["final"] == {"log": final}, rec["final"]
        assert rec["namespaces"] == ["", *runs], rec["namespaces"]

    return check


# docs/differences.md: each attempt of a retried node counts its subgraph runs from zero,
# so the resume finds the question where the attempt that asked it left it. LangGraph
# counts on across attempts: the resumed run's "b" finds "x"'s finished checkpoint of
# the second attempt ("|1") and the answer "B" is lost.
@scenario.differs(
    langgraph=_retry_expect(["x", "x"], ["call1:<task>", "call1:<task>|1", "call1:<task>|2"]),
    pausepoint=_retry_expect(["x", "x", "b=B"], ["call1:<task>", "call1:<task>|1"]),
    savers=("memory",),
)
def retried_node_counts_its_subgraph_runs_afresh(lib, drive):
    return _retried(lib, drive)


def _entrypoint_two_subgraphs(lib: Any, drive: Any, in_task: bool) -> Any:
    f = importlib.import_module(f"{lib.name}.func")
    a, b = _asker(lib, "a"), _asker(lib, "b")

    if drive.is_async:

        async def both(_: Any) -> list[str]:
            return (await a.ainvoke({"log": []}))["log"] + (await b.ainvoke({"log": []}))["log"]

        async def main(x: Any) -> list[str]:
            return (await f.task(both)(x)) if in_task else await both(x)

    else:

        def both(_: Any) -> list[str]:  # pyright: ignore[reportRedeclaration]
            return a.invoke({"log": []})["log"] + b.invoke({"log": []})["log"]

        def main(x: Any) -> list[str]:  # pyright: ignore[reportRedeclaration]
            return f.task(both)(x).result() if in_task else both(x)

    g = f.entrypoint(checkpointer=drive.saver())(main)
    steps: list[Any] = []
    inp: Any = 1
    for i in range(4):
        steps.append(drive.invoke(g, inp, thread()))
        state = drive.get_state(g, thread())
        if not state.next:
            break
        inp = lib.Command(resume=f"A{i}")
    return {"steps": steps, "namespaces": namespaces(drive, g.checkpointer)}


@scenario
def entrypoint_runs_two_subgraphs(lib, drive):
    return _entrypoint_two_subgraphs(lib, drive, in_task=False)


@scenario
def task_runs_two_subgraphs(lib, drive):
    return _entrypoint_two_subgraphs(lib, drive, in_task=True)


# --- item 7: a subgraph with a saver of its own, run inside a parent ------------------------


def _own_saver_graph(lib: Any, drive: Any, as_node: bool) -> tuple[Any, Any, Any]:
    own = drive.saver()
    sub = _asker(lib, "a", checkpointer=own)
    if as_node:
        b = lib.StateGraph(Log)
        b.add_node("call1", sub)
        b.add_edge(lib.START, "call1")
    else:
        b = _caller(lib, drive, "call1", sub, _asker(lib, "b"))
    return b.compile(checkpointer=drive.saver()), sub, own


def _own_saver(lib: Any, drive: Any, as_node: bool) -> dict[str, Any]:
    g, sub, own = _own_saver_graph(lib, drive, as_node)
    first = drive.invoke(g, {"log": []}, thread())
    deep = drive.get_state(g, thread(), subgraphs=True)
    sub_cfg = deep.tasks[0].state.config
    rec: dict[str, Any] = {
        "first": first,
        "deep": deep,
        "own_saver": namespaces(drive, own),
        "sub_history": drive.history(g, namespace_only(sub_cfg)),
        "sub_state_direct": catch(drive.get_state, sub, sub_cfg),
    }
    rec["update"] = catch(drive.update_state, g, sub_cfg, {"log": ["edited"]})
    rec["after_update"] = drive.get_state(g, thread(), subgraphs=True)
    rec["resumed"] = drive.invoke(g, lib.Command(resume="A0"), thread())
    if drive.get_state(g, thread()).next:
        rec["resumed_again"] = drive.invoke(g, lib.Command(resume="A1"), thread())
    rec["namespaces"] = namespaces(drive, g.checkpointer)
    rec["own_saver_after"] = namespaces(drive, own)
    rec["history"] = drive.history(g, thread())
    return rec


# ``update_state`` on the paused subgraph's config: pausepoint's new checkpoint still
# lists the question waiting there (docs/differences.md), LangGraph's lists none.
@scenario.carries()
def subgraph_with_own_saver_called_from_node(lib, drive):
    return _own_saver(lib, drive, as_node=False)


@scenario.carries()
def subgraph_with_own_saver_as_node(lib, drive):
    return _own_saver(lib, drive, as_node=True)


test_subgraph_parity_namespaces = scenario.test()
