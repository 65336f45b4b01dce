"""Interrupt scenarios: time travel, forks, errors and retries around interrupts,
durability modes, streams of interrupted runs."""

import operator
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import Scenarios, catch, thread

scenario = Scenarios()


class Logged(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def ask_graph(lib: Any, runs: Counter[str], **node_kw: Any) -> Any:
    """START -> prep -> ask (interrupt) -> done, with a checkpointer."""

    def prep(state: Logged) -> dict[str, Any]:
        runs["prep"] += 1
        return {"log": ["prep"]}

    def ask(state: Logged) -> dict[str, Any]:
        runs["ask"] += 1
        return {"log": [f"ask:{lib.interrupt('ok?')}"]}

    b = lib.StateGraph(Logged)
    b.add_node("prep", prep)
    b.add_node("ask", ask, **node_kw)
    b.add_node("done", lambda s: {"x": len(s["log"])})
    b.add_edge(lib.START, "prep")
    b.add_edge("prep", "ask")
    b.add_edge("ask", "done")
    return b.compile(checkpointer=lib.InMemorySaver())


def brief(s: Any) -> tuple[Any, ...]:
    return (s.metadata, s.next, s.values, [(t.name, t.interrupts, t.result) for t in s.tasks])


@scenario
def history_while_interrupted(lib, drive):
    g = ask_graph(lib, Counter())
    drive.invoke(g, {"x": 0, "log": []}, thread())
    return [brief(h) for h in drive.history(g, thread())]


@scenario
def history_after_resume(lib, drive):
    g = ask_graph(lib, Counter())
    drive.invoke(g, {"x": 0, "log": []}, thread())
    drive.invoke(g, lib.Command(resume="yes"), thread())
    # Whether an answered task still lists its interrupt differs on purpose (DESIGN §4.3;
    # see test_differences), so only names and results of tasks are compared here.
    return [
        (h.metadata, h.next, h.values, [(t.name, t.result) for t in h.tasks])
        for h in drive.history(g, thread())
    ]


@scenario
def replay_from_checkpoint_before_interrupt_pauses_again(lib, drive):
    runs: Counter[str] = Counter()
    g = ask_graph(lib, runs)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    drive.invoke(g, lib.Command(resume="first"), thread())
    before_ask = next(h for h in drive.history(g, thread()) if h.next == ("ask",))
    replay = drive.invoke(g, None, before_ask.config)
    state = drive.get_state(g, thread())
    return {"replay": replay, "runs": dict(runs), "now": brief(state)}


@scenario
def replay_then_resume_with_new_answer(lib, drive):
    runs: Counter[str] = Counter()
    g = ask_graph(lib, runs)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    drive.invoke(g, lib.Command(resume="first"), thread())
    old = next(h for h in drive.history(g, thread()) if h.next == ("prep",))
    drive.invoke(g, None, old.config)
    out = drive.invoke(g, lib.Command(resume="second"), thread())
    hist = [(h.metadata["step"], h.metadata["source"], h.next) for h in drive.history(g, thread())]
    return {"out": out, "runs": dict(runs), "hist": hist}


@scenario
def fork_with_update_state_on_historical_checkpoint(lib, drive):
    runs: Counter[str] = Counter()
    g = ask_graph(lib, runs)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    drive.invoke(g, lib.Command(resume="orig"), thread())
    after_prep = next(h for h in drive.history(g, thread()) if h.next == ("ask",))
    fork_cfg = drive.update_state(g, after_prep.config, {"log": ["forked"]}, as_node="prep")
    paused = drive.invoke(g, None, fork_cfg)
    out = drive.invoke(g, lib.Command(resume="new"), thread())
    return {
        "fork_parent_is_old": drive.get_state(g, fork_cfg).parent_config == after_prep.config,
        "paused": paused,
        "out": out,
        "runs": dict(runs),
    }


@scenario
def update_state_while_interrupted_then_resume(lib, drive):
    runs: Counter[str] = Counter()
    g = ask_graph(lib, runs)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    drive.update_state(g, thread(), {"log": ["note"]})
    state = drive.get_state(g, thread())
    out = drive.invoke(g, lib.Command(resume="y"), thread())
    # whether the edited checkpoint still lists the interrupt differs: see test_differences
    return {"state": brief(state)[:3], "out": out, "runs": dict(runs)}


@scenario
def update_state_as_interrupted_node_skips_it(lib, drive):
    runs: Counter[str] = Counter()
    g = ask_graph(lib, runs)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    drive.update_state(g, thread(), {"log": ["manual answer"]}, as_node="ask")
    state = drive.get_state(g, thread())
    out = drive.invoke(g, None, thread())
    return {"state": brief(state), "out": out, "runs": dict(runs)}


# --- errors and retries ------------------------------------------------------------------


@scenario
def error_before_interrupt_then_rerun_with_invoke_none(lib, drive):
    runs: Counter[str] = Counter()
    broken = {"on": True}

    def node(state: Logged) -> dict[str, Any]:
        runs["node"] += 1
        if broken["on"]:
            raise ValueError("not yet")
        return {"log": [lib.interrupt("now?")]}

    b = lib.StateGraph(Logged)
    b.add_node("node", node)
    b.add_edge(lib.START, "node")
    g = b.compile(checkpointer=lib.InMemorySaver())
    err = catch(drive.invoke, g, {"x": 0, "log": []}, thread())
    tasks = [(t.name, t.error) for t in drive.get_state(g, thread()).tasks]
    broken["on"] = False
    paused = drive.invoke(g, None, thread())
    out = drive.invoke(g, lib.Command(resume="now"), thread())
    return {"err": err, "tasks": tasks, "paused": paused, "out": out, "runs": dict(runs)}


@scenario
def retry_policy_then_interrupt(lib, drive):
    runs: Counter[str] = Counter()

    def flaky(state: Logged) -> dict[str, Any]:
        runs["flaky"] += 1
        if runs["flaky"] < 3:
            raise ConnectionError("blip")
        return {"log": [lib.interrupt("after retries?")]}

    policy = lib.RetryPolicy(initial_interval=0.0, jitter=False, max_attempts=5)
    b = lib.StateGraph(Logged)
    b.add_node("flaky", flaky, retry_policy=policy)
    b.add_edge(lib.START, "flaky")
    g = b.compile(checkpointer=lib.InMemorySaver())
    paused = drive.invoke(g, {"x": 0, "log": []}, thread())
    out = drive.invoke(g, lib.Command(resume="fine"), thread())
    return {"paused": paused, "out": out, "runs": dict(runs)}


@scenario
def error_and_interrupt_in_same_step(lib, drive):
    runs: Counter[str] = Counter()

    def boom(state: Logged) -> dict[str, Any]:
        runs["boom"] += 1
        raise KeyError("missing")

    def asker(state: Logged) -> dict[str, Any]:
        runs["asker"] += 1
        return {"log": [lib.interrupt("q")]}

    b = lib.StateGraph(Logged)
    b.add_node("boom", boom)
    b.add_node("asker", asker)
    b.add_edge(lib.START, "boom")
    b.add_edge(lib.START, "asker")
    g = b.compile(checkpointer=lib.InMemorySaver())
    err = catch(drive.invoke, g, {"x": 0, "log": []}, thread())
    state = drive.get_state(g, thread())
    tasks = [(t.name, t.error, t.interrupts) for t in state.tasks]
    return {"err": err, "next": state.next, "tasks": tasks, "interrupts": state.interrupts}


# --- durability --------------------------------------------------------------------------


@scenario
def durability_modes_with_interrupt(lib, drive):
    res = {}
    for mode in ("sync", "async", "exit"):
        runs: Counter[str] = Counter()
        g = ask_graph(lib, runs)
        first = drive.invoke(g, {"x": 0, "log": []}, thread(mode), durability=mode)
        mid = [brief(h) for h in drive.history(g, thread(mode))]
        out = drive.invoke(g, lib.Command(resume=mode), thread(mode), durability=mode)
        last = [(h.metadata, h.next) for h in drive.history(g, thread(mode))]
        res[mode] = {"first": first, "mid": mid, "out": out, "last": last, "runs": dict(runs)}
    return res


# --- streams of interrupted runs ---------------------------------------------------------


@scenario
def interrupted_run_stream_updates(lib, drive):
    g = ask_graph(lib, Counter())
    first = drive.stream(g, {"x": 0, "log": []}, thread())
    return {"first": first, "resumed": drive.stream(g, lib.Command(resume="ok"), thread())}


@scenario
def interrupted_run_stream_values(lib, drive):
    g = ask_graph(lib, Counter())
    first = drive.stream(g, {"x": 0, "log": []}, thread(), stream_mode="values")
    resumed = drive.stream(g, lib.Command(resume="ok"), thread(), stream_mode="values")
    return {"first": first, "resumed": resumed}


@scenario
def interrupted_run_stream_v2_parts(lib, drive):
    g = ask_graph(lib, Counter())
    modes = ["values", "updates"]
    first = drive.stream(g, {"x": 0, "log": []}, thread(), stream_mode=modes, version="v2")
    resumed = drive.stream(g, lib.Command(resume="ok"), thread(), stream_mode=modes, version="v2")
    return {"first": first, "resumed": resumed}


@scenario
def interrupted_run_stream_tasks_and_debug(lib, drive):
    g = ask_graph(lib, Counter())
    first = drive.stream(g, {"x": 0, "log": []}, thread(), stream_mode=["tasks", "debug"])
    return first


@scenario
def interrupted_run_stream_checkpoints(lib, drive):
    g = ask_graph(lib, Counter())
    first = drive.stream(g, {"x": 0, "log": []}, thread(), stream_mode="checkpoints")
    resumed = drive.stream(g, lib.Command(resume="ok"), thread(), stream_mode="checkpoints")
    return {"first": first, "resumed": resumed}


@scenario
def interrupted_invoke_version_v2(lib, drive):
    g = ask_graph(lib, Counter())
    first = drive.invoke(g, {"x": 0, "log": []}, thread(), version="v2")
    return {
        "first": first,
        "out": drive.invoke(g, lib.Command(resume="v2"), thread(), version="v2"),
    }


test_interrupts_history = scenario.test()
