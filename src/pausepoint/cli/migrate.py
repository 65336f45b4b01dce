"""``pausepoint threads migrate``: move every stored thread to a new graph now.

    pausepoint threads migrate --db app.sqlite --graph app.flows:graph [--dry-run]
        [--json] [--batch N]

A thread whose newest checkpoint another graph wrote is moved the way its next run
would move it (the graph's declared migrations, docs/deploys.md), ahead of that
run: a checkpoint of its own (``source="migrate"``), subgraphs first and the root
last, each checkpoint with its writes in one commit, so a process killed at any
point leaves every thread moved or not, and running the command again finishes the
job. Threads are read ``--batch`` at a time. Each move takes the thread's lease, as
a run does, so it is safe beside running workers: a thread a run holds is skipped
and reported (``busy``); run the command again later. A thread already written by
the graph is left alone (``current``): the command is idempotent.

Each thread's outcome: ``migrated`` (``would migrate`` with ``--dry-run``, which
writes nothing and takes no lease), ``current``, ``fits`` (another graph wrote it,
but it needs no migration: the graph declares none and the thread does not feel the
change), ``busy``, ``failed`` (what the migrations leave unmatched, or the error of
the migration that raised: nothing written), or ``unreadable``.

Exit status: 0 when no thread is left to move, 1 when some could not be moved
(``busy``, ``failed``, ``unreadable``), 2 for a bad command, database or graph.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint.base import CheckpointPut, CheckpointTuple, StepCommit, as_config
from pausepoint.cli.output import print_json, render_table
from pausepoint.cli.threads import Commands, add_db_option, compile_graph, load_graph, open_saver
from pausepoint.cli.views import CliError, thread_ids
from pausepoint.constants import DEFAULT_LEASE_TTL
from pausepoint.drivers.owners import holder_is_gone, process_owner
from pausepoint.errors import (
    CheckpointDecodeError,
    GraphMismatchError,
    MigrationError,
    PausepointError,
)
from pausepoint.loop.compat_check import deep_problems, same_graph
from pausepoint.loop.effects import LoadCheckpoint
from pausepoint.loop.migrate import MigrationPlan, declares, plan_migration

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import BaseCheckpointSaver
    from pausepoint.config import RunnableConfig
    from pausepoint.loop.spec import GraphSpec

__all__ = ["Moved", "add_parser", "migrate_thread", "run"]

LEFT = frozenset({"busy", "failed", "unreadable"})
"""Outcomes that leave a thread unmoved: exit status 1."""


@dataclasses.dataclass(frozen=True, slots=True)
class Moved:
    """What ``threads migrate`` did with one thread."""

    thread_id: str
    outcome: str
    detail: str = ""
    migrations: tuple[str, ...] = ()


def add_parser(sub: Commands) -> None:
    """Register ``threads migrate`` on the ``threads`` subcommands."""
    p = sub.add_parser(
        "migrate",
        help="move every thread another graph wrote to this graph now (its migrations)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
    p.add_argument("--graph", metavar="MODULE:ATTRIBUTE", required=True, help="the new graph")
    p.add_argument("--dry-run", action="store_true", help="say what would move; write nothing")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--batch", type=_positive, default=100, help="threads read at a time")
    p.set_defaults(run=run)


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"want a positive whole number, got {text!r}")
    return n


def run(args: argparse.Namespace) -> int:
    """Run ``threads migrate``; return the exit status."""
    try:
        with open_saver(args.db, write=not args.dry_run) as saver:
            graph = compile_graph(load_graph(args.graph), saver)
            found = list(_all(saver, graph.spec, args.batch, args.dry_run))
    except CliError as exc:
        print(f"pausepoint threads migrate: error: {exc}", file=sys.stderr)
        return 2
    _report(found, as_json=args.json)
    return 1 if any(m.outcome in LEFT for m in found) else 0


def _all(
    saver: BaseCheckpointSaver, spec: GraphSpec, batch: int, dry_run: bool
) -> Generator[Moved]:
    ids = thread_ids(saver)
    for start in range(0, len(ids), batch):
        for thread_id in ids[start : start + batch]:
            yield migrate_thread(saver, spec, thread_id, dry_run=dry_run)


def migrate_thread(
    saver: BaseCheckpointSaver, spec: GraphSpec, thread_id: str, *, dry_run: bool = False
) -> Moved:
    """Move one thread to ``spec`` with its declared migrations (see the module)."""
    try:
        saved = saver.get_tuple(_root(thread_id))
        if saved is None or same_graph(spec, saved.checkpoint):
            return Moved(thread_id, "current")
        if not declares(spec):  # no migrations: does it fit as it is?
            problems = _drive(saver, deep_problems(spec, saved))
            outcome = "failed" if problems else "fits"
            return Moved(thread_id, outcome, "; ".join(map(str, problems)))
        if dry_run:
            plan = _drive(saver, plan_migration(spec, saved))
            return Moved(thread_id, "would migrate", "", tuple(plan.applied))
        return _leased(saver, spec, thread_id)
    except (GraphMismatchError, MigrationError, CheckpointDecodeError) as exc:
        return _refused(thread_id, exc)


def _refused(thread_id: str, exc: PausepointError) -> Moved:
    if isinstance(exc, GraphMismatchError):
        return Moved(thread_id, "failed", "; ".join(map(str, exc.problems)))
    outcome = "unreadable" if isinstance(exc, CheckpointDecodeError) else "failed"
    return Moved(thread_id, outcome, str(exc))


def _leased(saver: BaseCheckpointSaver, spec: GraphSpec, thread_id: str) -> Moved:
    """Move the thread under its lease: read again once held, write fenced by it."""
    owner = process_owner()
    fenced = saver.supports_leases
    if fenced:
        claim = saver.acquire_lease(thread_id, owner, DEFAULT_LEASE_TTL)
        if not claim.acquired and holder_is_gone(claim.holder.owner):
            saver.release_lease(thread_id, claim.holder.owner)  # its process is dead
            claim = saver.acquire_lease(thread_id, owner, DEFAULT_LEASE_TTL)
        if not claim.acquired:
            return Moved(thread_id, "busy", f"a run holds it ({claim.holder.owner})")
    try:
        saved = saver.get_tuple(_root(thread_id))
        if saved is None or same_graph(spec, saved.checkpoint):
            return Moved(thread_id, "current")
        plan = _drive(saver, plan_migration(spec, saved))
        _save(saver, plan, owner if fenced else None)
        return Moved(thread_id, "migrated", "", tuple(plan.applied))
    finally:
        if fenced:
            saver.release_lease(thread_id, owner)


def _save(saver: BaseCheckpointSaver, plan: MigrationPlan, lease: str | None) -> None:
    """Each level's checkpoint with its writes, one commit each, the root's last."""
    for level in plan.levels:
        put = CheckpointPut(level.saved.checkpoint, level.saved.metadata, {})
        saver.commit(StepCommit(level.parent, level.writes, None, put, lease))


def _root(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def _drive(saver: BaseCheckpointSaver, flow: Generator[LoadCheckpoint, Any, Any]) -> Any:
    """Run a read-only effect flow with ``saver`` (its loads only)."""
    reply: CheckpointTuple | None = None
    try:
        while True:
            effect = flow.send(reply)
            reply = saver.get_tuple(as_config(effect.config))
    except StopIteration as stop:
        return stop.value


def _report(found: list[Moved], *, as_json: bool) -> None:
    if as_json:
        print_json([dataclasses.asdict(m) for m in found])
        return
    rows = [[m.thread_id, m.outcome, ", ".join(m.migrations) or m.detail] for m in found]
    if rows:
        print(render_table(["THREAD", "OUTCOME", "MIGRATIONS / DETAIL"], rows))
    counts: dict[str, int] = {}
    for m in found:
        counts[m.outcome] = counts.get(m.outcome, 0) + 1
    summary = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))
    print(summary or "no threads", file=sys.stderr if rows else sys.stdout)
