"""Shared fixtures: every engine test runs through the sync and the async driver."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings

# Nothing is timed in tests (speed is measured in benchmarks/): Hypothesis's default
# deadline of 200 ms an example only fails a property test on a loaded machine
# (test_packing's round trip did, beside a type check).
settings.register_profile("pausepoint", deadline=None)
settings.load_profile("pausepoint")


class Driver:
    """Calls a compiled graph through one driver (sync or async) with one API."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def invoke(self, graph: Any, inp: Any, config: Any = None, **kw: Any) -> Any:
        if self.kind == "sync":
            return graph.invoke(inp, config, **kw)
        return asyncio.run(graph.ainvoke(inp, config, **kw))

    def stream(self, graph: Any, inp: Any, config: Any = None, **kw: Any) -> list[Any]:
        if self.kind == "sync":
            return list(graph.stream(inp, config, **kw))

        async def collect() -> list[Any]:
            return [c async for c in graph.astream(inp, config, **kw)]

        return asyncio.run(collect())

    def get_state(self, graph: Any, config: Any, **kw: Any) -> Any:
        if self.kind == "sync":
            return graph.get_state(config, **kw)
        return asyncio.run(graph.aget_state(config, **kw))

    def history(self, graph: Any, config: Any, **kw: Any) -> list[Any]:
        if self.kind == "sync":
            return list(graph.get_state_history(config, **kw))

        async def collect() -> list[Any]:
            return [s async for s in graph.aget_state_history(config, **kw)]

        return asyncio.run(collect())

    def update_state(self, graph: Any, config: Any, values: Any, as_node: Any = None) -> Any:
        if self.kind == "sync":
            return graph.update_state(config, values, as_node)
        return asyncio.run(graph.aupdate_state(config, values, as_node))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked ``stress`` unless the ``-m`` expression names them."""
    if "stress" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="a stress test: select it with -m stress")
    for item in items:
        if item.get_closest_marker("stress") is not None:
            item.add_marker(skip)


@pytest.fixture(params=["sync", "async"])
def drive(request: pytest.FixtureRequest) -> Driver:
    return Driver(request.param)


@pytest.fixture(params=["memory", "sqlite"])
def memory_or_sqlite(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    """An ``InMemorySaver``, then a ``SqliteSaver`` on a real file in the test's directory."""
    from pausepoint import InMemorySaver
    from pausepoint.checkpoint.sqlite import SqliteSaver

    if request.param == "memory":
        yield InMemorySaver()
        return
    with SqliteSaver.from_conn_string(str(tmp_path / "saver.sqlite")) as saver:
        yield saver
