"""Issue 16, families 7 and 8: stream events from and around subgraphs.

Family 7: ``stream_mode="debug"`` / ``"checkpoints"`` / ``"tasks"`` events from
subgraphs (``subgraphs=True``) carry ``checkpoint_map`` and the subgraph task's
``state``, and describe the same checkpoints ``get_state_history`` returns — also with
``durability="exit"``, where no event may name a parent checkpoint that was never saved.
Each record holds the events, the histories, and the mismatches found by checking one
against the other in the same library (``[]`` on LangGraph 1.1.6).

LangGraph 1.1.6 quirk left out on purpose: under ``durability="exit"`` every debug
``checkpoint`` event has ``parent_config`` ``None``, while ``get_state_history`` links
a resumed run's checkpoint to the one the paused run saved. The exit-mode scenarios
hide the events' ``parent_config`` (root and subgraphs) and only require that no
event names a checkpoint that was never saved.

Family 8: a subgraph stopped at its own static breakpoint emits no ``{"<node>": None}``
update in the parent's ``updates`` stream; ``Command(graph=Command.PARENT, goto=...)``
from a subgraph node keeps the parent's static edges from the subgraph's node.
"""

import operator
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import SAVERS, Scenarios, catch, thread, unordered
from ._subgraph_kit import START_VALUES, deep_graph, namespace_only, observe

scenario = Scenarios(savers=SAVERS, mask_task_ids=True)

F7 = "issue 16 family 7: "
F8 = "issue 16 family 8: "


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _plain_nested(lib: Any, drive: Any, depth: int) -> Any:
    """``p -> sub1`` where ``sub1`` nests ``depth`` levels, each level's node logging."""
    b = lib.StateGraph(Log)
    b.add_node(f"c{depth}", lambda s: {"log": [f"c{depth}"]})
    b.add_edge(lib.START, f"c{depth}")
    inner = b.compile()
    for level in range(depth - 1, 0, -1):
        b = lib.StateGraph(Log)
        b.add_node(f"c{level}", lambda s, k=level: {"log": [f"c{k}"]})
        b.add_node(f"sub{level + 1}", inner)
        b.add_edge(lib.START, f"c{level}")
        b.add_edge(f"c{level}", f"sub{level + 1}")
        inner = b.compile()
    b = lib.StateGraph(Log)
    b.add_node("p", lambda s: {"log": ["p"]})
    b.add_node("sub1", inner)
    b.add_edge(lib.START, "p")
    b.add_edge("p", "sub1")
    return b.compile(checkpointer=drive.saver())


def _checkpoint_payloads(events: list[Any]) -> dict[str, list[Any]]:
    """The payloads of debug ``checkpoint`` events, by namespace (``"|"``-joined)."""
    found: dict[str, list[Any]] = {}
    for item in events:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], dict):
            ns, event = item
            if event.get("type") == "checkpoint":
                found.setdefault("|".join(ns), []).append(event["payload"])
    return found


def _checkpoint_id(config: Any) -> Any:
    return (config or {}).get("configurable", {}).get("checkpoint_id")


def _mismatches(payloads: list[Any], history: list[Any], *, exit_mode: bool = False) -> list[Any]:
    """Where a history snapshot and the event about its checkpoint disagree.

    With ``exit_mode`` an event may leave its parent out (``None``), as LangGraph does
    for every event under ``durability="exit"`` even where history links the checkpoint
    to one an earlier run saved; it still may not name a checkpoint never saved.
    """
    by_id = {_checkpoint_id(p["config"]): p for p in payloads}
    saved_ids = {_checkpoint_id(h.config) for h in history}
    found: list[Any] = []
    for h in history:
        cid = _checkpoint_id(h.config)
        event = by_id.get(cid)
        if event is None:
            found.append(("no event", cid))
            continue
        parent = _checkpoint_id(event["parent_config"])
        if exit_mode and parent is not None and parent not in saved_ids:
            found.append(("unsaved parent", cid, parent))
        elif not exit_mode and parent != _checkpoint_id(h.parent_config):
            found.append(("parent", cid, _checkpoint_id(h.parent_config), parent))
        states = [t.state for t in h.tasks]
        if states != [t.get("state") for t in event["tasks"]]:
            found.append(("task state", cid, states, [t.get("state") for t in event["tasks"]]))
    return found


