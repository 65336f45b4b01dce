"""Stream events around subgraphs, side by side with LangGraph 1.1.6 (issue 16, families 7-8).

Each scenario builds the same graph with either library's names, streams it in every
stream mode (``subgraphs=True``) on a fresh thread per mode, and records the chunks and
the root history. The two records must match once normalised (ids numbered by first
appearance, timestamps masked). Every scenario runs through the sync and the async API,
on ``InMemorySaver`` and on a real SQLite file.

A second check needs no oracle: a ``checkpoints`` event names as its parent only a
checkpoint the saver holds, and for a checkpoint the saver holds, the parent the saver
has. LangGraph fails it after a resume with ``durability="exit"`` (docs/differences.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
import pprint
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from compat._harness import Lib, load_lib, normalize, unordered

MODES = ("values", "updates", "debug", "tasks", "checkpoints")


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


# --- running one library -----------------------------------------------------------------


class Side:
    """One library through one API colour (sync or async) and one saver kind."""

    def __init__(self, lib_name: str, driver: str, store: str, path: Path) -> None:
        self.lib = load_lib(lib_name)
        self.is_async = driver == "async"
        self.store = store
        self.path = path / f"{lib_name}-{driver}.sqlite"
        self.runner = asyncio.Runner() if self.is_async else None
        self.saver: Any = None
        self._exit: Callable[[], Any] | None = None

    def __enter__(self) -> Side:
        if self.store == "memory":
            self.saver = self.lib.InMemorySaver()
        elif self.is_async:
            cm = _async_sqlite(self.lib.name, str(self.path))
            self.saver = self._run(cm.__aenter__())
            self._exit = lambda: self._run(cm.__aexit__(None, None, None))
        else:
            cm = _sync_sqlite(self.lib.name, str(self.path))
            self.saver = cm.__enter__()
            self._exit = lambda: cm.__exit__(None, None, None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._exit is not None:
            self._exit()
        if self.runner is not None:
            self.runner.close()

    def _run(self, coro: Any) -> Any:
        assert self.runner is not None
        return self.runner.run(coro)

    def stream(self, graph: Any, inp: Any, config: Any, **kw: Any) -> list[Any]:
        """Every chunk; a run that raises ends with a ``("raised", type)`` record."""
        chunks: list[Any] = []

        async def collect() -> None:
            async for chunk in graph.astream(inp, config, **kw):
                chunks.append(chunk)

        try:
            if self.is_async:
                self._run(collect())
            else:
                chunks.extend(graph.stream(inp, config, **kw))
        except Exception as exc:
            chunks.append(("raised", type(exc).__name__))
        return chunks

    def history(self, graph: Any, config: Any) -> list[Any]:
        async def collect() -> list[Any]:
            return [s async for s in graph.aget_state_history(config)]

        found = self._run(collect()) if self.is_async else list(graph.get_state_history(config))
        return [(s.config, s.parent_config, [t.state for t in s.tasks]) for s in found]

    def saved(self, ns: str, checkpoint_id: str) -> Any:
        """The saver's tuple of a checkpoint (any namespace), or None."""
        conf = {"thread_id": self.thread_of[ns, checkpoint_id], "checkpoint_ns": ns}
        config = {"configurable": {**conf, "checkpoint_id": checkpoint_id}}
        if self.is_async:
            return self._run(self.saver.aget_tuple(config))
        return self.saver.get_tuple(config)

    thread_of: dict[tuple[str, str], str]


def _sync_sqlite(lib: str, path: str) -> Any:
    if lib == "langgraph":
        from langgraph.checkpoint.sqlite import SqliteSaver as LgSqlite

        return LgSqlite.from_conn_string(path)
    from pausepoint.checkpoint.sqlite import SqliteSaver

    return SqliteSaver.from_conn_string(path)


def _async_sqlite(lib: str, path: str) -> Any:
    if lib == "langgraph":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver as LgAsyncSqlite

        return LgAsyncSqlite.from_conn_string(path)
    from pausepoint.checkpoint.sqlite import AsyncSqliteSaver

    return AsyncSqliteSaver.from_conn_string(path)


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


# --- graphs ------------------------------------------------------------------------------


def _chain(lib: Lib, names: tuple[str, ...], last: Any = None, **compile_kw: Any) -> Any:
    """START -> names[0] -> names[1] ...; each node logs its name, ``last`` replaces the last."""
    b = lib.StateGraph(Log)
    prev = lib.START
    for n, name in enumerate(names):
        node = last if last is not None and n == len(names) - 1 else _logger(name)
        b.add_node(name, node)
        b.add_edge(prev, name)
        prev = name
    return b.compile(**compile_kw)


def _logger(name: str) -> Callable[[Log], dict[str, list[str]]]:
    return lambda state: {"log": [name]}


