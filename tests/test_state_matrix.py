"""State inspection and updates on every driver × saver: sync/async × memory/SQLite/PostgreSQL.

Each scenario is written once, as a coroutine over an `Api` that calls either the
sync methods (``get_state``, ``update_state``, ...) or their async forms, on one
saver opened for the driver (``AsyncPostgresSaver`` for async PostgreSQL: its sync
methods refuse, so the async state methods must use the saver's async ones). A
scenario returns what it observed, normalised (checkpoint, task and interrupt ids
by order of first appearance; no timestamps): every driver × saver pair must
observe the same, and the sync pair on memory is also run on LangGraph 1.1.6 (when
installed) to observe the same there, but for the documented differences.

tests/savers/test_state_methods.py runs the state methods on the same savers (and on
``AsyncSqliteSaver`` under the sync driver) for subgraph snapshots and the checks an
update passes before it is stored; this matrix adds the interrupt/resume paths, forks,
the special ``as_node`` values, and the comparison with LangGraph.
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
import os
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

import pausepoint
from pausepoint import types as pp_types
from pausepoint.errors import InvalidUpdateError

DRIVERS = ("sync", "async")
SAVERS = ("memory", "sqlite", "postgres")


class Api:
    """One driver's state methods, awaited the same way whichever it is."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    async def invoke(self, graph: Any, inp: Any, config: Any) -> Any:
        if self.kind == "sync":
            return graph.invoke(inp, config)
        return await graph.ainvoke(inp, config)

    async def get_state(self, graph: Any, config: Any, **kw: Any) -> Any:
        if self.kind == "sync":
            return graph.get_state(config, **kw)
        return await graph.aget_state(config, **kw)

    async def history(self, graph: Any, config: Any, **kw: Any) -> list[Any]:
        if self.kind == "sync":
            return list(graph.get_state_history(config, **kw))
        return [s async for s in graph.aget_state_history(config, **kw)]

    async def update_state(self, graph: Any, config: Any, values: Any, as_node: Any = None) -> Any:
        if self.kind == "sync":
            return graph.update_state(config, values, as_node)
        return await graph.aupdate_state(config, values, as_node)

    async def bulk_update_state(self, graph: Any, config: Any, supersteps: Any) -> Any:
        if self.kind == "sync":
            return graph.bulk_update_state(config, supersteps)
        return await graph.abulk_update_state(config, supersteps)


class Lib:
    """The names a scenario builds its graph with: pausepoint's or LangGraph's."""

    def __init__(self, name: str) -> None:
        if name == "pausepoint":
            self.StateGraph, self.START, self.END = (
                pausepoint.StateGraph,
                pausepoint.START,
                "__end__",
            )
            self.interrupt, self.Command = pausepoint.interrupt, pausepoint.Command
            self.StateUpdate, self.InvalidUpdateError = pp_types.StateUpdate, InvalidUpdateError
            return
        from langgraph import errors, graph, types

        self.StateGraph, self.START, self.END = graph.StateGraph, graph.START, graph.END
        self.interrupt, self.Command = types.interrupt, types.Command
        self.StateUpdate, self.InvalidUpdateError = types.StateUpdate, errors.InvalidUpdateError


# --- savers --------------------------------------------------------------------------------


@pytest.fixture
def pg_url_in_schema() -> Any:
    """A PostgreSQL URL whose connections use a fresh schema (dropped afterwards)."""
    url = os.environ.get("PAUSEPOINT_PG_URL")
    if not url:
        how = 'start a server with: eval "$(scripts/postgres.sh start)"'
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but PAUSEPOINT_PG_URL is not: {how}", pytrace=False)
        pytest.skip(f"PAUSEPOINT_PG_URL is not set; {how}")
    import psycopg

    schema = f"pp_matrix_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    sep = "&" if "?" in url else "?"
    yield f"{url}{sep}options=-c%20search_path%3D{schema}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def opened(kind: str, driver: str, where: Any) -> AsyncIterator[Any]:
    """A saver of ``kind`` for ``driver``: what an application of that colour opens."""
    if kind == "memory":
        yield pausepoint.InMemorySaver()
    elif kind == "sqlite":
        from pausepoint.checkpoint.sqlite import AsyncSqliteSaver, SqliteSaver

        cls = SqliteSaver if driver == "sync" else AsyncSqliteSaver
        async with cls.from_conn_string(str(where)) as saver:
            yield saver
    elif driver == "sync":
        from pausepoint.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(where) as saver:
            saver.setup()
            yield saver
    else:
        from pausepoint.checkpoint.postgres import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(where) as saver:
            await saver.setup()
            yield saver


