"""`StepCommit` and the default ``commit``: what a third-party saver gets from the engine.

The conformance suite checks ``commit`` on every saver (tests/savers/test_conformance.py,
``PartsOnly`` among them); here the engine drives a saver that has only LangGraph's
write methods, and the default ``commit``'s order and guards are pinned.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from pausepoint import START, Command, InMemorySaver, StateGraph, interrupt
from pausepoint.checkpoint._commit import PartsSaver, committing
from pausepoint.checkpoint.base import (
    BaseCheckpointSaver,
    CheckpointPut,
    StepCommit,
    TaskWrites,
    empty_checkpoint,
)


class S(TypedDict, total=False):
    answers: Annotated[list[str], operator.add]


class Recording(BaseCheckpointSaver):
    """A third-party saver: get_tuple, list, put and put_writes only (no guards)."""

    def __init__(self) -> None:
        self.inner = InMemorySaver()
        self.calls: list[tuple[str, Any]] = []

    def get_tuple(self, config: Any) -> Any:
        return self.inner.get_tuple(config)

    def list(self, config: Any, **kwargs: Any) -> Any:
        return self.inner.list(config, **kwargs)

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:  # type: ignore[override]
        self.calls.append(("put", metadata["step"]))
        return self.inner.put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:  # type: ignore[override]
        self.calls.append(("put_writes", [c for c, _ in writes]))
        self.inner.put_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)


def _asking() -> StateGraph[S]:
    g = StateGraph(S)
    g.add_node("ask", lambda s: {"answers": [interrupt("ok?")]})
    g.add_node("done", lambda s: {"answers": ["done"]})
    g.add_edge(START, "ask")
    g.add_edge("ask", "done")
    return g


def test_a_saver_with_put_and_put_writes_only_runs_a_pause_and_resume(drive: Any) -> None:
    saver = Recording()
    graph = _asking().compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "parts"}}
    paused = drive.invoke(graph, {"answers": []}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["ok?"]
    assert drive.invoke(graph, Command(resume="yes"), config)["answers"] == ["yes", "done"]
    # Each commit arrives as put_writes for its writes, then put: a step's last writes
    # just before its checkpoint, as the engine saved them before commit() existed.
    assert saver.calls == [
        ("put", -1),
        ("put_writes", ["answers", "branch:to:ask"]),
        ("put", 0),
        ("put_writes", ["__interrupt__", "__asked__"]),
        ("put_writes", ["__resume__"]),
        ("put_writes", ["answers", "branch:to:done"]),
        ("put", 1),
        ("put_writes", ["answers"]),
        ("put", 2),
    ]


def _step(n: int) -> CheckpointPut:
    return CheckpointPut(empty_checkpoint(f"c{n}", "2026-01-01T00:00:00+00:00"), {"step": n}, {})


class Guarded(BaseCheckpointSaver):
    """Records the guard keywords each write is given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any, **kw: Any) -> Any:
        self.calls.append(("put", kw))
        return {"configurable": {"thread_id": "t", "checkpoint_id": checkpoint["id"]}}

    def put_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = "", **kw: Any
    ) -> None:
        self.calls.append((f"put_writes {task_id}", kw))


CONFIG: Any = {"configurable": {"thread_id": "t", "checkpoint_id": "c0"}}
TWO = (TaskWrites("t1", [("a", 1)]), TaskWrites("t2", [("b", 2)]))


def test_the_default_commit_fences_each_call_and_releases_with_the_last() -> None:
    saver = Guarded()
    assert saver.commit(StepCommit(CONFIG, TWO, lease="me", release=True)) == CONFIG
    last = saver.commit(StepCommit(CONFIG, TWO, _step(2), _step(1), lease="me", release=True))
    assert last["configurable"]["checkpoint_id"] == "c2"
    assert saver.calls == [
        ("put_writes t1", {"lease": "me"}),
        ("put_writes t2", {"lease": "me", "release": True}),
        ("put", {"lease": "me"}),
        ("put_writes t1", {"lease": "me"}),
        ("put_writes t2", {"lease": "me"}),
        ("put", {"lease": "me", "release": True}),
    ]