def _nest(lib: Lib, inner: Any, depth: int, saver: Any, after: tuple[str, ...] = ()) -> Any:
    """``inner`` under ``depth`` levels: each level runs a node, then the level below."""
    graph = inner
    for level in range(depth, 0, -1):
        b = lib.StateGraph(Log)
        b.add_node(f"pre{level}", _logger(f"pre{level}"))
        b.add_node(f"sub{level}", graph)
        b.add_edge(lib.START, f"pre{level}")
        b.add_edge(f"pre{level}", f"sub{level}")
        if level == 1:
            for name in after:
                b.add_node(name, _logger(name))
                b.add_edge(f"sub{level}", name)
            return b.compile(checkpointer=saver)
        graph = b.compile()
    raise AssertionError("depth must be at least 1")


# A scenario: (lib, saver) -> graph, the inputs to stream one after another (and what
# to add to their config).
Scenario = Callable[[Lib, Any], tuple[Any, ...]]


def chained(depth: int) -> Scenario:
    def make(lib: Lib, saver: Any) -> tuple[Any, list[Any]]:
        inner = _chain(lib, ("one", "two"))
        return _nest(lib, inner, depth, saver, after=("after",)), [{"log": []}]

    return make


def asking(depth: int) -> Scenario:
    def make(lib: Lib, saver: Any) -> tuple[Any, list[Any]]:
        def ask(state: Log) -> dict[str, list[str]]:
            return {"log": [lib.interrupt("question")]}

        inner = _chain(lib, ("one", "ask"), last=ask)
        graph = _nest(lib, inner, depth, saver, after=("after",))
        return graph, [{"log": []}, lib.Command(resume="answer")]

    return make


def breakpoint_in_subgraph(depth: int, where: str) -> Scenario:
    def make(lib: Lib, saver: Any) -> tuple[Any, list[Any]]:
        pause = {"interrupt_before": ["two"]} if where == "before" else {"interrupt_after": ["one"]}
        inner = _chain(lib, ("one", "two"), **pause)
        return _nest(lib, inner, depth, saver, after=("after",)), [{"log": []}, None]

    return make


def parent_command(depth: int) -> Scenario:
    """A subgraph node sends ``Command(graph=PARENT, goto="jump")`` to the graph above it.

    That graph has a static edge and a conditional edge from the subgraph's node: both
    still fire (LangGraph runs the goto target and both edges' targets).
    """

    def make(lib: Lib, saver: Any) -> tuple[Any, list[Any]]:
        def leave(state: Log) -> Any:
            return lib.Command(graph=lib.Command.PARENT, goto="jump", update={"log": ["leave"]})

        def route(state: Log) -> str:
            return "routed" if "leave" in state.get("log", []) else "static"

        inner = _chain(lib, ("leave",), last=leave)
        b = lib.StateGraph(Log)
        b.add_node("cmd", inner, destinations=("jump",))
        # Added out of name order: a step's tasks are listed by name within a run and
        # after a load, by insertion order in a snapshot (tests/compat/test_task_order.py).
        for name in ("static", "routed", "jump"):
            b.add_node(name, _logger(name))
        b.add_edge(lib.START, "cmd")
        b.add_edge("cmd", "static")
        b.add_conditional_edges("cmd", route, ["routed", "static"])
        if depth == 1:
            return b.compile(checkpointer=saver), [{"log": []}]
        return _nest(lib, b.compile(), depth - 1, saver), [{"log": []}]

    return make


def parent_command_from_function(lib: Lib, saver: Any) -> tuple[Any, list[Any]]:
    """As :func:`parent_command`, the subgraph called inside a node function."""

    def leave(state: Log) -> Any:
        return lib.Command(graph=lib.Command.PARENT, goto="jump", update={"log": ["leave"]})

    inner = _chain(lib, ("leave",), last=leave)

    def call(state: Log) -> dict[str, list[str]]:
        inner.invoke(state)
        return {"log": ["unreached"]}

    b = lib.StateGraph(Log)
    b.add_node("call", call, destinations=("jump",))
    for name in ("jump", "static"):
        b.add_node(name, _logger(name))
    b.add_edge(lib.START, "call")
    b.add_edge("call", "static")
    return b.compile(checkpointer=saver), [{"log": []}]


def root_breakpoint_after(lib: Lib, saver: Any) -> tuple[Any, list[Any]]:
    """The root pauses after its subgraph node (its last checkpoint is reported on resume)."""
    b = lib.StateGraph(Log)
    b.add_node("sub1", _chain(lib, ("one", "two")))
    b.add_node("after", _logger("after"))
    b.add_edge(lib.START, "sub1")
    b.add_edge("sub1", "after")
    return b.compile(checkpointer=saver, interrupt_after=["sub1"]), [{"log": []}, None]


