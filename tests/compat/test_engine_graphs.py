"""Engine scenarios: graph shapes, edges, branches, Send, commands, limits, validation."""

import operator
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import Scenarios, catch, thread

scenario = Scenarios()


class Num(TypedDict):
    x: int


class Logged(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def _appender(tag: str, runs: Counter[str]) -> Any:
    def node(state: Any) -> dict[str, Any]:
        runs[tag] += 1
        return {"log": [tag]}

    node.__name__ = tag
    return node


@scenario
def linear_chain_three_nodes(lib, drive):
    runs: Counter[str] = Counter()

    def add(n: int, name: str) -> Any:
        def node(state: Num) -> dict[str, int]:
            runs[name] += 1
            return {"x": state["x"] + n}

        return node

    b = lib.StateGraph(Num)
    for i, name in enumerate(["a", "b", "c"], start=1):
        b.add_node(name, add(i, name))
    b.add_edge(lib.START, "a")
    b.add_edge("a", "b")
    b.add_edge("b", "c")
    b.add_edge("c", lib.END)
    out = drive.invoke(b.compile(), {"x": 10})
    return {"out": out, "runs": dict(runs)}


def _router_graph(lib: Any, path: Any, path_map: Any, runs: Counter[str]) -> Any:
    b = lib.StateGraph(Logged)
    for tag in ("low", "high", "mid"):
        b.add_node(tag, _appender(tag, runs))
    b.add_node("start", _appender("start", runs))
    b.add_edge(lib.START, "start")
    b.add_conditional_edges("start", path, path_map)
    return b.compile()


@scenario
def conditional_edges_with_dict_path_map(lib, drive):
    runs: Counter[str] = Counter()
    g = _router_graph(
        lib, lambda s: "big" if s["x"] > 5 else "small", {"big": "high", "small": "low"}, runs
    )
    return [drive.invoke(g, {"x": x, "log": []}) for x in (1, 9)] + [dict(runs)]


@scenario
def conditional_edges_with_list_path_map(lib, drive):
    runs: Counter[str] = Counter()
    g = _router_graph(lib, lambda s: "mid" if s["x"] else "low", ["low", "mid"], runs)
    return [drive.invoke(g, {"x": x, "log": []}) for x in (0, 1)] + [dict(runs)]


@scenario
def conditional_edge_returning_list_runs_in_parallel(lib, drive):
    runs: Counter[str] = Counter()
    g = _router_graph(lib, lambda s: ["low", "high"], None, runs)
    out = drive.invoke(g, {"x": 0, "log": []})
    return {"log": sorted(out["log"]), "runs": dict(runs)}


@scenario
def conditional_edge_to_end(lib, drive):
    runs: Counter[str] = Counter()
    g = _router_graph(lib, lambda s: lib.END if s["x"] < 0 else "mid", None, runs)
    return [drive.invoke(g, {"x": x, "log": []}) for x in (-1, 1)] + [dict(runs)]


@scenario
def send_map_reduce(lib, drive):
    class S(TypedDict):
        topics: list[str]
        jokes: Annotated[list[str], operator.add]

    def fan_out(state: S) -> list[Any]:
        return [lib.Send("write", {"topic": t}) for t in state["topics"]]

    b = lib.StateGraph(S)
    b.add_node("plan", lambda s: {"topics": [*s["topics"], "owls"]})
    b.add_node("write", lambda arg: {"jokes": [f"joke about {arg['topic']}"]})
    b.add_node("collect", lambda s: {"topics": [f"{len(s['jokes'])} jokes"]})
    b.add_edge(lib.START, "plan")
    b.add_conditional_edges("plan", fan_out, ["write"])
    b.add_edge("write", "collect")
    out = drive.invoke(b.compile(), {"topics": ["cats", "dogs"], "jokes": []})
    return {"topics": out["topics"], "jokes": sorted(out["jokes"])}


@scenario
def join_waits_for_all_sources(lib, drive):
    runs: Counter[str] = Counter()
    b = lib.StateGraph(Logged)
    for tag in ("a", "b1", "b2", "join"):
        b.add_node(tag, _appender(tag, runs))
    b.add_edge(lib.START, "a")
    b.add_edge(lib.START, "b1")
    b.add_edge("b1", "b2")
    b.add_edge(["a", "b2"], "join")
    out = drive.invoke(b.compile(), {"x": 0, "log": []})
    return {"log": out["log"][-1], "all": sorted(out["log"]), "runs": dict(runs)}


@scenario
def fan_out_fan_in_without_join(lib, drive):
    runs: Counter[str] = Counter()
    b = lib.StateGraph(Logged)
    for tag in ("src", "l", "r", "sink"):
        b.add_node(tag, _appender(tag, runs))
    b.add_edge(lib.START, "src")
    b.add_edge("src", "l")
    b.add_edge("src", "r")
    b.add_edge("l", "sink")
    b.add_edge("r", "sink")
    out = drive.invoke(b.compile(), {"x": 0, "log": []})
    return {"log": [out["log"][0], sorted(out["log"][1:3]), out["log"][3:]], "runs": dict(runs)}


@scenario
def command_goto_and_update_from_node(lib, drive):
    runs: Counter[str] = Counter()

    def decide(state: Logged) -> Any:
        runs["decide"] += 1
        target = "yes" if state["x"] else "no"
        return lib.Command(goto=target, update={"log": [f"to {target}"]})

    b = lib.StateGraph(Logged)
    b.add_node("decide", decide)
    b.add_node("yes", _appender("yes", runs))
    b.add_node("no", _appender("no", runs))
    b.add_edge(lib.START, "decide")
    g = b.compile()
    return [drive.invoke(g, {"x": x, "log": []}) for x in (0, 1)] + [dict(runs)]


@scenario
def command_goto_send_packets(lib, drive):
    def spread(state: Logged) -> Any:
        return lib.Command(goto=[lib.Send("echo", {"x": i, "log": []}) for i in range(3)])

    b = lib.StateGraph(Logged)
    b.add_node("spread", spread)
    b.add_node("echo", lambda s: {"log": [f"echo {s['x']}"]})
    b.add_edge(lib.START, "spread")
    out = drive.invoke(b.compile(), {"x": 7, "log": []})
    return {"x": out["x"], "log": sorted(out["log"])}


@scenario
def cycle_with_counter_until_done(lib, drive):
    runs: Counter[str] = Counter()

    def tick(state: Num) -> dict[str, int]:
        runs["tick"] += 1
        return {"x": state["x"] + 1}

    b = lib.StateGraph(Num)
    b.add_node("tick", tick)
    b.add_edge(lib.START, "tick")
    b.add_conditional_edges("tick", lambda s: "tick" if s["x"] < 5 else lib.END)
    g = b.compile(checkpointer=lib.InMemorySaver())
    out = drive.invoke(g, {"x": 0}, thread())
    steps = [s.metadata["step"] for s in drive.history(g, thread())]
    return {"out": out, "runs": dict(runs), "steps": steps}


@scenario
def recursion_limit_raises(lib, drive):
    b = lib.StateGraph(Num)
    b.add_node("spin", lambda s: {"x": s["x"] + 1})
    b.add_edge(lib.START, "spin")
    b.add_edge("spin", "spin")
    g = b.compile(checkpointer=lib.InMemorySaver())
    err = catch(drive.invoke, g, {"x": 0}, {**thread(), "recursion_limit": 4})
    state = drive.get_state(g, thread())
    return {"err": err, "x": state.values["x"], "step": state.metadata["step"]}


@scenario
def two_writers_to_last_value_key_is_invalid(lib, drive):
    b = lib.StateGraph(Num)
    b.add_node("a", lambda s: {"x": 1})
    b.add_node("b", lambda s: {"x": 2})
    b.add_edge(lib.START, "a")
    b.add_edge(lib.START, "b")
    return {"err": catch(drive.invoke, b.compile(), {"x": 0})}


@scenario
def node_returning_none_writes_nothing(lib, drive):
    runs: Counter[str] = Counter()

    def quiet(state: Logged) -> None:
        runs["quiet"] += 1

    b = lib.StateGraph(Logged)
    b.add_node("quiet", quiet)
    b.add_node("after", _appender("after", runs))
    b.add_edge(lib.START, "quiet")
    b.add_edge("quiet", "after")
    g = b.compile()
    return {"out": drive.invoke(g, {"x": 4, "log": []}), "runs": dict(runs)}


@scenario
def add_sequence_chains_nodes(lib, drive):
    def first(state: Logged) -> dict[str, Any]:
        return {"log": ["first"]}

    def second(state: Logged) -> dict[str, Any]:
        return {"log": ["second"], "x": state["x"] + 1}

    b = lib.StateGraph(Logged)
    b.add_sequence([first, ("named", lambda s: {"log": ["named"]}), second])
    b.add_edge(lib.START, "first")
    return drive.invoke(b.compile(), {"x": 0, "log": []})


@scenario
def entry_and_finish_points(lib, drive):
    b = lib.StateGraph(Logged)
    b.add_node("a", lambda s: {"log": ["a"]})
    b.add_node("b", lambda s: {"log": ["b"]})
    b.set_entry_point("a")
    b.add_edge("a", "b")
    b.set_finish_point("b")
    return drive.invoke(b.compile(), {"x": 0, "log": []})


@scenario
def conditional_entry_point(lib, drive):
    b = lib.StateGraph(Logged)
    b.add_node("neg", lambda s: {"log": ["neg"]})
    b.add_node("pos", lambda s: {"log": ["pos"]})
    b.set_conditional_entry_point(lambda s: "neg" if s["x"] < 0 else "pos")
    g = b.compile()
    return [drive.invoke(g, {"x": x, "log": []}) for x in (-3, 3)]


@scenario
def graph_validation_errors_raise(lib, drive):
    def build(problem: str) -> Any:
        b = lib.StateGraph(Num)
        b.add_node("a", lambda s: {})
        if problem == "unknown_target":
            b.add_edge(lib.START, "a")
            b.add_edge("a", "ghost")
        elif problem == "unknown_source":
            b.add_edge(lib.START, "a")
            b.add_edge("ghost", "a")
        elif problem == "duplicate_node":
            b.add_node("a", lambda s: {})
        elif problem == "reserved_name":
            b.add_node(lib.END, lambda s: {})
        elif problem == "edge_from_end":
            b.add_edge(lib.START, "a")
            b.add_edge(lib.END, "a")
        return b.compile()

    problems = [
        "no_entry",
        "unknown_target",
        "unknown_source",
        "duplicate_node",
        "reserved_name",
        "edge_from_end",
    ]
    return {p: isinstance(catch(build, p), tuple) for p in problems}


test_engine_graphs = scenario.test()