Scenario = Callable[[Lib, Api, Any], Awaitable[Any]]


def observe(scenario: Scenario, driver: str, saver: str, where: Any) -> Any:
    """Run ``scenario`` on pausepoint with one driver and saver; its normalised record."""

    async def go() -> Any:
        async with opened(saver, driver, where) as opened_saver:
            return await scenario(Lib("pausepoint"), Api(driver), opened_saver)

    return normalised(asyncio.run(go()))


# --- the graph and what is observed --------------------------------------------------------


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def review_graph(lib: Lib, saver: Any) -> Any:
    """``draft → ask → publish``: ``ask`` pauses for a reviewer's answer."""

    def draft(state: State) -> dict[str, Any]:
        return {"log": ["drafted"]}

    def ask(state: State) -> dict[str, Any]:
        answer = lib.interrupt({"question": "publish?", "seen": list(state["log"])})
        return {"log": [f"answer:{answer}"]}

    def publish(state: State) -> dict[str, Any]:
        return {"log": ["published"]}

    g = lib.StateGraph(State)
    g.add_node("draft", draft)
    g.add_node("ask", ask)
    g.add_node("publish", publish)
    g.add_edge(lib.START, "draft")
    g.add_edge("draft", "ask")
    g.add_edge("ask", "publish")
    return g.compile(checkpointer=saver)


def snap(s: Any) -> dict[str, Any]:
    """What a snapshot shows, as plain data (ids still raw: see `normalised`)."""
    parent = s.parent_config["configurable"]["checkpoint_id"] if s.parent_config else None
    config = s.config["configurable"] if s.config else {}
    return {
        "values": s.values,
        "next": tuple(s.next),
        "checkpoint": config.get("checkpoint_id"),
        "parent": parent,
        "step": (s.metadata or {}).get("step"),
        "source": (s.metadata or {}).get("source"),
        "has_created_at": s.created_at is not None,
        "tasks": [(t.id, t.name, [(i.value, i.id) for i in t.interrupts]) for t in s.tasks],
        "interrupts": [(i.value, i.id) for i in s.interrupts],
    }


def config(thread: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$|^[0-9a-f]{32}$")


def normalised(record: Any) -> Any:
    """``record`` with each checkpoint, task and interrupt id replaced by its order."""
    names: dict[str, str] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, str) and _ID.match(value):
            return names.setdefault(value, f"id{len(names)}")
        if type(value).__name__ == "Interrupt":  # either library's
            return ("Interrupt", walk(value.value), walk(value.id))
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
        if isinstance(value, list | tuple):
            return type(value)(walk(v) for v in value)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
        return value

    return walk(record)


# --- scenarios -----------------------------------------------------------------------------


async def pause_and_resume(lib: Lib, api: Api, saver: Any) -> Any:
    """get_state of a new thread, of a paused one, and after the answer."""
    graph = review_graph(lib, saver)
    seen: dict[str, Any] = {"empty": snap(await api.get_state(graph, config("t")))}
    out = await api.invoke(graph, {"log": ["start"]}, config("t"))
    seen["paused_output"] = [i.value for i in out["__interrupt__"]]
    seen["paused"] = snap(await api.get_state(graph, config("t")))
    out = await api.invoke(graph, lib.Command(resume="yes"), config("t"))
    seen["done_output"] = out
    seen["done"] = snap(await api.get_state(graph, config("t")))
    return seen


