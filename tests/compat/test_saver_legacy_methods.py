"""Savers written against LangGraph's older method signatures keep working.

LangGraph 1.1.6 passes ``task_path`` to a saver's ``put_writes``/``aput_writes`` only
when the method takes it, so a saver with the older three-argument
``put_writes(config, writes, task_id)`` works. pausepoint decides it the same way, once
per saver class: for subclasses of each of its savers and for a
``BaseCheckpointSaver`` written from scratch, sync and async.

A saver's ``get_next_version`` is not consulted by pausepoint (a documented difference:
channel versions are the engine's integers, part of the stored format).
"""

import asyncio
import importlib
import operator
import os
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import LIBS, Lib, load_lib

pytestmark = pytest.mark.compat


class S(TypedDict, total=False):
    x: str
    log: Annotated[list[str], operator.add]


def build(lib: Lib, saver: Any) -> Any:
    """Two parallel nodes (one asks a question), then a join: several put_writes."""

    def ask(state: S) -> dict[str, Any]:
        return {"log": [f"ask={lib.interrupt('which?')}"]}

    b = lib.StateGraph(S)
    b.add_node("ask", ask)
    b.add_node("work", lambda s: {"log": ["work"]})
    b.add_node("join", lambda s: {"x": "+".join(sorted(s["log"]))})
    b.add_edge(lib.START, "ask")
    b.add_edge(lib.START, "work")
    b.add_edge(["ask", "work"], "join")
    return b.compile(checkpointer=saver)


CONFIG = {"configurable": {"thread_id": "t"}}
EXPECTED = {"x": "ask=a+work", "log": ["ask=a", "work"]}


def run_sync(lib: Lib, saver: Any) -> Any:
    g = build(lib, saver)
    paused = g.invoke({"log": []}, CONFIG)
    assert "__interrupt__" in paused
    return g.invoke(lib.Command(resume="a"), CONFIG)


async def run_async(lib: Lib, saver: Any) -> Any:
    g = build(lib, saver)
    paused = await g.ainvoke({"log": []}, CONFIG)
    assert "__interrupt__" in paused
    return await g.ainvoke(lib.Command(resume="a"), CONFIG)


def three_argument(base: type) -> type:
    """A subclass of ``base`` whose ``put_writes`` takes no task_path."""

    class Legacy(base):  # type: ignore[misc, valid-type]
        calls = 0

        def put_writes(self, config: Any, writes: Any, task_id: str) -> None:
            type(self).calls += 1
            super().put_writes(config, writes, task_id)

    return Legacy


def async_three_argument(base: type) -> type:
    """A subclass of ``base`` whose ``aput_writes`` takes no task_path.

    (Only the async method: LangGraph's own async savers call ``put_writes`` with four
    arguments from theirs.)"""

    class Legacy(base):  # type: ignore[misc, valid-type]
        calls = 0

        async def aput_writes(self, config: Any, writes: Any, task_id: str) -> None:
            type(self).calls += 1
            await super().aput_writes(config, writes, task_id)

    return Legacy


