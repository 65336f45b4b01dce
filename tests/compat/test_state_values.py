"""State scenarios: ``Overwrite`` where it is taken, one-value schemas, managed values.

A one-value schema (``StateGraph(Annotated[list, operator.add])``, ``StateGraph(int)``)
makes the whole state one channel: nodes receive it and return it bare, and snapshots,
history, ``update_state`` and every stream mode show it bare too. Managed values
(``RemainingSteps``, ``IsLastStep``) are given to nodes and conditional edges, never
stored.
"""

import importlib
import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import SAVERS, Scenarios, catch, exact, thread

scenario = Scenarios(savers=SAVERS)


class Logged(TypedDict):
    log: Annotated[list[str], operator.add]
    note: str


def _fan(lib: Any, b_writes: Any, c_writes: Any) -> Any:
    """START -> a -> (b, c): b and c write ``log`` in the same step."""
    b = lib.StateGraph(Logged)
    b.add_node("a", lambda s: {"log": ["a"]})
    b.add_node("b", lambda s: {"log": b_writes})
    b.add_node("c", lambda s: {"log": c_writes})
    b.add_edge(lib.START, "a")
    b.add_edge("a", "b")
    b.add_edge("a", "c")
    return b


def _run(lib: Any, drive: Any, builder: Any) -> Any:
    g = builder.compile(checkpointer=drive.saver())
    out = catch(drive.invoke, g, {"log": ["start"]}, thread(), message=True)
    if isinstance(out, tuple):  # the error text must match: keep LangGraph's sentence
        out = (*out[:2], "per super-step" in out[2])
    if isinstance(out, tuple):
        return out  # LangGraph's get_state then raises again: its writes are kept
    return {"out": out, "state": drive.get_state(g, thread()).values}


@scenario
def overwrite_beats_a_sibling_write_in_the_same_step(lib, drive):
    return _run(lib, drive, _fan(lib, lib.Overwrite(["b"]), ["c"]))


@scenario
def overwrite_json_form_beats_a_sibling_write(lib, drive):
    return _run(lib, drive, _fan(lib, {"__overwrite__": ["b"]}, ["c"]))


@scenario
def two_overwrites_in_one_step_are_refused(lib, drive):
    return _run(lib, drive, _fan(lib, lib.Overwrite(["b"]), lib.Overwrite(["c"])))


@scenario
def overwrite_object_and_json_form_in_one_step_are_refused(lib, drive):
    return _run(lib, drive, _fan(lib, lib.Overwrite(["b"]), {"__overwrite__": ["c"]}))


@scenario
def overwrite_as_input_command_and_update_state(lib, drive):
    b = lib.StateGraph(Logged)
    b.add_node("a", lambda s: lib.Command(update={"log": lib.Overwrite(["cmd"])}))
    b.add_node("z", lambda s: {"log": {"__overwrite__": ["json"]}})
    b.add_edge(lib.START, "a")
    b.add_edge("a", "z")
    g = b.compile(checkpointer=drive.saver(), interrupt_before=["z"])
    first = drive.invoke(g, {"log": ["start"]}, thread())
    again = drive.invoke(g, {"log": lib.Overwrite(["input"])}, thread())
    drive.update_state(g, thread(), {"log": lib.Overwrite(["upd"])})
    drive.update_state(g, thread(), {"log": {"__overwrite__": ["upd-json"]}})
    state = drive.get_state(g, thread())
    rest = drive.stream(g, None, thread(), stream_mode=["updates", "values"])
    return {"first": first, "again": again, "state": state.values, "rest": rest}


@scenario
def overwrite_in_a_resume_command_and_bulk_updates(lib, drive):
    update = importlib.import_module(f"{lib.name}.types").StateUpdate
    b = lib.StateGraph(Logged)
    b.add_node("a", lambda s: {"log": ["a"]})
    b.add_node("z", lambda s: {"log": ["z"]})
    b.add_edge(lib.START, "a")
    b.add_edge("a", "z")
    g = b.compile(checkpointer=drive.saver(), interrupt_before=["z"])
    drive.invoke(g, {"log": ["s"]}, thread())
    resumed = drive.invoke(g, lib.Command(update={"log": lib.Overwrite(["cmd"])}), thread())
    steps = [[update({"log": lib.Overwrite(["b1"])}, "a")], [update({"log": ["b2"]}, "a")]]
    drive.bulk_update_state(g, thread(), steps)
    after_steps = drive.get_state(g, thread()).values
    one_step = [[update({"log": lib.Overwrite(["x"])}, "a"), update({"log": ["y"]}, "z")]]
    drive.bulk_update_state(g, thread(), one_step)
    return {"resumed": resumed, "steps": after_steps, "one": drive.get_state(g, thread())}