async def history_queries(lib: Lib, api: Api, saver: Any) -> Any:
    """get_state_history: all, filtered, before, limit; get_state of an old checkpoint."""
    graph = review_graph(lib, saver)
    await api.invoke(graph, {"log": ["start"]}, config("t"))
    await api.invoke(graph, lib.Command(resume="yes"), config("t"))
    every = await api.history(graph, config("t"))
    third = every[2].config
    old = await api.get_state(graph, third)
    return {
        "all": [snap(s) for s in every],
        "loop": [
            s.metadata["step"]
            for s in await api.history(graph, config("t"), filter={"source": "loop"})
        ],
        "step_1": [snap(s) for s in await api.history(graph, config("t"), filter={"step": 1})],
        "before": [s.metadata["step"] for s in await api.history(graph, config("t"), before=third)],
        "limit": [s.metadata["step"] for s in await api.history(graph, config("t"), limit=2)],
        "before_limit": [
            s.metadata["step"] for s in await api.history(graph, config("t"), before=third, limit=1)
        ],
        "other_thread": await api.history(graph, config("nobody")),
        "old": snap(old),
        "old_is_listed": snap(old) == snap(every[2]),
    }


async def updates(lib: Lib, api: Api, saver: Any) -> Any:
    """update_state on a paused thread (default node and as_node), then a fork of history."""
    graph = review_graph(lib, saver)
    await api.invoke(graph, {"log": ["start"]}, config("t"))
    seen: dict[str, Any] = {}
    edited = await api.update_state(graph, config("t"), {"log": ["edited"]})
    shown = await api.get_state(graph, edited)
    seen["edited"] = {k: v for k, v in snap(shown).items() if k not in ("tasks", "interrupts")}
    seen["edited_waiting"] = [i.value["question"] for i in shown.interrupts]
    as_ask = await api.update_state(graph, config("t"), {"log": ["by hand"]}, "ask")
    seen["as_ask"] = snap(await api.get_state(graph, as_ask))
    seen["finished"] = await api.invoke(graph, None, config("t"))
    first = (await api.history(graph, config("t")))[-1]  # the input checkpoint
    fork = await api.update_state(graph, first.config, {"log": ["forked"]}, "draft")
    seen["fork"] = snap(await api.get_state(graph, fork))
    seen["fork_run"] = await api.invoke(graph, None, fork)
    seen["head_after_fork"] = snap(await api.get_state(graph, config("t")))
    return seen


async def bulk_and_special_updates(lib: Lib, api: Api, saver: Any) -> Any:
    """bulk_update_state, and the updates that act like commands: input, copy, END."""
    graph = review_graph(lib, saver)
    up = lib.StateUpdate
    seen: dict[str, Any] = {}
    made = await api.bulk_update_state(
        graph,
        config("b"),
        [[up({"log": ["in"]}, "__input__")], [up({"log": ["d"]}, "draft")]],
    )
    seen["bulk"] = snap(await api.get_state(graph, made))
    seen["bulk_history"] = [snap(s) for s in await api.history(graph, config("b"))]
    await api.invoke(graph, None, config("b"))  # pauses in ask
    copied = await api.bulk_update_state(graph, config("b"), [[up(None, "__copy__")]])
    seen["copy"] = snap(await api.get_state(graph, copied))
    ended = await api.update_state(graph, config("b"), None, lib.END)
    seen["end"] = snap(await api.get_state(graph, ended))
    return seen


async def refused_update_writes_nothing(lib: Lib, api: Api, saver: Any) -> Any:
    """An update naming no node raises, and the thread's history is as it was."""
    graph = review_graph(lib, saver)
    await api.invoke(graph, {"log": ["start"]}, config("t"))
    before = [snap(s) for s in await api.history(graph, config("t"))]
    with pytest.raises(lib.InvalidUpdateError):
        await api.update_state(graph, config("t"), {"log": ["x"]}, "no_such_node")
    with pytest.raises(lib.InvalidUpdateError):
        await api.bulk_update_state(
            graph,
            config("t"),
            [
                [lib.StateUpdate({"log": ["ok"]}, "draft")],
                [lib.StateUpdate({"log": ["x"]}, "nope")],
            ],
        )
    after = [snap(s) for s in await api.history(graph, config("t"))]
    return {"unchanged": before == after, "checkpoints": len(after)}


async def resume_with_update(lib: Lib, api: Api, saver: Any) -> Any:
    """``Command(resume=..., update=...)``: the update is applied, the answer used."""
    graph = review_graph(lib, saver)
    await api.invoke(graph, {"log": ["start"]}, config("t"))
    out = await api.invoke(graph, lib.Command(resume="ok", update={"log": ["note"]}), config("t"))
    return {
        "output": out,
        "head": snap(await api.get_state(graph, config("t"))),
        "sources": [
            (s.metadata["step"], s.metadata["source"])
            for s in await api.history(graph, config("t"))
        ],
    }


