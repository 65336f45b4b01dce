"""The ``pausepoint`` command line: demo, threads, sweep, inbox, serve, worker(s), rekey, ..."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import metadata

from pausepoint.cli import (
    check,
    demo,
    inbox,
    migrate,
    prune,
    rekey,
    serve,
    sweep,
    threads,
    worker,
)

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="pausepoint", description="Durable human-in-the-loop graphs."
    )
    parser.add_argument("--version", action="version", version=f"pausepoint {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo.add_parser(commands)
    migrate.add_parser(threads.add_parser(commands))  # `threads migrate`
    sweep.add_parser(commands)
    inbox.add_parser(commands)
    serve.add_parser(commands)
    worker.add_parsers(commands)
    check.add_parser(commands)
    prune.add_parser(commands)
    rekey.add_parser(commands)
    args = parser.parse_args(argv)
    try:
        status: int = args.run(args)
    except KeyboardInterrupt:
        print("\ninterrupted; nothing more was saved", file=sys.stderr)
        return 130
    except EOFError:  # Ctrl-D at a prompt: the person left, as with Ctrl-C
        print("\nno answer given; nothing more was saved", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `pausepoint threads list | head`: the reader has gone
        _silence_stdout()
        return 141
    return status


def _version() -> str:
    try:
        return metadata.version("pausepoint")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown (not installed)"


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so flushing it at exit does not raise again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
