"""How a run starts: taking its input (DESIGN §4).

New input is applied as the input pseudo-task and checkpointed; ``None`` continues
the thread's newest (or the config's) checkpoint; a ``Command`` continues it with a
resume value bound to the tasks it answers, an update, or a goto. Functions of the
run (`pausepoint.loop.run._Run`), as `pausepoint.loop.fork` is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from pausepoint.config import RunnableConfig
from pausepoint.constants import INPUT, INTERRUPT, NULL_TASK_ID, RESUME, START
from pausepoint.errors import (
    CheckpointerRequiredError,
    EmptyInputError,
    InvalidCommandError,
    InvalidUpdateError,
    NothingToResumeError,
)
from pausepoint.loop import emit as out
from pausepoint.loop.answers import check_schemas, drop_consumed, plan_answers
from pausepoint.loop.effects import LoadCheckpoint
from pausepoint.loop.fork import carried_afresh, fork, forkable_interrupts, restarted_by_update
from pausepoint.loop.namespaces import ReplayPoint, addressed, replay_before
from pausepoint.loop.node import command_writes
from pausepoint.loop.pending import (
    ResumeMap,
    interrupt_owners,
    is_resume_map,
    nested_resume,
    parse_resume,
)
from pausepoint.loop.tasks import prepare_tasks
from pausepoint.loop.writes import InputWrites, apply_writes, check_update
from pausepoint.types import Command, Interrupt

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import CheckpointTuple
    from pausepoint.loop.run import _Run  # pyright: ignore[reportPrivateUsage]

__all__ = ["check_answers", "check_no_saver_input", "first", "load", "root_read"]

Effect = Any


def first(run: _Run) -> Generator[Effect, Any, None]:
    """Take the run's input: new input, ``None`` to continue, or a ``Command``."""
    run.stop = run.step + run.cfg.recursion_limit + 1
    inp = run.input
    nest = run.opts.nest
    has_state = bool(run.checkpoint["channel_versions"])
    if nest is not None and nest.resuming and has_state and run.replayed is None:
        inp = None  # a resume goes on with the subgraph's state; a replay takes input
    if nest is not None and nest.resume_map:
        given = ResumeMap(nest.resume_map, nest.resume_positions, nest.resume_plain)
        run.resume = nested_resume(given, run.records)
        run.restarted = restarted_by_update(run, given)
    # Replay: the tasks of this old checkpoint run again, asking their questions
    # again (saved answers are not reused), as in LangGraph.
    replay = run.historical and inp is None and run.source_ns is None
    if run.source_ns is not None:
        yield from start_moved(run, run.source_ns)
    if isinstance(inp, Command) and not has_state and inp.resume is None and nest is None:
        # A new thread started with Command(update/goto): the command is its input,
        # taken by __start__ (LangGraph's, which also applies the update a second time).
        check_command(inp)  # pyright: ignore[reportUnknownArgumentType]
        yield from take_input(run, inp)
        return
    if isinstance(inp, Command):
        yield from take_command(run, inp)  # pyright: ignore[reportUnknownArgumentType]
    if run.null_writes:
        run.epoch += 1
        apply_writes(run.checkpoint, run.channels, [InputWrites(INPUT, run.null_writes)])
    if inp is None or isinstance(inp, Command):
        if not has_state:
            raise EmptyInputError(
                "Received no input for __start__: the thread has no checkpoint to continue from. "
                "Pass the graph's input (a dict of state values) to start a run."
            )
        run.resuming = True
        run.checkpoint["versions_seen"][INTERRUPT] = dict(run.checkpoint["channel_versions"])
        if run.opts.stream_modes:
            if run.wants("values"):
                yield run.emit("values", run.output())
            yield from out.resumed_checkpoint(run)  # as saved, with what its tasks did
        if replay:
            run.records = {}
        yield from bind_resume(run)
        return
    yield from take_input(run, inp)


def load(run: _Run) -> Generator[Effect, Any, None]:
    """Read the checkpoint the run starts from: the config's, or its namespace's newest.

    A root run given an old checkpoint is a replay (``run.historical``): its
    subgraphs read the state they had then. A subgraph's first run in a replay
    reads its namespace's newest checkpoint older than the replay point.
    """
    cfg, nest = run.cfg, run.opts.nest
    conf: dict[str, Any] = {"thread_id": cfg.thread_id, "checkpoint_ns": cfg.checkpoint_ns}
    source, target = (cfg.checkpoint_ns, None)
    if nest is not None and nest.replay is not None:
        source, target = nest.replay.source(cfg.checkpoint_ns)
    if target is not None:  # a subgraph checkpoint the caller's config named
        conf["checkpoint_ns"], conf["checkpoint_id"] = source, target
        run.historical = True  # its tasks run again, asking their questions again
        run.source_ns = source if source != cfg.checkpoint_ns else None
    else:
        run.replayed = replay_before(nest, cfg.checkpoint_ns)
        if cfg.checkpoint_id and nest is None:
            conf["checkpoint_id"] = cfg.checkpoint_id
    saved = yield from _read(run, LoadCheckpoint({"configurable": conf}, run.replayed))
    run.restore(saved)
    if saved is not None and cfg.checkpoint_id and nest is None:
        newest = yield LoadCheckpoint(cfg.with_checkpoint(None))
        run.historical = newest is not None and newest.checkpoint["id"] != run.checkpoint["id"]
        if run.historical:  # its subgraphs start from where they were then
            run.replay = ReplayPoint(run.checkpoint["id"], addressed(cfg.configurable))