@scenario
def overwrite_in_updates_stream_and_history(lib, drive):
    b = lib.StateGraph(Logged)
    b.add_node("a", lambda s: {"log": lib.Overwrite(["a"]), "note": "n"})
    b.add_edge(lib.START, "a")
    g = b.compile(checkpointer=drive.saver())
    events = drive.stream(g, {"log": ["s"]}, thread(), stream_mode=["updates", "values"])
    history = [(h.values, h.next, h.metadata["step"]) for h in drive.history(g, thread())]
    return {"events": events, "history": history}


@scenario
def reducer_keys_start_empty_as_their_concrete_type(lib, drive):
    from collections.abc import Mapping, MutableSet, Sequence

    def keep_last(old: Any, new: Any) -> Any:
        return new

    class S(TypedDict):
        seq: Annotated[Sequence[int], operator.add]
        names: Annotated[MutableSet[str], operator.or_]
        table: Annotated[Mapping[str, int], lambda a, b: {**a, **b}]
        flag: Annotated[bool, keep_last]
        seen: Annotated[list[Any], lambda a, b: [*a, type(b).__name__]]

    b = lib.StateGraph(S)
    b.add_node("n", lambda s: {"seen": s["table"]})
    b.add_edge(lib.START, "n")
    g = b.compile(checkpointer=drive.saver())
    before = drive.get_state(g, thread()).values
    return {"before": before, "out": drive.invoke(g, {"seq": [1]}, thread())}


# --- one-value states ------------------------------------------------------------------


def _listing(lib: Any, drive: Any) -> Any:
    """A one-value ``Annotated[list, add]`` graph: a -> b (asks) -> a ... until 5 items."""
    b = lib.StateGraph(Annotated[list, operator.add])
    b.add_node("a", lambda items: ["a"])

    def ask(items: list[str]) -> list[str]:
        return ["b" + lib.interrupt(f"after {len(items)}")]

    b.add_node("b", ask)
    b.add_conditional_edges("a", lambda items: "b" if len(items) < 5 else lib.END)
    b.add_edge(lib.START, "a")
    b.add_edge("b", "a")
    return b.compile(checkpointer=drive.saver())


@scenario
def one_value_state_runs_pauses_and_resumes(lib, drive):
    g = _listing(lib, drive)
    first = drive.invoke(g, ["in"], thread())
    state = drive.get_state(g, thread())
    second = drive.invoke(g, lib.Command(resume="!"), thread())
    third = drive.invoke(g, lib.Command(resume="?"), thread())
    return {"runs": [first, second, third], "state": state._asdict()}


@scenario
def one_value_state_streams_every_mode(lib, drive):
    g = _listing(lib, drive)
    modes = ["values", "updates", "tasks", "debug", "checkpoints"]
    events = drive.stream(g, ["in"], thread(), stream_mode=modes)
    events += drive.stream(g, lib.Command(resume="!"), thread(), stream_mode=modes)
    return events


@scenario
def one_value_state_history_and_update_state(lib, drive):
    g = _listing(lib, drive)
    drive.invoke(g, ["in"], thread())
    drive.update_state(g, thread(), ["u"], as_node="b")
    after_update = drive.get_state(g, thread())
    drive.update_state(g, thread(), lib.Overwrite(["reset"]))
    out = drive.invoke(g, None, thread())
    # Task results left out: pausepoint's update_state leaves the checkpoint it updates
    # as it was (a deliberate difference, docs/differences.md).
    history = [(h.values, h.next, h.metadata) for h in drive.history(g, thread())]
    return {"after_update": after_update._asdict(), "out": out, "history": history}


@scenario
def one_value_state_command_update_and_goto(lib, drive):
    b = lib.StateGraph(Annotated[list, operator.add])
    b.add_node("a", lambda items: lib.Command(update=["cmd"], goto="c"), destinations=("c",))
    b.add_node("c", lambda items: [f"c{len(items)}"])
    b.add_edge(lib.START, "a")
    g = b.compile(checkpointer=drive.saver())
    out = drive.invoke(g, ["in"], thread())
    return {"out": out, "state": drive.get_state(g, thread()).values}


