"""Engine scenarios: state schemas, reducers, Overwrite, config and async nodes."""

import dataclasses
import operator
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import Scenarios, thread

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
def reducer_operator_add_parallel_writers(lib, drive):
    runs: Counter[str] = Counter()
    b = lib.StateGraph(Logged)
    for tag in ("left", "right", "after"):
        b.add_node(tag, _appender(tag, runs))
    b.add_edge(lib.START, "left")
    b.add_edge(lib.START, "right")
    b.add_edge(["left", "right"], "after")
    out = drive.invoke(b.compile(), {"x": 0, "log": ["in"]})
    return {"out": {"x": out["x"], "log": sorted(out["log"])}, "last": out["log"][-1]}


@scenario
def custom_reducer_merges_dicts(lib, drive):
    def merge(old: dict[str, int] | None, new: dict[str, int]) -> dict[str, int]:
        return {**(old or {}), **new}

    def biggest(old: int, new: int) -> int:
        return max(old, new)

    class S(TypedDict):
        scores: Annotated[dict[str, int], merge]
        best: Annotated[int, biggest]

    b = lib.StateGraph(S)
    b.add_node("one", lambda s: {"scores": {"a": 1}, "best": 3})
    b.add_node("two", lambda s: {"scores": {"b": 2, "a": 5}, "best": 2})
    b.add_edge(lib.START, "one")
    b.add_edge("one", "two")
    return drive.invoke(b.compile(), {"scores": {"z": 0}, "best": 1})


@scenario
def overwrite_bypasses_reducer(lib, drive):
    b = lib.StateGraph(Logged)
    b.add_node("grow", lambda s: {"log": ["grown"]})
    b.add_node("reset", lambda s: {"log": lib.Overwrite(["reset"])})
    b.add_edge(lib.START, "grow")
    b.add_edge("grow", "reset")
    return drive.invoke(b.compile(), {"x": 1, "log": ["start"]})


@scenario
def typeddict_total_false_leaves_keys_unset(lib, drive):
    class S(TypedDict, total=False):
        a: int
        b: str
        c: list[int]

    seen: list[Any] = []

    def first(state: S) -> dict[str, Any]:
        seen.append(sorted(state))
        return {"b": "set"}

    b = lib.StateGraph(S)
    b.add_node("first", first)
    b.add_node("second", lambda s: seen.append(dict(s)))
    b.add_edge(lib.START, "first")
    b.add_edge("first", "second")
    return {"out": drive.invoke(b.compile(), {"a": 1}), "seen": seen}


@scenario
def dataclass_state_with_defaults(lib, drive):
    @dataclasses.dataclass
    class S:
        x: int
        tag: str = "none"
        items: Annotated[list[int], operator.add] = dataclasses.field(default_factory=list)

    seen: list[Any] = []

    def step(state: S) -> dict[str, Any]:
        seen.append((type(state).__name__, state.x, state.tag, list(state.items)))
        return {"x": state.x * 2, "items": [state.x]}

    b = lib.StateGraph(S)
    b.add_node("step", step)
    b.add_node("again", step)
    b.add_edge(lib.START, "step")
    b.add_edge("step", "again")
    return {"out": drive.invoke(b.compile(), S(x=3)), "seen": seen}


@scenario
def pydantic_state_model(lib, drive):
    pydantic = pytest.importorskip("pydantic")

    class S(pydantic.BaseModel):
        x: int
        note: str = "-"

    seen: list[Any] = []

    def step(state: S) -> dict[str, Any]:
        seen.append((type(state).__name__, state.x, state.note))
        return {"x": state.x + 1, "note": "stepped"}

    b = lib.StateGraph(S)
    b.add_node("step", step)
    b.add_edge(lib.START, "step")
    return {"out": drive.invoke(b.compile(), {"x": 1}), "seen": seen}


@scenario
def input_and_output_schemas(lib, drive):
    class In(TypedDict):
        question: str

    class Out(TypedDict):
        answer: str

    class S(In, Out):
        scratch: list[str]

    def think(state: S) -> dict[str, Any]:
        return {"scratch": [state["question"].upper()]}

    def reply(state: S) -> dict[str, Any]:
        return {"answer": f"{state['question']}? {state['scratch'][0]}!"}

    b = lib.StateGraph(S, input_schema=In, output_schema=Out)
    b.add_node("think", think)
    b.add_node("reply", reply)
    b.add_edge(lib.START, "think")
    b.add_edge("think", "reply")
    return drive.invoke(b.compile(), {"question": "why"})


@scenario
def node_receives_config(lib, drive):
    seen: list[Any] = []

    def node(state: Num, config) -> dict[str, int]:
        conf = config["configurable"]
        inner = lib.get_config()
        seen.append((conf["user"], conf["thread_id"], config.get("metadata", {}).get("m")))
        seen.append((inner["configurable"]["user"], sorted(inner.get("tags", []))))
        return {"x": state["x"] + len(conf["user"])}

    b = lib.StateGraph(Num)
    b.add_node("node", node)
    b.add_edge(lib.START, "node")
    g = b.compile(checkpointer=lib.InMemorySaver())
    cfg = {**thread("t1", user="ada"), "tags": ["tg"], "metadata": {"m": 1}}
    return {"out": drive.invoke(g, {"x": 1}, cfg), "seen": seen}


@scenario(drivers=("async",))
def async_nodes_in_async_driver(lib, drive):
    import asyncio

    async def slow(state: Logged) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"log": ["slow"], "x": state["x"] + 1}

    async def fast(state: Logged) -> dict[str, Any]:
        return {"log": ["fast"]}

    b = lib.StateGraph(Logged)
    b.add_node("slow", slow)
    b.add_node("fast", fast)
    b.add_node("sync_after", lambda s: {"log": ["sync"]})
    b.add_edge(lib.START, "slow")
    b.add_edge(lib.START, "fast")
    b.add_edge(["slow", "fast"], "sync_after")
    out = drive.invoke(b.compile(), {"x": 0, "log": []})
    return {"x": out["x"], "log": sorted(out["log"])}


test_engine_schemas = scenario.test()
