"""A subgraph's questions have one question id everywhere (issue 41, item 3).

``Interrupt.question_id`` is ``"<id>:<position>"``: the id of the task that asked
(LangGraph's ``Interrupt.id``, the digest of that task's namespace) and which of its
``interrupt()`` calls. For a question a subgraph asked (1 to 3 levels below the root)
the root's ``get_state(config).interrupts`` and ``tasks[*].interrupts`` showed no
position (the plain id), while ``list_pending`` guessed position 0, so the answer an
inbox sent to the second question was refused as a different answer to the first.
Now the output, both snapshots and ``list_pending`` give the same question id, in
every saver; answering by it, by the plain id, or by a stale question id behaves as
documented (docs/concepts.md#question-ids).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from tests.savers.test_pending import cfg, listed, saver

from pausepoint import Command, StateGraph, interrupt
from pausepoint.constants import START
from pausepoint.errors import AlreadyAnsweredError

__all__ = ["saver"]


class S(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _ask(state: S) -> S:
    return {"log": [f"{interrupt('first?')}+{interrupt('second?')}"]}


def build(saver: Any, depth: int) -> Any:
    """The asking node ``depth`` subgraphs below the root."""
    node: Any = _ask
    for level in range(depth + 1):
        b = StateGraph(S)
        b.add_node(f"level{level}", node)
        b.add_edge(START, f"level{level}")
        node = b.compile(checkpointer=saver) if level == depth else b.compile()
    return node


def _everywhere(graph: Any, saver: Any, thread: str, out: Any) -> set[str]:
    """The waiting question's id as every view gives it."""
    state = graph.get_state(cfg(thread))
    deep = graph.get_state(cfg(thread), subgraphs=True)
    while deep.tasks and deep.tasks[0].state is not None:
        deep = deep.tasks[0].state
    views = [
        [i.question_id for i in out["__interrupt__"]],
        [i.question_id for i in state.interrupts],
        [i.question_id for t in state.tasks for i in t.interrupts],
        [i.question_id for i in deep.interrupts],
        [q.question_id for q in listed(saver) if q.thread_id == thread],
    ]
    assert all(len(v) == 1 for v in views), views
    return {v[0] for v in views}


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_a_subgraph_question_has_one_question_id_and_answers_by_it(saver: Any, depth: int) -> None:
    graph = build(saver, depth)
    out = graph.invoke({"log": []}, cfg("q"))
    iid = out["__interrupt__"][0].id
    assert _everywhere(graph, saver, "q", out) == {f"{iid}:0"}
    (first,) = listed(saver)
    out = graph.invoke(Command(resume={first.question_id: "a"}), cfg("q"))
    assert _everywhere(graph, saver, "q", out) == {f"{iid}:1"}
    (second,) = listed(saver)
    assert (second.interrupt_id, second.position, second.value) == (iid, 1, "second?")

    # The first question's id again: the same answer changes nothing, another is refused.
    before = graph.get_state(cfg("q"))
    again = graph.invoke(Command(resume={first.question_id: "a"}), cfg("q"))
    assert [i.question_id for i in again["__interrupt__"]] == [second.question_id]
    with pytest.raises(AlreadyAnsweredError):
        graph.invoke(Command(resume={first.question_id: "other"}), cfg("q"))
    assert graph.get_state(cfg("q")).config == before.config  # nothing was written

    assert graph.invoke(Command(resume={second.question_id: "b"}), cfg("q")) == {"log": ["a+b"]}
    assert not listed(saver)


@pytest.mark.parametrize("depth", [1, 3])
def test_a_subgraph_question_answers_by_its_plain_interrupt_id(saver: Any, depth: int) -> None:
    graph = build(saver, depth)
    out = graph.invoke({"log": []}, cfg("p"))
    iid = out["__interrupt__"][0].id
    out = graph.invoke(Command(resume={iid: "a"}), cfg("p"))
    assert _everywhere(graph, saver, "p", out) == {f"{iid}:1"}
    assert graph.invoke(Command(resume={iid: "b"}), cfg("p")) == {"log": ["a+b"]}