@scenario
def one_value_last_value_states(lib, drive):
    ints = lib.StateGraph(int)
    ints.add_node("inc", lambda x: x + 1)
    ints.add_node("skip", lambda x: None)
    ints.add_edge(lib.START, "inc")
    ints.add_edge("inc", "skip")
    words = lib.StateGraph(list[str])
    words.add_node("add", lambda w: [*w, "z"])
    words.add_edge(lib.START, "add")
    merged = lib.StateGraph(Annotated[dict, lambda a, b: {**a, **b}])
    merged.add_node("d", lambda d: {"x": 1})
    merged.add_edge(lib.START, "d")
    whole = lib.StateGraph(dict)  # a dict is one value too: the last one written wins
    whole.add_node("a", lambda d: {"x": 1})
    whole.add_node("b", lambda d: {"y": len(d)})
    whole.add_edge(lib.START, "a")
    whole.add_edge("a", "b")
    return {
        "whole": drive.invoke(whole.compile(), {"z": 0}),
        "int": drive.invoke(ints.compile(), 1),
        "words": drive.invoke(words.compile(), ["y"]),
        "dict": drive.invoke(merged.compile(), {"y": 2}),
    }


@scenario
def one_value_parallel_writers_fold_with_the_reducer(lib, drive):
    b = lib.StateGraph(Annotated[list, operator.add])
    b.add_node("left", lambda items: ["left"])
    b.add_node("right", lambda items: ["right"])
    b.add_node("after", lambda items: [len(items)])
    b.add_edge(lib.START, "left")
    b.add_edge(lib.START, "right")
    b.add_edge(["left", "right"], "after")
    out = drive.invoke(b.compile(checkpointer=drive.saver()), ["in"], thread())
    return {"out": sorted(map(str, out)), "last": out[-1]}


# --- managed values ----------------------------------------------------------------


def _managed_loop(lib: Any, drive: Any, seen: list[Any], stop_at: int = 2) -> Any:
    """ask (pauses) -> work, looping on itself until ``stop_at`` steps or the last are left."""
    managed = importlib.import_module(f"{lib.name}.managed")

    class S(TypedDict):
        log: Annotated[list[str], operator.add]
        left: managed.RemainingSteps
        last: managed.IsLastStep

    def ask(s: Any) -> dict[str, Any]:
        lib.interrupt("go?")
        return {"log": ["asked"], "left": 99}  # a write to a managed key is ignored

    def work(s: Any) -> dict[str, Any]:
        seen.append(("work", dict(s)))
        return {"log": [f"w{s['left']}{s['last']}"]}

    def route(s: Any) -> str:
        seen.append(("route", dict(s)))
        return lib.END if s["left"] <= stop_at or s["last"] else "work"

    b = lib.StateGraph(S)
    b.add_node("ask", ask)
    b.add_node("work", work)
    b.add_edge(lib.START, "ask")
    b.add_edge("ask", "work")
    b.add_conditional_edges("work", route)
    return b.compile(checkpointer=drive.saver())


@scenario
def remaining_steps_count_from_each_run_start(lib, drive):
    seen: list[Any] = []
    g = _managed_loop(lib, drive, seen)
    cfg = {**thread(), "recursion_limit": 6}
    first = drive.invoke(g, {"log": [], "left": 5}, cfg)  # a managed input is ignored
    out = drive.invoke(g, lib.Command(resume=1), cfg)
    return {"first": first, "out": out, "seen": seen, "state": drive.get_state(g, cfg)}


@scenario
def is_last_step_ends_a_loop_before_the_limit(lib, drive):
    seen: list[Any] = []
    g = _managed_loop(lib, drive, seen, stop_at=0)
    cfg = {**thread(), "recursion_limit": 4}
    drive.invoke(g, {"log": []}, cfg)
    events = drive.stream(g, lib.Command(resume=1), cfg, stream_mode=["tasks", "values"])
    return {"events": events, "seen": seen}


@scenario
def managed_values_are_refused_in_input_and_output_schemas(lib, drive):
    managed = importlib.import_module(f"{lib.name}.managed")

    class Inner(TypedDict):
        log: Annotated[list[str], operator.add]
        left: managed.RemainingSteps
        last: managed.IsLastStep

    class Plain(TypedDict):
        log: Annotated[list[str], operator.add]

    return [
        exact(lib.StateGraph, Plain, input_schema=Inner),
        exact(lib.StateGraph, Plain, output_schema=Inner),
        # The state schema may declare them, and name itself as input or output.
        type(lib.StateGraph(Inner, input_schema=Inner, output_schema=Plain)).__name__,
    ]


test_state_values = scenario.test()
