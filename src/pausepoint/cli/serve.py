"""``pausepoint serve``: the LangGraph Server API over your own database.

Serves the graphs given with ``--graph`` to ``langgraph-sdk``, Agent Inbox and
agent-chat-ui: assistants, threads, state, history and runs, with runs recorded in the
database and executed by workers in this process (a run accepted before a crash runs
after a restart) — or, on PostgreSQL, queued for ``pausepoint worker`` processes
(``--in-process-workers`` keeps them here). See docs/server.md. Needs the ``server`` extra:
pip install 'pausepoint[server]'.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from pausepoint.cli.threads import add_db_option, load_graph
from pausepoint.cli.views import CliError
from pausepoint.cli.web import (
    KEEP_ALIVE_SECONDS,
    LOOPBACK,
    missing_module,
    redact_server_logs,
    url_host,
)

if TYPE_CHECKING:
    from pausepoint.cli.threads import Commands
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.graph.state import StateGraph

__all__ = ["add_parser", "graph_specs", "run"]

DEFAULT_PORT = 2024
TOKEN_ENV = "PAUSEPOINT_SERVE_TOKEN"
_EXTRA = "pip install 'pausepoint[server]'"


def add_parser(commands: Commands) -> None:
    """Register ``serve`` on the CLI's subcommands."""
    p = commands.add_parser(
        "serve",
        help="serve the LangGraph Server API (langgraph-sdk, Agent Inbox) over the database",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
    p.add_argument(
        "--graph",
        action="append",
        required=True,
        metavar="[NAME=]MODULE:ATTR",
        help="a graph to serve (repeatable): a StateGraph, a compiled graph, or a function "
        "returning one; NAME (default: ATTR) is its graph_id and assistant id",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"(default: {DEFAULT_PORT})")
    p.add_argument(
        "--token",
        help=f"the token clients send as x-api-key or Bearer (default: ${TOKEN_ENV}; "
        "none: open, allowed on a loopback address only)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=4,
        help="runs this process executes at once with in-process workers (default: 4; 0: a "
        "front end that executes no run, for servers on one database where other processes "
        "execute the runs)",
    )
    p.add_argument(
        "--keep-events",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="how long a run's events stay in the database after it ends (default: 300)",
    )
    p.add_argument(
        "--in-process-workers",
        action="store_true",
        help="on PostgreSQL, execute runs in this process rather than queue them for "
        "`pausepoint worker` processes (SQLite always executes in process)",
    )
    p.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="an origin browser pages may call from (repeatable; '*' for any)",
    )
    p.add_argument(
        "--max-body",
        type=int,
        default=10 * 1024 * 1024,
        metavar="BYTES",
        help="largest request body accepted (default: 10 MiB)",
    )
    p.add_argument(
        "--inbox",
        metavar="NAME",
        help="also serve the approval inbox of graph NAME at /inbox: answers are runs of "
        "this server (needs the 'inbox' extra; see docs/inbox.md)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; return the exit status."""
    missing = missing_module((m, m) for m in ("starlette", "uvicorn"))
    if missing:
        print(
            f"pausepoint serve needs the 'server' extra ({missing} is missing): {_EXTRA}",
            file=sys.stderr,
        )
        return 2
    token = args.token or os.environ.get(TOKEN_ENV) or None
    try:
        if token is None and args.host not in LOOPBACK:
            raise CliError(
                f"refusing to serve {args.host} without a token: anyone who reaches it could "
                f"run and answer every thread. Pass --token (or set ${TOKEN_ENV})."
            )
        if args.workers < 0:
            raise CliError(f"--workers must be 0 or more, got {args.workers}")
        if args.keep_events < 0:
            raise CliError(f"--keep-events must be 0 or more, got {args.keep_events}")
        queue_missing = missing_module([("procrastinate", "procrastinate")])
        queued = args.db.startswith(("postgresql://", "postgres://"))
        if queued and not args.in_process_workers and queue_missing:
            raise CliError(
                f"queueing runs on PostgreSQL needs the 'server' extra ({queue_missing} "
                f"is missing): {_EXTRA}; or pass --in-process-workers"
            )
        graphs = graph_specs(args.graph)
        if args.inbox is not None:
            _check_inbox(args.inbox, graphs)
    except CliError as exc:
        print(f"pausepoint serve: {exc}", file=sys.stderr)
        return 2
    return _serve(args, graphs, token)


def graph_specs(specs: list[str]) -> dict[str, CompiledStateGraph | StateGraph]:
    """The ``--graph`` options as graph name -> graph (a function is called for it).

    Raises:
        CliError: A spec does not import, two share a name, or one is not a graph.
    """
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.graph.state import StateGraph

    graphs: dict[str, CompiledStateGraph | StateGraph] = {}
    for spec in specs:
        name, sep, target = spec.partition("=")
        if not sep:
            name, target = spec.rpartition(":")[2].rpartition(".")[2], spec
        if not name or name in graphs:
            raise CliError(f"--graph {spec!r}: the name {name!r} is empty or given twice")
        obj = load_graph(target)
        if not isinstance(obj, StateGraph | CompiledStateGraph) and callable(obj):
            obj = obj()
        if not isinstance(obj, StateGraph | CompiledStateGraph):
            raise CliError(f"--graph {spec!r} is a {type(obj).__name__}, not a graph")
        graphs[name] = obj
    return graphs


def _serve(
    args: argparse.Namespace, graphs: dict[str, CompiledStateGraph | StateGraph], token: str | None
) -> int:

    import uvicorn

    from pausepoint.server.app import create_app
    from pausepoint.server.opening import is_postgres_url
    from pausepoint.server.service import RunService

    queued = is_postgres_url(args.db) and not args.in_process_workers

    async def opened() -> RunService:
        keep = args.keep_events
        if not queued:
            return await RunService.open(
                args.db, graphs, workers=args.workers, keep_events_seconds=keep
            )
        from pausepoint.workers.frontend import enqueue_runs

        # no workers here; the pool as large as with them (requests poll the records)
        service = await RunService.open(
            args.db, graphs, workers=0, pool_for=max(args.workers, 1), keep_events_seconds=keep
        )
        try:
            await enqueue_runs(service, args.db)
        except BaseException:
            await service.close()
            raise
        return service

    app = create_app(opened, token=token, cors_origins=args.cors_origin, max_body=args.max_body)
    inbox_token: str | None = None
    if args.inbox is not None:
        from pausepoint.inbox import new_token
        from pausepoint.inbox.mount import with_inbox

        inbox_token = token or new_token()
        app = with_inbox(app, args.inbox, token=inbox_token)
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level="info",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )
    redact_server_logs()
    host = url_host(args.host)
    print(f"pausepoint serve: graphs {', '.join(graphs)} over {args.db}")
    if queued:
        print("  runs are queued for `pausepoint worker` processes (--in-process-workers: here)")
    print(f"  http://{host}:{args.port}  (langgraph_sdk.get_client(url=...); Ctrl-C stops)")
    print("  token required (x-api-key or Bearer)" if token else "  no token: open to this host")
    if inbox_token is not None:
        print(f"  inbox of {args.inbox}: http://{host}:{args.port}/inbox/?token={inbox_token}")
    sys.stdout.flush()
    try:
        uvicorn.Server(config).run()
    except KeyboardInterrupt:
        print("pausepoint serve: stopped")
    return 0


def _check_inbox(name: str, graphs: dict[str, CompiledStateGraph | StateGraph]) -> None:
    """Refuse ``--inbox NAME`` for a graph not served, or without the inbox extra."""
    if name not in graphs:
        raise CliError(f"--inbox {name!r} is not a served graph (served: {', '.join(graphs)})")
    package = missing_module((("jinja2", "jinja2"), ("python_multipart", "python-multipart")))
    if package is not None:
        raise CliError(
            f"--inbox needs the 'inbox' extra ({package} is missing): "
            "pip install 'pausepoint[inbox]'"
        )