def from_scratch(lib: Lib) -> type:
    """A ``BaseCheckpointSaver`` written from scratch, three-argument writes included."""
    base = importlib.import_module(f"{lib.name}.checkpoint.base").BaseCheckpointSaver

    class Scratch(base):  # type: ignore[misc, valid-type]
        calls = 0

        def __init__(self) -> None:
            super().__init__()
            self.inner = lib.InMemorySaver()

        def get_tuple(self, config: Any) -> Any:
            return self.inner.get_tuple(config)

        def list(self, config: Any, **kw: Any) -> Any:
            return self.inner.list(config, **kw)

        def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            return self.inner.put(config, checkpoint, metadata, new_versions)

        def put_writes(self, config: Any, writes: Any, task_id: str) -> None:
            type(self).calls += 1
            self.inner.put_writes(config, writes, task_id)

        def delete_thread(self, thread_id: str) -> None:
            self.inner.delete_thread(thread_id)

        async def aget_tuple(self, config: Any) -> Any:
            return self.get_tuple(config)

        async def alist(self, config: Any, **kw: Any) -> Any:
            for t in self.list(config, **kw):
                yield t

        async def aput(self, config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
            return self.put(config, checkpoint, metadata, versions)

        async def aput_writes(self, config: Any, writes: Any, task_id: str) -> None:
            self.put_writes(config, writes, task_id)

    return Scratch


@pytest.fixture(params=LIBS)
def lib(request: pytest.FixtureRequest) -> Lib:
    return load_lib(request.param)


def test_an_in_memory_subclass(lib: Lib) -> None:
    saver = three_argument(lib.InMemorySaver)()
    assert run_sync(lib, saver) == EXPECTED
    assert type(saver).calls > 0
    saver = async_three_argument(lib.InMemorySaver)()
    assert asyncio.run(run_async(lib, saver)) == EXPECTED
    assert type(saver).calls > 0


def test_a_sqlite_subclass(lib: Lib, tmp_path: Any) -> None:
    module = importlib.import_module(f"{lib.name}.checkpoint.sqlite")
    with module.SqliteSaver.from_conn_string(str(tmp_path / "sync.db")) as plain:
        saver = three_argument(module.SqliteSaver)(plain.conn)
        assert run_sync(lib, saver) == EXPECTED
        assert type(saver).calls > 0


def test_an_async_sqlite_subclass(lib: Lib, tmp_path: Any) -> None:
    where = (
        "langgraph.checkpoint.sqlite.aio"
        if lib.name == "langgraph"
        else "pausepoint.checkpoint.sqlite"
    )
    aio = importlib.import_module(where)

    async def scenario() -> tuple[Any, int]:
        async with aio.AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.db")) as plain:
            saver = async_three_argument(aio.AsyncSqliteSaver)(plain.conn)
            return await run_async(lib, saver), type(saver).calls

    out, calls = asyncio.run(scenario())
    assert out == EXPECTED
    assert calls > 0


def test_a_base_saver_written_from_scratch(lib: Lib) -> None:
    cls = from_scratch(lib)
    assert run_sync(lib, cls()) == EXPECTED
    assert cls.calls > 0
    cls = from_scratch(lib)
    assert asyncio.run(run_async(lib, cls())) == EXPECTED
    assert cls.calls > 0


@pytest.mark.skipif(not os.environ.get("PAUSEPOINT_PG_URL"), reason="PAUSEPOINT_PG_URL is not set")
def test_a_postgres_subclass() -> None:
    from pausepoint.checkpoint.postgres import AsyncPostgresSaver, PostgresSaver

    lib = load_lib("pausepoint")
    url = os.environ["PAUSEPOINT_PG_URL"]
    with PostgresSaver.from_conn_string(url) as plain:
        plain.setup()
        plain.delete_thread("t")
        saver = three_argument(PostgresSaver)(plain.conn)
        assert run_sync(lib, saver) == EXPECTED
        assert type(saver).calls > 0
        plain.delete_thread("t")

    async def scenario() -> tuple[Any, int]:
        async with AsyncPostgresSaver.from_conn_string(url) as plain:
            saver = async_three_argument(AsyncPostgresSaver)(plain.conn)
            try:
                return await run_async(lib, saver), type(saver).calls
            finally:
                await plain.adelete_thread("t")

    out, calls = asyncio.run(scenario())
    assert out == EXPECTED
    assert calls > 0


def test_a_saver_that_takes_task_path_still_gets_it() -> None:
    lib = load_lib("pausepoint")
    paths: list[str] = []

    class Recording(lib.InMemorySaver):
        def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            paths.append(task_path)
            super().put_writes(config, writes, task_id, task_path)

    assert run_sync(lib, Recording()) == EXPECTED
    assert "('__pregel_pull', 'ask')" in paths


# --- get_next_version: a documented difference -----------------------------------------


def versions_asked(lib: Lib) -> int:
    """How often a run asked the saver's ``get_next_version``."""
    asked = [0]

    class Versioning(lib.InMemorySaver):
        def get_next_version(self, current: Any, channel: Any) -> Any:
            asked[0] += 1
            return super().get_next_version(current, channel)

    assert run_sync(lib, Versioning()) == EXPECTED
    return asked[0]


def test_get_next_version_is_consulted_by_langgraph_only() -> None:
    assert versions_asked(load_lib("langgraph")) > 0
    assert versions_asked(load_lib("pausepoint")) == 0
