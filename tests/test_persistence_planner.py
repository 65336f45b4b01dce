"""The persistence planner driven by hand: events in, save effects out (no graph, no saver).

The planner reads only a saver's ``batches``, so the savers here are bare objects
that state it; what the effects then do is the drivers' and savers' part,
tested against real databases elsewhere.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pausepoint.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointPut,
    CheckpointRef,
    TaskWrites,
    empty_checkpoint,
)
from pausepoint.config import RunConfig
from pausepoint.loop.effects import ReleaseThread, SaveCheckpoint, SaveWrites
from pausepoint.loop.lease import RunLease
from pausepoint.loop.persistence import Persistence
from pausepoint.types import Durability


class PlainSaver:
    """A saver whose commit is no round trip (InMemorySaver, a third-party one)."""

    batches = False


class PairingSaver:
    """A SQL saver: two checkpoints in one commit, the lease let go with a checkpoint."""

    batches = True


CFG = RunConfig.parse({"configurable": {"thread_id": "t"}})
LEASE = RunLease("t", "owner", "run-1", ttl=30.0)
W1: list[tuple[str, Any]] = [("a", 1)]
W2: list[tuple[str, Any]] = [("b", 2)]


THREAD = CheckpointRef("t")  # the run's thread, no checkpoint yet


def at(checkpoint_id: str) -> CheckpointRef:
    return THREAD.at(checkpoint_id)


def checkpoint(checkpoint_id: str) -> Checkpoint:
    return empty_checkpoint(checkpoint_id, "2026-01-01T00:00:00+00:00")


def meta(step: int) -> CheckpointMetadata:
    return {"source": "loop", "step": step, "parents": {}}


def drive(gen: Generator[Any, Any, Any]) -> tuple[list[Any], Any]:
    """Run a planner generator as a driver would; a saved checkpoint answers its ref."""
    effects: list[Any] = []
    reply: Any = None
    try:
        while True:
            effect = gen.send(reply)
            effects.append(effect)
            reply = at(effect.checkpoint["id"]) if isinstance(effect, SaveCheckpoint) else None
    except StopIteration as stop:
        return effects, stop.value


def made(p: Persistence, c: Checkpoint, m: CheckpointMetadata, **kw: bool) -> tuple[list[Any], Any]:
    """Tell ``p`` a checkpoint was made; save it as a driver would: (effects, parent)."""
    parent, save = p.checkpoint_made(c, m, **kw)
    if save is None:
        return [], parent
    p.saved(save, at(save.checkpoint["id"]))
    return [save], parent


def planner(
    saver: Any, durability: Durability = "sync", *, streams: bool = False, lease: bool = False
) -> Persistence:
    return Persistence(CFG, saver, durability, streams=streams, lease=LEASE if lease else None)


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_saving_as_the_run_goes(durability: Durability) -> None:
    p = planner(PlainSaver(), durability)
    effects, parent = made(p, checkpoint("c1"), meta(-1))
    assert [type(e) for e in effects] == [SaveCheckpoint]
    assert effects[0].config == THREAD == parent
    assert effects[0].writes == ()
    assert p.head == p.persisted == at("c1")
    # Every finished task's writes are saved at once, against the current checkpoint.
    saved = p.task_finished("t1", W1, "p", hold=False)
    assert saved == SaveWrites(at("c1"), W1, "t1", "p")
    effects, parent = made(p, checkpoint("c2"), meta(0))
    assert parent == at("c1")
    assert effects[0].config == at("c1")


def test_a_steps_last_writes_fold_into_its_checkpoint() -> None:
    p = planner(PlainSaver())
    p.restored(at("c1"))
    assert p.task_finished("t1", W1, "p1", hold=False) == SaveWrites(at("c1"), W1, "t1", "p1")
    assert p.task_finished("t2", W2, "p2", hold=True) is None  # waits for the checkpoint
    effects, _ = made(p, checkpoint("c2"), meta(1))
    assert len(effects) == 1
    assert effects[0].writes == (TaskWrites("t2", W2, "p2"),)
    assert p.held is None


@pytest.mark.parametrize("saver", [PlainSaver(), PairingSaver()])
def test_nothing_folds_while_streaming(saver: Any) -> None:
    p = planner(saver, streams=True)
    p.restored(at("c1"))
    assert p.task_finished("t1", W1, "", hold=True) == SaveWrites(at("c1"), W1, "t1", "")
    effects, _ = made(p, checkpoint("c2"), meta(1))
    assert effects[0].writes == ()


def test_durability_exit_saves_only_the_end() -> None:
    p = planner(PlainSaver(), "exit")
    p.restored(at("c0"))
    assert made(p, checkpoint("c1"), meta(0)) == ([], at("c0"))
    assert p.head == at("c1")
    assert p.persisted == at("c0")
    assert p.task_finished("t1", W1, "", hold=True) is None
    made(p, checkpoint("c2"), meta(1))  # it supersedes the step's writes
    assert p.writes_effect("t2", W2) is None
    effects, _ = drive(p.run_ended(nested=False))
    assert effects == [
        SaveCheckpoint(at("c0"), checkpoint("c2"), meta(1), {}),
        SaveWrites(at("c2"), W2, "t2", ""),
    ]
    assert p.persisted == at("c2")
    assert not p.dirty


def nested_planner(ns: str) -> Persistence:
    cfg = RunConfig.parse({"configurable": {"thread_id": "t", "checkpoint_ns": ns}})
    return Persistence(cfg, PlainSaver(), "exit")


def test_durability_exit_a_per_task_subgraph_run_that_ends_saves_nothing() -> None:
    p = nested_planner("outer|sub:1f0e2d3c-0000-6000-8000-000000000000")
    made(p, checkpoint("c1"), meta(0))
    assert drive(p.run_ended(nested=True)) == ([], None)


def test_durability_exit_a_stateful_subgraph_run_saves_its_end() -> None:
    # checkpointer=True: no task id in its namespace; its next run starts from its end.
    p = nested_planner("outer|sub")
    made(p, checkpoint("c1"), meta(0))
    effects, _ = drive(p.run_ended(nested=True))
    ref = CheckpointRef("t", "outer|sub")
    assert effects == [SaveCheckpoint(ref, checkpoint("c1"), meta(0), {})]


def test_durability_exit_a_pause_or_a_failure_saves_the_end() -> None:
    for end in ("paused", "failed"):
        p = planner(PlainSaver(), "exit")
        made(p, checkpoint("c1"), meta(0))
        p.writes_effect("t1", W1)
        effects, _ = drive(p.run_paused() if end == "paused" else p.run_failed())
        assert [type(e) for e in effects] == [SaveCheckpoint, SaveWrites], end


def test_an_input_checkpoint_waits_for_the_start_steps() -> None:
    p = planner(PairingSaver())
    assert p.pairs_input
    c0 = checkpoint("c0")
    assert made(p, c0, meta(-1), input_waits=True)[0] == []
    assert p.head == at("c0")  # writes can name it already
    c0["channel_values"]["x"] = 1  # the start step changes the run's dicts: a copy waits
    effects, _ = made(p, checkpoint("c1"), meta(0))
    (pair,) = effects
    assert pair.config == THREAD
    assert pair.first == CheckpointPut(checkpoint("c0"), meta(-1), {})


def test_a_paused_task_writes_after_the_waiting_input_checkpoint() -> None:
    p = planner(PairingSaver())
    made(p, checkpoint("c0"), meta(-1), input_waits=True)
    effects, _ = drive(p.save_writes("t1", W1, "p"))
    assert [type(e) for e in effects] == [SaveCheckpoint, SaveWrites]
    assert effects[1].config == at("c0")
    assert p.waiting is None


def test_the_lease_goes_with_the_last_write() -> None:
    p = planner(PairingSaver(), lease=True)
    p.restored(at("c1"))
    assert not p.releases_with_step  # not before the run holds it
    p.lease_taken()
    assert p.releases_with_step
    effects, _ = drive(p.save_writes("t1", W1, last=True))
    assert effects[0].release
    assert not p.leased
    assert drive(p.release()) == ([], None)  # gone with the write: no call of its own


def test_the_lease_goes_with_the_last_checkpoint() -> None:
    p = planner(PairingSaver(), lease=True)
    p.lease_taken()
    effects, _ = made(p, checkpoint("c1"), meta(0), last=True)
    assert effects[0].release
    assert not p.leased
    assert drive(p.run_ended(nested=False)) == ([], None)


def test_a_run_that_ends_otherwise_lets_the_lease_go_once() -> None:
    p = planner(PlainSaver(), lease=True)
    p.lease_taken()
    assert not p.releases_with_step  # an in-process saver: a release call costs less
    effects, _ = drive(p.run_ended(nested=False))
    assert effects == [ReleaseThread("t", "owner", "run-1")]
    assert drive(p.release()) == ([], None)


def test_a_failure_flushes_what_waits() -> None:
    p = planner(PairingSaver(), lease=True)
    p.lease_taken()
    made(p, checkpoint("c0"), meta(-1), input_waits=True)
    assert p.task_finished("t1", W1, "p", hold=True) is None
    effects, _ = drive(p.run_failed())
    assert [type(e) for e in effects] == [SaveCheckpoint, SaveWrites, ReleaseThread]
    assert effects[1] == SaveWrites(at("c0"), W1, "t1", "p")


def test_a_step_that_fails_to_apply_saves_its_held_writes_alone() -> None:
    p = planner(PlainSaver())
    p.restored(at("c1"))
    p.task_finished("t1", W1, "p", hold=True)
    effects, _ = drive(p.step_failed())
    assert effects == [SaveWrites(at("c1"), W1, "t1", "p")]


def test_a_fork_is_saved_at_once_and_becomes_the_head() -> None:
    p = planner(PlainSaver(), "exit")
    p.restored(at("old"))
    effects, _ = drive(p.forked(at("old"), checkpoint("new"), meta(3)))
    assert [type(e) for e in effects] == [SaveCheckpoint]
    assert p.head == at("new")


def test_without_a_saver_nothing_is_saved() -> None:
    p = planner(None)
    assert p.task_finished("t1", W1, "", hold=True) is None
    assert made(p, checkpoint("c1"), meta(0)) == ([], THREAD)
    assert p.head == at("c1")
    assert not p.dirty
    assert drive(p.save_writes("t1", W1)) == ([], None)
    assert drive(p.run_failed()) == ([], None)
    assert p.calls_config() is None
