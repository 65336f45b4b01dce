"""A subclass of a library's saver that overrides ``put``/``put_writes`` sees every write.

A common way to test or instrument persistence with LangGraph: subclass its
``InMemorySaver`` or ``SqliteSaver`` and override ``put`` and ``put_writes`` (to count
writes, log them, or make one fail). On LangGraph every checkpoint and every pending
write of a run goes through them. pausepoint's savers write through ``commit``; a
subclass that overrides LangGraph's write methods (and not ``commit``) is committed
through them instead, so the same spy or fault injector works unchanged.
"""

import asyncio
from typing import Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import LIBS, Drive, Lib, load_lib

pytestmark = pytest.mark.compat

KINDS = ("memory", "sqlite")


@pytest.fixture(params=LIBS)
def lib(request: pytest.FixtureRequest) -> Lib:
    return load_lib(request.param)


class S(TypedDict):
    x: str


def _graph(lib: Lib, saver: Any) -> Any:
    def ask(state: S) -> dict[str, Any]:
        return {"x": state["x"] + lib.interrupt("which?")}

    def done(state: S) -> dict[str, Any]:
        return {"x": state["x"] + "!"}

    builder = lib.StateGraph(S)
    builder.add_node("ask", ask)
    builder.add_node("done", done)
    builder.add_edge(lib.START, "ask")
    builder.add_edge("ask", "done")
    builder.add_edge("done", lib.END)
    return builder.compile(checkpointer=saver)


def _spy_of(base: type) -> tuple[type, dict[str, list[Any]]]:
    """A subclass of ``base`` with LangGraph's exact write signatures, recording calls."""
    seen: dict[str, list[Any]] = {"put": [], "put_writes": []}

    class Spy(base):  # type: ignore[misc, valid-type]
        def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            seen["put"].append(checkpoint["id"])
            return super().put(config, checkpoint, metadata, new_versions)

        def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            seen["put_writes"].extend((task_id, channel) for channel, _ in writes)
            super().put_writes(config, writes, task_id, task_path)

    return Spy, seen


@pytest.mark.parametrize("kind", KINDS)
def test_a_spy_subclass_sees_every_checkpoint_and_write(lib: Lib, kind: str):
    drive = Drive("sync", kind, lib.name)
    try:
        base = type(drive.saver())
        spy_class, seen = _spy_of(base)
        saver = spy_class(drive.saver().conn) if kind == "sqlite" else spy_class()
        graph = _graph(lib, saver)
        config = {"configurable": {"thread_id": "t"}}
        paused = graph.invoke({"x": ""}, config)
        assert "__interrupt__" in paused
        assert graph.invoke(lib.Command(resume="a"), config) == {"x": "a!"}
        stored = list(saver.list(config))
        # Every checkpoint the thread holds was stored through the spy's put ...
        assert {t.checkpoint["id"] for t in stored} <= set(seen["put"])
        # ... and every pending write through its put_writes.
        writes = {(w[0], w[1]) for t in stored for w in t.pending_writes or []}
        assert writes <= set(seen["put_writes"])
        assert seen["put_writes"], "the resume's answer and the nodes' writes"
    finally:
        drive.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_failing_put_writes_fails_the_run(lib: Lib, kind: str):
    drive = Drive("sync", kind, lib.name)
    try:
        base = type(drive.saver())

        class Full(base):  # type: ignore[misc, valid-type]
            def put_writes(
                self, config: Any, writes: Any, task_id: str, task_path: str = ""
            ) -> None:
                raise OSError("disk full")

        saver = Full(drive.saver().conn) if kind == "sqlite" else Full()
        with pytest.raises(OSError, match="disk full"):
            _graph(lib, saver).invoke({"x": ""}, {"configurable": {"thread_id": "t"}})
    finally:
        drive.close()


def test_an_async_spy_subclass_sees_every_checkpoint(lib: Lib):
    seen: list[str] = []

    class Spy(lib.InMemorySaver):
        async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            seen.append(checkpoint["id"])
            return await super().aput(config, checkpoint, metadata, new_versions)

    saver = Spy()
    graph = _graph(lib, saver)
    config = {"configurable": {"thread_id": "t"}}

    async def scenario() -> Any:
        await graph.ainvoke({"x": ""}, config)
        return await graph.ainvoke(lib.Command(resume="a"), config)

    assert asyncio.run(scenario()) == {"x": "a!"}
    assert {t.checkpoint["id"] for t in saver.list(config)} <= set(seen)


def test_update_state_returns_what_the_savers_put_returned(lib: Lib):
    """A saver may put keys of its own in the config ``put`` returns; update_state hands
    that config back (as LangGraph does), so a later call addresses the same place."""

    class Sharded(lib.InMemorySaver):
        def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            stored = super().put(config, checkpoint, metadata, new_versions)
            return {**stored, "configurable": {**stored["configurable"], "shard": 7}}

    graph = _graph(lib, Sharded())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"x": ""}, config)
    updated = graph.update_state(config, {"x": "edited"})
    assert updated["configurable"]["shard"] == 7
    assert graph.get_state(updated).values == {"x": "edited"}
