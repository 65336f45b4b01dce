"""A corpus of paused threads and the edits a deploy makes to their graphs (issue 31).

Each corpus entry builds the graph as it was when its thread paused (``edit=None``)
or after one edit, and pauses a thread on the old graph. ``DESTRUCTIVE`` edits are
ones the paused thread feels (its node renamed or removed, a ``Send`` target gone, a
stored key dropped or retyped, a subgraph node renamed, a reducer changed): loading
the thread into the edited graph must raise ``GraphMismatchError``. ``HARMLESS``
edits (a node's body, a new node elsewhere, a new optional key) must pass unnoticed.

``migrated(name, edit, saver)`` builds the edited graph with the migrations that
move a thread paused on the old graph to it (``MIGRATIONS``); ``RUNS`` counts node
runs, so a test sees that nothing finished runs again.

Run as a script (``python deploy_graphs.py URL CORPUS``) it pauses thread ``CORPUS``
of that corpus on the old graph in a database (a SQLite file or a PostgreSQL URL):
the cross-process test resumes it in another process.
"""

from __future__ import annotations

import operator
import sys
from collections import Counter
from collections.abc import Callable
from typing import Annotated, Any, NotRequired, TypedDict

from pausepoint import END, START, Command, StateGraph, interrupt
from pausepoint.func import entrypoint
from pausepoint.migrations import (
    Migration,
    StoredThread,
    convert_channel,
    drop_channel,
    migration,
    rename_node,
    reroute,
)
from pausepoint.types import Send

HARMLESS = ("body", "new_node", "new_key")
RUNS: Counter[str] = Counter()
"""Node runs by node, to show what a resume runs again."""
MIGRATE = {"on": False}
"""Set while ``migrated`` builds a graph: the builders declare the edit's migrations."""


def _keep(left: list[str], right: list[str]) -> list[str]:
    """A reducer other than ``operator.add``: the edit "reducer" swaps to it."""
    return [*left, *right][-3:]


def _state(edit: str | None) -> type:
    """The state schema as the edit leaves it."""
    notes: Any = Annotated[list[str], _keep if edit == "reducer" else operator.add]
    fields: dict[str, Any] = {"notes": notes, "verdict": NotRequired[str]}
    if edit != "drop_key":
        fields["topic"] = NotRequired[int] if edit == "retype" else NotRequired[str]
    if edit == "new_key":
        fields["extra"] = NotRequired[str]
    return TypedDict("S", fields)  # type: ignore[operator]


FAIL_AFTER_ANSWER = {"on": False}
"""Set while pausing the answered-and-pending thread: its node fails after the answer."""


