"""A ``Send`` task's path is LangGraph's ``("__pregel_push", idx, False)`` everywhere.

In snapshots and history (``PregelTask.path``), in the node's
``config["metadata"]["langgraph_path"]``, in ``debug``/``tasks`` stream events, and in
the state of a subgraph whose own ``Send``s paused (depth 1 and 2). The path is not
part of a task's id: the ids of ``Send`` tasks (and so their interrupt ids) are pinned
below, so a thread paused before the trailing ``False`` was added still resumes.
"""

import operator
import sqlite3
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.config import get_config
from pausepoint.constants import PUSH
from pausepoint.graph import START, StateGraph
from pausepoint.loop.tasks import task_id, task_ns
from pausepoint.types import Command, Interrupt, Send, interrupt

from ._harness import SAVERS, Scenarios, thread

scenario = Scenarios(savers=SAVERS)


class Batch(TypedDict, total=False):
    files: list[str]
    paths: Annotated[list[Any], operator.add]


def fan_out(lib: Any, *, ask: bool = True) -> Any:
    """``review`` per file through ``Send``; each records the path its config names."""

    def review(arg: dict[str, Any]) -> dict[str, Any]:
        path = lib.get_config()["metadata"]["langgraph_path"]
        if ask:
            lib.interrupt(f"publish {arg['file']}?")
        return {"paths": [(arg["file"], path)]}

    b = lib.StateGraph(Batch)
    b.add_node("review", review)
    b.add_conditional_edges(
        lib.START, lambda s: [lib.Send("review", {"file": f}) for f in s["files"]], ["review"]
    )
    return b


def nested(lib: Any, depth: int) -> Any:
    """``fan_out`` as a subgraph ``depth`` levels down (a builder, to compile)."""
    b = fan_out(lib)
    for level in range(depth):
        inner = b.compile()
        b = lib.StateGraph(Batch)
        b.add_node(f"level{level}", inner)
        b.add_edge(lib.START, f"level{level}")
    return b


def paths_of(snapshot: Any) -> list[Any]:
    """Every task path of a snapshot, its subgraph tasks' state included."""
    out: list[Any] = []
    for t in snapshot.tasks:
        out.append((t.name, t.path))
        if t.state is not None and hasattr(t.state, "tasks"):
            out.append(paths_of(t.state))
    return out


@scenario
def send_paths_in_snapshots_and_config(lib, drive):
    g = fan_out(lib).compile(checkpointer=drive.saver())
    paused = drive.invoke(g, {"files": ["a", "b"]}, thread())
    state = drive.get_state(g, thread())
    ids = [i.id for i in state.interrupts]
    done = drive.invoke(g, lib.Command(resume=dict.fromkeys(ids, True)), thread())
    history = [[(t.name, t.path) for t in s.tasks] for s in drive.history(g, thread())]
    return {
        "paused": len(paused["__interrupt__"]),
        "paths": paths_of(state),
        "seen": sorted(done["paths"]),
        "history": history,
    }


@scenario
def send_paths_in_stream_events(lib, drive):
    g = fan_out(lib, ask=False).compile(checkpointer=drive.saver())
    return drive.stream(g, {"files": ["a", "b"]}, thread(), stream_mode=["debug", "tasks"])


@scenario
def send_paths_of_nested_subgraphs(lib, drive):
    out = {}
    for depth in (1, 2):
        g = nested(lib, depth).compile(checkpointer=drive.saver())
        config = thread(f"d{depth}")
        drive.invoke(g, {"files": ["a", "b"]}, config)
        state = drive.get_state(g, config, subgraphs=True)
        ids = [i.id for i in state.interrupts]
        done = drive.invoke(g, lib.Command(resume=dict.fromkeys(ids, True)), config)
        out[depth] = {"paths": paths_of(state), "seen": sorted(done["paths"])}
    return out


test_send_paths = scenario.test()


# --- task ids do not depend on the path ----------------------------------------------

CHECKPOINT = "1f0a0000-0000-6000-8000-000000000000"
PINNED = {
    # (namespace, Send index): (task id, interrupt id), as computed before the path
    # gained its trailing False.
    ("", 0): ("b3127053-3371-153f-4bb8-d6b6d5744a62", "3055d773b80017d55090018d021b246b"),
    ("", 1): ("b12c17ed-1054-b45b-a87d-910d691ccbfc", "440d3bd8a01af1801eb5afafb6b4758c"),
    ("outer:abc", 0): ("0b7c28aa-37bf-f7b2-afd0-10a1a74a357c", "e11964e949453935f147a57ecb9a27e2"),
    ("outer:abc", 1): ("4200abf2-a06d-8918-2528-3e5aed7532d3", "a33fba5b9c07ac2c35aa2992e7d0c4b8"),
}


@pytest.mark.parametrize(("ns", "idx"), list(PINNED))
def test_send_task_and_interrupt_ids_are_pinned(ns: str, idx: int) -> None:
    tid = task_id(CHECKPOINT, ns, 1, "review", PUSH, str(idx))
    assert (tid, Interrupt.from_ns(None, task_ns(ns, "review", tid)).id) == PINNED[ns, idx]


def _review(arg: dict[str, Any]) -> dict[str, Any]:
    answer = interrupt(f"publish {arg['file']}?")
    return {"paths": [(arg["file"], answer, get_config()["metadata"]["langgraph_path"])]}


def test_a_thread_paused_with_the_old_paths_resumes(tmp_path: Any) -> None:
    """The ids of a paused Send task follow the pinned formula, and writes stored with
    the old two-element path (``"('__pregel_push', 0)"``) resume as before."""
    b = StateGraph(Batch)
    b.add_node("review", _review)
    b.add_conditional_edges(START, lambda s: [Send("review", {"file": f}) for f in s["files"]])
    db = str(tmp_path / "old.db")
    with SqliteSaver.from_conn_string(db) as saver:
        g = b.compile(checkpointer=saver)
        g.invoke({"files": ["a", "b"]}, thread())
        state = g.get_state(thread())
        checkpoint_id = state.config["configurable"]["checkpoint_id"]
        for idx, task in enumerate(state.tasks):
            assert task.path == (PUSH, idx, False)
            assert task.id == task_id(checkpoint_id, "", 1, "review", PUSH, str(idx))
            assert task.interrupts[0].id == Interrupt.from_ns(None, f"review:{task.id}").id
    with sqlite3.connect(db) as conn:
        changed = conn.execute(
            "UPDATE pausepoint_writes SET task_path = replace(task_path, ', False)', ')')"
        ).rowcount
    assert changed > 0
    with SqliteSaver.from_conn_string(db) as saver:
        g = b.compile(checkpointer=saver)
        assert [t.id for t in g.get_state(thread()).tasks] == [t.id for t in state.tasks]
        answers = {i.id: i.value.split()[1] for i in state.interrupts}
        out = g.invoke(Command(resume=answers), thread())
    assert sorted(out["paths"]) == [
        ("a", "a?", (PUSH, 0, False)),
        ("b", "b?", (PUSH, 1, False)),
    ]
