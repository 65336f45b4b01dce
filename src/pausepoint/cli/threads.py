"""``pausepoint threads``: look at stored threads and answer their interrupts.

Works against a SQLite file or a PostgreSQL URL (``--db``)::

    pausepoint threads list --db app.sqlite
    pausepoint threads show THREAD --db app.sqlite
    pausepoint threads history THREAD --db app.sqlite
    pausepoint threads resume THREAD --value '"yes"' --graph app.flows:builder --db app.sqlite
    pausepoint threads retry THREAD --graph app.flows:builder --db app.sqlite
    pausepoint threads pending --db app.sqlite [--graph NAME] [--limit N] [--cursor C]
    pausepoint threads migrate --db app.sqlite --graph app.flows:graph [--dry-run]

``list``, ``show`` and ``history`` read the stored checkpoints directly. Without the
graph, ``next`` is worked out from the stored edge triggers and ``values`` are the
channel values as of the newest checkpoint; give ``--graph module:attribute`` to
read them through the graph instead (exact, and the graph's declared types decode).
``resume`` and ``retry`` always need the graph, since they run it. Add ``--json`` for
machine output.

``pending`` lists the questions waiting for an answer across all threads, oldest
first, from the saver's index (``saver.list_pending``): ``--graph NAME`` keeps the
threads whose metadata's ``graph_id`` is NAME, ``--limit`` sizes the page and
``--cursor`` (printed under a full page) shows the next one.

A thread's status is ``interrupted`` (a question waits for an answer), ``answered``
(an answer is stored, the run that uses it has not finished: ``retry`` continues it),
``failed`` (a node raised; ``retry`` runs it again with the stored answers, ``resume
--replace`` replaces the answer it failed with), ``paused`` (at a static breakpoint,
``interrupt_before``/``interrupt_after``; known only with ``--graph``; ``retry``
continues it), ``running`` (work is left, nothing waits: a run in flight or stopped),
``done``, or ``unreadable`` (its newest checkpoint cannot be decoded; the row says why).

``list``, ``show`` and ``history`` open a SQLite file read-only: they change nothing in
it, and refuse a file without pausepoint's tables. Exit status: 0; 1 when ``list``
found an unreadable thread (every other thread is still listed) or a resumed run
failed; 2 for a bad command or database.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import shlex
import sqlite3
import sys
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from pausepoint.cli.keys import keys_from_env
from pausepoint.cli.output import (
    compact,
    pending_cell,
    print_json,
    printable,
    render_table,
    render_view,
)
from pausepoint.cli.views import (
    STATUSES,
    CliError,
    ThreadView,
    latest,
    latest_checkpoints,
    stored_size,
    thread_config,
    thread_ids,
    unreadable,
    view_of,
)
from pausepoint.errors import AlreadyAnsweredError, CheckpointDecodeError, PausepointError
from pausepoint.types import Command, Reanswer, StateSnapshot

if TYPE_CHECKING:
    from pausepoint.checkpoint._sealing import Sealer
    from pausepoint.checkpoint.base import BaseCheckpointSaver
    from pausepoint.checkpoint.questions import PendingQuestion
    from pausepoint.config import RunnableConfig
    from pausepoint.graph.compiled import CompiledStateGraph

__all__ = [
    "Commands",
    "ThreadView",
    "add_parser",
    "latest_checkpoints",
    "run",
    "thread_ids",
    "unreadable",
]


# --- the parser ---------------------------------------------------------------------------


class Commands(Protocol):
    """Where a command registers itself: what ``ArgumentParser.add_subparsers()`` returns."""

    def add_parser(
        self,
        name: str,
        *,
        help: str | None = ...,
        description: str | None = ...,
        formatter_class: type[argparse.HelpFormatter] = ...,
        parents: Sequence[argparse.ArgumentParser] = ...,
    ) -> argparse.ArgumentParser:
        """Add the subcommand ``name`` and return its parser."""
        ...


def add_parser(commands: Commands) -> Commands:
    """Register ``threads`` and its subcommands; return them (``migrate`` joins them)."""
    p = commands.add_parser(
        "threads",
        help="list, inspect and resume stored threads (SQLite or PostgreSQL)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="threads_command", required=True, metavar="COMMAND")
    read, run_it = _options(graph_required=False), _options(graph_required=True)
    lst = sub.add_parser("list", parents=[read], help="threads, their status and questions")
    lst.add_argument("--status", choices=STATUSES)
    show = sub.add_parser("show", parents=[read], help="a thread's values, next, interrupts")
    show.add_argument("thread")
    hist = sub.add_parser("history", parents=[read], help="a thread's checkpoints, newest first")
    hist.add_argument("thread")
    hist.add_argument("--limit", type=int, default=None, help="show at most this many")
    res = sub.add_parser("resume", parents=[run_it], help="answer pending interrupts, run on")
    res.add_argument("thread")
    answer = res.add_mutually_exclusive_group(required=True)
    answer.add_argument("--value", metavar="JSON", help="the answer to the one pending interrupt")
    answer.add_argument("--map", metavar="JSON", help='answers by id: {"<interrupt id>": ...}')
    res.add_argument(
        "--replace",
        action="store_true",
        help="replace the stored answer of an answered question (after its node failed)",
    )
    retry = sub.add_parser(
        "retry", parents=[run_it], help="run on with the stored answers (after a failure)"
    )
    retry.add_argument("thread")
    _add_pending(sub)
    p.set_defaults(run=run)
    return sub


def _add_pending(sub: Commands) -> None:
    pend = sub.add_parser("pending", help="questions waiting for an answer, across threads")
    add_db_option(pend)
    pend.add_argument("--graph", metavar="NAME", help="only threads whose graph_id is NAME")
    pend.add_argument("--limit", type=int, default=50, help="questions per page (default 50)")
    pend.add_argument("--cursor", help="the next page: the cursor a previous page printed")
    pend.add_argument("--json", action="store_true", help="print JSON instead of a table")


def add_db_option(parser: argparse.ArgumentParser) -> None:
    """``--db``, as every command that opens a database takes it (``$PAUSEPOINT_DB``)."""
    default_db = os.environ.get("PAUSEPOINT_DB")
    parser.add_argument(
        "--db",
        default=default_db,
        required=default_db is None,
        metavar="PATH_OR_URL",
        help="a SQLite file or a postgresql:// URL (default: $PAUSEPOINT_DB)",
    )


def _options(*, graph_required: bool) -> argparse.ArgumentParser:
    """The options every subcommand takes (``--graph`` is required by ``resume``)."""
    opts = argparse.ArgumentParser(add_help=False)
    add_db_option(opts)
    opts.add_argument(
        "--graph",
        metavar="MODULE:ATTRIBUTE",
        required=graph_required,
        help="the graph, a StateGraph or a compiled graph"
        + ("" if graph_required else " (optional: read state through it)"),
    )
    opts.add_argument("--json", action="store_true", help="print JSON instead of tables")
    return opts


def run(args: argparse.Namespace) -> int:
    """Run a ``threads`` subcommand; return the exit status."""
    readers = {"list": _list, "show": _show, "history": _history}
    runners = {"resume": _resume, "retry": _retry}  # --graph is required for these
    writes = args.threads_command in ("resume", "retry")
    try:
        with open_saver(args.db, write=writes) as saver:
            if args.threads_command == "pending":  # --graph names a graph: nothing to load
                return _pending_questions(args, saver, None)
            graph = compile_graph(load_graph(args.graph), saver) if args.graph else None
            run_on = runners.get(args.threads_command)
            if run_on is not None and graph is not None:
                return run_on(args, saver, graph)
            return readers[args.threads_command](args, saver, graph)
    except CliError as exc:
        print(f"pausepoint threads: error: {exc}", file=sys.stderr)
        return 2
    except CheckpointDecodeError as exc:
        # Only a type the allowlist lacks is read with the graph; a corrupt row is not.
        unknown = exc.unknown_type is not None and not args.graph
        hint = "; pass --graph MODULE:ATTRIBUTE so its declared types load" if unknown else ""
        print(f"pausepoint threads: error: {exc}{hint}", file=sys.stderr)
        return 2


# --- the database and the graph ---------------------------------------------------------


def is_postgres_url(db: str) -> bool:
    """Whether ``--db`` names a PostgreSQL server rather than a SQLite file."""
    return db.startswith(("postgresql://", "postgres://"))


@contextlib.contextmanager
def open_saver(
    db: str, *, write: bool = False, encryption: Sealer | None = None
) -> Generator[BaseCheckpointSaver]:
    """Open the saver for ``--db``; never creates a database or pausepoint's tables.

    A SQLite file is opened read-only unless ``write`` (``resume``, ``retry``), and
    even then only once it is known to hold pausepoint's tables. ``encryption``: the
    keys (by default those of ``$PAUSEPOINT_KEYS``, if set: `pausepoint.cli.keys`).

    Raises:
        CliError: The file is missing, is not a SQLite database or has no pausepoint
            tables, or the server cannot be reached.
    """
    if encryption is None:
        encryption = keys_from_env()
    if is_postgres_url(db):
        with _open_postgres(db, encryption) as saver:
            yield saver
        return
    path = Path(db)
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        raise CliError(f"{db!r} {what}; give the SQLite file your graph saves to")
    from pausepoint.checkpoint.sqlite import SqliteSaver

    try:
        if write:  # a pausepoint database this version reads, before any write
            with SqliteSaver.from_conn_string(str(path), read_only=True):
                pass
        opened = SqliteSaver.from_conn_string(str(path), read_only=not write, encryption=encryption)
        saver = opened.__enter__()
    except (sqlite3.DatabaseError, ValueError) as exc:
        raise CliError(f"cannot read {db!r} as a pausepoint SQLite database: {exc}") from None
    try:
        yield saver
    finally:
        opened.__exit__(None, None, None)


@contextlib.contextmanager
def _open_postgres(url: str, encryption: Sealer | None) -> Generator[BaseCheckpointSaver]:
    try:
        import psycopg

        from pausepoint.checkpoint.postgres import PostgresSaver
    except ImportError:
        raise CliError("PostgreSQL needs psycopg: pip install 'pausepoint[postgres]'") from None
    try:
        with PostgresSaver.from_conn_string(url, encryption=encryption) as saver:
            yield saver
    except psycopg.errors.UndefinedTable:
        raise CliError(
            "the database has no pausepoint tables; a saver creates them with .setup()"
        ) from None
    except psycopg.OperationalError as exc:
        raise CliError(f"cannot connect to the PostgreSQL server: {exc}".strip()) from None


def load_graph(target: str) -> object:
    """Import ``module:attribute`` (the attribute may be dotted) and return it.

    The current directory is importable, as with ``python -m``.

    Raises:
        CliError: The form is wrong, the module does not import, or it lacks the name.
    """
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise CliError(f"--graph wants MODULE:ATTRIBUTE, e.g. 'app.flows:builder'; got {target!r}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: object = importlib.import_module(module_name)
    except ImportError as exc:
        raise CliError(f"cannot import module {module_name!r} (from --graph): {exc}") from None
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CliError(f"module {module_name!r} has no attribute {attribute!r}") from None
    return obj


def compile_graph(obj: object, saver: BaseCheckpointSaver) -> CompiledStateGraph:
    """A graph compiled with ``saver`` (`pausepoint.graph.rebind.compiled_with`).

    ``obj`` must be a ``StateGraph`` or a compiled graph; anything else is a `CliError`.
    """
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.graph.rebind import compiled_with
    from pausepoint.graph.state import StateGraph

    if not isinstance(obj, StateGraph | CompiledStateGraph):
        raise CliError(
            f"--graph names a {type(obj).__name__}, not a StateGraph or a compiled graph"
        )
    return compiled_with(obj, saver)


# --- the subcommands --------------------------------------------------------------------


def _list(
    args: argparse.Namespace, saver: BaseCheckpointSaver, graph: CompiledStateGraph | None
) -> int:
    views: list[ThreadView] = []
    for thread in thread_ids(saver):
        try:  # one unreadable thread is a row of its own, never the end of the listing
            views.append(view_of(latest(saver, thread), graph, latest=True))
        except Exception as exc:
            views.append(unreadable(thread, exc))
    status = 1 if any(v.status == "unreadable" for v in views) else 0
    if args.status:
        views = [v for v in views if v.status == args.status]
    if args.json:
        print_json([v.to_json() for v in views])
        return status
    if not views:
        print("no threads" + (f" with status {args.status}" if args.status else ""))
        return status
    rows = [[v.thread_id, v.status, str(v.step), ", ".join(v.next), _pending(v)] for v in views]
    print(render_table(["THREAD", "STATUS", "STEP", "NEXT", "PENDING"], rows))
    return status


def _pending_questions(
    args: argparse.Namespace, saver: BaseCheckpointSaver, graph: CompiledStateGraph | None
) -> int:
    try:
        page = saver.list_pending(graph=args.graph, limit=args.limit, cursor=args.cursor)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        items = [_question_json(q) for q in page.items]
        errors = [str(e) for e in page.errors]
        print_json({"items": items, "next_cursor": page.next_cursor, "errors": errors})
        return 1 if page.errors else 0
    rows = [
        [
            q.thread_id,
            q.task_name,
            q.question_id,
            q.asked_at.isoformat(timespec="seconds"),
            compact(q.value),
        ]
        for q in page.items
    ]
    rows += [[e.thread_id, "", "", "", f"unreadable: {e}"] for e in page.errors]
    if not rows:
        print("no waiting questions")
    else:
        print(render_table(["THREAD", "TASK", "QUESTION", "ASKED", "VALUE"], rows))
    if page.next_cursor:
        print(f"next page: --cursor {page.next_cursor}")
    return 1 if page.errors else 0


def _question_json(q: PendingQuestion) -> dict[str, object]:
    out: dict[str, object] = {f: getattr(q, f) for f in _QUESTION_FIELDS}
    out["question_id"] = q.question_id
    out["asked_at"] = q.asked_at.isoformat()
    out["deadline"] = q.deadline.isoformat() if q.deadline is not None else None
    return out


_QUESTION_FIELDS = (
    "thread_id",
    "checkpoint_ns",
    "checkpoint_id",
    "task_id",
    "task_name",
    "interrupt_id",
    "position",
    "value",
    "response_schema",
    "asked_at",
    "deadline",
    "on_timeout",
    "graph",
    "metadata",
)


def _pending(view: ThreadView) -> str:
    if view.status == "unreadable":
        return view.errors[0]
    if view.paused_at:
        return f"(breakpoint {view.paused_at})"
    return pending_cell(view.interrupts)


def _continue_hint(args: argparse.Namespace, view: ThreadView) -> str:
    """The command that continues the thread, for ``show``; empty if nothing is left."""
    if view.status not in ("paused", "running", "answered", "failed"):
        return ""
    graph = shlex.quote(args.graph) if args.graph else "MODULE:ATTRIBUTE"
    line = (
        f"pausepoint threads retry {shlex.quote(view.thread_id)} --graph {graph}"
        f" --db {shlex.quote(args.db)}"
    )
    why = {
        "paused": f"paused at a static breakpoint ({view.paused_at})",
        "running": "work is left and no question waits (a run in flight or one that stopped)",
        "answered": "an answer is stored and its run has not finished",
        "failed": "a node failed; this runs it again with the stored answers",
    }[view.status]
    return printable(f"\n{why}; to continue:\n  {line}")


def _show(
    args: argparse.Namespace, saver: BaseCheckpointSaver, graph: CompiledStateGraph | None
) -> int:
    view = view_of(latest(saver, args.thread), graph, latest=True)
    size = stored_size(saver, args.thread)
    if args.json:
        print_json({**view.to_json(), "stored": size})
        return 0
    stored = "" if size is None else _size_line(size)
    print(render_view(view, exact=graph is not None) + stored + _continue_hint(args, view))
    return 0


def _size_line(size: dict[str, int]) -> str:
    return (
        f"\nstored: {size['bytes']} bytes in {size['checkpoints']} checkpoints and "
        f"{size['writes']} writes (`pausepoint prune` drops old ones)"
    )


def _history(
    args: argparse.Namespace, saver: BaseCheckpointSaver, graph: CompiledStateGraph | None
) -> int:
    latest(saver, args.thread)
    config: RunnableConfig = {"configurable": {"thread_id": args.thread, "checkpoint_ns": ""}}
    views = [view_of(s, graph, latest=False) for s in saver.list(config, limit=args.limit)]
    if args.json:
        print_json([v.to_json() for v in views])
        return 0
    rows = [[str(v.step), v.source, ", ".join(v.next), v.checkpoint_id] for v in views]
    print(render_table(["STEP", "SOURCE", "NEXT", "CHECKPOINT"], rows))
    return 0


def _resume(args: argparse.Namespace, saver: BaseCheckpointSaver, graph: CompiledStateGraph) -> int:
    if args.map is None:
        value = _parse_json(args.value, "--value")
        answer: object = Reanswer(value) if args.replace else value
    else:
        answers = _full_ids(_parse_map(args.map), graph.get_state(thread_config(args.thread)))
        answer = {k: Reanswer(v) for k, v in answers.items()} if args.replace else answers
    return _run_on(args, saver, graph, Command(resume=answer))


def _retry(args: argparse.Namespace, saver: BaseCheckpointSaver, graph: CompiledStateGraph) -> int:
    return _run_on(args, saver, graph, None)


def _run_on(
    args: argparse.Namespace,
    saver: BaseCheckpointSaver,
    graph: CompiledStateGraph,
    given: Command[object] | None,
) -> int:
    """Run the thread on with ``given`` (None: continue), then show it."""
    latest(saver, args.thread)
    config = thread_config(args.thread)
    try:
        graph.invoke(given, config)
    except AlreadyAnsweredError as exc:
        hint = "From this CLI: `threads resume --replace` replaces it; `threads retry` uses it."
        raise CliError(f"{exc}\n{hint}") from None
    except PausepointError as exc:
        raise CliError(str(exc)) from None
    except Exception as exc:
        print(
            f"pausepoint threads: the resumed run failed: {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return 1
    view = view_of(latest(saver, args.thread), graph, latest=True)
    if args.json:
        print_json(view.to_json())
    else:
        print(render_view(view, exact=True))
    return 0


def _parse_json(text: str, flag: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{flag} is not valid JSON ({exc}); quote strings twice, e.g. {flag} '\"yes\"'"
        ) from None


def _full_ids(answers: dict[str, object], snap: StateSnapshot) -> dict[str, object]:
    """``answers`` keyed by full interrupt ids.

    A unique prefix (``list`` shows 8 characters) stands for the pending or answered
    question whose id it starts.
    """
    known = [i.id for i in snap.interrupts]
    known += [a.interrupt.id for t in snap.tasks for a in t.answered if a.interrupt.id not in known]
    out: dict[str, object] = {}
    for key, value in answers.items():
        matches = [k for k in known if k.startswith(key)] if key not in known else [key]
        if len(matches) != 1:
            how = "starts more than one question's id" if matches else "is no question's id"
            listing = ", ".join(known) or "(none)"
            raise CliError(f"--map key {key!r} {how}; the questions' ids: {listing}")
        out[matches[0]] = value
    return out


def _parse_map(text: str) -> dict[str, object]:
    parsed = _parse_json(text, "--map")
    if not isinstance(parsed, dict) or not parsed:
        raise CliError('--map wants a non-empty JSON object: {"<interrupt id>": <answer>, ...}')
    return cast(dict[str, object], parsed)
