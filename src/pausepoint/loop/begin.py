"""How a run starts: taking its input (DESIGN §4).

New input is applied as the input pseudo-task and checkpointed; ``None`` continues
the thread's newest (or the config's) checkpoint; a ``Command`` continues it with a
resume value bound to the tasks it answers, an update, or a goto. Functions of the
run: its setup, state and persistence planner (`pausepoint.loop.state`), as
`pausepoint.loop.fork`'s are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint.base import CheckpointRef
from pausepoint.constants import INPUT, INTERRUPT, NULL_TASK_ID, RESUME, START
from pausepoint.errors import (
    CheckpointerRequiredError,
    EmptyInputError,
    InvalidCommandError,
    InvalidUpdateError,
    NothingToResumeError,
)
from pausepoint.loop import emit as out
from pausepoint.loop.advance import leave_step
from pausepoint.loop.answers import check_schemas, drop_consumed, plan_answers
from pausepoint.loop.compat_check import same_graph
from pausepoint.loop.effects import Effect, LoadCheckpoint
from pausepoint.loop.fork import carried_afresh, fork, forkable_interrupts, restarted_by_update
from pausepoint.loop.migrate import fitted, translated_resume
from pausepoint.loop.namespaces import ReplayPoint, addressed, replay_before
from pausepoint.loop.node import command_writes
from pausepoint.loop.pending import (
    ResumeMap,
    interrupt_owners,
    is_resume_map,
    nested_resume,
    parse_resume,
)
from pausepoint.loop.state import current_tasks, output, restore_saved
from pausepoint.loop.tasks import prepare_tasks
from pausepoint.loop.writes import InputWrites, apply_writes, check_update
from pausepoint.types import Command, Interrupt

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import CheckpointTuple
    from pausepoint.loop.persistence import Persistence
    from pausepoint.loop.state import RunSetup, RunState

__all__ = ["check_answers", "check_no_saver_input", "first", "load", "root_read"]


def first(run: RunSetup, state: RunState, persist: Persistence) -> Generator[Effect, object, None]:
    """Take the run's input: new input, ``None`` to continue, or a ``Command``."""
    state.stop = state.step + run.cfg.recursion_limit + 1
    inp = run.input
    nest = run.opts.nest
    has_state = bool(state.checkpoint["channel_versions"])
    if nest is not None and nest.resuming and has_state and state.replayed is None:
        inp = None  # a resume goes on with the subgraph's state; a replay takes input
    if nest is not None and nest.resume_map:
        given = ResumeMap(nest.resume_map, nest.resume_positions, nest.resume_plain)
        state.resume = nested_resume(given, state.records)
        state.restarted = restarted_by_update(state, given)
    # Replay: the tasks of this old checkpoint run again, asking their questions
    # again (saved answers are not reused), as in LangGraph.
    replay = state.historical and inp is None and state.source_ns is None
    if state.source_ns is not None:
        yield from start_moved(run, state, persist, state.source_ns)
    if isinstance(inp, Command) and not has_state and inp.resume is None and nest is None:
        # A new thread started with Command(update/goto): the command is its input,
        # taken by __start__ (LangGraph's, which also applies the update a second time).
        check_command(inp)  # pyright: ignore[reportUnknownArgumentType]
        yield from take_input(run, state, persist, inp)
        return
    if isinstance(inp, Command):
        yield from take_command(run, state, persist, inp)  # pyright: ignore[reportUnknownArgumentType]
    if state.null_writes:
        state.epoch += 1
        apply_writes(state.checkpoint, state.channels, [InputWrites(INPUT, state.null_writes)])
    if inp is None or isinstance(inp, Command):
        if not has_state:
            raise EmptyInputError(
                "Received no input for __start__: the thread has no checkpoint to continue from. "
                "Pass the graph's input (a dict of state values) to start a run."
            )
        state.resuming = True
        state.checkpoint["versions_seen"][INTERRUPT] = dict(state.checkpoint["channel_versions"])
        if run.opts.stream_modes:
            if run.wants("values"):
                yield run.emit("values", output(run, state))
            yield from out.resumed_checkpoint(
                run, state, persist
            )  # as saved, with what its tasks did
        if replay:
            state.records = {}
        yield from bind_resume(run, state, persist)
        return
    yield from take_input(run, state, persist, inp)


