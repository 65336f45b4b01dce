"""``pausepoint worker`` and ``pausepoint workers``: the queue's workers, and a look at them.

::

    pausepoint worker --db postgresql://... --graph approval=app.flows:builder --concurrency 8
    pausepoint workers --db postgresql://... [--json]

``worker`` takes runs from the job queue that ``pausepoint serve --db postgresql://...``
fills, and executes them (any number of workers, on any number of machines, on the
same PostgreSQL). It also runs the queue's periodic jobs: the repair of what dead
workers left, the deadline sweep, the clean-up of old queue rows. SIGTERM (or Ctrl-C)
stops it gracefully: no new run is taken, the runs in flight get ``--shutdown-seconds``
to finish, the rest are handed back to the other workers. ``workers`` prints the
queue's depth, the runs pending and running, and the workers alive. Both need the
``server`` extra: pip install 'pausepoint[server]'. See docs/deploying.md.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import TYPE_CHECKING

from pausepoint.cli.output import print_json, render_table
from pausepoint.cli.serve import graph_specs
from pausepoint.cli.threads import add_db_option
from pausepoint.cli.views import CliError
from pausepoint.cli.web import missing_module

if TYPE_CHECKING:
    from pausepoint.cli.threads import Commands

__all__ = ["add_parsers", "run_status", "run_worker"]

_EXTRA = "pip install 'pausepoint[server]'"


def add_parsers(commands: Commands) -> None:
    """Register ``worker`` and ``workers`` on the CLI's subcommands."""
    p = commands.add_parser(
        "worker",
        help="execute the runs `pausepoint serve` queues on PostgreSQL (many workers, many hosts)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
    p.add_argument(
        "--graph",
        action="append",
        required=True,
        metavar="[NAME=]MODULE:ATTR",
        help="a graph to execute (repeatable), named as `pausepoint serve` names it",
    )
    p.add_argument("--concurrency", type=int, default=4, help="runs at once (default: 4)")
    p.add_argument(
        "--lease-seconds",
        type=float,
        default=30.0,
        help="a run held this long without renewal is taken over (default: 30)",
    )
    p.add_argument(
        "--shutdown-seconds",
        type=float,
        default=30.0,
        help="on SIGTERM, how long runs in flight may finish before being handed back "
        "(default: 30)",
    )
    p.add_argument(
        "--repair-seconds",
        type=int,
        default=5,
        help="seconds between repairs of what dead workers left (1-59; default: 5)",
    )
    p.add_argument(
        "--stalled-seconds",
        type=float,
        default=30.0,
        help="a worker silent this long is dead: its jobs are retried (default: 30)",
    )
    p.add_argument(
        "--sweep-cron",
        default="* * * * *",
        help="when deadlines are swept (cron; 6th field: seconds; 'off': never; "
        "default: every minute)",
    )
    p.add_argument(
        "--retention-hours",
        type=int,
        default=24,
        help="ended queue jobs older than this are deleted, hourly (default: 24)",
    )
    p.set_defaults(run=run_worker)

    s = commands.add_parser(
        "workers",
        help="the run queue on PostgreSQL: its depth, runs pending and running, workers alive",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(s)
    s.add_argument(
        "--stalled-seconds",
        type=float,
        default=30.0,
        help="a worker silent longer is counted stalled (default: 30)",
    )
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.set_defaults(run=run_status)


def _check(args: argparse.Namespace, command: str) -> str | None:
    missing = missing_module((m, m) for m in ("procrastinate", "psycopg"))
    if missing:
        return f"pausepoint {command} needs the 'server' extra ({missing} is missing): {_EXTRA}"
    if not str(args.db).startswith(("postgresql://", "postgres://")):
        return f"pausepoint {command} needs a postgresql:// URL (the queue is on PostgreSQL)"
    return None


def run_worker(args: argparse.Namespace) -> int:
    """Execute queued runs until SIGTERM/SIGINT; return the exit status."""
    problem = _check(args, "worker")
    try:
        if problem:
            raise CliError(problem)
        if args.concurrency < 1:
            raise CliError(f"--concurrency must be 1 or more, got {args.concurrency}")
        if not 1 <= args.repair_seconds <= 59:
            raise CliError(f"--repair-seconds must be 1 to 59, got {args.repair_seconds}")
        graphs = graph_specs(args.graph)
    except CliError as exc:
        print(f"pausepoint worker: {exc}", file=sys.stderr)
        return 2
    from pausepoint.workers.process import run_worker as run
    from pausepoint.workers.tasks import Settings

    settings = Settings(
        repair_seconds=args.repair_seconds,
        stalled_seconds=args.stalled_seconds,
        sweep_cron=None if args.sweep_cron == "off" else args.sweep_cron,
        retention_hours=args.retention_hours,
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("procrastinate").setLevel(logging.WARNING)
    ready = asyncio.Event()

    async def main() -> None:
        waiting = asyncio.create_task(ready.wait())
        working = asyncio.create_task(
            run(
                args.db,
                graphs,
                concurrency=args.concurrency,
                lease_seconds=args.lease_seconds,
                shutdown_seconds=args.shutdown_seconds,
                settings=settings,
                ready=ready,
            )
        )
        await asyncio.wait([waiting, working], return_when=asyncio.FIRST_COMPLETED)
        if ready.is_set():
            print(f"pausepoint worker: graphs {', '.join(graphs)}, {args.concurrency} at once")
            sys.stdout.flush()
        await working

    asyncio.run(main())
    print("pausepoint worker: stopped")
    return 0


def run_status(args: argparse.Namespace) -> int:
    """Print the queue's status; return the exit status."""
    problem = _check(args, "workers")
    if problem:
        print(f"pausepoint workers: {problem}", file=sys.stderr)
        return 2
    import psycopg

    from pausepoint.workers.status import queue_status

    try:
        status = asyncio.run(queue_status(args.db, stalled_seconds=args.stalled_seconds))
    except psycopg.errors.UndefinedTable:
        print(
            "pausepoint workers: no queue on this database yet (start `pausepoint serve` "
            "or `pausepoint worker` on it first)",
            file=sys.stderr,
        )
        return 2
    except psycopg.Error as exc:
        print(f"pausepoint workers: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print_json(status.as_json())
        return 0
    rows = [
        [name, "-" if value is None else str(value)] for name, value in status.as_json().items()
    ]
    print(render_table(["", "now"], rows))
    return 0