@pytest.mark.parametrize("with_checkpoint", [False, True])
def test_a_release_without_a_lease_is_refused_and_nothing_is_called(
    with_checkpoint: bool,
) -> None:
    """As ``put``/``put_writes`` refuse it: whose lease would it let go?"""
    saver = Guarded()
    step = StepCommit(CONFIG, TWO[:1], _step(1) if with_checkpoint else None, release=True)
    with pytest.raises(ValueError, match="release=True needs lease=owner"):
        saver.commit(step)
    assert saver.calls == []


@pytest.mark.asyncio
async def test_the_default_acommit_uses_a_savers_own_async_writes() -> None:
    class AsyncOwn(Guarded):
        async def aput(self, *args: Any, **kw: Any) -> Any:
            self.calls.append(("aput", kw))
            return self.put(*args, **kw)

        async def aput_writes(self, *args: Any, **kw: Any) -> None:
            self.calls.append(("aput_writes", kw))
            self.put_writes(*args, **kw)

    saver = AsyncOwn()
    await saver.acommit(StepCommit(CONFIG, TWO[:1], _step(1)))
    assert [name for name, _ in saver.calls] == ["aput_writes", "put_writes t1", "aput", "put"]


def test_a_step_commit_is_a_read_only_record() -> None:
    step = StepCommit(CONFIG)
    assert (step.writes, step.checkpoint, step.first, step.lease) == ((), None, None, None)
    with pytest.raises(AttributeError):
        step.lease = "x"  # type: ignore[misc]


def test_only_a_saver_without_commit_is_wrapped() -> None:
    memory = InMemorySaver()
    assert committing(memory) is memory
    assert committing(None) is None
    duck = object()
    assert isinstance(committing(duck), PartsSaver)


class CommitOnly(BaseCheckpointSaver):
    """A saver written to the engine's one write (no put, no put_writes): records
    each commit and stores it with an InMemorySaver."""

    def __init__(self) -> None:
        self.inner = InMemorySaver()
        self.steps: list[StepCommit[Any]] = []

    def get_tuple(self, config: Any) -> Any:
        return self.inner.get_tuple(config)

    def list(self, config: Any, **kwargs: Any) -> Any:
        return self.inner.list(config, **kwargs)

    def commit(self, step: StepCommit[Any]) -> Any:
        self.steps.append(step)
        return self.inner.commit(step)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)


