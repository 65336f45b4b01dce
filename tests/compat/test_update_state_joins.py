"""``update_state`` as a node of a join (``add_edge(["work", "ask"], "sub")``).

The graph: ``START -> work | ask`` (``ask`` interrupts) ``-> sub`` (a subgraph that asks
too). An update as ``work`` or ``ask`` writes that node's arrival into the join's
barrier: on one side the join still waits for the other; with both sides (one
``bulk_update_state`` superstep, or two) ``invoke(None)`` runs ``sub``. Each scenario
updates the head (the run paused at ``ask``: a question pending in a sibling) or an
old checkpoint (the input one, whose barrier has received nothing yet: it crashed
pausepoint with "'_Missing' object is not iterable"), at the root or inside a
subgraph's namespace, and then drives the thread to its end: ``invoke(None)``, then
one resume per question. Deferred joins (``defer=True``) too: an update that leaves
nothing else to run releases them, as a run's step does.

Deliberate difference (docs/differences.md, "update_state leaves the checkpoint it
updates as it was"): an update as the paused ``ask`` on the head is filed by LangGraph
as ``ask``'s result in the checkpoint updated too; the view takes that out.
"""

import importlib
import operator
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import SAVERS, Scenarios, catch, thread
from ._subgraph_kit import chain, counted, observe
from .test_subgraph_parity_update import _as_written_into_parent  # pyright: ignore[reportPrivateUsage]

scenario = Scenarios(savers=SAVERS, mask_task_ids=True)


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _join(lib: Any, runs: Counter[str], *, defer: bool = False, **compile_kw: Any) -> Any:
    """``START -> work | ask -> sub -> END``; ``sub`` (a subgraph) asks ``"inner?"``."""
    inner = lib.StateGraph(Log)
    inner.add_node(
        "inner", counted(runs, "inner", lambda s: {"log": [f"i:{lib.interrupt('inner?')}"]})
    )
    inner.add_edge(lib.START, "inner")
    b = lib.StateGraph(Log)
    b.add_node("work", counted(runs, "work", lambda s: {"log": [f"w{len(s['log'])}"]}))
    b.add_node("ask", counted(runs, "ask", lambda s: {"log": [f"a:{lib.interrupt('ok?')}"]}))
    b.add_node("sub", inner.compile(), defer=defer)
    b.add_edge(lib.START, "work")
    b.add_edge(lib.START, "ask")
    b.add_edge(["work", "ask"], "sub")
    b.add_edge("sub", lib.END)
    return b.compile(**compile_kw)


def _graph(lib: Any, drive: Any, runs: Counter[str], depth: int, **kw: Any) -> Any:
    """The join graph ``depth`` levels down (0: the root), each level one node ``n<k>``."""
    if depth == 0:
        return _join(lib, runs, checkpointer=drive.saver(), **kw)
    graph = _join(lib, runs, **kw)
    for level in range(depth, 0, -1):
        b = lib.StateGraph(Log)
        b.add_node(f"n{level}", graph)
        b.add_edge(lib.START, f"n{level}")
        graph = b.compile(checkpointer=drive.saver()) if level == 1 else b.compile()
    return graph


def _target(drive: Any, g: Any, depth: int, where: str) -> Any:
    """The config to update: the join graph's head (paused at ``ask``) or its input
    checkpoint (``old``: nothing has reached the barrier there)."""
    head = drive.get_state(g, thread(), subgraphs=True)
    snapshot = chain(head)[depth - 1] if depth else head
    if where == "head":
        return snapshot.config
    conf = snapshot.config["configurable"]
    ns = thread(conf["thread_id"], checkpoint_ns=conf.get("checkpoint_ns", ""))
    return drive.history(g, ns)[-1].config


