"""Graphs and observations shared by the subgraph parity scenarios (issue 16).

Graph builders take ``lib`` (the library under test) and ``drive`` (whose ``saver()``
gives the scenario's checkpoint saver). Observation helpers return the objects a user
sees — snapshots, histories, raw checkpoint namespaces — and leave the comparison to
the harness's normaliser.
"""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Any

from typing_extensions import TypedDict

from ._harness import Drive, mask_namespace, thread


class Logged(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


START_VALUES: dict[str, Any] = {"x": 0, "log": []}


def counted(runs: Counter[str], tag: str, fn: Any) -> Any:
    """``fn`` as a node that counts its runs under ``tag``."""

    def node(state: Any) -> Any:
        runs[tag] += 1
        return fn(state)

    return node


def asker(lib: Any, runs: Counter[str], prefix: str, **compile_kw: Any) -> Any:
    """``before -> ask -> after`` on ``Logged``: ``ask`` interrupts with ``prefix``."""
    b = lib.StateGraph(Logged)
    b.add_node("before", counted(runs, f"{prefix}.before", lambda s: {"log": [f"{prefix}.b"]}))
    b.add_node(
        "ask",
        counted(runs, f"{prefix}.ask", lambda s: {"log": [f"{prefix}={lib.interrupt(prefix)}"]}),
    )
    b.add_node("after", counted(runs, f"{prefix}.after", lambda s: {"x": s["x"] + 1}))
    b.add_edge(lib.START, "before")
    b.add_edge("before", "ask")
    b.add_edge("ask", "after")
    return b.compile(**compile_kw)


def nested(lib: Any, runs: Counter[str], depth: int, **compile_kw: Any) -> Any:
    """A subgraph ``depth`` levels deep: levels ``sub1 > sub2 > ...``, the innermost an
    ``asker`` named ``q<depth>``; each outer level runs ``m<k>`` then ``sub<k+1>``.

    ``compile_kw`` applies to every level (e.g. ``checkpointer=True``).
    """
    inner = asker(lib, runs, f"q{depth}", **compile_kw)
    for level in range(depth - 1, 0, -1):
        b = lib.StateGraph(Logged)
        b.add_node(f"m{level}", counted(runs, f"m{level}", lambda s, k=level: {"log": [f"m{k}"]}))
        b.add_node(f"sub{level + 1}", inner)
        b.add_edge(lib.START, f"m{level}")
        b.add_edge(f"m{level}", f"sub{level + 1}")
        inner = b.compile(**compile_kw)
    return inner


def rooted(lib: Any, drive: Drive, runs: Counter[str], child: Any, **compile_kw: Any) -> Any:
    """The root graph ``pre -> sub1 (child) -> post`` on the scenario's saver."""
    b = lib.StateGraph(Logged)
    b.add_node("pre", counted(runs, "pre", lambda s: {"log": ["pre"]}))
    b.add_node("sub1", child)
    b.add_node("post", counted(runs, "post", lambda s: {"log": ["post"]}))
    b.add_edge(lib.START, "pre")
    b.add_edge("pre", "sub1")
    b.add_edge("sub1", "post")
    return b.compile(checkpointer=drive.saver(), **compile_kw)


def deep_graph(lib: Any, drive: Drive, runs: Counter[str], depth: int, **kw: Any) -> Any:
    """``rooted(nested(depth))``: the interrupt waits ``depth`` subgraph levels down."""
    return rooted(lib, drive, runs, nested(lib, runs, depth, **kw))


def answered(lib: Any, drive: Drive, depth: int) -> tuple[Any, Counter[str], Any, Any]:
    """A ``deep_graph(depth)`` thread paused at ``q<depth>``, then answered ``"a"``.

    Returns the graph, its run counter (cleared), the paused innermost subgraph's
    config (taken while it waited) and the first run's result.
    """
    runs: Counter[str] = Counter()
    g = deep_graph(lib, drive, runs, depth)
    first = drive.invoke(g, START_VALUES, thread())
    paused = sub_config(drive, g, thread(), depth)
    drive.invoke(g, lib.Command(resume="a"), thread())
    runs.clear()
    return g, runs, paused, first


# --- observations ----------------------------------------------------------------------


def chain(snapshot: Any) -> list[Any]:
    """The nested snapshots under ``snapshot`` (``get_state(subgraphs=True)``), outermost
    first, following the first task whose ``state`` is a snapshot at each level."""
    found: list[Any] = []
    current = snapshot
    while True:
        states = [t.state for t in current.tasks if hasattr(t.state, "values")]
        if not states:
            return found
        current = states[0]
        found.append(current)


def sub_config(drive: Drive, graph: Any, config: Any, depth: int) -> Any:
    """The config of the paused subgraph ``depth`` levels down (1 = a child of the root)."""
    return chain(drive.get_state(graph, config, subgraphs=True))[depth - 1].config


def namespace_only(config: Any) -> dict[str, Any]:
    """``config`` without ``checkpoint_id``/``checkpoint_map``: the whole namespace's
    history rather than one checkpoint of it."""
    conf = config["configurable"]
    return thread(conf["thread_id"], checkpoint_ns=conf.get("checkpoint_ns", ""))


def observe(drive: Drive, graph: Any, config: Any) -> dict[str, Any]:
    """Everything a user can inspect of a thread: the nested head snapshot, the root's
    history, and the history of every subgraph namespace the snapshot shows."""
    deep = drive.get_state(graph, config, subgraphs=True)
    subs = {
        s.config["configurable"]["checkpoint_ns"]: drive.history(graph, namespace_only(s.config))
        for s in chain(deep)
    }
    return {"state": deep, "history": drive.history(graph, config), "sub_histories": subs}


def namespaces(drive: Drive, saver: Any) -> list[str]:
    """The namespaces the saver holds checkpoints in, sorted, each once per distinct
    namespace (so a stable namespace and a per-run one differ in count)."""
    found = {t.config["configurable"]["checkpoint_ns"] for t in drive.list_checkpoints(saver)}
    return sorted(found, key=lambda ns: mask_namespace(ns) or ns)


def values_and_next(snapshots: list[Any]) -> list[tuple[Any, Any]]:
    return [(s.values, s.next) for s in snapshots]


def hide_stateful_task_states(obj: Any, names: set[str]) -> Any:
    """``obj`` with the config a history task of a ``checkpointer=True`` subgraph node
    (named in ``names``) holds as its ``state`` replaced by a marker.

    LangGraph 1.1.6 puts the per-task namespace ``"<node>:<task id>"`` there although
    the stateful subgraph saves under the stable ``"<node>"`` (passed back, the config
    still resolves to it); a namespace naming where the checkpoints are is as right, so
    neither is required. Snapshots nested under ``get_state(subgraphs=True)`` are kept.
    """
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        fields: tuple[str, ...] = obj._fields
        is_task = type(obj).__name__ == "PregelTask"
        if is_task and obj.name in names and isinstance(obj.state, dict):
            return obj._replace(state="<stateful subgraph config>")
        changed = {f: hide_stateful_task_states(getattr(obj, f), names) for f in fields}
        return obj._replace(**changed)
    if isinstance(obj, dict):
        return {k: hide_stateful_task_states(v, names) for k, v in obj.items()}
    if isinstance(obj, list):
        return type(obj)(hide_stateful_task_states(x, names) for x in obj)
    if isinstance(obj, tuple):
        return tuple(hide_stateful_task_states(x, names) for x in obj)
    return obj