SCENARIOS: dict[str, Scenario] = {
    "pause_and_resume": pause_and_resume,
    "history_queries": history_queries,
    "updates": updates,
    "bulk_and_special_updates": bulk_and_special_updates,
    "refused_update_writes_nothing": refused_update_writes_nothing,
    "resume_with_update": resume_with_update,
}


def _where(saver: str, tmp_path: Any, request: pytest.FixtureRequest) -> Any:
    if saver == "sqlite":
        return tmp_path / "state.sqlite"
    if saver == "postgres":
        return request.getfixturevalue("pg_url_in_schema")
    return None


_REFERENCE: dict[str, Any] = {}
"""Each scenario's record on sync × memory, made once per session."""


def _reference(name: str) -> Any:
    if name not in _REFERENCE:
        _REFERENCE[name] = observe(SCENARIOS[name], "sync", "memory", None)
    return _REFERENCE[name]


@pytest.mark.parametrize("saver", SAVERS)
@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_driver_and_saver_observes_the_same(
    name: str, driver: str, saver: str, tmp_path: Any, request: pytest.FixtureRequest
) -> None:
    record = observe(SCENARIOS[name], driver, saver, _where(saver, tmp_path, request))
    assert record == _reference(name)


DELIBERATE: dict[str, dict[str, dict[str, Any]]] = {
    # docs/differences.md, "update_state leaves the checkpoint it updates as it was":
    # a question still waiting stays pending on the edited state's checkpoint...
    "updates": {"edited_waiting": {"langgraph": [], "pausepoint": ["publish?"]}},
    # ... and a refused update writes nothing (LangGraph saved the superstep before it).
    "refused_update_writes_nothing": {
        "unchanged": {"langgraph": False, "pausepoint": True},
        "checkpoints": {"langgraph": 4, "pausepoint": 3},
    },
}
"""Items of a scenario's record where the libraries differ by design: each its own."""


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_as_langgraph(name: str) -> None:
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.memory import InMemorySaver

    async def go() -> Any:
        return await SCENARIOS[name](Lib("langgraph"), Api("sync"), InMemorySaver())

    theirs, ours = normalised(asyncio.run(go())), dict(_reference(name))
    for key, each in DELIBERATE.get(name, {}).items():
        assert (theirs.pop(key), ours.pop(key)) == (each["langgraph"], each["pausepoint"])
    assert theirs == ours


# --- restore(): a checkpoint stored without a step -----------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_checkpoint_stored_without_a_step_runs_the_tasks_its_snapshot_shows(driver: str):
    """Its step counts as -1 everywhere (loop/restore.py), as LangGraph's get_state reads
    it; the run used to read it as -2, giving its tasks other ids than the snapshot."""
    lib, api = Lib("pausepoint"), Api(driver)
    saver = pausepoint.InMemorySaver()
    graph = review_graph(lib, saver)

    async def go() -> Any:
        await api.invoke(graph, {"log": ["start"]}, config("ref"))
        stored = saver.get_tuple(config("ref"))
        assert stored is not None
        cp = {**stored.checkpoint, "id": "00000000-0000-6000-8000-000000000001"}  # foreign
        target = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        saver.put(target, cp, {"source": "update"}, dict(cp["channel_versions"]))
        shown = await api.get_state(graph, config("t"))
        paused = await api.invoke(graph, None, config("t"))
        asked = await api.get_state(graph, config("t"))
        out = await api.invoke(graph, lib.Command(resume="yes"), config("t"))
        return shown, paused, asked, out, await api.history(graph, config("t"))

    shown, paused, asked, out, history = asyncio.run(go())
    assert shown.metadata.get("step") is None
    assert shown.next == ("ask",)
    (ask,) = shown.tasks
    # The run's task is the one the snapshot showed: its question is filed under it.
    assert [i.value["question"] for i in paused["__interrupt__"]] == ["publish?"]
    assert asked.config == shown.config
    assert [(t.id, len(t.interrupts)) for t in asked.tasks] == [(ask.id, 1)]
    assert out["log"] == ["start", "drafted", "answer:yes", "published"]
    assert [s.metadata.get("step") for s in history] == [1, 0, None]
