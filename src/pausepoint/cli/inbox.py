"""``pausepoint inbox``: serve the approval inbox of a graph's waiting questions.

Lists every question the graph's threads in the database wait on, shows each with a
form made from its response schema, and resumes the thread when it is answered (see
docs/inbox.md). Binds 127.0.0.1 and prints a link with a fresh token, as Jupyter does:
the token is the login. Needs the ``inbox`` extra: pip install 'pausepoint[inbox]'.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib
import logging
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["RedactToken", "add_parser", "load_graph", "run"]

DEFAULT_PORT = 8321
TOKEN_ENV = "PAUSEPOINT_INBOX_TOKEN"
_EXTRA = "pip install 'pausepoint[inbox]'"
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def add_parser(commands: Any) -> None:
    """Register ``inbox`` on the CLI's subcommands."""
    p: argparse.ArgumentParser = commands.add_parser(
        "inbox",
        help="serve a web page (and JSON API) to answer the questions threads wait on",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--db", required=True, help="a SQLite file, or a postgresql:// URL")
    p.add_argument(
        "--graph",
        required=True,
        metavar="MODULE:ATTR",
        help="the graph: a StateGraph, a compiled graph, or a function returning one",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"(default: {DEFAULT_PORT})")
    p.add_argument(
        "--token", help=f"the login token (default: ${TOKEN_ENV}, else a fresh random one)"
    )
    p.add_argument(
        "--poll", type=float, default=3.0, metavar="SECONDS", help="list refresh period"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve the inbox until interrupted; return the exit status."""
    missing = _missing_extra()
    if missing:
        print(
            f"pausepoint inbox needs the 'inbox' extra ({missing} is not installed): {_EXTRA}",
            file=sys.stderr,
        )
        return 2
    import uvicorn

    from pausepoint.inbox import create_app, new_token

    with _saver(args.db) as saver:
        if saver is None:
            return 2
        graph = _graph_or_none(args.graph, saver)
        if graph is None:
            return 2
        token = args.token or os.environ.get(TOKEN_ENV) or new_token()
        app = create_app(graph, token=token, poll_seconds=args.poll)
        _announce(args, graph, token)
        config = uvicorn.Config(app, host=args.host, port=args.port, log_level="info")
        server = uvicorn.Server(config)
        _redact_access_log()
        server.run()
    return 0


def _missing_extra() -> str | None:
    for module, name in (
        ("starlette", "starlette"),
        ("uvicorn", "uvicorn"),
        ("jinja2", "jinja2"),
        ("python_multipart", "python-multipart"),
    ):
        try:
            importlib.import_module(module)
        except ImportError:
            return name
    return None


@contextlib.contextmanager
def _saver(db: str) -> Iterator[Any]:
    if db.startswith(("postgres://", "postgresql://")):
        try:
            from pausepoint.checkpoint.postgres import PostgresSaver
        except ImportError:
            print("a PostgreSQL URL needs: pip install 'pausepoint[postgres]'", file=sys.stderr)
            yield None
            return
        with PostgresSaver.from_conn_string(db) as saver:
            yield saver
        return
    if not Path(db).is_file():
        print(f"no SQLite file at {db!r}: give the file your threads are saved in", file=sys.stderr)
        yield None
        return
    from pausepoint.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(db) as saver:
        yield saver


def _graph_or_none(spec: str, saver: Any) -> Any:
    try:
        return load_graph(spec, saver)
    except (ImportError, AttributeError, TypeError, ValueError) as exc:
        print(f"--graph {spec!r}: {exc}", file=sys.stderr)
        return None


def load_graph(spec: str, saver: Any) -> Any:
    """The graph ``module:attr`` names, compiled with ``saver``.

    ``attr`` (dotted for a nested name) is a ``StateGraph`` (compiled here), a compiled
    graph (its copy gets ``saver``), or a function of no arguments returning either.
    The current directory is importable, as with ``python -m``.

    Raises:
        ValueError: ``spec`` is not ``module:attr``.
        ImportError: The module cannot be imported.
        AttributeError: The module has no such attribute.
        TypeError: The attribute is no graph.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError("expected MODULE:ATTR, e.g. myapp.graphs:approval")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    if callable(target) and not hasattr(target, "compile") and not hasattr(target, "invoke"):
        target = target()
    if hasattr(target, "invoke") and hasattr(target, "checkpointer"):
        graph = copy.copy(target)
        graph.checkpointer = saver
        return graph
    if hasattr(target, "compile"):
        return target.compile(checkpointer=saver)
    raise TypeError(f"{type(target).__name__} is not a StateGraph or a compiled graph")


def _announce(args: argparse.Namespace, graph: Any, token: str) -> None:
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"pausepoint inbox: the questions of graph {graph.name!r} in {args.db}")
    print(f"  open http://{host}:{args.port}/?token={token}")
    print("  (the token is the login: the browser keeps it in a cookie; programs send")
    print("   'Authorization: Bearer <token>'. Ctrl-C stops the server.)")
    if args.host not in _LOOPBACK:
        print(f"  warning: bound to {args.host}, reachable from other machines", file=sys.stderr)
    sys.stdout.flush()


class RedactToken(logging.Filter):
    """Hides ``token=...`` in log records, so the token appears only in the start line."""

    _TOKEN = re.compile(r"(token=)[^&\s\"']+")

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record's message with every token replaced by ``***``."""
        message = record.getMessage()
        if "token=" in message:
            record.msg = self._TOKEN.sub(r"\1***", message)
            record.args = None
        return True


def _redact_access_log() -> None:
    # uvicorn configures its loggers when the server starts; filters on the logger
    # itself survive that (handlers are replaced, loggers are not).
    for name in ("uvicorn.access", "uvicorn.error"):
        logging.getLogger(name).addFilter(RedactToken())
