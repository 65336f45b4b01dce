"""What a saver's methods are handed in ``configurable``, on LangGraph 1.1.6 and pausepoint.

LangGraph passes the caller's whole ``configurable`` to ``get_tuple``, ``list``, ``put``
and ``put_writes``: a multi-tenant saver may file checkpoints by a ``tenant`` key there.
pausepoint hands its savers the caller's own keys too (internal ``__`` keys aside), in a
run, in a subgraph's run, and in state inspection and ``update_state``; a run without
such keys uses its saver unwrapped.
"""

import asyncio
import sqlite3
from typing import Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from pausepoint.checkpoint._caller_keys import CallerKeys, with_caller_keys
from pausepoint.checkpoint.base import CheckpointPut, CheckpointRef, StepCommit, empty_checkpoint
from pausepoint.checkpoint.ids import new_stamp
from pausepoint.checkpoint.memory import InMemorySaver
from pausepoint.checkpoint.sqlite import SqliteSaver

from ._harness import LIBS, Lib, load_lib

pytestmark = pytest.mark.compat


@pytest.fixture(params=LIBS)
def lib(request: pytest.FixtureRequest) -> Lib:
    return load_lib(request.param)


class S(TypedDict):
    x: str


def _tenants_seen(lib: Lib, is_async: bool) -> dict[str, set[object]]:
    """Each saver method called, with the ``tenant`` values its configs carried.

    Over a run that pauses in the parent, then in a subgraph, is resumed twice, and is
    then read (``get_state``, history) and updated (``update_state``).
    """
    seen: dict[str, set[object]] = {}

    class Spy(lib.InMemorySaver):  # a user's saver built on the library's own
        def _saw(self, method: str, config: Any) -> None:
            tenant = (config or {}).get("configurable", {}).get("tenant")
            seen.setdefault(method, set()).add(tenant)

        def get_tuple(self, config: Any) -> Any:
            self._saw("get_tuple", config)
            return super().get_tuple(config)

        def list(self, config: Any, **kwargs: Any) -> Any:
            self._saw("list", config)
            return super().list(config, **kwargs)

        def put(self, config: Any, *args: Any, **kwargs: Any) -> Any:
            self._saw("put", config)
            return super().put(config, *args, **kwargs)

        def put_writes(self, config: Any, *args: Any, **kwargs: Any) -> Any:
            self._saw("put_writes", config)
            return super().put_writes(config, *args, **kwargs)

    def ask(state: S) -> dict[str, Any]:
        return {"x": lib.interrupt("which?")}

    def sub_ask(state: S) -> dict[str, Any]:
        return {"x": state["x"] + lib.interrupt("and?")}

    inner = lib.StateGraph(S)
    inner.add_node("sub_ask", sub_ask)
    inner.add_edge(lib.START, "sub_ask")
    inner.add_edge("sub_ask", lib.END)
    builder = lib.StateGraph(S)
    builder.add_node("ask", ask)
    builder.add_node("sub", inner.compile())
    builder.add_edge(lib.START, "ask")
    builder.add_edge("ask", "sub")
    builder.add_edge("sub", lib.END)
    graph = builder.compile(checkpointer=Spy())
    config = {"configurable": {"thread_id": "t", "tenant": "acme"}}

    async def scenario() -> Any:
        await graph.ainvoke({"x": ""}, config)
        await graph.ainvoke(lib.Command(resume="a"), config)
        out = await graph.ainvoke(lib.Command(resume="b"), config)
        await graph.aget_state(config, subgraphs=True)
        _ = [s async for s in graph.aget_state_history(config, limit=2)]
        await graph.aupdate_state(config, {"x": "z"})
        return out

    if is_async:
        out = asyncio.run(scenario())
    else:
        graph.invoke({"x": ""}, config)
        graph.invoke(lib.Command(resume="a"), config)
        out = graph.invoke(lib.Command(resume="b"), config)
        graph.get_state(config, subgraphs=True)
        list(graph.get_state_history(config, limit=2))
        graph.update_state(config, {"x": "z"})
    assert out == {"x": "ab"}
    return seen


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_saver_is_handed_the_callers_configurable(lib: Lib, is_async: bool):
    seen = _tenants_seen(lib, is_async)
    assert set(seen) == {"get_tuple", "list", "put", "put_writes"}
    assert all(tenants == {"acme"} for tenants in seen.values()), seen


