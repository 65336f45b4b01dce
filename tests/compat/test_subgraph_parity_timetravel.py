"""Issue 16, families 2 and 3: time travel addressed to a subgraph; replaying a parent.

Family 2: a config taken from inside a subgraph (``get_state(subgraphs=True)``'s nested
snapshot, a subgraph history entry) carries ``checkpoint_ns`` and ``checkpoint_map``;
passed back to the *root* graph's ``invoke/stream``, ``get_state`` and
``get_state_history`` it addresses that subgraph checkpoint — at depth 1, 2 and 3.

Family 3: replaying a parent checkpoint from before a subgraph ran re-runs the
subgraph: its interrupt fires again; a stateless subgraph starts fresh, a stateful one
(``checkpointer=True``) loads the state it had at that point.
"""

import operator
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import SAVERS, Scenarios, catch, drop_forks, refused_resume, thread
from ._subgraph_kit import (
    START_VALUES,
    answered,
    chain,
    deep_graph,
    hide_stateful_task_states,
    namespace_only,
    observe,
    sub_config,
)

scenario = Scenarios(savers=SAVERS, mask_task_ids=True)

F2 = "issue 16 family 2: "
F3 = "issue 16 family 3: "


# --- family 2: replay and resume through a subgraph's config ------------------------------


def _replay_via_sub_config(lib: Any, drive: Any, depth: int) -> dict[str, Any]:
    g, runs, paused, first = answered(lib, drive, depth)
    replayed = catch(drive.invoke, g, None, paused)
    after_replay = observe(drive, g, thread())
    resumed = catch(drive.invoke, g, lib.Command(resume="b"), paused)
    return {
        "first": first,
        "paused": paused,
        "replayed": replayed,
        "after_replay": after_replay,
        "resumed": resumed,
        "head": observe(drive, g, thread()),
        "runs": dict(runs),
    }


@scenario.forks()
def replay_via_subgraph_snapshot_config_depth1(lib, drive):
    return _replay_via_sub_config(lib, drive, 1)


@scenario.forks()
def replay_via_subgraph_snapshot_config_depth2(lib, drive):
    return _replay_via_sub_config(lib, drive, 2)


@scenario.forks()
def replay_via_subgraph_snapshot_config_depth3(lib, drive):
    return _replay_via_sub_config(lib, drive, 3)


def _resume_via_sub_config(lib: Any, drive: Any, depth: int) -> dict[str, Any]:
    """A new answer sent straight to the (answered) subgraph checkpoint's config."""
    g, runs, paused, _ = answered(lib, drive, depth)
    resumed = catch(drive.invoke, g, lib.Command(resume="c"), paused)
    return {"resumed": resumed, "head": observe(drive, g, thread()), "runs": dict(runs)}


@scenario.forks()
def resume_via_subgraph_snapshot_config_depth1(lib, drive):
    return _resume_via_sub_config(lib, drive, 1)


@scenario.forks()
def resume_via_subgraph_snapshot_config_depth3(lib, drive):
    return _resume_via_sub_config(lib, drive, 3)


@scenario
def resume_paused_thread_via_subgraph_config_depth2(lib, drive):
    runs: Counter[str] = Counter()
    g = deep_graph(lib, drive, runs, 2)
    drive.invoke(g, START_VALUES, thread())
    paused = sub_config(drive, g, thread(), 2)
    out = catch(drive.invoke, g, lib.Command(resume="r"), paused)
    return {"out": out, "head": observe(drive, g, thread()), "runs": dict(runs)}


def _command_via_sub_config(lib: Any, drive: Any, answered_first: bool, cmd: Any) -> Any:
    """``Command(update=..., resume=...)`` through the depth-2 subgraph's config, on the
    paused thread or after it was answered (a historical subgraph checkpoint)."""
    runs: Counter[str] = Counter()
    g = deep_graph(lib, drive, runs, 2)
    drive.invoke(g, START_VALUES, thread())
    paused = sub_config(drive, g, thread(), 2)
    if answered_first:
        drive.invoke(g, lib.Command(resume="a"), thread())
    runs.clear()
    out = catch(drive.invoke, g, cmd(lib), paused)
    return {"out": out, "head": observe(drive, g, thread()), "runs": dict(runs)}


@scenario
def command_update_and_resume_via_paused_subgraph_config(lib, drive):
    cmd = lambda lib: lib.Command(update={"log": ["u"]}, resume="r")  # noqa: E731
    return _command_via_sub_config(lib, drive, False, cmd)