def check_no_saver_input(run: _Run) -> None:
    """A graph without a saver has nothing to resume: refuse ``Command(resume=...)``."""
    given: Any = run.input
    if isinstance(given, Command) and given.resume is not None:
        raise CheckpointerRequiredError(
            "Cannot use Command(resume=...) without checkpointer: compile the graph "
            "with checkpointer=InMemorySaver() (or SqliteSaver) and pass a thread_id"
        )


def root_read(run: _Run) -> RunnableConfig:
    """What a root run reads first (``load``): its config's checkpoint, or the newest.

    A leased run asks for it with its claim (``ClaimThread.read``), one round trip
    for both where the saver can.
    """
    cfg = run.cfg
    conf: dict[str, Any] = {"thread_id": cfg.thread_id, "checkpoint_ns": cfg.checkpoint_ns}
    if cfg.checkpoint_id:
        conf["checkpoint_id"] = cfg.checkpoint_id
    return {"configurable": conf}


def _read(run: _Run, effect: LoadCheckpoint) -> Generator[Effect, Any, CheckpointTuple | None]:
    """``effect``'s checkpoint: read with the run's claim if it was the same read."""
    ahead, run.read_ahead = run.read_ahead, None
    if ahead is not None and effect.before is None and ahead[0] == effect.config:
        return ahead[1]
    saved: CheckpointTuple | None = yield effect
    return saved


def start_moved(run: _Run, source_ns: str) -> Generator[Effect, Any, None]:
    """Start a subgraph that a fork above renamed from the checkpoint addressed for it.

    It goes on from a copy of that checkpoint in its own namespace (the old branch is
    not written to): with what its tasks had done if a question its answer is for
    waited there (`fork`), or as a replay from there if
    the question came later. Its share of the answer follows the questions' new ids.
    """
    given = run.resume
    if given is None or not any(
        i.id in given.values for rec in run.records.values() for i in rec.interrupts
    ):
        # Addressed from before its question: a replay from there (its tasks run
        # again), the answer carried to the question when it is asked again.
        run.records = {}
    renamed = yield from fork(run, source_ns)
    if given is not None:
        values = {renamed.get(k, k): v for k, v in given.values.items()}
        positions = {renamed.get(k, k): p for k, p in given.positions.items()}
        run.resume = ResumeMap(values, positions, given.plain)


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


def take_command(run: _Run, cmd: Command[Any]) -> Generator[Effect, Any, None]:
    """Check a ``Command``, parse its resume (forking an old checkpoint), save its update."""
    check_command(cmd)
    if cmd.update is not None:  # before anything is stored (a fork included)
        update = command_writes(run.spec, Command(update=cmd.update), "")
        check_update(run.channels, run.null_writes, update, "Command(update=...)")
    if cmd.resume is not None:
        if not run.opts.has_saver:
            check_no_saver_input(run)
        resume: Any = cmd.resume
        if run.historical:
            # DESIGN §4.2: answering an old checkpoint forks the thread there.
            parsed = parse_resume(resume, forkable_interrupts(run.records))
            check_schemas(parsed.values, parsed.positions, run.records, forking=True)
            renamed = yield from fork(run)
            if is_resume_map(resume):
                resume = {renamed.get(k, k): v for k, v in resume.items()}  # pyright: ignore[reportUnknownVariableType]
        check_answers(run, resume)
        # For a subgraph that asks its question again: forked, or restarted by an update.
        run.afresh = carried_afresh(run)
    writes = command_writes(run.spec, Command(update=cmd.update, goto=cmd.goto), "")
    if writes:
        run.null_writes.extend(writes)
        yield from run.persist.save_writes(NULL_TASK_ID, writes)


