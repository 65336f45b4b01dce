"""The engine's state methods, sync and async, against every saver pausepoint ships.

``get_state`` (flat, ``subgraphs=True``, a subgraph's namespace), ``get_state_history``
(filter, before, limit), ``update_state`` (``as_node``) and ``bulk_update_state``, each
through the sync methods and the async ones, on InMemorySaver, SqliteSaver,
AsyncSqliteSaver, PostgresSaver and AsyncPostgresSaver (whose sync methods refuse, so
it runs async only). Then the checks made before an update is stored: a value a
reducer rejects raises ``InvalidUpdateError`` and the saver holds exactly what it held
before; a thread holding such a value from an older version is shown and repaired.
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from pausepoint import START, Command, StateGraph, interrupt
from pausepoint.checkpoint.memory import InMemorySaver
from pausepoint.checkpoint.sqlite import AsyncSqliteSaver, SqliteSaver
from pausepoint.constants import NULL_TASK_ID
from pausepoint.errors import InvalidUpdateError
from pausepoint.types import StateSnapshot, StateUpdate

PG = pytest.mark.postgres
CASES = [
    pytest.param(("memory", "sync"), id="memory-sync"),
    pytest.param(("memory", "async"), id="memory-async"),
    pytest.param(("sqlite", "sync"), id="sqlite-sync"),
    pytest.param(("sqlite", "async"), id="sqlite-async"),
    pytest.param(("async_sqlite", "sync"), id="async_sqlite-sync"),
    pytest.param(("async_sqlite", "async"), id="async_sqlite-async"),
    pytest.param(("postgres", "sync"), id="postgres-sync", marks=PG),
    pytest.param(("postgres", "async"), id="postgres-async", marks=PG),
    pytest.param(("async_postgres", "async"), id="async_postgres-async", marks=PG),
]


class Env:
    """One saver, and the graph methods of one colour (sync, or async on one event loop)."""

    def __init__(self, saver: Any, runner: asyncio.Runner | None) -> None:
        self.saver = saver
        self.runner = runner

    def _call(self, sync: Callable[[], Any], coro: Callable[[], Any]) -> Any:
        return sync() if self.runner is None else self.runner.run(coro())

    def invoke(self, g: Any, inp: Any, cfg: Any) -> Any:
        return self._call(lambda: g.invoke(inp, cfg), lambda: g.ainvoke(inp, cfg))

    def get_state(self, g: Any, cfg: Any, **kw: Any) -> StateSnapshot:
        return self._call(lambda: g.get_state(cfg, **kw), lambda: g.aget_state(cfg, **kw))

    def history(self, g: Any, cfg: Any, **kw: Any) -> list[StateSnapshot]:
        async def collect() -> list[StateSnapshot]:
            return [s async for s in g.aget_state_history(cfg, **kw)]

        return self._call(lambda: list(g.get_state_history(cfg, **kw)), collect)

    def update_state(self, g: Any, cfg: Any, values: Any, as_node: str | None = None) -> Any:
        return self._call(
            lambda: g.update_state(cfg, values, as_node),
            lambda: g.aupdate_state(cfg, values, as_node),
        )

    def bulk(self, g: Any, cfg: Any, supersteps: Any) -> Any:
        return self._call(
            lambda: g.bulk_update_state(cfg, supersteps),
            lambda: g.abulk_update_state(cfg, supersteps),
        )

    def put_writes(self, cfg: Any, writes: Any, task_id: str) -> None:
        self._call(
            lambda: self.saver.put_writes(cfg, writes, task_id),
            lambda: self.saver.aput_writes(cfg, writes, task_id),
        )

    def stored(self, cfg: Any) -> list[tuple[str, list[tuple[str, str, str]]]]:
        """Every checkpoint of the thread and its pending writes, read from the saver."""

        async def collect() -> list[Any]:
            return [t async for t in self.saver.alist(cfg)]

        tuples = self._call(lambda: list(self.saver.list(cfg)), collect)
        return [
            (
                t.config["configurable"]["checkpoint_id"],
                sorted((w[0], w[1], repr(w[2])) for w in t.pending_writes or []),
            )
            for t in tuples
        ]


@pytest.fixture(params=CASES)
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Env]:
    kind, mode = request.param
    with contextlib.ExitStack() as stack:
        runner = stack.enter_context(asyncio.Runner()) if mode == "async" else None
        yield Env(_open(kind, request, tmp_path, stack, runner), runner)


def _open(
    kind: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    stack: contextlib.ExitStack,
    runner: asyncio.Runner | None,
) -> Any:
    path = str(tmp_path / "state.db")
    if kind == "memory":
        return InMemorySaver()
    if kind == "sqlite":
        return stack.enter_context(SqliteSaver.from_conn_string(path))
    if kind == "async_sqlite":
        opened = AsyncSqliteSaver.from_conn_string(path)
        if runner is None:
            return stack.enter_context(opened)
        stack.callback(lambda: runner.run(opened.__aexit__(None, None, None)))
        return runner.run(opened.__aenter__())
    import psycopg

    from pausepoint.checkpoint.postgres import AsyncPostgresSaver, PostgresSaver

    url: str = request.getfixturevalue("pg_url")
    kwargs: dict[str, Any] = request.getfixturevalue("pg_kwargs")
    if kind == "postgres":
        saver = PostgresSaver(stack.enter_context(psycopg.connect(url, **kwargs)))
        saver.setup()
        return saver
    assert runner is not None
    conn = runner.run(psycopg.AsyncConnection.connect(url, **kwargs))
    stack.callback(lambda: runner.run(conn.close()))
    asaver = AsyncPostgresSaver(conn)
    runner.run(asaver.setup())
    return asaver


# --- graphs ------------------------------------------------------------------------------


class State(TypedDict, total=False):
    x: int
    log: Annotated[list[str], operator.add]
    answer: str


class Inner(TypedDict, total=False):
    answer: str


def _merge(old: list[str], new: list[str]) -> list[str]:
    """A reducer that extends its old value in place."""
    if not isinstance(new, list):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"merge takes a list, got {type(new).__name__}")
    old.extend(new)
    return old


class Merged(TypedDict, total=False):
    log: Annotated[list[str], _merge]
    answer: str


def _ask(state: Any) -> dict[str, Any]:
    return {"answer": interrupt("ok?")}


def _nested(saver: Any) -> Any:
    """START -> a -> inner (a subgraph that asks) -> c."""
    inner = StateGraph(Inner)
    inner.add_node("ask", _ask)
    inner.add_edge(START, "ask")
    b = StateGraph(State)
    b.add_node("a", lambda s: {"x": 1, "log": ["a"]})
    b.add_node("inner", inner.compile())
    b.add_node("c", lambda s: {"log": ["c"]})
    b.add_edge(START, "a")
    b.add_edge("a", "inner")
    b.add_edge("inner", "c")
    return b.compile(checkpointer=saver)


def _flat(saver: Any) -> Any:
    """START -> a -> ask (asks) -> c."""
    b = StateGraph(State)
    b.add_node("a", lambda s: {"x": 1, "log": ["a"]})
    b.add_node("ask", _ask)
    b.add_node("c", lambda s: {"log": ["c"]})
    b.add_edge(START, "a")
    b.add_edge("a", "ask")
    b.add_edge("ask", "c")
    return b.compile(checkpointer=saver)


def thread(tid: str = "t") -> Any:
    return {"configurable": {"thread_id": tid}}


# --- the matrix --------------------------------------------------------------------------


def test_get_state_flat_nested_and_by_subgraph_namespace(env: Env) -> None:
    g = _nested(env.saver)
    env.invoke(g, {"log": []}, thread())
    flat = env.get_state(g, thread())
    assert (flat.values, flat.next) == ({"x": 1, "log": ["a"]}, ("inner",))
    (task,) = flat.tasks
    assert task.state["configurable"]["checkpoint_ns"].startswith("inner:")
    (asked,) = flat.interrupts
    assert asked.value == "ok?"

    deep = env.get_state(g, thread(), subgraphs=True)
    assert (deep.values, deep.next, deep.interrupts) == (flat.values, flat.next, flat.interrupts)
    sub = deep.tasks[0].state
    assert isinstance(sub, StateSnapshot)
    assert (sub.next, sub.interrupts) == (("ask",), (asked,))
    ns = task.state["configurable"]["checkpoint_ns"]
    assert sub.config["configurable"]["checkpoint_ns"] == ns

    by_ns = env.get_state(g, task.state)
    assert (by_ns.values, by_ns.next, by_ns.config) == (sub.values, sub.next, sub.config)

    assert env.invoke(g, Command(resume="yes"), thread()) == {
        "x": 1,
        "log": ["a", "c"],
        "answer": "yes",
    }
    done = env.get_state(g, thread(), subgraphs=True)
    assert (done.next, done.tasks, done.interrupts) == ((), (), ())


def test_get_state_of_a_thread_never_run(env: Env) -> None:
    snap = env.get_state(_nested(env.saver), thread("never"))
    assert snap == StateSnapshot({}, (), thread("never"), None, None, None, (), ())


def test_history_newest_first_with_filter_before_and_limit(env: Env) -> None:
    g = _nested(env.saver)
    env.invoke(g, {"log": []}, thread())
    env.invoke(g, Command(resume="yes"), thread())
    hist = env.history(g, thread())
    assert [(s.metadata["source"], s.metadata["step"], s.next) for s in hist] == [  # type: ignore[index]
        ("loop", 3, ()),
        ("loop", 2, ("c",)),
        ("loop", 1, ("inner",)),
        ("loop", 0, ("a",)),
        ("input", -1, ("__start__",)),
    ]
    assert hist[0].values == env.get_state(g, thread()).values
    assert hist[2].tasks[0].state["configurable"]["checkpoint_ns"].startswith("inner:")
    inputs = env.history(g, thread(), filter={"source": "input"})
    assert [s.config for s in inputs] == [hist[4].config]
    older = env.history(g, thread(), before=hist[1].config, limit=2)
    assert [s.config for s in older] == [hist[2].config, hist[3].config]
    assert env.history(g, thread(), limit=1) == hist[:1]
    assert env.history(g, thread("never")) == []


def test_update_state_as_node_then_bulk_update_state(env: Env) -> None:
    g = _flat(env.saver)
    env.invoke(g, {"log": []}, thread())
    cfg = env.update_state(g, thread(), {"log": ["edit"], "x": 10}, as_node="a")
    snap = env.get_state(g, thread())
    assert snap.config["configurable"]["checkpoint_id"] == cfg["configurable"]["checkpoint_id"]
    assert (snap.values, snap.next) == ({"x": 10, "log": ["a", "edit"]}, ("ask",))
    assert snap.metadata is not None
    assert snap.metadata["source"] == "update"
    assert [i.value for i in snap.interrupts] == ["ok?"]  # still waiting for its answer

    before = len(env.stored(thread()))
    supersteps = [[StateUpdate({"x": 20}, "a")], [StateUpdate({"log": ["bulk"]}, "c")]]
    last = env.bulk(g, thread(), supersteps)
    hist = env.history(g, thread())
    assert len(hist) == before + 2
    assert hist[0].config["configurable"]["checkpoint_id"] == last["configurable"]["checkpoint_id"]
    assert hist[0].values == {"x": 20, "log": ["a", "edit", "bulk"]}
    assert [s.metadata["source"] for s in hist[:2]] == ["update", "update"]  # type: ignore[index]
    assert hist[1].values == {"x": 20, "log": ["a", "edit"]}


# --- checks before an update is stored ---------------------------------------------------


def test_a_command_update_a_reducer_rejects_is_refused_and_nothing_is_written(env: Env) -> None:
    g = _flat(env.saver)
    env.invoke(g, {"log": []}, thread())
    before = env.stored(thread())
    for cmd in (Command(update={"log": 5}), Command(update={"log": 5}, resume="yes")):
        with pytest.raises(InvalidUpdateError, match=r"'log'.*can only concatenate list"):
            env.invoke(g, cmd, thread())
        assert env.stored(thread()) == before
    # The thread still works: a good update and the answer go through.
    out = env.invoke(g, Command(update={"log": ["note"]}, resume="yes"), thread())
    assert out == {"x": 1, "log": ["a", "note", "c"], "answer": "yes"}


def test_an_update_refused_after_one_already_stored_on_the_checkpoint(env: Env) -> None:
    # Two updates to one checkpoint are applied together: a last-value key cannot
    # take a second value, so the second is refused before it is stored.
    g = _flat(env.saver)
    env.invoke(g, {"log": []}, thread())
    env.invoke(g, Command(update={"x": 2}), thread())
    before = env.stored(thread())
    with pytest.raises(InvalidUpdateError, match=r"key 'x'.*only one value per step"):
        env.invoke(g, Command(update={"x": 3}), thread())
    assert env.stored(thread()) == before
    assert env.invoke(g, Command(resume="yes"), thread())["x"] == 2


def test_update_state_values_a_reducer_rejects_write_nothing(env: Env) -> None:
    g = _flat(env.saver)
    env.invoke(g, {"log": []}, thread())
    before = env.stored(thread())
    with pytest.raises(InvalidUpdateError, match=r"update_state.*'log'.*can only concatenate"):
        env.update_state(g, thread(), {"log": 5}, as_node="a")
    assert env.stored(thread()) == before
    # A later superstep refused: the earlier one is not saved either.
    bad = [[StateUpdate({"x": 7}, "a")], [StateUpdate({"log": 5}, "c")]]
    with pytest.raises(InvalidUpdateError, match=r"bulk_update_state.*'log'"):
        env.bulk(g, thread(), bad)
    assert env.stored(thread()) == before


def test_a_stored_update_the_state_cannot_take_is_shown_around_and_repaired(env: Env) -> None:
    # A thread bricked by an older pausepoint, which stored Command(update=...) values
    # without checking them: the bad write goes straight through the saver here.
    g = _flat(env.saver)
    env.invoke(g, {"log": []}, thread())
    head = env.get_state(g, thread())
    env.put_writes(head.config, [("log", 5)], NULL_TASK_ID)
    with pytest.warns(RuntimeWarning, match=r"'log'.*can only concatenate.*update_state"):
        shown = env.get_state(g, thread())
    assert (shown.values, shown.next, shown.interrupts) == (head.values, head.next, head.interrupts)
    with pytest.warns(RuntimeWarning, match="'log'"):
        assert env.history(g, thread(), limit=1)[0].values == head.values

    env.update_state(g, thread(), {"log": ["fix"]}, as_node="a")
    repaired = env.get_state(g, thread())  # no warning (warnings are errors here)
    assert repaired.values == {"x": 1, "log": ["a", "fix"]}
    assert [i.value for i in repaired.interrupts] == ["ok?"]
    out = env.invoke(g, Command(resume="yes"), thread())
    assert out == {"x": 1, "log": ["a", "fix", "c"], "answer": "yes"}


def test_update_state_repairs_a_thread_whose_node_wrote_what_its_reducer_rejects(
    env: Env,
) -> None:
    # The node's writes are saved before the step fails to apply them; update_state
    # leaves them out of its new checkpoint (LangGraph's can repair this too).
    b = StateGraph(State)
    b.add_node("bad", lambda s: {"log": 5, "x": 3})
    b.add_edge(START, "bad")
    g = b.compile(checkpointer=env.saver)
    with pytest.raises(TypeError, match="can only concatenate list"):
        env.invoke(g, {"log": []}, thread())
    env.update_state(g, thread(), {"log": ["fixed"]}, as_node="bad")
    snap = env.get_state(g, thread())
    assert (snap.values, snap.next) == ({"x": 3, "log": ["fixed"]}, ())


def test_the_check_runs_reducers_on_a_copy(env: Env) -> None:
    # A reducer that changes its old value in place must not apply twice (once in the
    # check, once for real), nor change the stored state when it is refused.
    b = StateGraph(Merged)
    b.add_node("ask", _ask)
    b.add_edge(START, "ask")
    g = b.compile(checkpointer=env.saver)
    env.invoke(g, {"log": ["start"]}, thread())
    env.invoke(g, Command(update={"log": ["once"]}), thread())
    assert env.get_state(g, thread()).values["log"] == ["start", "once"]
    env.update_state(g, thread(), {"log": ["edit"]}, as_node="ask")
    assert env.get_state(g, thread()).values["log"] == ["start", "once", "edit"]
    with pytest.raises(InvalidUpdateError, match="merge takes a list, got int"):
        env.update_state(g, thread(), {"log": 5}, as_node="ask")
    assert env.get_state(g, thread()).values["log"] == ["start", "once", "edit"]


# --- colours a saver does not offer --------------------------------------------------------


@PG
def test_sync_state_methods_say_to_use_the_async_ones_with_async_postgres(
    pg_url: str, pg_kwargs: dict[str, Any]
) -> None:
    import psycopg

    from pausepoint.checkpoint.postgres import AsyncPostgresSaver

    async def main() -> None:
        async with await psycopg.AsyncConnection.connect(pg_url, **pg_kwargs) as conn:
            saver = AsyncPostgresSaver(conn)
            await saver.setup()
            g = _flat(saver)
            await g.ainvoke({"log": []}, thread())
            for call in (
                lambda: g.get_state(thread()),
                lambda: list(g.get_state_history(thread())),
                lambda: g.update_state(thread(), {"x": 2}, as_node="a"),
            ):
                with pytest.raises(TypeError, match=r"await saver\.a\w+|aget_tuple|alist"):
                    call()
            assert (await g.aget_state(thread())).next == ("ask",)

    asyncio.run(main())


def test_a_plain_resume_runs_no_update_check(monkeypatch: pytest.MonkeyPatch) -> None:
    from pausepoint.loop import begin

    def refuse(*args: Any) -> None:
        raise AssertionError("a resume without update= was checked")

    monkeypatch.setattr(begin, "check_update", refuse)
    g = _flat(InMemorySaver())
    g.invoke({"log": []}, thread())
    assert g.invoke(Command(resume="yes"), thread())["answer"] == "yes"
