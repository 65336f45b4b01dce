"""Issue 30: the order of a step's tasks, wherever a user sees it.

LangGraph 1.1.6 prepares a step's tasks as ``Send`` (push) tasks first, in the order of
their packets, then the triggered nodes (pull tasks). Those come sorted by node name
when the loop knows which channels the previous step changed — every step of a run,
and the first step after a load from a checkpoint that recorded them — and in graph
order (the order ``add_node`` was called) otherwise: a snapshot (``get_state``,
``get_state_history``) and the first step after a checkpoint that recorded no changed
channels (one ``update_state`` saved). What a user sees in that order: ``tasks`` /
``debug`` task events, a checkpoint event's ``next`` and ``tasks``, a snapshot's
``next``, ``tasks`` and ``interrupts``.

Writes are applied sorted by task path (pulls by node name, then pushes by packet
index), so a reducer that does not commute (``operator.add``) gives one result.
Events of tasks that *finish* (``task_result``, ``updates``, ``__interrupt__``) arrive as
the tasks finish, in either library: they are compared without their order.

Node names are deliberately added out of alphabetical order.
"""

import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import SAVERS, Scenarios, thread, unordered

scenario = Scenarios(savers=SAVERS, mask_task_ids=True)

MODES = ["tasks", "checkpoints", "updates", "values"]
PARALLEL = ("zeta", "alpha", "mid")
"""Added in this order, run in one step: graph order is not name order."""


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _worker(name: str) -> Any:
    def node(state: Log) -> dict[str, Any]:
        return {"log": [name]}

    return node


def _asker(lib: Any, name: str) -> Any:
    def node(state: Log) -> dict[str, Any]:
        return {"log": [f"{name}={lib.interrupt(f'{name}?')}"]}

    return node


def _fan(lib: Any, askers: tuple[str, ...] = (), sends: bool = False) -> Any:
    """START -> PARALLEL nodes (the ``askers`` among them interrupt) -> ``join``; with
    ``sends``, START also sends two packets to ``pushed`` (added last)."""
    b = lib.StateGraph(Log)
    for n in PARALLEL:
        b.add_node(n, _asker(lib, n) if n in askers else _worker(n))
    b.add_node("join", _worker("join"))
    for n in PARALLEL:
        b.add_edge(lib.START, n)
    b.add_edge(list(PARALLEL), "join")
    if sends:
        b.add_node("pushed", lambda arg: {"log": [f"pushed {arg}"]})
        b.add_conditional_edges(
            lib.START, lambda s: [lib.Send("pushed", 2), lib.Send("pushed", 1)], ["pushed"]
        )
    return b


def _chunk_view(chunk: Any) -> Any:
    """What a stream chunk shows of task order: names, in the order the library gave."""
    *ns, mode, data = chunk if isinstance(chunk, tuple) else (None, chunk)
    where = tuple(n.split(":")[0] for n in ns[0]) if ns and ns[0] else ()
    if mode == "tasks":
        if "input" in data:
            return (where, "task", data["name"])
        return (where, "result", data["name"])
    if mode == "checkpoints":
        return (where, "checkpoint", data["next"], [t["name"] for t in data["tasks"]])
    if mode == "debug":
        p = data["payload"]
        if data["type"] == "checkpoint":
            return (where, "checkpoint", p["next"], [t["name"] for t in p["tasks"]])
        return (where, data["type"], p["name"])
    if isinstance(data, dict) and "__interrupt__" in data:
        # A subgraph's questions reach its caller in the order its tasks' futures
        # come out of a set, in LangGraph: not observable.
        data = {**data, "__interrupt__": unordered(data["__interrupt__"])}
        if mode == "values":  # sent as a task pauses
            return (where, "updates", data)
    return (where, mode, data)


def _ordered(chunks: list[Any]) -> dict[Any, list[Any]]:
    """The stream per namespace (a subgraph's events interleave with its siblings'),
    with events of finishing tasks (results, updates) unordered: each run of them
    between two deterministic events becomes one ``unordered`` group."""
    out: dict[Any, list[Any]] = {}
    groups: dict[Any, list[Any]] = {}
    for view in map(_chunk_view, chunks):
        where = view[0]
        seq = out.setdefault(where, [])
        group = groups.setdefault(where, [])
        if view[1] in ("result", "task_result", "updates"):
            group.append(view[1:])
            continue
        if group:
            seq.append(unordered(group))
            groups[where] = []
        seq.append(view[1:])
    for where, group in groups.items():
        if group:
            out[where].append(unordered(group))
    return out