def check_answers(run: _Run, resume: Any) -> None:
    """Parse a resume against what is pending and bind it to its questions.

    Sets ``run.resume`` and ``run.answered`` (task id → new answer list). Raises
    the resume errors before anything is written: a refused answer writes nothing.
    """
    run.owners = interrupt_owners(run.records)
    if is_resume_map(resume) and resume:
        resume = drop_consumed(resume, run.records)
        if not resume:  # every answer was one a finished task used: nothing new
            run.resume, run.answered = ResumeMap({}), {}
            return
    try:
        run.resume = parse_resume(resume, *reported_interrupts(run), run.owners)
    except NothingToResumeError:
        due = [t.id for t in run.current_tasks() if not _finished(run, t.id)]
        if not due:
            raise
        # Not finished: a node failed, or a run died before its next step ran.
        names = ", ".join(t.name for t in run.current_tasks() if t.id in due)
        failed = any(run.records[t].error for t in due if t in run.records)
        state = "failed and runs again" if failed else "has not run yet; it runs"
        raise NothingToResumeError(
            "Command(resume=...) was sent but no interrupt is pending in this thread: no "
            f"question waits, and its step ({names}) {state} on graph.invoke(None, "
            "config). Nothing was changed."
        ) from None
    run.answered = plan_answers(
        run.current_tasks(), run.records, run.resume.values, run.owners, run.resume.positions
    )
    # After the conflicts: a stale answer is reported as answered, not as malformed.
    check_schemas(run.resume.values, run.resume.positions, run.records)


def reported_interrupts(run: _Run) -> tuple[list[Interrupt], set[str]]:
    """The interrupts this checkpoint's tasks reported, and the ids already answered.

    An answered question (its answer stored, the task not past it yet) is still
    reported: sending its answer again continues the run (DESIGN §4.1).
    """
    records = run.records
    found: list[Interrupt] = []
    answered: set[str] = set()
    for task in run.current_tasks():
        rec = records.get(task.id)
        if rec is not None and rec.interrupts and not rec.done:
            found.extend(rec.interrupts)
            if rec.answered:
                answered.update(i.id for i in rec.interrupts)
    return found, answered


def bind_resume(run: _Run) -> Generator[Effect, Any, None]:
    """Store each answer against its question, before the task re-runs.

    ``run.answered`` (task id → its new answer list, None for a resend) names the
    tasks an answer goes to: those re-run, the other paused ones stay paused
    (`match_records`). A ``Command`` planned it in
    `take_command`; a subgraph's resume map is planned here.
    """
    if run.resume is None:
        return
    if run.opts.nest is not None:  # a root run planned its Command in take_command
        owners = interrupt_owners(run.records)
        run.answered = plan_answers(
            run.current_tasks(), run.records, run.resume.values, owners, run.resume.positions
        )
    for task_id, answers in run.answered.items():
        if answers is not None:
            run.records[task_id].resume = answers
            yield from run.persist.save_writes(task_id, [(RESUME, answers)])


def start_step_follows(run: _Run) -> bool:
    """Whether the start step follows the input checkpoint just made, with nothing between.

    Asked when the saver could store both checkpoints at once (``Persistence.pairs_input``):
    in a root run, when the input changed only ``__start__`` and the start node has no
    conditional edge: the next step is that node alone, applied in the loop with no
    driver round trip, so no caller code and no other saver call comes between the two
    checkpoints unless the step fails or pauses (then the planner saves the input
    checkpoint first: ``Persistence.flush_waiting``).

    Only a new thread's: the waiting checkpoint holds the input and nothing else.
    An older state's values would be in it too, and a reducer that changes its old
    value in place (``a.update(b); return a``) would change them before they are
    stored (the differential test in tests/savers/test_sqlite.py shows it).
    """
    if run.opts.nest is not None or run.updated != {START}:
        return False
    if run.checkpoint["channel_values"].keys() != {START}:
        return False
    start = run.spec.nodes.get(START)
    return start is not None and not start.branches and not start.retry


def take_input(run: _Run, inp: Any) -> Generator[Effect, Any, None]:
    """New input: tasks left pending are dropped, the input applied and checkpointed."""
    if (
        not isinstance(inp, dict | Command)
        and run.spec.input.kind in ("typeddict", "pydantic", "dataclass")
        and not hasattr(type(inp), "model_fields")  # pyright: ignore[reportUnknownArgumentType]
        and not dataclasses.is_dataclass(inp)
    ):
        kind: Any = type(inp)  # pyright: ignore[reportUnknownVariableType]
        raise InvalidUpdateError(
            f"Expected dict, got {inp}: the graph input is a dict of state values (got an "
            f"object of type {kind.__name__})"
        )
    discard = (
        prepare_tasks(run.spec, run.checkpoint, run.channels, run.step, run.cfg.checkpoint_ns)
        if run.checkpoint["channel_versions"]  # a new thread has no pending tasks
        else []
    )
    for t in discard:
        t.writes = []
    start: list[tuple[str, Any]] = [(START, inp)]
    sources = [*discard, InputWrites(INPUT, start)]
    updated = apply_writes(run.checkpoint, run.channels, sources, clock=run.clock)
    # Before this run the thread may have left triggers pending only if some
    # task was discarded, and those are now consumed: the next step needs
    # to look only at what the input changed.
    run.updated = updated
    if (saving := run.leave_step("input")) is not None:
        yield from saving
    run.step += 1


def _finished(run: _Run, task_id: str) -> bool:
    rec = run.records.get(task_id)
    return rec is not None and rec.done