def _debug_record(lib: Any, drive: Any, g: Any, **kw: Any) -> dict[str, Any]:
    events = drive.stream(g, {"log": []}, thread(), subgraphs=True, stream_mode="debug", **kw)
    history = drive.history(g, thread())
    root = _checkpoint_payloads(events).get("", [])
    exit_mode = kw.get("durability") == "exit"
    mismatches = _mismatches(root, history, exit_mode=exit_mode)
    return {"events": events, "history": history, "mismatches": mismatches}


def _hide_parents(events: list[Any]) -> list[Any]:
    """The events with each checkpoint event's ``parent_config`` hidden: under
    ``durability="exit"`` LangGraph always streams ``None`` there (see ``_mismatches``),
    and naming the last saved checkpoint instead is as correct (docs/differences.md);
    ``_unsaved_parents`` checks that such a parent exists."""
    shown: list[Any] = []
    for ns, event in events:
        if isinstance(event, dict) and event.get("type") == "checkpoint":
            payload = {**event["payload"], "parent_config": "<not compared>"}
            shown.append((ns, {**event, "payload": payload}))
        else:
            shown.append((ns, event))
    return shown


def _unsaved_parents(events: list[Any], saved: list[Any]) -> list[Any]:
    """Checkpoint events, in any namespace, whose parent is no checkpoint the saver has."""
    ids = {_checkpoint_id(t.config) for t in saved}
    found: list[Any] = []
    for ns, payloads in _checkpoint_payloads(events).items():
        for p in payloads:
            parent = _checkpoint_id(p["parent_config"])
            if parent is not None and parent not in ids:
                found.append((ns, _checkpoint_id(p["config"]), parent))
    return found


@scenario
def debug_events_match_history_depth1(lib, drive):
    return _debug_record(lib, drive, _plain_nested(lib, drive, 1))


@scenario
def debug_events_match_history_depth2(lib, drive):
    return _debug_record(lib, drive, _plain_nested(lib, drive, 2))


@scenario
def debug_events_match_history_durability_exit(lib, drive):
    return _debug_record(lib, drive, _plain_nested(lib, drive, 2), durability="exit")


@scenario
def checkpoints_events_with_subgraphs_depth2(lib, drive):
    g = _plain_nested(lib, drive, 2)
    events = drive.stream(g, {"log": []}, thread(), subgraphs=True, stream_mode="checkpoints")
    return {"events": events, "history": drive.history(g, thread())}


@scenario
def mixed_modes_around_subgraph_interrupt_depth2(lib, drive):
    runs: Counter[str] = Counter()
    g = deep_graph(lib, drive, runs, 2)
    modes = ["updates", "tasks", "checkpoints"]
    first = drive.stream(g, START_VALUES, thread(), subgraphs=True, stream_mode=modes)
    resumed = drive.stream(g, lib.Command(resume="a"), thread(), subgraphs=True, stream_mode=modes)
    return {"first": first, "resumed": resumed, "head": observe(drive, g, thread())}


@scenario
def debug_events_around_subgraph_interrupt_depth3(lib, drive):
    runs: Counter[str] = Counter()
    g = deep_graph(lib, drive, runs, 3)
    first = drive.stream(g, START_VALUES, thread(), subgraphs=True, stream_mode="debug")
    resumed = drive.stream(
        g, lib.Command(resume="a"), thread(), subgraphs=True, stream_mode="debug"
    )
    history = drive.history(g, thread())
    events = first + resumed
    return {
        "first": first,
        "resumed": resumed,
        "mismatches": _mismatches(_checkpoint_payloads(events).get("", []), history),
    }


@scenario
def durability_exit_subgraph_interrupt_events(lib, drive):
    runs: Counter[str] = Counter()
    g = deep_graph(lib, drive, runs, 2)
    kw: dict[str, Any] = {"subgraphs": True, "stream_mode": "debug", "durability": "exit"}
    first = drive.stream(g, START_VALUES, thread(), **kw)
    deep = drive.get_state(g, thread(), subgraphs=True)
    resumed = drive.stream(g, lib.Command(resume="a"), thread(), **kw)
    history = drive.history(g, thread())
    payloads = _checkpoint_payloads(first + resumed).get("", [])
    sub_cfgs = [t.state.config for t in deep.tasks if hasattr(t.state, "config")]
    return {
        "first": _hide_parents(first),
        "deep": deep,
        "resumed": _hide_parents(resumed),
        "unsaved_parents": _unsaved_parents(
            first + resumed, drive.list_checkpoints(g.checkpointer)
        ),
        "history": history,
        "sub_history": [catch(drive.history, g, namespace_only(c)) for c in sub_cfgs],
        "mismatches": _mismatches(payloads, history, exit_mode=True),
        "runs": dict(runs),
    }


