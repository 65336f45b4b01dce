"""Runtime and context, ``max_concurrency`` and caching, on LangGraph 1.1.6 and pausepoint.

``context=`` on every run method reaches nodes, edges, entrypoints and ``@task``
functions as ``runtime.context`` (and ``get_runtime()``); it is not saved, so a resume
sees the context its own call passes; subgraphs see their parent's. ``max_concurrency``
caps a step's tasks in both drivers. Caching is refused by pausepoint (LangGraph has a
cache; pausepoint does not yet), never ignored.
"""

import asyncio
import dataclasses
import importlib
import operator
import threading
import time
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import LIBS, Lib, load_lib

pytestmark = pytest.mark.compat


@pytest.fixture(params=LIBS)
def lib(request: pytest.FixtureRequest) -> Lib:
    return load_lib(request.param)


def runtime_mod(lib: Lib) -> Any:
    return importlib.import_module(f"{lib.name}.runtime")


def func_mod(lib: Lib) -> Any:
    return importlib.import_module(f"{lib.name}.func")


@dataclasses.dataclass
class Ctx:
    user: str
    n: int = 0


class S(TypedDict, total=False):
    x: Any


def seen_runtime(runtime: Any) -> tuple[Any, ...]:
    """What a user can observe of a runtime (ids and times only as present)."""
    info = runtime.execution_info
    return (
        runtime.context,
        runtime.store,
        runtime.previous,
        runtime.server_info,
        info.checkpoint_ns.split(":")[0],
        info.thread_id,
        info.run_id,
        info.node_attempt,
        isinstance(info.node_first_attempt_time, float),
        bool(info.task_id),
        bool(info.checkpoint_id),
    )


def asking_graph(lib: Lib, seen: list[Any], saver: Any = None) -> Any:
    rt = runtime_mod(lib)

    def ask(state: S, runtime: Any) -> S:
        seen.append(seen_runtime(runtime))
        seen.append(rt.get_runtime() is runtime)
        return {"x": lib.interrupt("ok?")}

    def route(state: S, runtime: Any) -> str:
        seen.append(("route", runtime.context))
        return lib.END

    b = lib.StateGraph(S, context_schema=Ctx)
    b.add_node("ask", ask)
    b.add_edge(lib.START, "ask")
    b.add_conditional_edges("ask", route)
    return b.compile(checkpointer=saver or lib.InMemorySaver())


def test_context_reaches_nodes_and_edges_and_is_not_saved(lib: Lib):
    seen: list[Any] = []
    g = asking_graph(lib, seen)
    cfg = {"configurable": {"thread_id": "t"}}
    out = g.invoke({"x": 1}, cfg, context={"user": "ann"})  # a dict becomes a Ctx
    assert out["x"] == 1
    assert seen == [(Ctx("ann"), None, None, None, "ask", "t", None, 1, True, True, True), True]
    seen.clear()
    # Not checkpointed: a resume without context= sees none (pass it again to keep it).
    assert g.invoke(lib.Command(resume="yes"), cfg) == {"x": "yes"}
    assert seen[0][0] is None
    assert seen[-1] == ("route", None)
    assert "user" not in g.get_state(cfg).metadata


def test_context_on_resume_and_in_every_run_method(lib: Lib):
    seen: list[Any] = []
    g = asking_graph(lib, seen)
    cfg = {"configurable": {"thread_id": "t"}}
    list(g.stream({"x": 1}, cfg, context=Ctx("s")))
    g.invoke(lib.Command(resume="yes"), cfg, context=Ctx("again"))
    assert [s[0] for s in seen if isinstance(s, tuple) and len(s) > 2] == [Ctx("s"), Ctx("again")]
    assert seen[-1] == ("route", Ctx("again"))
    seen.clear()
    cfg2 = {"configurable": {"thread_id": "t2"}}
    asyncio.run(g.ainvoke({"x": 1}, cfg2, context=Ctx("a")))

    async def drain() -> None:
        async for _ in g.astream(lib.Command(resume=1), cfg2, context=Ctx("b")):
            pass

    asyncio.run(drain())
    assert seen[0][0] == Ctx("a")
    assert seen[-1] == ("route", Ctx("b"))


def test_a_context_that_cannot_be_stored_pauses_and_resumes(lib: Lib):
    # Not written to the checkpoint: a lock (which no saver can store) is a fine context.
    seen: list[Any] = []
    g = asking_graph(lib, seen)
    cfg = {"configurable": {"thread_id": "lock"}}
    lock = threading.Lock()
    assert "__interrupt__" in g.invoke({"x": 1}, cfg, context=lock)
    assert g.invoke(lib.Command(resume=2), cfg, context=lock) == {"x": 2}
    assert seen[0][0] is lock
    assert seen[-1] == ("route", lock)


