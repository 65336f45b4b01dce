"""Engine scenarios: snapshots, history, update_state, bulk updates, checkpoint metadata."""

import dataclasses
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


def _abc(lib: Any, runs: Counter[str] | None = None, **compile_kw: Any) -> Any:
    """START -> a -> b -> c, each appending its name; a checkpointer."""
    runs = Counter() if runs is None else runs

    def make(tag: str) -> Any:
        def node(state: Logged) -> dict[str, Any]:
            runs[tag] += 1
            return {"log": [tag], "x": state["x"] + 1}

        return node

    b = lib.StateGraph(Logged)
    for tag in "abc":
        b.add_node(tag, make(tag))
    b.add_edge(lib.START, "a")
    b.add_edge("a", "b")
    b.add_edge("b", "c")
    return b.compile(checkpointer=lib.InMemorySaver(), **compile_kw)


def snap(s: Any) -> dict[str, Any]:
    """Every field of a StateSnapshot (the normaliser masks ids and timestamps)."""
    return s._asdict()


def brief(s: Any) -> tuple[Any, ...]:
    return (s.metadata, s.next, s.values)


@scenario
def get_state_after_completed_run(lib, drive):
    g = _abc(lib)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    return snap(drive.get_state(g, thread()))


@scenario
def get_state_of_fresh_thread(lib, drive):
    return snap(drive.get_state(_abc(lib), thread("never-used")))


@scenario
def get_state_history_newest_first(lib, drive):
    g = _abc(lib)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    hist = drive.history(g, thread())
    links = [
        (h.config["configurable"]["checkpoint_id"], (h.parent_config or {}).get("configurable"))
        for h in hist
    ]
    return {"brief": [brief(h) for h in hist], "links": links, "tasks": [h.tasks for h in hist]}


@scenario
def get_state_history_filter_before_limit(lib, drive):
    g = _abc(lib)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    hist = drive.history(g, thread())
    return {
        "limit": [brief(h) for h in drive.history(g, thread(), limit=2)],
        "before": [brief(h) for h in drive.history(g, thread(), before=hist[1].config)],
        "filter_input": [brief(h) for h in drive.history(g, thread(), filter={"source": "input"})],
        "filter_step": [brief(h) for h in drive.history(g, thread(), filter={"step": 1})],
    }


@scenario
def get_state_at_historical_checkpoint(lib, drive):
    g = _abc(lib)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    hist = drive.history(g, thread())
    return snap(drive.get_state(g, hist[2].config))


@scenario
def update_state_as_node_then_continue(lib, drive):
    runs: Counter[str] = Counter()
    g = _abc(lib, runs, interrupt_after=["a"])
    drive.invoke(g, {"x": 0, "log": []}, thread())
    cfg = drive.update_state(g, thread(), {"log": ["edited"], "x": 100}, as_node="b")
    after_update = snap(drive.get_state(g, thread()))
    out = drive.invoke(g, None, thread())
    return {"cfg": cfg, "after_update": after_update, "out": out, "runs": dict(runs)}


@scenario
def update_state_without_as_node_uses_last_writer(lib, drive):
    g = _abc(lib, interrupt_after=["b"])
    drive.invoke(g, {"x": 0, "log": []}, thread())
    drive.update_state(g, thread(), {"x": -1})
    state = drive.get_state(g, thread())
    return {"snap": brief(state), "next": state.next, "out": drive.invoke(g, None, thread())}


@scenario
def update_state_applies_reducers(lib, drive):
    g = _abc(lib)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    drive.update_state(g, thread(), {"log": ["extra"]}, as_node="c")
    drive.update_state(g, thread(), {"log": lib.Overwrite(["only"])}, as_node="c")
    return [brief(h) for h in drive.history(g, thread(), limit=3)]


@scenario
def update_state_on_fresh_thread_as_start(lib, drive):
    g = _abc(lib)
    drive.update_state(g, thread(), {"x": 5, "log": ["seed"]}, as_node=lib.START)
    before = brief(drive.get_state(g, thread()))
    return {"before": before, "out": drive.invoke(g, None, thread())}


@scenario
def update_state_as_unknown_node_raises(lib, drive):
    g = _abc(lib)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    return {"err": catch(drive.update_state, g, thread(), {"x": 1}, as_node="ghost")}


