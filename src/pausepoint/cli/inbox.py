"""``pausepoint inbox``: serve the approval inbox of a graph's waiting questions.

Lists every question the graph's threads in the database wait on, shows each with a
form made from its response schema, and resumes the thread when it is answered (see
docs/inbox.md). Binds 127.0.0.1 and prints a link with a fresh token, as Jupyter does:
the token is the login. Needs the ``inbox`` extra: pip install 'pausepoint[inbox]'.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from pausepoint.cli.threads import add_db_option, compile_graph, load_graph, open_saver
from pausepoint.cli.views import CliError
from pausepoint.cli.web import (
    KEEP_ALIVE_SECONDS,
    LOOPBACK,
    missing_module,
    redact_server_logs,
    url_host,
)

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import BaseCheckpointSaver
    from pausepoint.cli.threads import Commands
    from pausepoint.graph.compiled import CompiledStateGraph

__all__ = ["add_parser", "run"]

DEFAULT_PORT = 8321
TOKEN_ENV = "PAUSEPOINT_INBOX_TOKEN"
_EXTRA = "pip install 'pausepoint[inbox]'"
_MODULES = (
    ("starlette", "starlette"),
    ("uvicorn", "uvicorn"),
    ("jinja2", "jinja2"),
    ("python_multipart", "python-multipart"),
)


def add_parser(commands: Commands) -> None:
    """Register ``inbox`` on the CLI's subcommands."""
    p = commands.add_parser(
        "inbox",
        help="serve a web page (and JSON API) to answer the questions threads wait on",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
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
    p.add_argument("--poll", type=float, default=3.0, metavar="SECONDS", help="list refresh period")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve the inbox until interrupted; return the exit status."""
    missing = missing_module(_MODULES)
    if missing:
        print(
            f"pausepoint inbox needs the 'inbox' extra ({missing} is not installed): {_EXTRA}",
            file=sys.stderr,
        )
        return 2
    try:
        with open_saver(args.db, write=True) as saver:
            return _serve(args, saver)
    except CliError as exc:
        print(f"pausepoint inbox: {exc}", file=sys.stderr)
        return 2


def _serve(args: argparse.Namespace, saver: BaseCheckpointSaver) -> int:
    import uvicorn

    from pausepoint.inbox import create_app, new_token

    graph = _graph(args.graph, saver)
    token = args.token or os.environ.get(TOKEN_ENV) or new_token()
    app = create_app(graph, token=token, poll_seconds=args.poll)
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level="info",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )
    redact_server_logs()
    _announce(args, token)
    try:
        uvicorn.Server(config).run()
    except KeyboardInterrupt:  # uvicorn re-raises Ctrl-C once it has shut down
        print("pausepoint inbox: stopped")
    return 0


def _graph(spec: str, saver: BaseCheckpointSaver) -> CompiledStateGraph:
    """The graph ``--graph`` names, compiled with ``saver`` (as ``threads resume`` does).

    Besides a ``StateGraph`` or a compiled graph, the attribute may be a function of no
    arguments returning either (``pausepoint.cli.demo_graph:build``).
    """
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.graph.state import StateGraph

    target = load_graph(spec)
    if not isinstance(target, StateGraph | CompiledStateGraph) and callable(target):
        try:
            target = target()
        except TypeError as exc:
            raise CliError(f"--graph {spec!r} is a function that needs arguments: {exc}") from None
    return compile_graph(target, saver)


def _announce(args: argparse.Namespace, token: str) -> None:
    host = url_host(args.host)
    print(f"pausepoint inbox: the questions waiting in {args.db} (graph {args.graph})")
    print(f"  open http://{host}:{args.port}/?token={token}")
    print("  (the token is the login: the browser keeps it in a cookie; programs send")
    print("   'Authorization: Bearer <token>'. Ctrl-C stops the server.)")
    if args.host not in LOOPBACK:
        print(f"  warning: bound to {args.host}, reachable from other machines", file=sys.stderr)
    sys.stdout.flush()