def _asker(
    edit: str | None, questions: int = 1, key: str = "verdict"
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def ask(state: dict[str, Any]) -> dict[str, Any]:
        RUNS["ask"] += 1
        answers = [interrupt(f"question {n}") for n in range(questions)]
        if FAIL_AFTER_ANSWER["on"]:
            raise RuntimeError("the worker died after the answer was stored")
        tag = "new body: " if edit == "body" else ""
        said = tag + "+".join(map(str, answers))
        return {key: said} if key == "verdict" else {key: [said]}

    return ask


def _prep(state: dict[str, Any]) -> dict[str, Any]:
    RUNS["prep"] += 1
    return {"notes": ["prepared"]}


def _chain(edit: str | None, *, questions: int = 1) -> StateGraph:
    """START -> prep -> ask (the question) -> END, with the edit applied."""
    g = StateGraph(_state(edit))
    g.add_node("prep", _prep)
    g.add_edge(START, "prep")
    if edit == "remove":
        g.add_edge("prep", END)
        return g
    asked = "approve" if edit == "rename" else "ask"
    g.add_node(asked, _asker(edit, questions))
    g.add_edge("prep", asked)
    if edit == "new_node":
        g.add_node("audit", lambda s: {"notes": ["audited"]})
        g.add_edge(asked, "audit")
        g.add_edge("audit", END)
    else:
        g.add_edge(asked, END)
    return g


def one(edit: str | None, saver: Any) -> Any:
    return _chain(edit).compile(checkpointer=saver, migrations=_declared(edit, "ask"))


def two_in_one(edit: str | None, saver: Any) -> Any:
    return _chain(edit, questions=2).compile(checkpointer=saver, migrations=_declared(edit, "ask"))


def answered(edit: str | None, saver: Any) -> Any:
    return _chain(edit).compile(checkpointer=saver, migrations=_declared(edit, "ask"))


def breakpoint_(edit: str | None, saver: Any) -> Any:
    g = StateGraph(_state(edit))
    g.add_node("prep", _prep)
    g.add_edge(START, "prep")
    if edit == "remove":
        g.add_edge("prep", END)
        return g.compile(checkpointer=saver, migrations=_declared(edit, "review"))
    review = "approve" if edit == "rename" else "review"
    g.add_node(review, lambda s: {"verdict": "reviewed" + ("!" if edit == "body" else "")})
    g.add_edge("prep", review)
    g.add_edge(review, END)
    if edit == "new_node":
        g.add_node("audit", lambda s: {"notes": ["audited"]})
        g.add_edge("prep", "audit")
        g.add_edge("audit", END)
    return g.compile(
        checkpointer=saver, interrupt_before=[review], migrations=_declared(edit, "review")
    )


def sends(edit: str | None, saver: Any) -> Any:
    g = StateGraph(_state(edit))
    g.add_node("prep", _prep)
    g.add_edge(START, "prep")
    target = "approve" if edit in ("rename", "remove") else "ask"

    def fan_out(state: dict[str, Any]) -> list[Send]:
        return [Send(target, {"notes": [str(n)]}) for n in range(3)]

    g.add_conditional_edges("prep", fan_out, [target])
    g.add_node(target, _asker(edit, key="notes"))
    g.add_edge(target, END)
    if edit == "new_node":
        g.add_node("audit", lambda s: {"notes": ["audited"]})
        g.add_edge(START, "audit")
        g.add_edge("audit", END)
    moves = [reroute("ask", "approve")] if edit in ("rename", "remove") else _declared(edit, "ask")
    return g.compile(checkpointer=saver, migrations=moves if MIGRATE["on"] else [])


def _inner(edit: str | None) -> Any:
    g = StateGraph(_state(edit))
    asked = "approve" if edit == "rename" else "ask"
    g.add_node(asked, _asker(edit))
    g.add_edge(START, asked)
    g.add_edge(asked, END)
    if edit == "new_node":
        g.add_node("audit", lambda s: {"notes": ["audited"]})
        g.add_edge(asked, "audit")
    return g.compile(migrations=_declared(edit, "ask"))


def nested(edit: str | None, saver: Any) -> Any:
    """A question two levels down: root -> ``outer`` (a subgraph) -> ``inner`` -> ask."""
    middle = StateGraph(_state(edit))
    middle.add_node("inner", _inner(edit))
    middle.add_edge(START, "inner")
    middle.add_edge("inner", END)
    convert = _declared(edit, "?") if edit == "retype" else []
    root = StateGraph(_state(edit))
    outer = "outer2" if edit == "rename_subgraph" else "outer"
    root.add_node("prep", _prep)
    root.add_node(outer, middle.compile(migrations=convert))
    root.add_edge(START, "prep")
    root.add_edge("prep", outer)
    root.add_edge(outer, END)
    moves = [rename_node("outer", "outer2")] if edit == "rename_subgraph" else convert
    return root.compile(checkpointer=saver, migrations=moves if MIGRATE["on"] else [])


def functional(edit: str | None, saver: Any) -> Any:
    def flow(topic: str) -> str:
        answer = interrupt(f"publish {topic}?")
        return ("new body: " if edit == "body" else "") + f"{topic}: {answer}"

    if edit == "rename":
        flow.__name__ = flow.__qualname__ = "publish"
    moves = [rename_node("flow", "publish")] if edit == "rename" and MIGRATE["on"] else []
    return entrypoint(checkpointer=saver, migrations=moves)(flow)


CORPUS: dict[str, tuple[Callable[[str | None, Any], Any], tuple[str, ...]]] = {
    # name: (builder, destructive edits)
    "one": (one, ("rename", "remove", "drop_key", "retype", "reducer")),
    "two_in_one": (two_in_one, ("rename", "remove", "drop_key", "retype")),
    "answered": (answered, ("rename", "remove", "retype")),
    "breakpoint": (breakpoint_, ("rename", "remove", "drop_key")),
    "sends": (sends, ("rename", "remove", "reducer")),
    "nested": (nested, ("rename", "rename_subgraph", "retype")),
    "functional": (functional, ("rename",)),
}


def _abandon(node: str) -> Migration:
    """The question in ``node`` (removed by the edit) is dropped: the thread goes on."""

    def drop(thread: StoredThread) -> None:
        thread.tasks = [t for t in thread.tasks if t.node != node]
        for key in (f"branch:to:{node}",):
            thread.values.pop(key, None)
            thread.versions.pop(key, None)

    return migration(f"abandon {node}", drop, nodes=[node])


def _declared(edit: str | None, node: str) -> list[Migration]:
    """The migrations that move a thread paused in ``node`` across ``edit``."""
    if not MIGRATE["on"]:
        return []
    match edit:
        case "rename":
            return [rename_node(node, "approve")]
        case "remove":
            return [_abandon(node)]
        case "drop_key":
            return [drop_channel("topic")]
        case "retype":
            return [convert_channel("topic", lambda v: len(str(v)))]
        case "reducer":
            return [convert_channel("notes", lambda v: list(v)[-3:])]  # pyright: ignore
        case _:
            return []


def migrated(name: str, edit: str, saver: Any) -> Any:
    """The edited graph of corpus ``name``, declaring the migrations for ``edit``."""
    MIGRATE["on"] = True
    try:
        return CORPUS[name][0](edit, saver)
    finally:
        MIGRATE["on"] = False


def first_input(name: str) -> Any:
    return "tides" if name == "functional" else {"topic": "tides", "notes": []}


def answer_for(graph: Any, config: Any) -> Any:
    """What continues a paused thread: an answer to every question, or None (breakpoint)."""
    waiting = graph.get_state(config).interrupts
    if not waiting:
        return None
    return Command(resume={i.id: f"yes {n}" for n, i in enumerate(waiting)})


def pause(name: str, saver: Any, config: Any) -> Any:
    """Run thread ``config`` of corpus ``name`` on the old graph until it waits."""
    graph = CORPUS[name][0](None, saver)
    graph.invoke(first_input(name), config)
    if name == "two_in_one":  # the first question answered: it waits on the second
        graph.invoke(Command(resume="first"), config)
    if name == "answered":  # the answer is stored; the run after it failed
        FAIL_AFTER_ANSWER["on"] = True
        try:
            graph.invoke(Command(resume="stored answer"), config)
        except RuntimeError:
            pass
        finally:
            FAIL_AFTER_ANSWER["on"] = False
    return graph


def main() -> None:
    url, name = sys.argv[1], sys.argv[2]
    config = {"configurable": {"thread_id": name}}
    if url.startswith("postgres"):
        from pausepoint.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
            pause(name, saver, config)
    else:
        from pausepoint.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(url) as saver:
            pause(name, saver, config)
    print("paused")


if __name__ == "__main__":
    main()