def test_a_run_without_keys_of_its_own_uses_its_saver_as_it_is():
    saver = InMemorySaver()
    assert with_caller_keys(saver, {"thread_id": "t", "checkpoint_ns": ""}) is saver
    assert with_caller_keys(saver, {"thread_id": "t", "__pregel_x": 1}) is saver
    assert with_caller_keys(None, {"tenant": "acme"}) is None
    wrapped = with_caller_keys(saver, {"thread_id": "t", "tenant": "acme"})
    assert type(wrapped) is CallerKeys
    # A subgraph's run wraps its parent's saver again: its own keys replace the parent's.
    again = with_caller_keys(wrapped, {"thread_id": "t", "tenant": "other"})
    assert type(again) is CallerKeys
    assert again.saver is saver
    assert again.keys == {"tenant": "other"}
    assert with_caller_keys(wrapped, {"thread_id": "t"}) is saver


def test_a_wrapped_saver_shares_its_threads_with_the_saver():
    # Single-writer threads within a process go by lease_scope: a run with keys of
    # its own and one without must still exclude each other.
    saver = InMemorySaver()
    wrapped = with_caller_keys(saver, {"tenant": "acme"})
    assert wrapped.lease_scope == saver.lease_scope
    assert wrapped.batches == saver.batches
    assert wrapped.supports_leases == saver.supports_leases


def test_a_commit_goes_under_the_callers_keys_and_returns_a_ref(tmp_path: Any):
    handed: list[Any] = []

    class Spy(SqliteSaver):  # a saver with a commit of its own
        def commit(self, step: StepCommit[Any]) -> Any:
            handed.append(step.config)
            return super().commit(step)

    saver = Spy(sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False))
    saver.setup()
    wrapped = with_caller_keys(saver, {"thread_id": "t", "tenant": "acme"})
    ref = CheckpointRef("t", "")
    put = CheckpointPut(empty_checkpoint(*new_stamp()), {"source": "input", "step": -1}, {})
    stored = wrapped.commit(StepCommit(ref, (), put))
    assert type(stored) is CheckpointRef
    assert stored == CheckpointRef("t", "", put.checkpoint["id"])
    assert handed == [{"configurable": {"tenant": "acme", "thread_id": "t", "checkpoint_ns": ""}}]
    got = wrapped.get_tuple(stored.config())
    assert got is not None
    assert got.checkpoint["id"] == put.checkpoint["id"]


def test_a_claims_read_carries_the_callers_keys(tmp_path: Any):
    # A saver that reads with its claim (SQLite, PostgreSQL) still does in a run with
    # keys of its own, and the read's config carries them.
    reads: list[Any] = []
    gets: list[Any] = []

    class Spy(SqliteSaver):
        def acquire_lease(self, *args: Any, read: Any = None, **kwargs: Any) -> Any:
            reads.append(read)
            return super().acquire_lease(*args, read=read, **kwargs)

        def get_tuple(self, config: Any) -> Any:
            gets.append(config)
            return super().get_tuple(config)

    saver = Spy(sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False))
    lib = load_lib("pausepoint")

    def ask(state: S) -> dict[str, Any]:
        return {"x": lib.interrupt("which?")}

    builder = lib.StateGraph(S)
    builder.add_node("ask", ask)
    builder.add_edge(lib.START, "ask")
    builder.add_edge("ask", lib.END)
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t", "tenant": "acme"}}
    graph.invoke({"x": ""}, config)
    assert graph.invoke(lib.Command(resume="a"), config) == {"x": "a"}
    assert len(reads) == 2
    assert all(read["configurable"]["tenant"] == "acme" for read in reads)
    assert gets == []  # each run's read went with its claim