def load(run: RunSetup, state: RunState, persist: Persistence) -> Generator[Effect, Any, None]:
    """Read the checkpoint the run starts from: the config's, or its namespace's newest.

    A root run given an old checkpoint is a replay (``state.historical``): its
    subgraphs read the state they had then. A subgraph's first run in a replay
    reads its namespace's newest checkpoint older than the replay point.
    """
    cfg, nest = run.cfg, run.opts.nest
    where = newest = persist.thread  # the run's thread and namespace, no checkpoint
    source, target = (cfg.checkpoint_ns, None)
    if nest is not None and nest.replay is not None:
        source, target = nest.replay.source(cfg.checkpoint_ns)
    if target is not None:  # a subgraph checkpoint the caller's config named
        where = CheckpointRef(newest.thread_id, source, target)
        state.historical = True  # its tasks run again, asking their questions again
        state.source_ns = source if source != cfg.checkpoint_ns else None
    else:
        state.replayed = replay_before(nest, cfg.checkpoint_ns)
        if cfg.checkpoint_id and nest is None:
            where = where.at(cfg.checkpoint_id)
    saved = yield from _read(state, LoadCheckpoint(where, state.replayed))
    if saved is not None:
        if not same_graph(run.spec, saved.checkpoint):  # another graph wrote it: does it fit?
            # A migration moves the namespace's newest checkpoint (docs/deploys.md).
            movable = target is None and state.replayed is None and not where.checkpoint_id
            saved = yield from fitted(run.spec, saved, movable=movable)
        restore_saved(run, state, saved)
        persist.restored(where.at(saved.checkpoint["id"]))  # where it was read
    if saved is not None and cfg.checkpoint_id and nest is None:
        head = yield LoadCheckpoint(newest)
        state.historical = head is not None and head.checkpoint["id"] != state.checkpoint["id"]
        if state.historical or state.metadata.get("source") in _EDITS:
            # Its subgraphs start from where they were then: at an ``update_state`` fork
            # (the head, when just made), where they were at the checkpoint it edits.
            bound = replay_bound(saved)
            state.replay = ReplayPoint(bound, addressed(cfg.configurable))


_EDITS = frozenset({"update", "fork"})
"""Sources of the checkpoints ``update_state`` writes (``"fork"``: ``as_node="__copy__"``)."""


def replay_bound(saved: CheckpointTuple) -> str:
    """The checkpoint whose time a replay or fork from ``saved`` loads subgraphs as of.

    A stateful subgraph (``checkpointer=True``) first run in it reads its newest
    checkpoint older than this id. An ``update_state`` edit (source ``"update"``) was
    written after the subgraphs' later checkpoints: its parent's id bounds them, as
    LangGraph 1.1.6 does. Any other checkpoint (``"__copy__"``'s ``"fork"`` too, as
    there) bounds them by its own id.
    """
    own = saved.checkpoint["id"]
    if saved.metadata.get("source") != "update" or saved.parent_config is None:
        return own
    parent = saved.parent_config.get("configurable", {}).get("checkpoint_id")
    return parent if isinstance(parent, str) and parent else own


def check_no_saver_input(run: RunSetup) -> None:
    """A graph without a saver has nothing to resume: refuse ``Command(resume=...)``."""
    given: object = run.input
    if isinstance(given, Command) and given.resume is not None:
        raise CheckpointerRequiredError(
            "Cannot use Command(resume=...) without checkpointer: compile the graph "
            "with checkpointer=InMemorySaver() (or SqliteSaver) and pass a thread_id"
        )


def root_read(run: RunSetup) -> CheckpointRef:
    """What a root run reads first (``load``): its config's checkpoint, or the newest.

    A leased run asks for it with its claim (``ClaimThread.read``), one round trip
    for both where the saver can.
    """
    cfg = run.cfg
    return CheckpointRef(str(cfg.thread_id), cfg.checkpoint_ns, cfg.checkpoint_id or None)