def recursion_limit(lib: Lib, saver: Any) -> tuple[Any, list[Any], dict[str, Any]]:
    """A subgraph node in an endless loop, stopped by the recursion limit."""
    b = lib.StateGraph(Log)
    b.add_node("sub1", _chain(lib, ("one",)))
    b.add_edge(lib.START, "sub1")
    b.add_edge("sub1", "sub1")
    return b.compile(checkpointer=saver), [{"log": []}], {"recursion_limit": 3}


SCENARIOS: dict[str, Scenario] = {
    "root-breakpoint-after": root_breakpoint_after,
    "recursion-limit": recursion_limit,
    "chained-depth1": chained(1),
    "chained-depth2": chained(2),
    "asking-depth1": asking(1),
    "asking-depth2": asking(2),
    "breakpoint-before-depth1": breakpoint_in_subgraph(1, "before"),
    "breakpoint-before-depth2": breakpoint_in_subgraph(2, "before"),
    "breakpoint-after-depth1": breakpoint_in_subgraph(1, "after"),
    "breakpoint-after-depth2": breakpoint_in_subgraph(2, "after"),
    "parent-command-depth1": parent_command(1),
    "parent-command-depth2": parent_command(2),
    "parent-command-from-function": parent_command_from_function,
}


# A subgraph called inside a node function is not yet a subgraph task in snapshots and
# checkpoint events (its task's state): issue 16 family 6. Streams only, without those.
CALLED_IN_FUNCTION = {"parent-command-from-function"}


def record(
    side: Side, scenario: Scenario, durability: str, modes: tuple[str, ...], history: bool = True
) -> Any:
    """Each mode streamed on its own thread (all the scenario's inputs), and its history."""
    out: dict[str, Any] = {}
    graph, inputs, *extra = scenario(side.lib, side.saver)
    for mode in modes:
        config = {**thread(f"{mode}-{durability}"), **(extra[0] if extra else {})}
        runs = [
            settle(
                mode,
                side.stream(
                    graph, inp, config, stream_mode=mode, subgraphs=True, durability=durability
                ),
            )
            for inp in inputs
        ]
        out[mode] = {"runs": runs, "history": side.history(graph, config) if history else None}
    return out


def settle(mode: str, chunks: list[Any]) -> list[Any]:
    """``chunks`` with each run of consecutive task results unordered.

    Tasks of one step finish in any order (in threads, or asyncio tasks), and each
    reports its result when it finishes, in either library.
    """
    out: list[Any] = []
    group: list[Any] = []
    for chunk in [*chunks, None]:
        if chunk is not None and _is_result(mode, chunk):
            group.append(chunk)
            continue
        if group:
            out.append(unordered(group) if len(group) > 1 else group[0])
            group = []
        if chunk is not None:
            out.append(chunk)
    return out


def _is_result(mode: str, chunk: Any) -> bool:
    if chunk[0] == "raised":
        return False
    payload = chunk[1]
    if mode == "updates":
        return "__interrupt__" not in payload
    if mode == "tasks":
        return "result" in payload
    return mode == "debug" and payload["type"] == "task_result"


@contextlib.contextmanager
def sides(driver: str, store: str, path: Path) -> Iterator[tuple[Side, Side]]:
    with (
        Side("langgraph", driver, store, path) as lg,
        Side("pausepoint", driver, store, path) as pp,
    ):
        yield lg, pp


def assert_same(expected: Any, got: Any) -> None:
    """The normalised records of both libraries are equal (a unified diff if not)."""
    import difflib

    left, right = normalize(expected), normalize(got)
    if left == right:
        return
    a = pprint.pformat(left, width=100).splitlines()
    b = pprint.pformat(right, width=100).splitlines()
    diff = "\n".join(difflib.unified_diff(a, b, "langgraph", "pausepoint", lineterm=""))
    pytest.fail(f"pausepoint differs from LangGraph 1.1.6:\n{diff}", pytrace=False)


# --- differential tests ------------------------------------------------------------------


