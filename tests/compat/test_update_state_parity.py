"""Issue 30, items 5 and 6: ``update_state`` on an ``@entrypoint`` before its first run,
and ``aupdate_state(as_node=...)`` whose node has an ``async`` conditional edge.

An entrypoint's graph has one node, so ``update_state`` without ``as_node`` stands in
for it, run or not (LangGraph picks a graph's only node): on a new thread it seeds
``previous``. An async conditional edge is awaited by ``aupdate_state`` and its
targets (a node name, ``Send`` packets, ``END``) scheduled, as LangGraph does.

Deliberate difference: sync ``update_state`` with an async conditional edge runs it on
an event loop of its own, as pausepoint's sync ``invoke`` runs async nodes and edges;
LangGraph raises ``TypeError`` ("No synchronous function provided") in both.
"""

import asyncio
import importlib
import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import SAVERS, Scenarios, catch, refused_resume, thread

scenario = Scenarios(savers=SAVERS, mask_task_ids=True)


def _snapshots(drive: Any, graph: Any, config: Any) -> list[Any]:
    """The history, newest first. The task results of a checkpoint that an update
    follows are left out: LangGraph files the update there too, pausepoint leaves the
    updated checkpoint as it was (docs/differences.md, tested in test_differences)."""
    history = drive.history(graph, config)
    updated = [False, *(s.metadata.get("source") == "update" for s in history)]
    return [_snapshot(s, results=not u) for s, u in zip(history, updated, strict=False)]


def _snapshot(s: Any, *, results: bool = True) -> Any:
    """What a snapshot says; a task's path to two parts (a ``Send`` task's third part,
    LangGraph's ``False``, is issue 30 item 9, tested in its own file)."""
    tasks = [(t.name, t.path[:2], t.interrupts, results and t.result) for t in s.tasks]
    return (s.values, s.next, s.metadata, tasks, s.interrupts, s.parent_config)


def _running_total(lib: Any, drive: Any) -> Any:
    entrypoint = importlib.import_module(f"{lib.name}.func").entrypoint

    @entrypoint(checkpointer=drive.saver())
    def running_total(n: int, *, previous: Any = None) -> int:
        return (previous or 0) + n

    return running_total


def _seeded(lib: Any, drive: Any, as_node: str | None) -> dict[str, Any]:
    g = _running_total(lib, drive)
    returned = catch(drive.update_state, g, thread(), 100, as_node)
    seeded = _snapshots(drive, g, thread())
    return {
        "returned": returned,
        "seeded": seeded,
        "state": drive.get_state(g, thread()),
        "invoked": catch(drive.invoke, g, 5, thread()),
        "history": _snapshots(drive, g, thread()),
    }


@scenario
def entrypoint_update_state_new_thread_default_node(lib, drive):
    return _seeded(lib, drive, None)


@scenario
def entrypoint_update_state_new_thread_named_node(lib, drive):
    return _seeded(lib, drive, "running_total")


@scenario
def entrypoint_update_state_new_thread_as_input(lib, drive):
    return _seeded(lib, drive, "__input__")


@scenario
def entrypoint_update_state_new_thread_refused(lib, drive):
    g = _running_total(lib, drive)
    return {
        "copy": catch(drive.update_state, g, thread(), None, "__copy__"),
        "start": catch(drive.update_state, g, thread(), 1, "__start__"),
        "unknown": catch(drive.update_state, g, thread(), 1, "bogus"),
        "history": _snapshots(drive, g, thread()),
    }


@scenario
def entrypoint_update_state_after_a_run(lib, drive):
    g = _running_total(lib, drive)
    first = drive.invoke(g, 1, thread())
    return {"first": first, **_seeded_again(drive, g)}


def _seeded_again(drive: Any, g: Any) -> dict[str, Any]:
    returned = drive.update_state(g, thread(), 100)
    return {
        "returned": returned,
        "invoked": drive.invoke(g, 5, thread()),
        "history": _snapshots(drive, g, thread()),
    }


@scenario.viewed(refused_resume("resumed", lambda record: record["state"].values))
def entrypoint_update_state_while_paused(lib, drive):
    """The update stands in for the paused node: nothing waits any more, so the resume
    is refused (docs/differences.md, bad resumes) where LangGraph returns the values."""
    entrypoint = importlib.import_module(f"{lib.name}.func").entrypoint

    @entrypoint(checkpointer=drive.saver())
    def ask(n: int, *, previous: Any = None) -> int:
        return (previous or 0) + lib.interrupt("how many?")

    paused = drive.invoke(ask, 1, thread())
    returned = catch(drive.update_state, ask, thread(), 100)
    return {
        "paused": paused,
        "returned": returned,
        "state": drive.get_state(ask, thread()),
        "resumed": catch(drive.invoke, ask, lib.Command(resume=7), thread(), message=True),
        "history": _snapshots(drive, ask, thread()),
    }