def _read(
    state: RunState, effect: LoadCheckpoint
) -> Generator[Effect, Any, CheckpointTuple | None]:
    """``effect``'s checkpoint: read with the run's claim if it was the same read."""
    ahead, state.read_ahead = state.read_ahead, None
    if ahead is not None and effect.before is None and ahead[0] == effect.config:
        return ahead[1]
    saved: CheckpointTuple | None = yield effect
    return saved


def start_moved(
    run: RunSetup, state: RunState, persist: Persistence, source_ns: str
) -> Generator[Effect, object, None]:
    """Start a subgraph that a fork above renamed from the checkpoint addressed for it.

    It goes on from a copy of that checkpoint in its own namespace (the old branch is
    not written to): with what its tasks had done if a question its answer is for
    waited there (`fork`), or as a replay from there if
    the question came later. Its share of the answer follows the questions' new ids.
    """
    given = state.resume
    if given is None or not any(
        i.id in given.values for rec in state.records.values() for i in rec.interrupts
    ):
        # Addressed from before its question: a replay from there (its tasks run
        # again), the answer carried to the question when it is asked again.
        state.records = {}
    renamed = yield from fork(run, state, persist, source_ns)
    if given is not None:
        values = {renamed.get(k, k): v for k, v in given.values.items()}
        positions = {renamed.get(k, k): p for k, p in given.positions.items()}
        state.resume = ResumeMap(values, positions, given.plain)


def check_command(cmd: Command[Any]) -> None:
    """Refuse a ``Command`` that means nothing as graph input."""
    if cmd.graph == Command.PARENT:
        raise InvalidCommandError(
            "Command(graph=Command.PARENT) was given as graph input, but a graph "
            "called directly has no parent graph. Return it from a node of a subgraph."
        )
    if cmd.resume is None and cmd.update is None and not cmd.goto:
        raise InvalidCommandError(
            "Received an empty Command(): give it resume=, update= or goto=; "
            "to continue a paused run without a value, invoke with None"
        )


def take_command(
    run: RunSetup, state: RunState, persist: Persistence, cmd: Command[Any]
) -> Generator[Effect, object, None]:
    """Check a ``Command``, parse its resume (forking an old checkpoint), save its update."""
    check_command(cmd)
    if cmd.update is not None:  # before anything is stored (a fork included)
        update = command_writes(run.spec, Command(update=cmd.update), "")
        check_update(state.channels, state.null_writes, update, "Command(update=...)")
    if cmd.resume is not None:
        if not run.opts.has_saver:
            check_no_saver_input(run)
        resume: object = cmd.resume
        if state.metadata.get("source") == "migrate":  # ids a person saw before the move
            resume = translated_resume(resume, state.metadata)
        if state.historical:
            # DESIGN §4.2: answering an old checkpoint forks the thread there.
            parsed = parse_resume(resume, forkable_interrupts(state.records))
            check_schemas(parsed.values, parsed.positions, state.records, forking=True)
            renamed = yield from fork(run, state, persist)
            if is_resume_map(resume):
                resume = {renamed.get(k, k): v for k, v in resume.items()}  # pyright: ignore[reportUnknownVariableType]
        check_answers(run, state, resume)
        # For a subgraph that asks its question again: forked, or restarted by an update.
        state.afresh = carried_afresh(run, state)
    if cmd.update is None and cmd.goto == ():  # a plain resume: nothing to write
        return
    writes = command_writes(run.spec, Command(update=cmd.update, goto=cmd.goto), "")
    if writes:
        state.null_writes.extend(writes)
        yield from persist.save_writes(NULL_TASK_ID, writes)


