"""Issue 30, item 2: a stateful subgraph (``compile(checkpointer=True)``) in a fork that
``update_state`` made, at depth 1, 2 and 3.

A root run given a checkpoint id loads each stateful subgraph, on its first run, as it
was at that point: its newest checkpoint older than a bound. LangGraph 1.1.6 bounds a
replay of an old checkpoint by that checkpoint's id, and a fork ``update_state`` wrote
(source ``"update"``) by the id of the checkpoint it edits — the fork is newer than
every later subgraph checkpoint, so its own id would load the newest, stale state.
``as_node="__copy__"`` (source ``"fork"``) is bounded by its own id, as there.

Each scenario records what a user sees: the continuation's result and the question it
asks, the state each subgraph node saw (a list the nodes append to), the nested head
snapshot, the root's and every subgraph namespace's history, and the answer's result.
"""

import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import SAVERS, Scenarios, catch, thread
from ._subgraph_kit import observe

scenario = Scenarios(savers=SAVERS, mask_task_ids=True)


class Root(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _level(k: int) -> Any:
    """Level ``k``'s state: one list of its own (``l<k>``), so nothing flows between levels."""
    return TypedDict(f"L{k}", {f"l{k}": Annotated[list[str], operator.add]}, total=False)


def _chat(lib: Any, drive: Any, depth: int, saw: list[Any]) -> Any:
    """Root ``greet -> sub1``; ``sub<k>`` runs ``m<k>`` then ``sub<k+1>``; the innermost,
    ``listen``, asks ``say`` and keeps the answers: every level is ``checkpointer=True``."""

    def listen(state: Any) -> dict[str, Any]:
        saw.append(("listen", dict(state)))
        return {f"l{depth}": [lib.interrupt("say")]}

    inner = lib.StateGraph(_level(depth))
    inner.add_node("listen", listen)
    inner.add_edge(lib.START, "listen")
    graph = inner.compile(checkpointer=True)
    for k in range(depth - 1, 0, -1):

        def mark(state: Any, k: int = k) -> dict[str, Any]:
            saw.append((f"m{k}", dict(state)))
            return {f"l{k}": [f"m{k}"]}

        b = lib.StateGraph(_level(k))
        b.add_node(f"m{k}", mark)
        b.add_node(f"sub{k + 1}", graph)
        b.add_edge(lib.START, f"m{k}")
        b.add_edge(f"m{k}", f"sub{k + 1}")
        graph = b.compile(checkpointer=True)
    root = lib.StateGraph(Root)
    root.add_node("greet", lambda s: {"log": ["hi"]})
    root.add_node("sub1", graph)
    root.add_edge(lib.START, "greet")
    root.add_edge("greet", "sub1")
    return root.compile(checkpointer=drive.saver())


def _two_runs(lib: Any, drive: Any, depth: int) -> tuple[Any, list[Any], Any]:
    """Two answered runs ("one", "two"); the config of run 2's checkpoint before ``sub1``."""
    saw: list[Any] = []
    g = _chat(lib, drive, depth, saw)
    for word in ("one", "two"):
        drive.invoke(g, {"log": []}, thread())
        drive.invoke(g, lib.Command(resume=word), thread())
    before = next(s for s in drive.history(g, thread()) if s.next == ("sub1",))
    saw.clear()
    return g, saw, before.config


def _continue(lib: Any, drive: Any, g: Any, saw: list[Any], start: Any) -> dict[str, Any]:
    """Run from ``start``, inspect, answer "three" on the thread, inspect again."""
    rec: dict[str, Any] = {"ran": catch(drive.invoke, g, None, start), "saw": list(saw)}
    rec["after_run"] = observe(drive, g, thread())
    saw.clear()
    rec["answered"] = catch(drive.invoke, g, lib.Command(resume="three"), thread())
    rec["saw_answered"] = list(saw)
    rec["head"] = observe(drive, g, thread())
    return rec


def _update_fork(lib: Any, drive: Any, depth: int, as_node: Any = None) -> dict[str, Any]:
    g, saw, old = _two_runs(lib, drive, depth)
    values = None if as_node == "__copy__" else {"log": ["edited"]}
    fork = drive.update_state(g, old, values, as_node=as_node)
    shown = drive.get_state(g, fork, subgraphs=True)  # before it runs
    return {"fork": fork, "shown": shown, **_continue(lib, drive, g, saw, fork)}


@scenario()
def update_fork_of_old_checkpoint_depth1(lib, drive):
    return _update_fork(lib, drive, 1)


@scenario()
def update_fork_of_old_checkpoint_depth2(lib, drive):
    return _update_fork(lib, drive, 2)


@scenario()
def update_fork_of_old_checkpoint_depth3(lib, drive):
    return _update_fork(lib, drive, 3)


@scenario()
def copy_fork_of_old_checkpoint_depth1(lib, drive):
    return _update_fork(lib, drive, 1, as_node="__copy__")


@scenario()
def copy_fork_of_old_checkpoint_depth3(lib, drive):
    return _update_fork(lib, drive, 3, as_node="__copy__")


def _stream_fork(lib: Any, drive: Any, depth: int) -> dict[str, Any]:
    """The fork continued with ``stream(subgraphs=True)``: every level's events."""
    g, saw, old = _two_runs(lib, drive, depth)
    fork = drive.update_state(g, old, {"log": ["edited"]})
    modes = ["updates", "values", "checkpoints"]
    events = drive.stream(g, None, fork, subgraphs=True, stream_mode=modes)
    return {"events": events, "saw": saw, "head": observe(drive, g, thread())}


@scenario()
def update_fork_streamed_depth2(lib, drive):
    return _stream_fork(lib, drive, 2)


def _fork_of_paused_head(lib: Any, drive: Any, depth: int, via_fork: bool) -> dict[str, Any]:
    """Run 3 pauses inside the subgraphs; ``update_state`` on the thread edits the head;
    the run goes on from the config it returned (``via_fork``) or from the thread."""
    g, saw, _ = _two_runs(lib, drive, depth)
    drive.invoke(g, {"log": []}, thread())
    fork = drive.update_state(g, thread(), {"log": ["edited"]})
    saw.clear()
    return {"fork": fork, **_continue(lib, drive, g, saw, fork if via_fork else thread())}


@scenario()
def update_paused_head_then_run_fork_config_depth1(lib, drive):
    return _fork_of_paused_head(lib, drive, 1, via_fork=True)


@scenario()
def update_paused_head_then_run_fork_config_depth2(lib, drive):
    return _fork_of_paused_head(lib, drive, 2, via_fork=True)


@scenario()
def update_paused_head_then_run_thread_depth2(lib, drive):
    return _fork_of_paused_head(lib, drive, 2, via_fork=False)


def _replay(lib: Any, drive: Any, depth: int) -> dict[str, Any]:
    """``invoke(None, old_config)``: a replay of run 2's checkpoint before ``sub1``."""
    g, saw, old = _two_runs(lib, drive, depth)
    rec: dict[str, Any] = {"ran": drive.invoke(g, None, old), "saw": list(saw)}
    rec["after_run"] = observe(drive, g, thread())
    return rec


@scenario()
def replay_old_checkpoint_depth1(lib, drive):
    return _replay(lib, drive, 1)


@scenario()
def replay_old_checkpoint_depth2(lib, drive):
    return _replay(lib, drive, 2)


@scenario()
def replay_old_checkpoint_depth3(lib, drive):
    return _replay(lib, drive, 3)


test_subgraph_parity_fork_depth = scenario.test()