def _stream(drive: Any, g: Any, inp: Any, cfg: Any = None, **kw: Any) -> list[Any]:
    kw.setdefault("stream_mode", MODES)
    return _ordered(drive.stream(g, inp, cfg, **kw))


def _snapshot(drive: Any, g: Any, cfg: Any) -> Any:
    s = drive.get_state(g, cfg)
    # Only the questions still waiting: LangGraph lists also those a partial resume
    # answered (DESIGN §4.3).
    waiting = {i.id for t in s.tasks if t.result is None for i in t.interrupts}
    return {
        "next": s.next,
        "tasks": [t.name for t in s.tasks],
        "interrupts": [i.value for i in s.interrupts if i.id in waiting],
        "values": s.values,
    }


def _history(drive: Any, g: Any, cfg: Any) -> Any:
    return [(s.next, [t.name for t in s.tasks]) for s in drive.history(g, cfg)]


# --- a run ---------------------------------------------------------------------------


@scenario
def fresh_run_streams_a_step_by_name(lib, drive):
    g = _fan(lib).compile(checkpointer=drive.saver())
    cfg = thread()
    return {
        "stream": _stream(drive, g, {"log": []}, cfg),
        "debug": _stream(drive, g, {"log": []}, thread("d"), stream_mode=["debug"]),
        "history": _history(drive, g, cfg),
    }


@scenario(savers=("memory",))
def without_checkpointer(lib, drive):
    g = _fan(lib, sends=True).compile()
    return {
        "stream": _stream(drive, g, {"log": []}, stream_mode=["tasks", "updates", "values"]),
        "debug": _stream(drive, g, {"log": []}, stream_mode=["debug"]),
        "out": drive.invoke(g, {"log": []}),
    }


@scenario
def sends_come_first_then_pulls_by_name(lib, drive):
    """The result shows the order writes apply: pulls by name, then packets by index."""
    g = _fan(lib, sends=True).compile(checkpointer=drive.saver())
    cfg = thread()
    return {
        "stream": _stream(drive, g, {"log": []}, cfg),
        "debug": _stream(drive, g, {"log": []}, thread("d"), stream_mode=["debug"]),
        "history": _history(drive, g, cfg),
        "state": _snapshot(drive, g, cfg),
    }


@scenario
def conditional_fan_out_mixes_names_and_sends(lib, drive):
    """A router returning node names and packets: the names' tasks by name."""
    b = lib.StateGraph(Log)
    for n in ("yak", "cat", "ram", "pushed"):
        b.add_node(n, _worker(n))
    b.add_node("gate", _worker("gate"))
    b.add_edge(lib.START, "gate")
    route = ["yak", lib.Send("pushed", {"log": []}), "cat", "ram"]
    b.add_conditional_edges("gate", lambda s: route, ["yak", "cat", "ram", "pushed"])
    g = b.compile(checkpointer=drive.saver())
    cfg = thread()
    return {"stream": _stream(drive, g, {"log": []}, cfg), "history": _history(drive, g, cfg)}


# --- after a load ----------------------------------------------------------------------


@scenario
def interrupt_before_then_resume(lib, drive):
    """The step resumed from a loop checkpoint: by name (it recorded what changed)."""
    g = _fan(lib, sends=True).compile(checkpointer=drive.saver(), interrupt_before=["zeta"])
    cfg = thread()
    first = _stream(drive, g, {"log": []}, cfg)
    state = _snapshot(drive, g, cfg)
    return {
        "first": first,
        "state": state,
        "resumed": _stream(drive, g, None, cfg),
        "history": _history(drive, g, cfg),
    }


@scenario
def resume_after_update_state_runs_in_graph_order(lib, drive):
    """A checkpoint ``update_state`` saved records no changed channels: graph order."""
    g = _fan(lib).compile(checkpointer=drive.saver(), interrupt_before=["zeta"])
    cfg = thread()
    drive.invoke(g, {"log": []}, cfg)
    drive.update_state(g, cfg, {"log": ["edited"]})
    return {
        "state": _snapshot(drive, g, cfg),
        "resumed": _stream(drive, g, None, cfg),
        "debug_history": _history(drive, g, cfg),
    }


@scenario
def interrupt_after_a_step_then_resume(lib, drive):
    b = lib.StateGraph(Log)
    b.add_node("first", _worker("first"))
    for n in PARALLEL:
        b.add_node(n, _worker(n))
    b.add_edge(lib.START, "first")
    for n in PARALLEL:
        b.add_edge("first", n)
    g = b.compile(checkpointer=drive.saver(), interrupt_after=["first"])
    cfg = thread()
    first = _stream(drive, g, {"log": []}, cfg)
    return {
        "first": first,
        "state": _snapshot(drive, g, cfg),
        "resumed": _stream(drive, g, None, cfg, stream_mode=["debug"]),
    }