@pytest.mark.compat
@pytest.mark.parametrize("store", ["memory", "sqlite"])
@pytest.mark.parametrize("driver", ["sync", "async"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_events_match_langgraph(name: str, driver: str, store: str, tmp_path: Path) -> None:
    with sides(driver, store, tmp_path) as (lg, pp):
        scenario = SCENARIOS[name]
        kw: dict[str, Any] = {"modes": MODES}
        if name in CALLED_IN_FUNCTION:
            kw = {"modes": ("values", "updates", "tasks"), "history": False}
        assert_same(record(lg, scenario, "async", **kw), record(pp, scenario, "async", **kw))


# With durability="exit" the first run of a thread is compared (after a resume, LangGraph's
# parents disagree with its own history: see test_exit_events_name_saved_parents).
EXIT_SCENARIOS = ["chained-depth1", "chained-depth2", "asking-depth1", "asking-depth2"]


@pytest.mark.compat
@pytest.mark.parametrize("driver", ["sync", "async"])
@pytest.mark.parametrize("name", EXIT_SCENARIOS)
def test_exit_events_of_a_first_run_match_langgraph(name: str, driver: str, tmp_path: Path) -> None:
    with sides(driver, "sqlite", tmp_path) as (lg, pp):

        def first_run(lib: Lib, saver: Any) -> tuple[Any, list[Any]]:
            graph, inputs = SCENARIOS[name](lib, saver)
            return graph, inputs[:1]

        modes = ("debug", "checkpoints")
        assert_same(record(lg, first_run, "exit", modes), record(pp, first_run, "exit", modes))


@pytest.mark.compat
@pytest.mark.parametrize("driver", ["sync", "async"])
def test_checkpointer_false_subgraph_task_has_no_state(driver: str, tmp_path: Path) -> None:
    """A subgraph compiled with ``checkpointer=False`` keeps no state: its task's is None."""
    with sides(driver, "memory", tmp_path) as (lg, pp):

        def make(side: Side) -> Any:
            inner = _chain(side.lib, ("one",), checkpointer=False)
            graph = _nest(side.lib, inner, 1, side.saver)
            return side.stream(graph, {"log": []}, thread("f"), stream_mode="checkpoints")

        assert_same(make(lg), make(pp))


@pytest.mark.compat
@pytest.mark.parametrize("driver", ["sync", "async"])
def test_no_checkpoint_events_without_a_checkpointer(driver: str, tmp_path: Path) -> None:
    """No saver, no history: ``checkpoints`` and ``debug`` describe no checkpoint."""
    with sides(driver, "memory", tmp_path) as (lg, pp):

        def make(side: Side) -> Any:
            graph = _nest(side.lib, _chain(side.lib, ("one",)), 1, None)
            return {
                mode: side.stream(graph, {"log": []}, None, stream_mode=mode, subgraphs=True)
                for mode in ("checkpoints", "debug")
            }

        assert_same(make(lg), make(pp))


# --- events against the saver ------------------------------------------------------------


def parent_mismatches(side: Side, name: str, durability: str) -> list[str]:
    """Where a ``checkpoints`` event's parent is not what the saver holds.

    Each of the scenario's inputs is streamed twice over (a second thread run after the
    first), so resumed runs and runs on an existing thread are covered.
    """
    graph, inputs = SCENARIOS[name](side.lib, side.saver)
    config = thread(f"parents-{durability}")
    events: list[dict[str, Any]] = []
    for inp in [*inputs, *inputs]:
        for _ns, event in side.stream(
            graph, inp, config, stream_mode="checkpoints", subgraphs=True, durability=durability
        ):
            events.append(event)
    side.thread_of = {}
    for event in events:
        for conf in (event["config"], event["parent_config"]):
            if conf:
                c = conf["configurable"]
                side.thread_of[c["checkpoint_ns"], c["checkpoint_id"]] = c["thread_id"]
    problems: list[str] = []
    for event in events:
        conf = event["config"]["configurable"]
        parent = event["parent_config"] and event["parent_config"]["configurable"]
        step = f"{conf['checkpoint_ns']!r} step {event['metadata']['step']}"
        if parent and side.saved(parent["checkpoint_ns"], parent["checkpoint_id"]) is None:
            problems.append(f"{step}: the parent named was never saved")
        saved = side.saved(conf["checkpoint_ns"], conf["checkpoint_id"])
        if saved is not None:
            held = saved.parent_config and saved.parent_config["configurable"]["checkpoint_id"]
            named = parent and parent["checkpoint_id"]
            if held != named:
                problems.append(f"{step}: the saver's parent is {held}, the event's {named}")
    return problems


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
@pytest.mark.parametrize("store", ["memory", "sqlite"])
@pytest.mark.parametrize("driver", ["sync", "async"])
@pytest.mark.parametrize(
    "name", ["chained-depth2", "asking-depth2", "breakpoint-after-depth2", "root-breakpoint-after"]
)
def test_events_name_the_parents_the_saver_holds(
    name: str, driver: str, store: str, durability: str, tmp_path: Path
) -> None:
    with Side("pausepoint", driver, store, tmp_path) as pp:
        assert parent_mismatches(pp, name, durability) == []


@pytest.mark.compat
def test_langgraph_exit_events_disagree_with_its_history(tmp_path: Path) -> None:
    """Why pausepoint differs here (docs/differences.md): LangGraph's events name the
    loaded checkpoint's parent, its history the loaded checkpoint."""
    with Side("langgraph", "sync", "memory", tmp_path) as lg:
        problems = parent_mismatches(lg, "chained-depth1", "exit")
    assert any("the saver's parent is" in p for p in problems), problems
