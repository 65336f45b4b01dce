"""``pausepoint prune``: drop old checkpoints and idle threads; never a waiting question.

::

    pausepoint prune --db app.sqlite --older-than 30d --dry-run
    pausepoint prune --db postgresql://... --older-than 30d --keep-last 5 --json

``--older-than`` drops the checkpoints made longer ago than that (``30d``, ``12h``,
``90m``, ``2w``); a thread with none newer (idle that long) is deleted whole, unless
``--keep-last N`` keeps each thread's N newest checkpoints. A thread whose question
waits for an answer (or has one stored, its run not finished) is left alone unless
``--include-waiting``; one a worker holds (its lease) always is. A truncated thread
keeps its newest checkpoint and what its tasks wrote there, so it resumes as before.
``saver.prune`` does the work (docs/persistence.md, "Storage and retention").

``--dry-run`` deletes nothing and says what would go: threads, checkpoints, writes and
their bytes. Safe beside running workers, and to stop at any point and run again.

Exit status: 0 when every thread was read (skipped ones included); 1 when some
thread's rows could not be read (each is listed; the others were pruned); 2 for a
bad command or database.
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
from typing import TYPE_CHECKING

from pausepoint.cli.output import print_json, render_table
from pausepoint.cli.threads import add_db_option, open_saver
from pausepoint.cli.views import CliError

if TYPE_CHECKING:
    from pausepoint.checkpoint._prune import PruneReport, ThreadPrune
    from pausepoint.cli.threads import Commands

__all__ = ["add_parser", "parse_duration", "run"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def add_parser(commands: Commands) -> None:
    """Register ``prune`` on the CLI's subcommands."""
    p = commands.add_parser(
        "prune",
        help="drop old checkpoints and idle threads (never a waiting question)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
    p.add_argument("--older-than", metavar="AGE", help="e.g. 30d, 12h: drop what is older")
    p.add_argument("--keep-last", type=int, metavar="N", help="keep each thread's N newest")
    p.add_argument("--thread", action="append", metavar="ID", help="only this thread (repeat)")
    p.add_argument("--include-waiting", action="store_true", help="prune waiting threads too")
    p.add_argument("--batch-size", type=int, default=500, help="checkpoints per transaction")
    p.add_argument("--dry-run", action="store_true", help="delete nothing; say what would go")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=run)


def parse_duration(text: str) -> datetime.timedelta:
    """``30d`` → 30 days (units s, m, h, d, w); ``CliError`` for anything else."""
    found = _DURATION.fullmatch(text.strip())
    if found is None:
        raise CliError(f"--older-than wants an age such as 30d, 12h or 90m; got {text!r}")
    return datetime.timedelta(seconds=float(found[1]) * _UNITS[found[2]])


def run(args: argparse.Namespace) -> int:
    """Run ``prune``; return the exit status."""
    try:
        if args.older_than is None and args.keep_last is None:
            raise CliError("say what to keep: --older-than AGE and/or --keep-last N")
        older = parse_duration(args.older_than) if args.older_than is not None else None
        with open_saver(args.db, write=not args.dry_run) as saver:
            report = saver.prune(
                args.thread,
                keep_last=args.keep_last,
                older_than=older,
                include_waiting=args.include_waiting,
                dry_run=args.dry_run,
                batch_size=args.batch_size,
            )
    except (CliError, ValueError) as exc:
        print(f"pausepoint prune: error: {exc}", file=sys.stderr)
        return 2
    _print(report, as_json=args.json)
    return 1 if report.errors else 0


def _print(report: PruneReport, *, as_json: bool) -> None:
    if as_json:
        print_json(
            {
                "dry_run": report.dry_run,
                "threads": [_row(t) for t in report.threads if t.action != "kept"],
                "checkpoints": report.checkpoints,
                "writes": report.writes,
                "bytes": report.bytes,
                **{a: report.count(a) for a in ("kept", "truncated", "deleted", "skipped")},
                "errors": len(report.errors),
            }
        )
        return
    rows = [
        [t.thread_id, t.action, str(t.checkpoints), str(t.writes), _bytes(t.bytes), t.reason]
        for t in report.threads
        if t.action != "kept"
    ]
    if rows:
        heads = ["THREAD", "ACTION", "CHECKPOINTS", "WRITES", "BYTES", "REASON"]
        print(render_table(heads, rows))
    verb = "would free" if report.dry_run else "freed"
    print(
        f"{verb} {report.checkpoints} checkpoints, {report.writes} writes, "
        f"{_bytes(report.bytes)} bytes; threads: {report.count('deleted')} deleted, "
        f"{report.count('truncated')} truncated, {report.count('kept')} kept, "
        f"{report.count('skipped')} skipped, {len(report.errors)} unreadable"
    )


def _bytes(n: int | None) -> str:
    return "?" if n is None else str(n)


def _row(t: ThreadPrune) -> dict[str, object]:
    return {
        "thread_id": t.thread_id,
        "action": t.action,
        "reason": t.reason,
        "checkpoints": t.checkpoints,
        "writes": t.writes,
        "bytes": t.bytes,
    }