def test_context_is_not_written_to_sqlite(tmp_path: Any):
    from pausepoint.checkpoint.sqlite import SqliteSaver

    lib = load_lib("pausepoint")
    seen: list[Any] = []
    with SqliteSaver.from_conn_string(str(tmp_path / "ctx.db")) as saver:
        g = asking_graph(lib, seen, saver)
        cfg = {"configurable": {"thread_id": "sqlite"}}
        lock = threading.Lock()  # no saver can store it: a write would be refused
        g.invoke({"x": 1}, cfg, context=lock)
        assert g.invoke(lib.Command(resume=3), cfg, context=lock) == {"x": 3}
        assert seen[0][0] is lock


def test_subgraphs_see_the_parent_context(lib: Lib):
    seen: list[Any] = []
    inner = lib.StateGraph(S)
    inner.add_node("leaf", lambda s, runtime: seen.append(runtime.context) or {"x": 2})
    inner.add_edge(lib.START, "leaf")
    sub = inner.compile()

    def call(state: S) -> Any:  # runs the subgraph from inside a node
        return sub.invoke(state)

    outer = lib.StateGraph(S, context_schema=Ctx)
    outer.add_node("sub", sub)
    outer.add_node("call", call)
    outer.add_edge(lib.START, "sub")
    outer.add_edge("sub", "call")
    outer.compile().invoke({"x": 1}, context=Ctx("p"))
    assert seen == [Ctx("p"), Ctx("p")]


def test_entrypoint_and_task_runtime(lib: Lib):
    func = func_mod(lib)
    seen: list[Any] = []

    @func.task
    def double(x: int, runtime: Any = None) -> int:
        seen.append(("task", runtime.context))
        return 2 * x

    @func.entrypoint(checkpointer=lib.InMemorySaver(), context_schema=Ctx)
    def flow(x: int, *, previous: Any = None, runtime: Any) -> int:
        seen.append(("flow", runtime.context, runtime.previous, previous))
        return double(x).result()

    cfg = {"configurable": {"thread_id": "t"}}
    assert flow.invoke(1, cfg, context=Ctx("e")) == 2
    assert flow.invoke(5, cfg, context={"user": "f"}) == 10
    assert seen == [
        ("flow", Ctx("e"), None, None),
        ("task", Ctx("e")),
        ("flow", Ctx("f"), 2, 2),
        ("task", Ctx("f")),
    ]


def test_runtime_without_context_and_its_writer(lib: Lib):
    seen: list[Any] = []

    def node(state: S, runtime: Any) -> S:
        seen.append((runtime.context, runtime.previous))
        runtime.stream_writer("hi")
        return {}

    b = lib.StateGraph(S)
    b.add_node("n", node)
    b.add_edge(lib.START, "n")
    g = b.compile()
    assert list(g.stream({"x": 1}, stream_mode="custom")) == ["hi"]
    assert g.invoke({"x": 1}) == {"x": 1}  # nobody streams custom: a no-op
    assert asyncio.run(g.ainvoke({"x": 1}, context="plain")) == {"x": 1}
    assert seen == [(None, None), (None, None), ("plain", None)]


def test_retries_count_attempts_and_run_id(lib: Lib):
    attempts: list[tuple[int, Any]] = []

    def flaky(state: S, runtime: Any) -> S:
        info = runtime.execution_info
        attempts.append((info.node_attempt, info.run_id))
        if info.node_attempt < 3:
            raise ValueError("again")
        return {}

    b = lib.StateGraph(S)
    policy = importlib.import_module(f"{lib.name}.types").RetryPolicy(
        initial_interval=0.001, jitter=False, retry_on=ValueError
    )
    b.add_node("f", flaky, retry_policy=policy)
    b.add_edge(lib.START, "f")
    run_id = "1f0c3b2a-0000-0000-0000-000000000000"
    b.compile().invoke({"x": 1}, {"run_id": run_id})
    assert attempts == [(1, run_id), (2, run_id), (3, run_id)]


def test_bad_context_for_a_dataclass_schema_raises_before_running(lib: Lib):
    seen: list[Any] = []
    g = asking_graph(lib, seen)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bad'"):
        g.invoke({"x": 1}, {"configurable": {"thread_id": "t"}}, context={"bad": 1})
    assert seen == []
    assert g.get_state({"configurable": {"thread_id": "t"}}).values == {}


def test_get_runtime_outside_a_run(lib: Lib):
    with pytest.raises(RuntimeError, match="Called get_config outside of a runnable context"):
        runtime_mod(lib).get_runtime()


