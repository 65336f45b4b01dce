"""``pausepoint threads``: look at stored threads and answer their interrupts.

Works against a SQLite file or a PostgreSQL URL (``--db``)::

    pausepoint threads list --db app.sqlite
    pausepoint threads show THREAD --db app.sqlite
    pausepoint threads history THREAD --db app.sqlite
    pausepoint threads resume THREAD --value '"yes"' --graph app.flows:builder --db app.sqlite
    pausepoint threads retry THREAD --graph app.flows:builder --db app.sqlite

``list``, ``show`` and ``history`` read the stored checkpoints directly. Without the
graph, ``next`` is worked out from the stored edge triggers and ``values`` are the
channel values as of the newest checkpoint; give ``--graph module:attribute`` to
read them through the graph instead (exact, and the graph's declared types decode).
``resume`` and ``retry`` always need the graph, since they run it. Add ``--json`` for
machine output.

A thread's status is ``interrupted`` (a question waits for an answer), ``answered``
(an answer is stored, the run that uses it has not finished: ``retry`` continues it),
``failed`` (a node raised; ``retry`` runs it again with the stored answers, ``resume
--replace`` replaces the answer it failed with), ``running`` (work is left, nothing
waits) or ``done``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import json
import os
import sqlite3
import sys
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any, cast

from pausepoint.checkpoint.base import CheckpointTuple
from pausepoint.cli.output import (
    jsonable,
    pending_cell,
    print_json,
    render_table,
    render_view,
)
from pausepoint.constants import BRANCH_TO, JOIN, PULL, PUSH, RESERVED_NAMES, START, TASKS
from pausepoint.errors import AlreadyAnsweredError, CheckpointDecodeError, PausepointError
from pausepoint.loop.answers import stored_answers
from pausepoint.loop.pending import read_records
from pausepoint.loop.tasks import task_id
from pausepoint.types import Answer, Command, Interrupt, Reanswer, Send, StateSnapshot

__all__ = ["ThreadView", "add_parser", "latest_checkpoints", "run"]


class CliError(Exception):
    """A problem with the command's input: reported on stderr with exit status 2."""


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadView:
    """What the CLI reports about one checkpoint of a thread."""

    thread_id: str
    status: str
    step: int
    source: str
    next: tuple[str, ...]
    interrupts: tuple[Interrupt, ...]
    values: dict[str, Any]
    checkpoint_id: str
    parent_checkpoint_id: str | None
    created_at: str
    errors: tuple[str, ...] = ()
    answered: tuple[Answer, ...] = ()
    """Questions whose answer is stored while their node has not got past them."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the view."""
        return {
            "thread_id": self.thread_id,
            "status": self.status,
            "step": self.step,
            "source": self.source,
            "next": list(self.next),
            "interrupts": [{"id": i.id, "value": i.value} for i in self.interrupts],
            "values": self.values,
            "checkpoint_id": self.checkpoint_id,
            "parent_checkpoint_id": self.parent_checkpoint_id,
            "created_at": self.created_at,
            "errors": list(self.errors),
            "answered": [
                {
                    "id": a.interrupt.id,
                    "position": a.position,
                    "question": a.interrupt.value,
                    "answer": a.value,
                }
                for a in self.answered
            ],
        }


# --- the parser ---------------------------------------------------------------------------


