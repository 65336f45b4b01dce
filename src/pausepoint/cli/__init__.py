"""The ``pausepoint`` command line: ``pausepoint demo`` and ``pausepoint threads``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pausepoint.cli import demo, threads

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="pausepoint", description="Durable human-in-the-loop graphs."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo.add_parser(commands)
    threads.add_parser(commands)
    args = parser.parse_args(argv)
    try:
        status: int = args.run(args)
    except KeyboardInterrupt:
        print("\ninterrupted; nothing more was saved", file=sys.stderr)
        return 130
    return status