def test_a_saver_with_commit_only_runs_a_pause_and_resume(drive: Any) -> None:
    saver = CommitOnly()
    graph = _asking().compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "commit-only"}}
    paused = drive.invoke(graph, {"answers": []}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["ok?"]
    assert drive.invoke(graph, Command(resume="yes"), config)["answers"] == ["yes", "done"]
    assert len(saver.steps) == 6  # input; step 0; the question; the answer; steps 1, 2
    assert drive.get_state(graph, config).values == {"answers": ["yes", "done"]}


def test_langgraphs_write_methods_are_made_of_commit_with_their_guards() -> None:
    """Each of LangGraph's write methods is one commit, its guard keywords passed on."""
    saver = CommitOnly()
    root: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    assert saver.inner.acquire_lease("t", "me", 30).acquired  # the lease its commit fences by
    c0, c1, c2, c3 = (_step(n) for n in range(4))
    got = saver.put(root, *c0, lease="me")
    assert got == {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c0"}}
    saver.put_writes(got, [("a", 1)], "t1", "path", lease="me", if_head=True)
    after = saver.put_after_writes(got, TWO, *c1, lease="me")
    last = saver.put_pair(after, c2, TWO[:1], c3, lease="me")
    saver.put_writes(last, [("b", 2)], "t3", lease="me", release=True)
    assert saver.steps == [
        StepCommit(root, (), c0, lease="me"),
        StepCommit(got, (TaskWrites("t1", [("a", 1)], "path"),), lease="me", if_head=True),
        StepCommit(got, TWO, c1, lease="me"),
        StepCommit(after, TWO[:1], c3, c2, lease="me"),
        StepCommit(last, (TaskWrites("t3", [("b", 2)]),), lease="me", release=True),
    ]
    assert last["configurable"]["checkpoint_id"] == "c3"
    assert saver.inner.get_lease("t") is None  # the last write let it go
    parent = saver.get_tuple(got)
    assert parent is not None
    assert [w.task_id for w in parent.pending_writes or []] == ["t1", "t2"]


@pytest.mark.asyncio
async def test_the_async_writes_of_a_commit_only_saver_go_to_its_commit() -> None:
    """Without async I/O of its own, ``aput`` and the rest call the sync ``commit``;
    with an ``acommit`` of its own, they call that."""

    class AsyncCommit(CommitOnly):
        async def acommit(self, step: StepCommit[Any]) -> Any:
            self.steps.append(step._replace(lease="async"))
            return self.inner.commit(step)

    for saver, lease in ((CommitOnly(), None), (AsyncCommit(), "async")):
        root: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        got = await saver.aput(root, *_step(0))
        await saver.aput_writes(got, [("a", 1)], "t1")
        after = await saver.aput_after_writes(got, TWO, *_step(1))
        last = await saver.aput_pair(after, _step(2), (), _step(3))
        assert await saver.acommit(StepCommit(last, TWO[:1])) == last
        assert [step.lease for step in saver.steps] == [lease] * 5
        assert [step.config for step in saver.steps] == [root, got, got, after, last]
        assert last["configurable"]["checkpoint_id"] == "c3"


class Neither(BaseCheckpointSaver):
    """Reads, but implements no write: neither commit nor put and put_writes."""

    def get_tuple(self, config: Any) -> Any:
        return None

    def list(self, config: Any, **kwargs: Any) -> Any:
        return iter(())


NEITHER = r"'Neither' implements neither commit\(\) nor put\(\) and put_writes\(\)"


def test_a_saver_with_no_write_method_is_told_what_to_implement() -> None:
    saver = Neither()
    calls: list[Any] = [
        lambda: saver.put(CONFIG, *_step(1)),
        lambda: saver.put_writes(CONFIG, [("a", 1)], "t1"),
        lambda: saver.put_after_writes(CONFIG, TWO, *_step(1)),
        lambda: saver.put_pair(CONFIG, _step(1), TWO, _step(2)),
        lambda: saver.commit(StepCommit(CONFIG, TWO)),
        lambda: saver.commit(StepCommit(CONFIG, TWO, _step(2), _step(1))),
    ]
    for call in calls:
        with pytest.raises(NotImplementedError, match=NEITHER):
            call()


@pytest.mark.asyncio
async def test_a_saver_with_no_write_method_is_told_so_by_its_async_writes_too() -> None:
    saver = Neither()
    with pytest.raises(NotImplementedError, match=NEITHER):
        await saver.aput(CONFIG, *_step(1))
    with pytest.raises(NotImplementedError, match=NEITHER):
        await saver.aput_writes(CONFIG, [("a", 1)], "t1")
    with pytest.raises(NotImplementedError, match=NEITHER):
        await saver.aput_after_writes(CONFIG, TWO, *_step(1))
    with pytest.raises(NotImplementedError, match=NEITHER):
        await saver.aput_pair(CONFIG, _step(1), TWO, _step(2))
    with pytest.raises(NotImplementedError, match=NEITHER):
        await saver.acommit(StepCommit(CONFIG, TWO, _step(1)))


def test_a_graph_on_a_saver_with_no_write_method_fails_clearly(drive: Any) -> None:
    graph = _asking().compile(checkpointer=Neither())
    with pytest.raises(NotImplementedError, match=NEITHER):
        drive.invoke(graph, {"answers": []}, {"configurable": {"thread_id": "t"}})