# --- family 8: streams around subgraph pauses ----------------------------------------------


class Text(TypedDict):
    log: Annotated[str, operator.add]


def _breakpoint_graph(lib: Any, drive: Any, where: str) -> Any:
    inner = lib.StateGraph(Text)
    inner.add_node("one", lambda s: {"log": "1"})
    inner.add_node("two", lambda s: {"log": "2"})
    inner.add_edge(lib.START, "one")
    inner.add_edge("one", "two")
    compiled = inner.compile(**{where: ["two" if where == "interrupt_before" else "one"]})
    b = lib.StateGraph(Text)
    b.add_node("sub", compiled)
    b.add_node("after", lambda s: {"log": "A"})
    b.add_edge(lib.START, "sub")
    b.add_edge("sub", "after")
    return b.compile(checkpointer=drive.saver())


def _breakpoint_streams(lib: Any, drive: Any, where: str, **kw: Any) -> dict[str, Any]:
    g = _breakpoint_graph(lib, drive, where)
    first = drive.stream(g, {"log": ""}, thread(), **kw)
    resumed = drive.stream(g, None, thread(), **kw)
    return {"first": first, "resumed": resumed, "head": observe(drive, g, thread())}


@scenario
def subgraph_interrupt_before_in_updates_stream(lib, drive):
    return _breakpoint_streams(lib, drive, "interrupt_before")


@scenario
def subgraph_interrupt_after_in_updates_stream(lib, drive):
    return _breakpoint_streams(lib, drive, "interrupt_after")


@scenario
def subgraph_breakpoint_in_namespaced_updates_stream(lib, drive):
    return _breakpoint_streams(lib, drive, "interrupt_before", subgraphs=True)


@scenario
def subgraph_breakpoint_in_values_stream(lib, drive):
    return _breakpoint_streams(lib, drive, "interrupt_before", stream_mode="values")


def _parent_command_graph(lib: Any, drive: Any, depth: int) -> Any:
    """A subgraph node returns ``Command(graph=PARENT, goto="after")``; the graph that
    holds it also has the static edge ``sub -> skipped``."""
    inner = lib.StateGraph(Log)
    inner.add_node(
        "inner",
        lambda s: lib.Command(graph=lib.Command.PARENT, goto="after", update={"log": ["inner"]}),
    )
    inner.add_edge(lib.START, "inner")
    holder = lib.StateGraph(Log)
    holder.add_node("sub", inner.compile(), destinations=("after",))
    holder.add_node("after", lambda s: {"log": ["after"]})
    holder.add_node("skipped", lambda s: {"log": ["skipped"]})
    holder.add_edge(lib.START, "sub")
    holder.add_edge("sub", "skipped")
    if depth == 1:
        return holder.compile(checkpointer=drive.saver())
    root = lib.StateGraph(Log)
    root.add_node("holder", holder.compile())
    root.add_node("end", lambda s: {"log": ["end"]})
    root.add_edge(lib.START, "holder")
    root.add_edge("holder", "end")
    return root.compile(checkpointer=drive.saver())


def _parent_command(lib: Any, drive: Any, depth: int) -> dict[str, Any]:
    g = _parent_command_graph(lib, drive, depth)
    # "after" and "skipped" run in one step: their chunks come in the order they finish.
    streamed = unordered(drive.stream(g, {"log": []}, thread("s"), subgraphs=True))
    out = drive.invoke(g, {"log": []}, thread())
    return {"streamed": streamed, "out": out, "history": drive.history(g, thread())}


@scenario
def parent_command_keeps_static_edges(lib, drive):
    return _parent_command(lib, drive, 1)


@scenario
def parent_command_keeps_static_edges_depth2(lib, drive):
    return _parent_command(lib, drive, 2)


test_subgraph_parity_events = scenario.test()
