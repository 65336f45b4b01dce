"""``pausepoint sweep``: expire the questions whose deadline passed (for cron).

::

    pausepoint sweep --db app.sqlite --graph app.flows:builder
    pausepoint sweep --db postgresql://... --graph app.flows:builder --now 2030-01-01T09:00Z

Each due question with an ``on_timeout`` is answered (``TimeoutAnswer``) or failed
(``"fail"``) through the thread's normal resume path, as
`pausepoint.questions.sweep` does; running two sweeps at once acts once. One line
per question (or a JSON list with ``--json``): thread, question id, deadline,
status (``answered``, ``failed``, ``busy``, ``gone``, ``error``) and detail.

Exit status: 0 when every due question was acted on or skipped as ``busy`` or
``gone`` (someone else is on it); 1 when a thread ran on and failed (``error``);
2 for a bad command, database or graph.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from typing import TYPE_CHECKING

from pausepoint.cli.output import print_json, render_table
from pausepoint.cli.threads import add_db_option, compile_graph, load_graph, open_saver
from pausepoint.cli.views import CliError
from pausepoint.errors import CheckpointDecodeError
from pausepoint.questions import SweepOutcome, sweep

if TYPE_CHECKING:
    from pausepoint.cli.threads import Commands

__all__ = ["add_parser", "run"]


def add_parser(commands: Commands) -> None:
    """Register ``sweep`` on the CLI's subcommands."""
    p = commands.add_parser(
        "sweep",
        help="answer or fail the questions whose deadline passed",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
    p.add_argument("--graph", required=True, metavar="MODULE:ATTRIBUTE", help="the graph")
    p.add_argument("--now", metavar="ISO", help="expire against this time (default: now)")
    p.add_argument("--limit", type=int, default=100, help="at most this many (default 100)")
    p.add_argument("--graph-id", help="only threads whose metadata graph_id is this")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``sweep``; return the exit status."""
    try:
        now = _parse_now(args.now)
        with open_saver(args.db, write=True) as saver:
            graph = compile_graph(load_graph(args.graph), saver)
            outcomes = sweep(graph, now=now, limit=args.limit, graph_id=args.graph_id)
    except (CliError, ValueError, CheckpointDecodeError) as exc:
        print(f"pausepoint sweep: error: {exc}", file=sys.stderr)
        return 2
    _print(outcomes, as_json=args.json)
    return 1 if any(o.status == "error" for o in outcomes) else 0


def _parse_now(text: str | None) -> datetime.datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise CliError(
            f"--now wants an ISO 8601 time, e.g. 2030-01-01T09:00:00Z; got {text!r}"
        ) from None
    if moment.tzinfo is None:
        raise CliError(f"--now {text!r} has no time zone; add one, e.g. Z or +02:00")
    return moment


def _print(outcomes: list[SweepOutcome], *, as_json: bool) -> None:
    if as_json:
        print_json([_row(o) for o in outcomes])
        return
    if not outcomes:
        print("no question is due")
        return
    head = ["THREAD", "QUESTION", "DEADLINE", "STATUS", "DETAIL"]
    rows = [
        [o.thread_id, o.question_id, o.deadline.isoformat(), o.status, o.detail] for o in outcomes
    ]
    print(render_table(head, rows))


def _row(outcome: SweepOutcome) -> dict[str, str]:
    return {
        "thread_id": outcome.thread_id,
        "question_id": outcome.question_id,
        "deadline": outcome.deadline.isoformat(),
        "status": outcome.status,
        "detail": outcome.detail,
    }
