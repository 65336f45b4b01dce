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