def _updated(
    lib: Any, drive: Any, steps: list[list[str]], *, where: str, depth: int = 0, **kw: Any
) -> dict[str, Any]:
    """Pause at ``ask``; update as the nodes of ``steps`` (one superstep each); then
    ``invoke(None)`` and answer every question until the run ends."""
    runs: Counter[str] = Counter()
    g = _graph(lib, drive, runs, depth, **kw)
    first = drive.invoke(g, {"log": ["x"]}, thread())
    config = _target(drive, g, depth, where)
    runs.clear()
    if len(steps) == 1 and len(steps[0]) == 1:
        returned = catch(drive.update_state, g, config, {"log": ["f"]}, steps[0][0])
    else:
        upd = importlib.import_module(f"{lib.name}.types").StateUpdate
        supersteps = [[upd({"log": [f"f{n}"]}, n) for n in step] for step in steps]
        returned = catch(drive.bulk_update_state, g, config, supersteps)
    record: dict[str, Any] = {
        "first": first,
        "returned": returned,
        "updated": observe(drive, g, thread()),
    }
    results = [catch(drive.invoke, g, None, thread())]
    for answer in ("r1", "r2", "r3"):
        if not (isinstance(results[-1], dict) and "__interrupt__" in results[-1]):
            break
        results.append(catch(drive.invoke, g, lib.Command(resume=answer), thread()))
    return {**record, "results": results, "end": observe(drive, g, thread()), "runs": dict(runs)}


# --- at the root ------------------------------------------------------------------------


@scenario
def join_update_old_as_one_side(lib, drive):
    return _updated(lib, drive, [["work"]], where="old")


@scenario
def join_update_old_as_the_paused_side(lib, drive):
    return _updated(lib, drive, [["ask"]], where="old")


@scenario
def join_update_head_as_one_side_sibling_pending(lib, drive):
    return _updated(lib, drive, [["work"]], where="head")


@scenario.viewed(_as_written_into_parent("ask", {"log": ["f"]}))
def join_update_head_as_the_paused_side(lib, drive):
    return _updated(lib, drive, [["ask"]], where="head")


@scenario
def join_bulk_old_both_sides_one_superstep(lib, drive):
    return _updated(lib, drive, [["work", "ask"]], where="old")


@scenario.viewed(_as_written_into_parent("ask", {"log": ["fask"]}))
def join_bulk_head_both_sides_one_superstep(lib, drive):
    return _updated(lib, drive, [["work", "ask"]], where="head")


@scenario
def join_bulk_old_one_side_per_superstep(lib, drive):
    return _updated(lib, drive, [["work"], ["ask"]], where="old")


@scenario
def join_deferred_update_old_as_one_side(lib, drive):
    return _updated(lib, drive, [["work"]], where="old", defer=True)


@scenario
def join_deferred_bulk_old_both_sides(lib, drive):
    return _updated(lib, drive, [["work", "ask"]], where="old", defer=True)


@scenario.viewed(_as_written_into_parent("ask", {"log": ["fask"]}))
def join_deferred_bulk_head_both_sides(lib, drive):
    return _updated(lib, drive, [["work", "ask"]], where="head", defer=True)


@scenario
def join_deferred_update_head_as_one_side(lib, drive):
    return _updated(lib, drive, [["work"]], where="head", defer=True)


# --- inside a subgraph's namespace --------------------------------------------------------


@scenario
def join_in_subgraph_update_head_as_one_side(lib, drive):
    return _updated(lib, drive, [["work"]], where="head", depth=1)


@scenario
def join_in_subgraph_update_old_as_one_side(lib, drive):
    return _updated(lib, drive, [["work"]], where="old", depth=1)


@scenario.viewed(_as_written_into_parent("ask", {"log": ["fask"]}))
def join_in_subgraph_bulk_head_both_sides(lib, drive):
    return _updated(lib, drive, [["work", "ask"]], where="head", depth=1)


@scenario
def join_in_subgraph_depth2_update_head_as_one_side(lib, drive):
    return _updated(lib, drive, [["work"]], where="head", depth=2)


test_update_state_joins = scenario.test()