# --- item 6: async conditional edges ----------------------------------------------------


class Ticket(TypedDict, total=False):
    priority: int
    handled_by: Annotated[list[str], operator.add]


def _ticket_graph(lib: Any, drive: Any, route: Any, path_map: Any) -> Any:
    b = lib.StateGraph(Ticket)
    b.add_node("triage", lambda s: {"priority": s["priority"]})
    b.add_node("urgent", lambda s: {"handled_by": ["pager"]})
    b.add_node("normal", lambda s: {"handled_by": ["queue"]})
    b.add_edge(lib.START, "triage")
    b.add_conditional_edges("triage", route, path_map)
    return b.compile(checkpointer=drive.saver(), interrupt_after=["triage"])


def _rerouted(lib: Any, drive: Any, route: Any, path_map: Any, priority: int) -> dict[str, Any]:
    g = _ticket_graph(lib, drive, route, path_map)
    paused = drive.invoke(g, {"priority": 1}, thread())
    returned = catch(drive.update_state, g, thread(), {"priority": priority}, "triage")
    return {
        "paused": paused,
        "returned": returned,
        "state": _snapshot(drive.get_state(g, thread())),
        "resumed": catch(drive.invoke, g, None, thread()),
        "history": _snapshots(drive, g, thread()),
    }


async def _to_name(state: Ticket) -> str:
    return "urgent" if state["priority"] > 5 else "normal"


def _sends(lib: Any) -> Any:
    async def route(state: Ticket) -> Any:
        if state["priority"] > 5:
            return [lib.Send("urgent", {"priority": 1}), lib.Send("normal", {"priority": 2})]
        if state["priority"] > 2:
            return "normal"
        return lib.END

    return route


@scenario(drivers=("async",))
def aupdate_state_async_router_name(lib, drive):
    return _rerouted(lib, drive, _to_name, {"urgent": "urgent", "normal": "normal"}, 9)


@scenario(drivers=("async",))
def aupdate_state_async_router_without_path_map(lib, drive):
    return _rerouted(lib, drive, _to_name, None, 9)


@scenario(drivers=("async",))
def aupdate_state_async_router_sends(lib, drive):
    return _rerouted(lib, drive, _sends(lib), ["urgent", "normal", lib.END], 9)


@scenario(drivers=("async",))
def aupdate_state_async_router_end(lib, drive):
    return _rerouted(lib, drive, _sends(lib), ["urgent", "normal", lib.END], 0)


@scenario(drivers=("async",))
def abulk_update_state_async_router(lib, drive):
    g = _ticket_graph(lib, drive, _to_name, ["urgent", "normal"])
    drive.invoke(g, {"priority": 1}, thread())
    upd = importlib.import_module(f"{lib.name}.types").StateUpdate
    supersteps = [[upd({"priority": 9}, "triage")], [upd({"handled_by": ["manual"]}, "urgent")]]
    returned = catch(drive.bulk_update_state, g, thread(), supersteps)
    return {"returned": returned, "history": _snapshots(drive, g, thread())}


def _sync_update_refused(record: Any) -> None:
    assert record["update"] == ("raised", "TypeError", None), record["update"]


def _sync_update_awaited(record: Any) -> None:
    assert record["next"] == ("urgent",), record
    assert record["resumed"] == {"handled_by": ["pager"], "priority": 9}, record


@scenario.differs(langgraph=_sync_update_refused, pausepoint=_sync_update_awaited)
def sync_update_state_with_async_router(lib, drive):
    g = _ticket_graph(lib, drive, _to_name, ["urgent", "normal"])
    drive.invoke(g, {"priority": 1}, thread()) if drive.is_async else asyncio.run(
        g.ainvoke({"priority": 1}, thread())
    )  # LangGraph's sync invoke refuses the async edge too
    if drive.is_async and drive.saver_kind == "sqlite":
        pytest.skip("an async SQLite saver has no sync methods to update with")
    record = {"update": catch(g.update_state, thread(), {"priority": 9}, as_node="triage")}
    record["next"] = g.get_state(thread()).next
    record["resumed"] = catch(g.invoke, None, thread())
    return record


test_scenario = scenario.test()
