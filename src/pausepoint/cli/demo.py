"""``pausepoint demo``: a durable approval that survives the process exiting.

The first invocation runs the agent until it asks for approval, saves the pause
in a SQLite file and exits. The next invocation (same file, same thread) finds
the pending question, takes the answer (from the terminal, or from ``--approve``,
``--edit JSON`` or ``--reject``) and finishes the run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from pausepoint.types import Command, Interrupt

if TYPE_CHECKING:
    from pausepoint.cli.threads import Commands
    from pausepoint.config import RunnableConfig
    from pausepoint.graph.compiled import CompiledStateGraph

__all__ = ["add_parser", "run"]

DEFAULT_DB = "pausepoint-demo.sqlite"


def add_parser(commands: Commands) -> None:
    """Register ``demo`` on the CLI's subcommands."""
    p = commands.add_parser(
        "demo",
        help="run the approval demo (pauses, exits, resumes on the next run)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--db", default=DEFAULT_DB, help=f"SQLite file (default: {DEFAULT_DB})")
    p.add_argument("--thread", default="demo", help="thread id (default: demo)")
    answer = p.add_mutually_exclusive_group()
    answer.add_argument("--approve", action="store_true", help="approve the pending plan")
    answer.add_argument("--reject", metavar="REASON", nargs="?", const="rejected by operator")
    answer.add_argument("--edit", metavar="JSON", help="change the plan, e.g. '{\"rows\": 10}'")
    p.add_argument("--restart", action="store_true", help="forget the thread and start over")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Start or resume the demo thread; return the exit status."""
    from pausepoint.checkpoint.sqlite import SqliteSaver
    from pausepoint.cli.demo_graph import build

    answer = _answer_from_flags(args)
    if answer is _INVALID:
        return 2
    db = Path(args.db)
    config: RunnableConfig = {"configurable": {"thread_id": args.thread}}
    with SqliteSaver.from_conn_string(str(db)) as saver:
        if args.restart:
            saver.delete_thread(args.thread)
        graph = build().compile(checkpointer=saver)
        state = graph.get_state(config)
        if state.interrupts:
            return _resume(graph, config, state.interrupts[0], answer, db)
        if state.values and not state.next:
            print(f"Thread {args.thread!r} in {db} already finished: {_result(state.values)}")
            print("Run `pausepoint demo --restart` to start a new one.")
            return 0
        return _start(graph, config, db, args.thread)


def _start(graph: CompiledStateGraph, config: RunnableConfig, db: Path, thread: str) -> int:
    request = "Clean up users who have not logged in since 2024."
    print(f"Agent request: {request}")
    out = graph.invoke({"request": request}, config)
    (pending,) = out["__interrupt__"]
    _show(pending)
    print(f"\nThe run is paused and saved in {db} (thread {thread!r}).")
    print("This process exits now. Answer later, from any process:")
    print("  pausepoint demo              # asks at the terminal")
    print("  pausepoint demo --approve | --reject [REASON] | --edit '{\"rows\": 10}'")
    print(f"  pausepoint inbox --db {db} --graph pausepoint.cli.demo_graph:build   # in a browser")
    print("    (the inbox needs: pip install 'pausepoint[inbox]')")
    return 0


def _resume(
    graph: CompiledStateGraph, config: RunnableConfig, pending: Interrupt, answer: object, db: Path
) -> int:
    print(f"Found a paused run in {db}.")
    _show(pending)
    if answer is None:
        if not sys.stdin.isatty():
            print("\nNo answer given and no terminal to ask at: the run stays paused.")
            print("Pass --approve, --reject [REASON] or --edit JSON.")
            return 0
        answer = _ask()
    done = graph.invoke(Command(resume=answer), config)
    print(f"\nDecision: {done.get('decision')}")
    print(f"Result:   {_result(done)}")
    return 0


def _show(pending: Interrupt) -> None:
    value = pending.value
    print(f"\n  {value['question']}")
    print(f"  plan: {json.dumps(value['plan'])}")
    print(f"  (interrupt id {pending.id})")


def _result(values: Mapping[str, object]) -> str:
    return str(values.get("result", "(none)"))


_INVALID = object()


def _answer_from_flags(args: argparse.Namespace) -> object:
    if args.approve:
        return {"decision": "approve"}
    if args.reject is not None:
        return {"decision": "reject", "reason": args.reject}
    if args.edit is not None:
        try:
            plan = json.loads(args.edit)
        except json.JSONDecodeError as exc:
            print(f"--edit needs a JSON object, e.g. '{{\"rows\": 10}}': {exc}", file=sys.stderr)
            return _INVALID
        if not isinstance(plan, dict):
            print("--edit needs a JSON object, e.g. '{\"rows\": 10}'", file=sys.stderr)
            return _INVALID
        return {"decision": "edit", "plan": cast(dict[str, object], plan)}
    return None


def _ask() -> dict[str, object]:
    while True:
        choice = input("\n[a]pprove, [e]dit, [r]eject? ").strip().lower()
        if choice in ("a", "approve"):
            return {"decision": "approve"}
        if choice in ("r", "reject"):
            return {"decision": "reject", "reason": input("reason: ").strip() or "rejected"}
        if choice in ("e", "edit"):
            raw = input('plan changes as JSON (e.g. {"rows": 10}): ')
            try:
                plan = json.loads(raw)
            except json.JSONDecodeError:
                print("that is not JSON; try again")
                continue
            if isinstance(plan, dict):
                return {"decision": "edit", "plan": cast(dict[str, object], plan)}
            print("give a JSON object; try again")
