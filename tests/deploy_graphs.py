"""A corpus of paused threads and the edits a deploy makes to their graphs (issue 31).

Each corpus entry builds the graph as it was when its thread paused (``edit=None``)
or after one edit, and pauses a thread on the old graph. ``DESTRUCTIVE`` edits are
ones the paused thread feels (its node renamed or removed, a ``Send`` target gone, a
stored key dropped or retyped, a subgraph node renamed, a reducer changed): loading
the thread into the edited graph must raise ``GraphMismatchError``. ``HARMLESS``
edits (a node's body, a new node elsewhere, a new optional key) must pass unnoticed.

Run as a script (``python deploy_graphs.py URL CORPUS``) it pauses thread ``CORPUS``
of that corpus on the old graph in a database (a SQLite file or a PostgreSQL URL):
the cross-process test resumes it in another process.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable
from typing import Annotated, Any, NotRequired, TypedDict

from pausepoint import END, START, Command, StateGraph, interrupt
from pausepoint.func import entrypoint
from pausepoint.types import Send

HARMLESS = ("body", "new_node", "new_key")


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
        answers = [interrupt(f"question {n}") for n in range(questions)]
        if FAIL_AFTER_ANSWER["on"]:
            raise RuntimeError("the worker died after the answer was stored")
        tag = "new body: " if edit == "body" else ""
        said = tag + "+".join(map(str, answers))
        return {key: said} if key == "verdict" else {key: [said]}

    return ask


def _prep(state: dict[str, Any]) -> dict[str, Any]:
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
    return _chain(edit).compile(checkpointer=saver)


def two_in_one(edit: str | None, saver: Any) -> Any:
    return _chain(edit, questions=2).compile(checkpointer=saver)


def answered(edit: str | None, saver: Any) -> Any:
    return _chain(edit).compile(checkpointer=saver)


def breakpoint_(edit: str | None, saver: Any) -> Any:
    g = StateGraph(_state(edit))
    g.add_node("prep", _prep)
    g.add_edge(START, "prep")
    if edit == "remove":
        g.add_edge("prep", END)
        return g.compile(checkpointer=saver)
    review = "approve" if edit == "rename" else "review"
    g.add_node(review, lambda s: {"verdict": "reviewed" + ("!" if edit == "body" else "")})
    g.add_edge("prep", review)
    g.add_edge(review, END)
    if edit == "new_node":
        g.add_node("audit", lambda s: {"notes": ["audited"]})
        g.add_edge("prep", "audit")
        g.add_edge("audit", END)
    return g.compile(checkpointer=saver, interrupt_before=[review])


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
    return g.compile(checkpointer=saver)


def _inner(edit: str | None) -> Any:
    g = StateGraph(_state(edit))
    asked = "approve" if edit == "rename" else "ask"
    g.add_node(asked, _asker(edit))
    g.add_edge(START, asked)
    g.add_edge(asked, END)
    if edit == "new_node":
        g.add_node("audit", lambda s: {"notes": ["audited"]})
        g.add_edge(asked, "audit")
    return g.compile()


def nested(edit: str | None, saver: Any) -> Any:
    """A question two levels down: root -> ``outer`` (a subgraph) -> ``inner`` -> ask."""
    middle = StateGraph(_state(edit))
    middle.add_node("inner", _inner(edit))
    middle.add_edge(START, "inner")
    middle.add_edge("inner", END)
    root = StateGraph(_state(edit))
    outer = "outer2" if edit == "rename_subgraph" else "outer"
    root.add_node("prep", _prep)
    root.add_node(outer, middle.compile())
    root.add_edge(START, "prep")
    root.add_edge("prep", outer)
    root.add_edge(outer, END)
    return root.compile(checkpointer=saver)


def functional(edit: str | None, saver: Any) -> Any:
    def flow(topic: str) -> str:
        answer = interrupt(f"publish {topic}?")
        return ("new body: " if edit == "body" else "") + f"{topic}: {answer}"

    if edit == "rename":
        flow.__name__ = flow.__qualname__ = "publish"
    return entrypoint(checkpointer=saver)(flow)


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