def test_runtime_class_defaults_and_merge(lib: Lib):
    rt = runtime_mod(lib)
    blank = rt.Runtime()
    assert (blank.context, blank.store, blank.previous, blank.execution_info) == (None,) * 4
    assert list(rt.Runtime.__dataclass_fields__) == [
        "context",
        "store",
        "stream_writer",
        "previous",
        "execution_info",
        "server_info",
    ]
    assert blank.merge(rt.Runtime(context=1)).context == 1
    assert rt.Runtime(context=2).merge(rt.Runtime()).context == 2
    assert rt.Runtime(context=1).override(previous=3).previous == 3


# --- max_concurrency ---------------------------------------------------------------------


class Fan(TypedDict):
    out: Annotated[list[int], operator.add]


class Peak:
    """How many node runs overlapped at most (a counter, never a duration).

    ``until`` makes each run wait, up to a few seconds, for the peak to reach it (the
    limit under test), so a loaded machine that starts threads slowly still shows the
    overlap the limit allows; a cap that is not kept still shows as a higher peak, and
    one that allows too little as a lower one (after the wait).
    """

    def __init__(self, until: int) -> None:
        self.lock = threading.Condition()
        self.running = 0
        self.peak = 0
        self.until = until

    def reached(self) -> bool:
        with self.lock:
            return self.lock.wait_for(lambda: self.peak >= self.until, timeout=5)

    async def areached(self) -> None:
        for _ in range(500):  # the event loop must run the others meanwhile
            if self.peak >= self.until:
                return
            await asyncio.sleep(0.01)

    def enter(self) -> None:
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
            self.lock.notify_all()

    def leave(self) -> None:
        with self.lock:
            self.running -= 1


def fan_out(lib: Lib, work: Any) -> Any:
    b = lib.StateGraph(Fan)
    b.add_node("fan", lambda s: {})
    b.add_node("work", work)
    b.add_edge(lib.START, "fan")
    b.add_conditional_edges("fan", lambda s: [lib.Send("work", i) for i in range(8)])
    return b.compile()


@pytest.mark.parametrize("limit", [1, 3])
@pytest.mark.parametrize("how", ["invoke", "stream", "ainvoke", "ainvoke-sync-node", "astream"])
def test_max_concurrency_caps_a_step(lib: Lib, how: str, limit: int):
    peak = Peak(limit)

    def work(i: int) -> Fan:
        peak.enter()
        peak.reached()  # the others start meanwhile, if allowed
        time.sleep(0.02)  # and one more would, if the cap let it
        peak.leave()
        return {"out": [i]}

    async def awork(i: int) -> Fan:
        peak.enter()
        await peak.areached()
        await asyncio.sleep(0.02)
        peak.leave()
        return {"out": [i]}

    g = fan_out(lib, awork if how in ("ainvoke", "astream") else work)
    cfg = {"max_concurrency": limit}
    if how == "invoke":
        out = g.invoke({"out": []}, cfg)["out"]
    elif how == "stream":
        out = [i for c in g.stream({"out": []}, cfg) if "work" in c for i in c["work"]["out"]]
    elif how == "astream":

        async def drain() -> list[int]:
            got: list[int] = []
            async for c in g.astream({"out": []}, cfg):
                got += c["work"]["out"] if "work" in c else []
            return got

        out = asyncio.run(drain())
    else:
        out = asyncio.run(g.ainvoke({"out": []}, cfg))["out"]
    assert sorted(out) == list(range(8))
    assert peak.peak == limit


# --- caching -------------------------------------------------------------------------------


def test_cache_is_refused_not_ignored():
    lib = load_lib("pausepoint")
    types_ = importlib.import_module("pausepoint.types")
    func = func_mod(lib)
    b = lib.StateGraph(S)
    with pytest.raises(NotImplementedError, match=r"add_node\(cache_policy=...\) is not supported"):
        b.add_node("a", lambda s: {}, cache_policy=types_.CachePolicy())
    assert "a" not in b.nodes
    b.add_node("a", lambda s: {})
    b.add_edge(lib.START, "a")
    with pytest.raises(NotImplementedError, match=r"compile\(cache=...\) is not supported"):
        b.compile(cache=object())
    with pytest.raises(NotImplementedError, match="does not cache"):
        func.task(cache_policy=types_.CachePolicy(ttl=5))
    with pytest.raises(NotImplementedError, match=r"entrypoint\(cache=...\)"):
        func.entrypoint(cache=object())
    with pytest.raises(NotImplementedError, match=r"entrypoint\(cache_policy=...\)"):
        func.entrypoint(cache_policy=types_.CachePolicy())
