"""Forking a thread at an old checkpoint to answer its interrupts anew (DESIGN §4.2).

LangGraph replays the old answer when a new ``Command(resume=...)`` is sent to a
checkpoint that was already resumed. pausepoint copies the old checkpoint into a
new one (metadata ``source="fork"``, same step, parent = the old checkpoint),
carries over what its tasks had done — finished siblings keep their writes, each
interrupted task keeps the answers it had *before* the interrupt being answered —
and resumes there. The old branch is never written to.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

from xxhash import xxh3_128_hexdigest

from pausepoint.checkpoint.ids import new_stamp
from pausepoint.constants import ASKED, INTERRUPT, RESUME
from pausepoint.loop.namespaces import Afresh
from pausepoint.loop.pending import ResumeMap, TaskRecord, as_stored, is_own_interrupt
from pausepoint.loop.state import current_tasks
from pausepoint.loop.tasks import prepare_tasks
from pausepoint.types import Interrupt

if TYPE_CHECKING:
    from pausepoint.loop.persistence import Persistence
    from pausepoint.loop.state import RunSetup, RunState

__all__ = [
    "answer_afresh",
    "carried_afresh",
    "fork",
    "forkable_interrupts",
    "restarted_by_update",
    "take_afresh",
    "taken_answer",
]

RESTARTING_SOURCES = frozenset({"update", "fork"})
"""Sources of an ``update_state`` checkpoint that can run a paused node again from its
start: ``as_node=START`` (or a node before it) and ``"__copy__"``."""


def forkable_interrupts(records: Mapping[str, TaskRecord]) -> list[Interrupt]:
    """Interrupts raised at a checkpoint, answered since or not."""
    return [i for rec in records.values() for i in rec.interrupts]


def fork(
    run: RunSetup, state: RunState, persist: Persistence, source_ns: str | None = None
) -> Generator[Any, Any, dict[str, str]]:
    """Copy the run's (old) checkpoint into a fork; return old → new interrupt ids.

    ``source_ns``: the namespace the checkpoint was read from, when it is not the
    run's own — a subgraph that a fork above renamed starts from the checkpoint its
    caller addressed in the old namespace (`ReplayPoint`).
    The copy is the first checkpoint of the new namespace: it has no parent there.
    """
    ns = run.cfg.checkpoint_ns
    step = state.step
    old_ns = ns if source_ns is None else source_ns
    old_tasks = prepare_tasks(run.spec, state.checkpoint, state.channels, step, old_ns)
    old_records = state.records
    moved = source_ns is not None and source_ns != ns
    parent = (None if moved else persist.head) or persist.thread  # the namespace's first
    state.checkpoint["id"], state.checkpoint["ts"] = new_stamp()
    state.metadata = {  # pyright: ignore[reportAttributeAccessIssue]
        "source": "fork",
        "step": step - 1,
        "parents": dict(run.parents),
        **run.run_metadata,
    }
    yield from persist.forked(parent, state.checkpoint, state.metadata)
    new_tasks = {
        (t.name, t.path): t
        for t in prepare_tasks(run.spec, state.checkpoint, state.channels, step, ns)
    }
    state.records = {}
    renamed: dict[str, str] = {}
    for old in old_tasks:
        rec = old_records.get(old.id)
        new = new_tasks.get((old.name, old.path))
        if new is None:
            continue
        if state.replay is not None:
            state.replay.move(old.ns, new.ns)
        if rec is None:
            continue
        carried, writes = _carry(rec, old.ns, new.ns, renamed)
        if carried is None:
            continue
        state.records[new.id] = carried
        yield from persist.save_writes(new.id, writes)
    return renamed


def _carry(
    rec: TaskRecord, old_ns: str, new_ns: str, renamed: dict[str, str]
) -> tuple[TaskRecord | None, list[tuple[str, object]]]:
    if rec.interrupts:
        own = xxh3_128_hexdigest(new_ns.encode())
        moved: list[Interrupt] = []
        for intr in rec.interrupts:
            new_id = own if is_own_interrupt(intr, old_ns) else intr.id
            renamed[intr.id] = new_id
            moved.append(intr.moved(new_id))
        answers = list(rec.resume or [])
        asked = rec.asked
        if rec.done and asked is not None:
            # A task that finished starts over in the fork, as a replay of this
            # checkpoint runs it: the new answer answers its first question and the
            # later ones are asked again (their answers belong to the old branch).
            asked = 0
        if asked is not None:
            # The answers given before the question we re-answer stay; its own goes.
            kept = answers[:asked]
        else:  # saved before positions were: a finished task's last answer was its own
            kept = answers[:-1] if rec.done and answers else answers
        carried = TaskRecord(interrupts=tuple(moved), resume=kept or None, asked=asked)
        writes: list[tuple[str, object]] = [(INTERRUPT, as_stored(tuple(moved), asked))]
        if asked is not None:
            writes.append((ASKED, asked))
        if kept:
            writes.append((RESUME, kept))
        return carried, writes
    if rec.done:
        return TaskRecord(writes=list(rec.writes), done=True), list(rec.writes)
    return None, []


def carried_afresh(run: RunSetup, state: RunState) -> Afresh | None:
    """The answer a root resume carries into a subgraph, if it answers one question there.

    Only a single answer (plain, or keyed by the question's id) to a question a
    subgraph asked (not the task's own). A subgraph that runs afresh asks it again
    under a new id: in a fork (its parent task renamed), or after an ``update_state``
    restarted its paused node (`restarted_by_update`); there it takes the
    answer (`take_afresh`, `answer_afresh`). Elsewhere it is not used.
    """
    resume = state.resume
    if resume is None or len(resume.values) != 1:
        return None
    if not state.historical and not resume.plain:
        # Only a fork carries an answer sent by id; an update's restart takes plain
        # ones (and a resume by id of one of many paused tasks skips this scan).
        return None
    ((iid, answer),) = resume.values.items()
    for task in current_tasks(run, state):
        rec = state.records.get(task.id)
        for intr in rec.interrupts if rec is not None else ():
            if intr.id == iid and not is_own_interrupt(intr, task.ns):
                return Afresh(intr.value, answer)
    return None


def take_afresh(
    state: RunState, task_id: str, value: object, position: int
) -> tuple[object] | None:
    """The answer a fork carries (`Afresh`) for a question being asked, or None.

    Called by ``interrupt()`` in a task of a subgraph run started afresh by that fork,
    when the step runs that task alone: its first question, of the carried question's
    value, is the question answered, asked again. It takes the answer as it asks, so
    the node runs once (as in LangGraph, where the subgraph resumes in place). Steps
    of several tasks are left to `answer_afresh`, which sees every question the
    step asked before it picks one.
    """
    carried = state.afresh
    if carried is None or position != 0 or len(state.tasks) != 1 or not _started_afresh(state):
        return None
    if value != carried.question or not carried.take(task_id):
        return None
    return (carried.answer,)


def taken_answer(state: RunState, task_id: str, rec: TaskRecord) -> list[tuple[str, object]]:
    """The write that keeps the answer task ``task_id`` took as it asked.

    Needed if it paused (a later question) or failed after ``take_afresh``: it runs
    again with that answer.
    """
    carried = state.afresh
    if carried is None or not carried.taken_by(task_id) or rec.resume:
        return []
    rec.resume = [carried.answer]
    return [(RESUME, rec.resume)]


def answer_afresh(state: RunState, interrupts: list[Interrupt]) -> bool:
    """In a subgraph started afresh by a fork, give the answer to the question re-asked.

    A new answer sent to an old checkpoint whose question is inside a subgraph forks
    the root (DESIGN §4.2): its task gets a new id, so the subgraph runs afresh in a
    new namespace and asks the question again, under an id the answer is not keyed
    by. The fork carries the answer with the question's value (`Afresh`). A
    subgraph run started afresh in it (its first in the fork) whose step asks exactly
    one question, its task's first, of that value: that is the question answered,
    re-asked. It gets the answer (once): True, and the caller binds ``state.resume``
    (``begin.bind_resume``) and runs the step again.
    """
    carried = state.afresh
    if carried is None or not _started_afresh(state) or len(interrupts) != 1:
        return False
    asked = interrupts[0]
    asker = next((t for t in state.tasks if asked in _raised(state, t.id)), None)
    if asker is None or not is_own_interrupt(asked, asker.ns):
        return False
    if state.records[asker.id].asked != 0 or asked.value != carried.question:
        return False
    if not carried.take():
        return False
    for task in state.tasks:  # the step's finished tasks keep their writes
        if task.writes and task.id not in state.records:
            state.records[task.id] = TaskRecord(writes=list(task.writes), done=True)
    state.resume = ResumeMap({asked.id: carried.answer}, plain=True)
    return True


def restarted_by_update(state: RunState, given: ResumeMap) -> bool:
    """Whether a subgraph resumed with ``given`` asks its answered question afresh.

    ``update_state(subgraph_config, ..., as_node=START)`` (or ``"__copy__"``) on a
    paused subgraph leaves a checkpoint where its paused node is due again from its
    start, with no question waiting: the node asks the question again, under a new
    id. A plain answer the parent bound to that question then goes to the question
    re-asked (the fork's `Afresh`), as LangGraph gives it. An answer sent by
    the old question's id is not carried, as LangGraph does not: the id names a
    question that is no longer asked.
    """
    if not given.plain or len(given.values) != 1:
        return False
    if state.metadata.get("source") not in RESTARTING_SOURCES:
        return False
    return not any(rec.interrupts for rec in state.records.values())


def _started_afresh(state: RunState) -> bool:
    """Whether the run asks again a question a carried answer (`Afresh`) is for.

    A replayed subgraph, one a fork renamed that starts from a checkpoint its caller
    addressed from before the question was asked, or one an update restarted.
    """
    return state.replayed is not None or state.source_ns is not None or state.restarted


def _raised(state: RunState, task_id: str) -> tuple[Interrupt, ...]:
    rec = state.records.get(task_id)
    return rec.interrupts if rec is not None else ()
