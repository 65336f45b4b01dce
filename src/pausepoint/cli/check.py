r"""``pausepoint check``: which stored threads a new graph cannot resume (before a deploy).

::

    pausepoint check --db app.sqlite --graph app.flows:builder
    pausepoint check --db postgresql://... --graph approvals=app.flows:approvals \\
        --graph refunds=app.flows:refunds --json

Reads every thread whose newest checkpoint has work left — a question waiting or
answered with its run pending, a static breakpoint, pending tasks or ``Send``
packets — and lists those the given graph cannot resume, with each reason
``GraphMismatchError`` would give after the deploy (docs/deploys.md). Threads written
by a graph with the same fingerprint cost one comparison. It only reads: no write, no
lease, so it runs beside live workers (on production or, better, a replica or copy).

One ``--graph`` checks every thread. Several (or a named one, ``NAME=MODULE:ATTR``;
a graph's name is otherwise its ``compile(name=...)``) check each thread against the
graph its checkpoint metadata's ``graph_id`` names; threads naming no graph given are
listed as not checked. The attribute may be a StateGraph, a compiled graph (an
``@entrypoint`` too) or a function of no arguments returning one.

Exit status: 0 when every thread can be resumed; 1 when some cannot, or cannot be
read; 2 for a bad command, database or graph.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from typing import TYPE_CHECKING

from pausepoint.cli.output import print_json, printable
from pausepoint.cli.threads import add_db_option, load_graph, open_saver
from pausepoint.cli.views import CliError
from pausepoint.deploys import CheckReport, ThreadCheck, check_threads

if TYPE_CHECKING:
    from pausepoint.cli.threads import Commands
    from pausepoint.graph.compiled import CompiledStateGraph

__all__ = ["add_parser", "run"]


def add_parser(commands: Commands) -> None:
    """Register ``check`` on the CLI's subcommands."""
    p = commands.add_parser(
        "check",
        help="list the waiting threads a new graph cannot resume (a pre-deploy check)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
    p.add_argument(
        "--graph",
        action="append",
        required=True,
        metavar="[NAME=]MODULE:ATTR",
        help="the graph to deploy; repeat it for several (each thread goes to its graph_id)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``check``; return the exit status."""
    try:
        graphs = _graphs(args.graph)
        with open_saver(args.db) as saver:
            report = check_threads(saver, graphs)
    except CliError as exc:
        return _usage(str(exc))
    except sqlite3.Error as exc:
        return _usage(f"cannot read {args.db!r}: {exc}")
    except Exception as exc:
        if type(exc).__module__.startswith("psycopg"):
            return _usage(f"cannot read the PostgreSQL database: {exc}".strip())
        raise
    fingerprints = _fingerprints(graphs)
    if args.json:
        print_json(_json(report, fingerprints))
    else:
        print(_text(report, fingerprints))
    return 0 if report.ok else 1


def _usage(message: str) -> int:
    print(f"pausepoint check: error: {message}", file=sys.stderr)
    return 2


def _graphs(targets: list[str]) -> CompiledStateGraph | dict[str, CompiledStateGraph]:
    """The graph (one, unnamed) or the graphs by name that ``--graph`` gives."""
    named: dict[str, CompiledStateGraph] = {}
    for target in targets:
        name, sep, where = target.partition("=")
        if not sep:
            name, where = "", target
        elif not name:
            raise CliError(f"--graph {target!r} has an empty name before '='")
        graph = _compiled(where)
        if len(targets) == 1 and not name:
            return graph
        name = name or graph.name
        if name in named:
            raise CliError(
                f"two --graph options are named {name!r}; name them: --graph NAME=MODULE:ATTR"
            )
        named[name] = graph
    return named


def _compiled(target: str) -> CompiledStateGraph:
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.graph.state import StateGraph

    obj = load_graph(target)
    if not isinstance(obj, StateGraph | CompiledStateGraph) and callable(obj):
        try:
            obj = obj()
        except TypeError as exc:
            raise CliError(
                f"--graph {target!r} is a function that needs arguments: {exc}"
            ) from None
    if isinstance(obj, StateGraph):
        return obj.compile()
    if isinstance(obj, CompiledStateGraph):
        return obj
    raise CliError(f"--graph {target!r} names a {type(obj).__name__}, not a graph")


def _fingerprints(
    graphs: CompiledStateGraph | dict[str, CompiledStateGraph],
) -> dict[str, str | None]:
    if isinstance(graphs, dict):
        return {name: g.spec.fingerprint for name, g in graphs.items()}
    return {"": graphs.spec.fingerprint}


def _json(report: CheckReport, fingerprints: dict[str, str | None]) -> dict[str, object]:
    return {
        "ok": report.ok,
        "graphs": [{"name": n, "fingerprint": f} for n, f in fingerprints.items()],
        "checked": report.checked,
        "same_fingerprint": report.same,
        "finished": report.finished,
        "cannot_resume": [c.to_json() for c in report.cannot_resume],
        "unreadable": [c.to_json() for c in report.unreadable],
        "unmatched": [{"thread_id": t, "graph_id": g} for t, g in report.unmatched],
    }


def _text(report: CheckReport, fingerprints: dict[str, str | None]) -> str:
    lines: list[str] = []
    for found in report.cannot_resume:
        lines.append(_heading(found, "cannot be resumed"))
        lines += [f"  - {printable(str(p))}" for p in found.problems]
    for found in report.unreadable:
        lines.append(_heading(found, "cannot be read"))
        lines.append(f"  - {printable(found.error or '')}")
    if report.unmatched:
        lines.append(
            f"not checked: {len(report.unmatched)} thread(s) whose graph_id names no --graph:"
        )
        lines += [
            f"  - thread {printable(repr(t))} (graph_id {printable(repr(g))})"
            for t, g in report.unmatched
        ]
    if lines:
        lines.append("")
    lines.append(_summary(report, fingerprints))
    return "\n".join(lines)


def _heading(found: ThreadCheck, what: str) -> str:
    stored = f"fingerprint {found.fingerprint}" if found.fingerprint else "no fingerprint"
    if found.version:
        stored = f"version {found.version!r}, {stored}"
    graph = f", graph {found.graph!r}" if found.graph else ""
    return printable(
        f"thread {found.thread_id!r} (checkpoint {found.checkpoint_id}{graph}; "
        f"written by {stored}) {what}:"
    )


def _summary(report: CheckReport, fingerprints: dict[str, str | None]) -> str:
    against = ", ".join(
        f"{name + ' ' if name else ''}{fp or '(no fingerprint)'}"
        for name, fp in fingerprints.items()
    )
    bad = len(report.cannot_resume)
    verdict = "ok: every one can be resumed" if report.ok else f"{bad} cannot be resumed"
    if report.unreadable:
        verdict += f", {len(report.unreadable)} cannot be read"
    return printable(
        f"{report.checked} thread(s) with work left checked against {against} "
        f"({report.same} written by the same fingerprint); {verdict}. "
        f"{report.finished} finished thread(s) not checked."
    )