def _update_on_fork(record: Any) -> tuple[Any, int]:
    """``drop_forks``, with each fork's values shown on the checkpoint it was forked
    from. DESIGN §4.2: pausepoint saves a ``Command(update=...)`` sent with an old
    config on its fork; LangGraph saves it as a pending write of the old checkpoint,
    whose snapshot then shows the updated values."""
    forked: dict[str, Any] = {}

    def collect(obj: Any) -> None:
        if type(obj).__name__ == "StateSnapshot" and obj.metadata.get("source") == "fork":
            forked[obj.parent_config["configurable"]["checkpoint_id"]] = obj.values
        elif isinstance(obj, dict | list | tuple):
            for v in obj.values() if isinstance(obj, dict) else obj:  # pyright: ignore
                collect(v)

    def show(obj: Any) -> Any:
        if type(obj).__name__ == "StateSnapshot":
            cid = obj.config["configurable"]["checkpoint_id"]
            return obj._replace(values=forked[cid]) if cid in forked else obj
        if isinstance(obj, dict):
            return {k: show(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple) and not hasattr(obj, "_fields"):
            return type(obj)(show(v) for v in obj)
        return obj

    collect(record)
    dropped, found = drop_forks(show(record))
    return dropped, found


@scenario.viewed(_update_on_fork)
def command_update_and_resume_via_historical_subgraph_config(lib, drive):
    cmd = lambda lib: lib.Command(update={"x": 5}, resume="r2")  # noqa: E731
    return _command_via_sub_config(lib, drive, True, cmd)


# --- family 2: get_state / get_state_history through a subgraph's config -------------------


def _inspect(drive: Any, g: Any, cfg: Any) -> dict[str, Any]:
    ns = namespace_only(cfg)
    return {
        "get_state": catch(drive.get_state, g, cfg),
        "get_state_deep": catch(drive.get_state, g, cfg, subgraphs=True),
        "history": catch(drive.history, g, cfg),
        "history_ns": catch(drive.history, g, ns),
        "history_ns_limit": catch(drive.history, g, ns, limit=1),
        "history_ns_before": catch(drive.history, g, ns, before=cfg),
        "history_ns_filter": catch(drive.history, g, ns, filter={"source": "loop"}),
    }


def _inspect_via_sub_config(lib: Any, drive: Any, depth: int) -> dict[str, Any]:
    runs: Counter[str] = Counter()
    g = deep_graph(lib, drive, runs, depth)
    drive.invoke(g, START_VALUES, thread())
    configs = [s.config for s in chain(drive.get_state(g, thread(), subgraphs=True))]
    paused = {cfg["configurable"]["checkpoint_ns"]: _inspect(drive, g, cfg) for cfg in configs}
    drive.invoke(g, lib.Command(resume="a"), thread())
    answered = {cfg["configurable"]["checkpoint_ns"]: _inspect(drive, g, cfg) for cfg in configs}
    return {"paused": paused, "answered": answered}


@scenario
def inspect_via_subgraph_configs_depth1(lib, drive):
    return _inspect_via_sub_config(lib, drive, 1)


@scenario
def inspect_via_subgraph_configs_depth2(lib, drive):
    return _inspect_via_sub_config(lib, drive, 2)


@scenario
def inspect_via_subgraph_configs_depth3(lib, drive):
    return _inspect_via_sub_config(lib, drive, 3)


# --- family 2: a subgraph history entry as the starting point ------------------------------


def _from_sub_history_entry(lib: Any, drive: Any, depth: int, node: str) -> dict[str, Any]:
    """Stream from the innermost subgraph's checkpoint where ``node`` was next."""
    g, runs, paused, _ = answered(lib, drive, depth)
    entries = drive.history(g, namespace_only(paused))
    entry = next(e for e in entries if e.next == (node,))
    streamed = drive.stream(g, None, entry.config, subgraphs=True, stream_mode="updates")
    resumed = catch(drive.invoke, g, lib.Command(resume="d"), entry.config)
    return {
        "entry": entry,
        "streamed": streamed,
        "resumed": resumed,
        "head": observe(drive, g, thread()),
        "runs": dict(runs),
    }


@scenario.forks()
def stream_from_subgraph_history_entry_before_ask_depth1(lib, drive):
    return _from_sub_history_entry(lib, drive, 1, "ask")


@scenario.forks()
def stream_from_subgraph_history_entry_before_first_node_depth2(lib, drive):
    return _from_sub_history_entry(lib, drive, 2, "before")


@scenario.forks()
def stream_from_subgraph_history_entry_before_ask_depth3(lib, drive):
    return _from_sub_history_entry(lib, drive, 3, "ask")


# --- family 3: replaying a parent checkpoint re-runs its subgraph ---------------------------


def _replay_parent(lib: Any, drive: Any, depth: int, resume_at: str) -> dict[str, Any]:
    """Replay the root checkpoint where ``sub1`` was next, then answer the re-asked
    question through that old config (``resume_at="old"``) or the thread."""
    g, runs, _, _ = answered(lib, drive, depth)
    old = next(h for h in drive.history(g, thread()) if h.next == ("sub1",))
    replayed = drive.stream(g, None, old.config, subgraphs=True, stream_mode="updates")
    after_replay = observe(drive, g, thread())
    target = old.config if resume_at == "old" else thread()
    resumed = catch(drive.invoke, g, lib.Command(resume="b"), target, message=True)
    return {
        "replayed": replayed,
        "after_replay": after_replay,
        "resumed": resumed,
        "head": observe(drive, g, thread()),
        "runs": dict(runs),
    }


@scenario.forks()
def replay_parent_reruns_stateless_subgraph_depth1(lib, drive):
    return _replay_parent(lib, drive, 1, "old")


# DESIGN §4.4: the replay left the thread finished; LangGraph returns its values.
@scenario.viewed(refused_resume("resumed", lambda r: r["head"]["state"].values))
def replay_parent_reruns_stateless_subgraph_depth2(lib, drive):
    return _replay_parent(lib, drive, 2, "thread")


@scenario.forks()
def replay_parent_reruns_stateless_subgraph_depth3(lib, drive):
    return _replay_parent(lib, drive, 3, "old")


@scenario
def replay_parent_before_finished_subgraph_without_interrupt(lib, drive):
    runs: Counter[str] = Counter()
    inner = lib.StateGraph(_Plain)
    inner.add_node("work", lambda s: {"log": [f"work{len(s['log'])}"]})
    inner.add_edge(lib.START, "work")
    b = lib.StateGraph(_Plain)
    b.add_node("pre", lambda s: {"log": ["pre"]})
    b.add_node("sub1", inner.compile())
    b.add_edge(lib.START, "pre")
    b.add_edge("pre", "sub1")
    g = b.compile(checkpointer=drive.saver())
    drive.invoke(g, {"log": []}, thread())
    old = next(h for h in drive.history(g, thread()) if h.next == ("sub1",))
    replayed = drive.stream(g, None, old.config, subgraphs=True, stream_mode="debug")
    return {"replayed": replayed, "head": observe(drive, g, thread()), "runs": dict(runs)}


class _Plain(TypedDict):
    log: Annotated[list[str], operator.add]


class Asked(TypedDict, total=False):
    asked: str


class Turns(TypedDict, total=False):
    asked: str
    turns: Annotated[list[str], operator.add]


def _remember(lib: Any) -> Any:
    def remember(state: Turns) -> dict[str, Any]:
        k = len(state.get("turns", []))
        answer = lib.interrupt(f"turn {k}?")
        return {"turns": [answer], "asked": f"{k}:{answer}"}

    return remember


def _memory(lib: Any, drive: Any, checkpointer: Any) -> Any:
    """Root ``mem`` (a subgraph asking ``turn <k>?``, k = its remembered turns)."""
    sb = lib.StateGraph(Turns)
    sb.add_node("remember", _remember(lib))
    sb.add_edge(lib.START, "remember")
    b = lib.StateGraph(Asked)
    b.add_node("mem", sb.compile(checkpointer=checkpointer))
    b.add_edge(lib.START, "mem")
    return b.compile(checkpointer=drive.saver())


def _replay_memory(lib: Any, drive: Any, checkpointer: Any) -> dict[str, Any]:
    """Three answered runs; replay run 2's checkpoint before ``mem``; answer it."""
    g = _memory(lib, drive, checkpointer)
    for answer in ("one", "two", "three"):
        drive.invoke(g, {"asked": "-"}, thread())
        drive.invoke(g, lib.Command(resume=answer), thread())
    befores = [h for h in drive.history(g, thread()) if h.next == ("mem",)]
    old = befores[1].config
    replayed = drive.invoke(g, None, old)
    sub_now = catch(drive.get_state, g, thread(checkpoint_ns="mem"))
    resumed = drive.invoke(g, lib.Command(resume="two-bis"), old)
    rec = {
        "replayed": replayed,
        "sub_now": sub_now,
        "resumed": resumed,
        "head": observe(drive, g, thread()),
        "sub_history": catch(drive.history, g, thread(checkpoint_ns="mem")),
    }
    return hide_stateful_task_states(rec, {"mem"} if checkpointer else set())


@scenario.forks()
def replay_parent_reloads_stateful_subgraph_state(lib, drive):
    return _replay_memory(lib, drive, True)


@scenario.forks()
def replay_parent_with_stateless_memory_subgraph(lib, drive):
    return _replay_memory(lib, drive, None)


test_subgraph_parity_timetravel = scenario.test()