# --- parallel questions ----------------------------------------------------------------


def _answer_ids(lib: Any, drive: Any, g: Any, cfg: Any) -> dict[str, str]:
    return {i.value: i.id for i in drive.get_state(g, cfg).interrupts}


@scenario
def parallel_questions_answered_by_id(lib, drive):
    g = _fan(lib, askers=("zeta", "mid", "alpha"), sends=True).compile(checkpointer=drive.saver())
    cfg = thread()
    first = _stream(drive, g, {"log": []}, cfg)
    state = _snapshot(drive, g, cfg)
    ids = _answer_ids(lib, drive, g, cfg)
    part = _stream(drive, g, lib.Command(resume={ids["mid?"]: "M"}), cfg)
    mid = _snapshot(drive, g, cfg)
    rest = {ids["zeta?"]: "Z", ids["alpha?"]: "A"}
    last = _stream(drive, g, lib.Command(resume=rest), cfg, stream_mode=["debug"])
    return {
        "first": first,
        "state": state,
        "part": part,
        "mid": mid,
        "last": last,
        "end": _snapshot(drive, g, cfg),
        "history": _history(drive, g, cfg),
    }


@scenario
def parallel_questions_invoke_output(lib, drive):
    g = _fan(lib, askers=("zeta", "alpha")).compile(checkpointer=drive.saver())
    cfg = thread()
    out = drive.invoke(g, {"log": []}, cfg)
    ids = _answer_ids(lib, drive, g, cfg)
    state = _snapshot(drive, g, cfg)
    end = drive.invoke(g, lib.Command(resume={ids["zeta?"]: "Z", ids["alpha?"]: "A"}), cfg)
    return {
        "out": {**out, "__interrupt__": unordered(i.value for i in out["__interrupt__"])},
        "state": state,
        "end": end,
    }


# --- in a subgraph ---------------------------------------------------------------------


def _nested(lib: Any, depth: int, inner: Any) -> Any:
    """``inner`` (a builder) wrapped ``depth`` levels deep: each level ``zz_sub -> done``."""
    graph = inner.compile()
    for level in range(depth - 1):
        b = lib.StateGraph(Log)
        b.add_node("zz_sub", graph)
        b.add_node("done", _worker(f"done{level}"))
        b.add_edge(lib.START, "zz_sub")
        b.add_edge("zz_sub", "done")
        graph = b.compile()
    return graph


def _started(stream: dict[Any, list[Any]]) -> dict[Any, list[Any]]:
    """``stream`` without its finishing tasks' events: a resumed subgraph runs its
    finished tasks again in LangGraph (docs/differences.md)."""
    return {ns: [e for e in seq if not isinstance(e, list)] for ns, seq in stream.items()}


def _in_subgraph(lib: Any, drive: Any, depth: int) -> Any:
    """Root: ``zz_sub`` (the fan, ``depth`` levels down) beside ``aa`` and ``mm``."""
    root = lib.StateGraph(Log)
    root.add_node("zz_sub", _nested(lib, depth, _fan(lib, askers=("zeta", "alpha"), sends=True)))
    root.add_node("mm", _worker("mm"))
    root.add_node("aa", _worker("aa"))
    for n in ("zz_sub", "mm", "aa"):
        root.add_edge(lib.START, n)
    g = root.compile(checkpointer=drive.saver())
    cfg = thread()
    first = _stream(drive, g, {"log": []}, cfg, subgraphs=True)
    state = drive.get_state(g, cfg, subgraphs=True)
    inner = state
    while inner.tasks and inner.tasks[0].state is not None:
        inner = next(t.state for t in inner.tasks if t.state is not None)
    ids = {i.value: i.id for i in state.interrupts}
    part = _stream(drive, g, lib.Command(resume={ids["zeta?"]: "Z"}), cfg, subgraphs=True)
    last = _stream(drive, g, lib.Command(resume={ids["alpha?"]: "A"}), cfg, subgraphs=True)
    return {
        "first": _started(first),
        "root": (state.next, [t.name for t in state.tasks]),
        "inner": (inner.next, [t.name for t in inner.tasks], [i.value for i in inner.interrupts]),
        "part": _started(part),
        "last": _started(last),
        "values": drive.get_state(g, cfg).values,
    }


@scenario
def subgraph_depth1(lib, drive):
    return _in_subgraph(lib, drive, 1)


@scenario
def subgraph_depth2(lib, drive):
    return _in_subgraph(lib, drive, 2)


@scenario
def subgraph_depth3(lib, drive):
    return _in_subgraph(lib, drive, 3)


test_task_order = scenario.test()