def add_parser(commands: Any) -> None:
    """Register ``threads`` and its subcommands on the CLI's subcommands."""
    p: argparse.ArgumentParser = commands.add_parser(
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
    p.set_defaults(run=run)


def _options(*, graph_required: bool) -> argparse.ArgumentParser:
    """The options every subcommand takes (``--graph`` is required by ``resume``)."""
    opts = argparse.ArgumentParser(add_help=False)
    default_db = os.environ.get("PAUSEPOINT_DB")
    opts.add_argument(
        "--db",
        default=default_db,
        required=default_db is None,
        metavar="PATH_OR_URL",
        help="a SQLite file or a postgresql:// URL (default: $PAUSEPOINT_DB)",
    )
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
    commands = {
        "list": _list,
        "show": _show,
        "history": _history,
        "resume": _resume,
        "retry": _retry,
    }
    try:
        with open_saver(args.db) as saver:
            graph = compile_graph(load_graph(args.graph), saver) if args.graph else None
            return commands[args.threads_command](args, saver, graph)
    except CliError as exc:
        print(f"pausepoint threads: error: {exc}", file=sys.stderr)
        return 2
    except CheckpointDecodeError as exc:
        hint = "" if args.graph else "; pass --graph MODULE:ATTRIBUTE so its declared types load"
        print(f"pausepoint threads: error: {exc}{hint}", file=sys.stderr)
        return 2


# --- the database and the graph ---------------------------------------------------------


def is_postgres_url(db: str) -> bool:
    """Whether ``--db`` names a PostgreSQL server rather than a SQLite file."""
    return db.startswith(("postgresql://", "postgres://"))


@contextlib.contextmanager
def open_saver(db: str) -> Generator[Any]:
    """Open the saver for ``--db``; never creates a database.

    Raises:
        CliError: The file is missing or is not a SQLite database, or the server
            cannot be reached.
    """
    if is_postgres_url(db):
        with _open_postgres(db) as saver:
            yield saver
        return
    path = Path(db)
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        raise CliError(f"{db!r} {what}; give the SQLite file your graph saves to")
    from pausepoint.checkpoint.sqlite import SqliteSaver

    try:
        with SqliteSaver.from_conn_string(str(path)) as saver:
            yield saver
    except sqlite3.DatabaseError as exc:
        raise CliError(f"cannot read {db!r} as a pausepoint SQLite database: {exc}") from None


@contextlib.contextmanager
def _open_postgres(url: str) -> Generator[Any]:
    try:
        import psycopg

        from pausepoint.checkpoint.postgres import PostgresSaver
    except ImportError:
        raise CliError("PostgreSQL needs psycopg: pip install 'pausepoint[postgres]'") from None
    try:
        with PostgresSaver.from_conn_string(url) as saver:
            yield saver
    except psycopg.errors.UndefinedTable:
        raise CliError(
            "the database has no pausepoint tables; a saver creates them with .setup()"
        ) from None
    except psycopg.OperationalError as exc:
        raise CliError(f"cannot connect to the PostgreSQL server: {exc}".strip()) from None


def load_graph(target: str) -> Any:
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
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise CliError(f"cannot import module {module_name!r} (from --graph): {exc}") from None
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CliError(f"module {module_name!r} has no attribute {attribute!r}") from None
    return obj


def compile_graph(obj: Any, saver: Any) -> Any:
    """A graph compiled with ``saver``, from a ``StateGraph`` or a compiled graph.

    A compiled graph is recompiled from its builder with the same static breakpoints.
    """
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.graph.state import StateGraph

    if isinstance(obj, CompiledStateGraph):
        return obj.builder.compile(
            checkpointer=saver,
            interrupt_before=obj.interrupt_before_nodes or None,
            interrupt_after=obj.interrupt_after_nodes or None,
            name=obj.name,
        )
    if isinstance(obj, StateGraph):
        return obj.compile(checkpointer=saver)
    raise CliError(f"--graph names a {type(obj).__name__}, not a StateGraph or a compiled graph")


# --- reading threads --------------------------------------------------------------------


def latest_checkpoints(saver: Any) -> list[CheckpointTuple]:
    """The newest root checkpoint of every thread, newest thread first.

    Built on ``saver.list(None)`` (newest first across threads), so it reads every
    checkpoint once; the savers have no "distinct threads" query yet.
    """
    seen: set[str] = set()
    out: list[CheckpointTuple] = []
    for saved in saver.list(None):
        conf = _conf(saved.config)
        thread = str(conf.get("thread_id"))
        if conf.get("checkpoint_ns") or thread in seen:
            continue
        seen.add(thread)
        out.append(saved)
    return out


def view_of(saved: CheckpointTuple, graph: Any | None, *, latest: bool) -> ThreadView:
    """The view of one stored checkpoint, through the graph when there is one."""
    if graph is not None:
        config: Any = saved.config if not latest else _thread_config(_thread_of(saved))
        return _view_of_snapshot(graph.get_state(config))
    return _view_of_raw(saved, latest=latest)


def _view_of_snapshot(snap: StateSnapshot) -> ThreadView:
    conf, parent = _conf(snap.config), _conf(snap.parent_config)
    errors = tuple(str(t.error) for t in snap.tasks if t.error is not None)
    answered = tuple(a for t in snap.tasks for a in t.answered)
    return ThreadView(
        thread_id=str(conf.get("thread_id")),
        status=_status(snap.interrupts, snap.next, answered, errors),
        step=int(snap.metadata.get("step", -1)) if snap.metadata else -1,
        source=str(snap.metadata.get("source", "")) if snap.metadata else "",
        next=tuple(snap.next),
        interrupts=tuple(snap.interrupts),
        values=_as_dict(snap.values),
        checkpoint_id=str(conf.get("checkpoint_id")),
        parent_checkpoint_id=parent.get("checkpoint_id"),
        created_at=str(snap.created_at or ""),
        errors=errors,
        answered=answered,
    )


def _as_dict(values: Any) -> dict[str, Any]:
    # A state schema may be a dataclass or a Pydantic model: show its fields.
    if isinstance(values, dict):
        return dict(cast(dict[str, Any], values))
    found: Any = jsonable(values)
    return cast(dict[str, Any], found) if isinstance(found, dict) else {"": values}


def _view_of_raw(saved: CheckpointTuple, *, latest: bool) -> ThreadView:
    """Infer what a snapshot would say from the stored data alone (no graph)."""
    records, _ = read_records(saved.pending_writes or [])
    tasks = _raw_tasks(saved)
    done = {tid for tid, rec in records.items() if rec.done}
    # Like get_state: the newest checkpoint leaves out tasks that already finished;
    # history lists every task of the step.
    nxt = tuple(name for tid, name in tasks if not (latest and tid in done))
    interrupts = tuple(i for r in records.values() if r.waiting for i in r.interrupts)
    answered = tuple(a for r in records.values() for a in stored_answers(r))
    errors = tuple(str(r.error) for r in records.values() if r.error is not None and not r.done)
    channel_values = saved.checkpoint["channel_values"]
    parent = _conf(saved.parent_config)
    return ThreadView(
        thread_id=_thread_of(saved),
        status=_status(interrupts, nxt, answered, errors),
        step=int(saved.metadata.get("step", -1)),
        source=str(saved.metadata.get("source", "")),
        next=nxt,
        interrupts=interrupts,
        values={k: v for k, v in channel_values.items() if not _internal(k)},
        checkpoint_id=str(saved.checkpoint["id"]),
        parent_checkpoint_id=parent.get("checkpoint_id"),
        created_at=str(saved.checkpoint["ts"]),
        errors=errors,
        answered=answered,
    )


def _raw_tasks(saved: CheckpointTuple) -> list[tuple[str, str]]:
    """``(task id, node)`` of the step that starts at ``saved``, from stored triggers."""
    cp = saved.checkpoint
    values, versions, seen = cp["channel_values"], cp["channel_versions"], cp["versions_seen"]
    step = int(saved.metadata.get("step", -1)) + 1
    ns = str(_conf(saved.config).get("checkpoint_ns", ""))
    out: list[tuple[str, str]] = []
    sends: Any = values.get(TASKS)
    for idx, send in enumerate(sends if isinstance(sends, list) else []):  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
        if isinstance(send, Send):
            out.append((task_id(cp["id"], ns, step, send.node, PUSH, str(idx)), send.node))
    triggered: dict[str, None] = {}
    for chan, version in versions.items():
        node = _trigger_target(chan, values)
        if node is not None and version > seen.get(node, {}).get(chan, 0):
            triggered[node] = None
    for node in triggered:
        out.append((task_id(cp["id"], ns, step, node, PULL, node), node))
    return out


def _trigger_target(chan: str, values: dict[str, Any]) -> str | None:
    """The node an available trigger channel starts, or None."""
    if chan not in values:
        return None
    if chan == START:
        return START
    if chan.startswith(BRANCH_TO):
        return chan[len(BRANCH_TO) :]
    if chan.startswith(JOIN):
        sources, _, node = chan[len(JOIN) :].rpartition(":")
        arrived: Any = values[chan]
        return node if set(sources.split("+")) == set(arrived) else None  # pyright: ignore[reportUnknownArgumentType]
    return None


def _internal(key: str) -> bool:
    return key in RESERVED_NAMES or key.startswith((BRANCH_TO, JOIN))


STATUSES = ("interrupted", "answered", "failed", "running", "done")


def _status(
    interrupts: Sequence[Interrupt],
    nxt: Sequence[str],
    answered: Sequence[Answer] = (),
    errors: Sequence[str] = (),
) -> str:
    """One word for a thread: what, if anything, it waits for (see the module doc)."""
    if interrupts:
        return "interrupted"
    if errors and nxt:
        return "failed"
    if answered:
        return "answered"
    return "running" if nxt else "done"


def _thread_of(saved: CheckpointTuple) -> str:
    return str(_conf(saved.config).get("thread_id"))


def _conf(config: Any) -> dict[str, Any]:
    """The ``configurable`` dict of a config (empty for ``None``)."""
    if not isinstance(config, dict):
        return {}
    found = cast(dict[str, Any], config).get("configurable")
    return cast(dict[str, Any], found) if isinstance(found, dict) else {}


def _thread_config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def _latest(saver: Any, thread: str) -> CheckpointTuple:
    saved = saver.get_tuple(_thread_config(thread))
    if saved is None:
        raise CliError(f"no thread {thread!r} in this database; `threads list` shows them")
    return saved


# --- the subcommands --------------------------------------------------------------------


def _list(args: argparse.Namespace, saver: Any, graph: Any | None) -> int:
    views = [view_of(saved, graph, latest=True) for saved in latest_checkpoints(saver)]
    if args.status:
        views = [v for v in views if v.status == args.status]
    if args.json:
        print_json([v.to_json() for v in views])
        return 0
    if not views:
        print("no threads" + (f" with status {args.status}" if args.status else ""))
        return 0
    rows = [
        [v.thread_id, v.status, str(v.step), ", ".join(v.next), pending_cell(v.interrupts)]
        for v in views
    ]
    print(render_table(["THREAD", "STATUS", "STEP", "NEXT", "PENDING"], rows))
    return 0


def _show(args: argparse.Namespace, saver: Any, graph: Any | None) -> int:
    view = view_of(_latest(saver, args.thread), graph, latest=True)
    if args.json:
        print_json(view.to_json())
    else:
        print(render_view(view, exact=graph is not None))
    return 0


def _history(args: argparse.Namespace, saver: Any, graph: Any | None) -> int:
    _latest(saver, args.thread)
    config = {"configurable": {"thread_id": args.thread, "checkpoint_ns": ""}}
    views = [view_of(s, graph, latest=False) for s in saver.list(config, limit=args.limit)]
    if args.json:
        print_json([v.to_json() for v in views])
        return 0
    rows = [[str(v.step), v.source, ", ".join(v.next), v.checkpoint_id] for v in views]
    print(render_table(["STEP", "SOURCE", "NEXT", "CHECKPOINT"], rows))
    return 0


def _resume(args: argparse.Namespace, saver: Any, graph: Any) -> int:
    answer: Any = _parse_json(args.value, "--value") if args.map is None else _parse_map(args.map)
    if args.replace:
        answer = (
            Reanswer(answer)
            if args.map is None
            else {k: Reanswer(v) for k, v in cast(dict[str, Any], answer).items()}
        )
    return _run_on(args, saver, graph, Command(resume=answer))


def _retry(args: argparse.Namespace, saver: Any, graph: Any) -> int:
    return _run_on(args, saver, graph, None)


def _run_on(args: argparse.Namespace, saver: Any, graph: Any, given: Command[Any] | None) -> int:
    """Run the thread on with ``given`` (None: continue), then show it."""
    _latest(saver, args.thread)
    config = _thread_config(args.thread)
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
    view = view_of(_latest(saver, args.thread), graph, latest=True)
    if args.json:
        print_json(view.to_json())
    else:
        print(render_view(view, exact=True))
    return 0


def _parse_json(text: str, flag: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{flag} is not valid JSON ({exc}); quote strings twice, e.g. {flag} '\"yes\"'"
        ) from None


def _parse_map(text: str) -> dict[str, Any]:
    parsed = _parse_json(text, "--map")
    if not isinstance(parsed, dict) or not parsed:
        raise CliError('--map wants a non-empty JSON object: {"<interrupt id>": <answer>, ...}')
    return parsed  # pyright: ignore[reportUnknownVariableType]