def check_answers(run: RunSetup, state: RunState, resume: object) -> None:
    """Parse a resume against what is pending and bind it to its questions.

    Sets ``state.resume`` and ``state.answered`` (task id → new answer list). Raises
    the resume errors before anything is written: a refused answer writes nothing.
    """
    state.owners = interrupt_owners(state.records)
    if is_resume_map(resume) and resume:
        resume = drop_consumed(resume, state.records)
        if not resume:  # every answer was one a finished task used: nothing new
            state.resume, state.answered = ResumeMap({}), {}
            return
    try:
        state.resume = parse_resume(resume, *reported_interrupts(run, state), state.owners)
    except NothingToResumeError:
        due = [t.id for t in current_tasks(run, state) if not _finished(state, t.id)]
        if not due:
            raise
        # Not finished: a node failed, or a run died before its next step ran.
        names = ", ".join(t.name for t in current_tasks(run, state) if t.id in due)
        failed = any(state.records[t].error for t in due if t in state.records)
        why = "failed and runs again" if failed else "has not run yet; it runs"
        raise NothingToResumeError(
            "Command(resume=...) was sent but no interrupt is pending in this thread: no "
            f"question waits, and its step ({names}) {why} on graph.invoke(None, "
            "config). Nothing was changed."
        ) from None
    state.answered = plan_answers(
        current_tasks(run, state),
        state.records,
        state.resume.values,
        state.owners,
        state.resume.positions,
    )
    # After the conflicts: a stale answer is reported as answered, not as malformed.
    check_schemas(state.resume.values, state.resume.positions, state.records)


def reported_interrupts(run: RunSetup, state: RunState) -> tuple[list[Interrupt], set[str]]:
    """The interrupts this checkpoint's tasks reported, and the ids already answered.

    An answered question (its answer stored, the task not past it yet) is still
    reported: sending its answer again continues the run (DESIGN §4.1).
    """
    records = state.records
    found: list[Interrupt] = []
    answered: set[str] = set()
    for task in current_tasks(run, state):
        rec = records.get(task.id)
        if rec is not None and rec.interrupts and not rec.done:
            found.extend(rec.interrupts)
            if rec.answered:
                answered.update(i.id for i in rec.interrupts)
    return found, answered


def bind_resume(
    run: RunSetup, state: RunState, persist: Persistence
) -> Generator[Effect, object, None]:
    """Store each answer against its question, before the task re-runs.

    ``state.answered`` (task id → its new answer list, None for a resend) names the
    tasks an answer goes to: those re-run, the other paused ones stay paused
    (`match_records`). A ``Command`` planned it in
    `take_command`; a subgraph's resume map is planned here.
    """
    if state.resume is None:
        return
    if run.opts.nest is not None:  # a root run planned its Command in take_command
        owners = interrupt_owners(state.records)
        state.answered = plan_answers(
            current_tasks(run, state),
            state.records,
            state.resume.values,
            owners,
            state.resume.positions,
        )
    trace = state.trace
    for task_id, answers in state.answered.items():
        if answers is not None:
            state.records[task_id].resume = answers
            if trace is not None:  # a link to the span that asked, if it was traced
                trace.answered(state.records[task_id].asked_span)
            yield from persist.save_writes(task_id, [(RESUME, answers)])


def take_input(
    run: RunSetup, state: RunState, persist: Persistence, inp: Any
) -> Generator[Effect, object, None]:
    """New input: tasks left pending are dropped, the input applied and checkpointed."""
    if (
        not isinstance(inp, dict | Command)
        and run.spec.input.kind in ("typeddict", "pydantic", "dataclass")
        and not hasattr(type(inp), "model_fields")  # pyright: ignore[reportUnknownArgumentType]
        and not dataclasses.is_dataclass(inp)
    ):
        kind: object = type(inp)  # pyright: ignore[reportUnknownVariableType]
        raise InvalidUpdateError(
            f"Expected dict, got {inp}: the graph input is a dict of state values (got an "
            f"object of type {kind.__name__})"
        )
    discard = (
        prepare_tasks(run.spec, state.checkpoint, state.channels, state.step, run.cfg.checkpoint_ns)
        if state.checkpoint["channel_versions"]  # a new thread has no pending tasks
        else []
    )
    for t in discard:
        t.writes = []
    start: list[tuple[str, object]] = [(START, inp)]
    sources = [*discard, InputWrites(INPUT, start)]
    updated = apply_writes(state.checkpoint, state.channels, sources, clock=state.clock)
    # Before this run the thread may have left triggers pending only if some
    # task was discarded, and those are now consumed: the next step needs
    # to look only at what the input changed.
    state.updated = updated
    if (saving := leave_step(run, state, persist, "input")) is not None:
        yield from saving
    state.step += 1


def _finished(state: RunState, task_id: str) -> bool:
    rec = state.records.get(task_id)
    return rec is not None and rec.done
