"""``pausepoint rekey``: seal every row with the sealing key (rotation, or encrypting a database).

::

    PAUSEPOINT_KEYS=k2:...,k1:... pausepoint rekey --db app.sqlite
    pausepoint rekey --db postgresql://... --keys app.secrets:ring --batch-size 1000

The first key seals; rows sealed with any other key of the ring are opened and sealed
again, and rows stored in clear are sealed (a database moving to encryption). Each
batch is one transaction and each row a compare-and-swap, so it is safe beside running
workers, and to stop (or kill) at any point and run again: rows already under the
sealing key are skipped. When it reports no errors, the old keys can be dropped from
the ring. The tables of ``pausepoint serve`` in the same database (assistants, threads,
runs and their events) are re-sealed too, after the checkpoints. docs/security.md
describes key rotation.

Exit status: 0 when every row is sealed with the sealing key; 1 when some rows could
not be opened (each is listed; the others were re-sealed) or a writer changed some
meanwhile (run it again); 2 for a bad command, database or keys.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from pausepoint.cli.keys import ENV, keys_from_env, keys_from_spec
from pausepoint.cli.output import print_json
from pausepoint.cli.threads import add_db_option, open_saver
from pausepoint.cli.views import CliError

if TYPE_CHECKING:
    from pausepoint.cli.threads import Commands

__all__ = ["add_parser", "run"]


def add_parser(commands: Commands) -> None:
    """Register ``rekey`` on the CLI's subcommands."""
    p = commands.add_parser(
        "rekey",
        help="seal every row with the first key (key rotation, encrypting a database)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
    p.add_argument("--keys", metavar="MODULE:ATTR", help=f"the key ring (default: ${ENV})")
    p.add_argument("--batch-size", type=int, default=500, help="rows per transaction")
    p.add_argument("--json", action="store_true", help="print JSON instead of a summary")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``rekey``; return the exit status."""
    try:
        ring = keys_from_spec(args.keys) if args.keys else keys_from_env()
        if ring is None:
            raise CliError(f"give the keys: --keys MODULE:ATTR or ${ENV}=id:base64key,...")
        with open_saver(args.db, write=True, encryption=ring) as saver:
            rekey: Any = getattr(saver, "rekey", None)
            if rekey is None:
                raise CliError("only the SQLite and PostgreSQL savers store rows to rekey")
            report = rekey(batch_size=args.batch_size)
        from pausepoint.server.resealing import rekey_url

        report.add(rekey_url(args.db, ring, args.batch_size))
    except (CliError, ValueError) as exc:
        print(f"pausepoint rekey: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print_json(
            {
                "resealed": report.resealed,
                "current": report.current,
                "raced": report.raced,
                "errors": report.errors,
            }
        )
    else:
        for line in report.errors:
            print(f"cannot open {line}", file=sys.stderr)
        print(
            f"re-sealed {report.resealed} rows; {report.current} already current, "
            f"{report.raced} changed meanwhile (run again), {len(report.errors)} unreadable"
        )
    return 1 if report.errors or report.raced else 0