@scenario
def bulk_update_state_supersteps(lib, drive):
    g = _abc(lib)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    upd = [
        [{"values": {"log": ["p1"]}, "as_node": "a"}],
        [{"values": {"x": 50}, "as_node": "b"}, {"values": {"log": ["p2"]}, "as_node": "c"}],
    ]
    cfg = drive.bulk_update_state(g, thread(), [[_update(lib, u) for u in s] for s in upd])
    return {"cfg": cfg, "hist": [brief(h) for h in drive.history(g, thread(), limit=3)]}


def _update(lib: Any, u: dict[str, Any]) -> Any:
    from importlib import import_module

    return import_module(f"{lib.name}.types").StateUpdate(u["values"], u["as_node"])


@scenario
def metadata_copies_configurable_and_run_metadata(lib, drive):
    g = _abc(lib)
    cfg = {**thread("t", user_id="u1", tenant=3), "metadata": {"origin": "test"}}
    drive.invoke(g, {"x": 0, "log": []}, cfg)
    return [h.metadata for h in drive.history(g, thread())]


@scenario
def durability_modes_checkpoint_counts(lib, drive):
    counts = {}
    for mode in ("sync", "async", "exit"):
        g = _abc(lib)
        out = drive.invoke(g, {"x": 0, "log": []}, thread(mode), durability=mode)
        hist = drive.history(g, thread(mode))
        counts[mode] = {"out": out, "hist": [brief(h) for h in hist]}
    return counts


@scenario
def invoke_from_checkpoint_id_replays(lib, drive):
    runs: Counter[str] = Counter()
    g = _abc(lib, runs)
    drive.invoke(g, {"x": 0, "log": []}, thread())
    hist = drive.history(g, thread())
    after_a = hist[2].config
    out = drive.invoke(g, None, after_a)
    newest = drive.history(g, thread(), limit=2)
    return {
        "out": out,
        "runs": dict(runs),
        "newest": [(h.metadata, h.parent_config) for h in newest],
    }


@scenario
def subgraph_state_in_parent_snapshot(lib, drive):
    class Inner(TypedDict):
        x: int
        log: Annotated[list[str], operator.add]

    ib = lib.StateGraph(Inner)
    ib.add_node("i1", lambda s: {"log": ["i1"]})
    ib.add_node("i2", lambda s: {"log": ["i2"]})
    ib.add_edge(lib.START, "i1")
    ib.add_edge("i1", "i2")
    b = lib.StateGraph(Logged)
    b.add_node("child", ib.compile(interrupt_after=["i1"]))
    b.add_edge(lib.START, "child")
    g = b.compile(checkpointer=lib.InMemorySaver())
    out = drive.invoke(g, {"x": 1, "log": []}, thread())
    flat = drive.get_state(g, thread())
    deep = drive.get_state(g, thread(), subgraphs=True)
    return {"out": out, "flat": snap(flat), "deep": snap(deep)}


@dataclasses.dataclass
class Point:
    """A dataclass declared in a state schema: both libraries store and restore it."""

    x: int
    y: int


class WithPoint(TypedDict):
    where: Point
    trail: Annotated[list[Point], operator.add]


@scenario
def declared_dataclass_values_survive_checkpoints(lib, drive):
    b = lib.StateGraph(WithPoint)
    b.add_node("move", lambda s: {"where": Point(s["where"].x + 1, 0), "trail": [s["where"]]})
    b.add_edge(lib.START, "move")
    g = b.compile(checkpointer=lib.InMemorySaver())
    out = drive.invoke(g, {"where": Point(1, 2), "trail": []}, thread())
    hist = [h.values for h in drive.history(g, thread())]
    return {"out": out, "hist": hist, "type": type(hist[0]["where"]).__name__}


class _Opaque:
    def __init__(self, n: int) -> None:
        self.n = n


@scenario
def unserializable_value_fails_the_write(lib, drive):
    class S(TypedDict):
        x: int
        blob: Any

    b = lib.StateGraph(S)
    b.add_node("put", lambda s: {"blob": _Opaque(1)})
    b.add_edge(lib.START, "put")
    g = b.compile(checkpointer=lib.InMemorySaver())
    return {"err": catch(drive.invoke, g, {"x": 0}, thread())}


test_engine_state = scenario.test()
