"""Issue 30, item 3: ``durability="exit"`` (and its inheritance by subgraphs).

With ``"exit"`` a run saves nothing while it goes and, when it pauses, fails or ends,
its last checkpoint with that checkpoint's pending writes. LangGraph 1.1.6 counts among
those writes the results of the ``@task`` calls that finished (so a resume does not
run them again) and those of the step's finished sibling tasks; a subgraph run that
pauses or fails saves its own, and a stateful one (``checkpointer=True``) saves its
state whenever it ends, so its next run goes on from it. A parent's durability is
its subgraphs' too.

Every scenario runs with each durability and counts node and task bodies: what
finished never runs twice. It records what a user sees: results, streamed task
events, snapshots, histories and the checkpoints the saver holds, per namespace.
"""

import importlib
import operator
from collections import Counter
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import SAVERS, Scenarios, catch, mask_namespace, thread
from ._subgraph_kit import observe

scenario = Scenarios(savers=SAVERS, mask_task_ids=True)

DURABILITIES = ("sync", "async", "exit")


OWN_WRITES = frozenset({"__asked__", "__asked_span__", "__resume__", "__error__"})
"""Write channels where the two libraries store answers their own ways (DESIGN §4.1: an
answer is stored against the question it answers, ``__asked__`` tells which; LangGraph
also keeps the root's resume value for a question asked in a subgraph), and the
``__error__`` write with which pausepoint clears a ``@task`` call's saved failure when it
pauses (nothing fails in these scenarios); ``__asked_span__``, the span that asked, stored
only while traced (docs/observability.md)."""


def _saved(drive: Any, saver: Any) -> list[tuple[Any, ...]]:
    """What the saver holds: (namespace shape, source, step, writes' channels) per checkpoint."""
    rows = []
    for t in drive.list_checkpoints(saver):
        ns = t.config["configurable"]["checkpoint_ns"]
        writes = sorted({w[1] for w in t.pending_writes or ()} - OWN_WRITES)
        rows.append(
            (mask_namespace(ns) or ns, t.metadata.get("source"), t.metadata.get("step"), writes)
        )
    return sorted(rows, key=repr)


def _events(chunks: list[Any]) -> list[Any]:
    """``task_result`` debug events as (namespace depth, type, task name): what ran.

    (``task`` events, which a resume also sends for a finished sibling whose saved
    writes it reuses, are compared in tests/compat/test_resume_events.py.)
    """
    found = []
    for chunk in chunks:
        ns, event = chunk if isinstance(chunk, tuple) and len(chunk) == 2 else ((), chunk)
        if isinstance(event, dict) and event.get("type") == "task_result":
            found.append((len(ns), event["type"], event["payload"].get("name")))
    return found


def _results_shown(history: list[Any]) -> list[Any]:
    """``history`` with each task's ``result`` read as whether there is one.

    An entrypoint's history task shows its return value in LangGraph 1.1.6 and the
    entrypoint's channel values (``__end__``, ``__previous__``) in pausepoint: a
    difference of its own (not durability's), left to its own issue.
    """
    return [
        h._replace(tasks=tuple(t._replace(result=t.result is not None) for t in h.tasks))
        for h in history
    ]


# --- (a) @task results under "exit" ------------------------------------------------------


def _checkout(lib: Any, drive: Any, runs: Counter[str], parallel: bool) -> tuple[Any, Any]:
    func = importlib.import_module(f"{lib.name}.func")
    saver = drive.saver()

    @func.task
    def charge(amount: int) -> str:
        runs["charge"] += 1
        return f"receipt-{amount}"

    @func.task
    def ship(amount: int) -> str:
        runs["ship"] += 1
        return f"label-{receipt_of(amount).result()}"  # a call inside a call

    @func.task
    def receipt_of(amount: int) -> str:
        runs["receipt_of"] += 1
        return f"r{amount}"

    @func.entrypoint(checkpointer=saver)
    def checkout(amount: int) -> dict[str, Any]:
        runs["checkout"] += 1
        if parallel:
            first, second = charge(amount), ship(amount)
            receipt = [first.result(), second.result()]
        else:
            receipt = charge(amount).result()
        note = lib.interrupt("note for the courier?")
        return {"receipt": receipt, "note": note}

    return checkout, saver


def _task_results(lib: Any, drive: Any, parallel: bool) -> dict[str, Any]:
    rec: dict[str, Any] = {}
    for durability in DURABILITIES:
        runs: Counter[str] = Counter()
        g, saver = _checkout(lib, drive, runs, parallel)
        cfg = thread(durability)
        first = drive.invoke(g, 30, cfg, durability=durability)
        saved = _saved(drive, saver)
        chunks = drive.stream(
            g, lib.Command(resume="door"), cfg, stream_mode="debug", durability=durability
        )
        rec[durability] = {
            "first": first,
            "saved_at_pause": saved,
            "events_on_resume": _events(chunks),
            "runs": dict(runs),
            "state": drive.get_state(g, cfg),
            "history": _results_shown(drive.history(g, cfg)),
        }
    return rec


@scenario()
def task_result_kept_when_paused(lib, drive):
    return _task_results(lib, drive, parallel=False)


@scenario()
def parallel_and_nested_task_results_kept_when_paused(lib, drive):
    return _task_results(lib, drive, parallel=True)


def _paying(lib: Any, runs: Counter[str]) -> Any:
    """A graph node calls ``charge`` then ``confirm``, a task that asks itself."""
    func = importlib.import_module(f"{lib.name}.func")

    @func.task
    def charge(amount: int) -> str:
        runs["charge"] += 1
        return f"receipt-{amount}"

    @func.task
    def confirm(receipt: str) -> str:
        runs["confirm"] += 1
        return f"{receipt}:{lib.interrupt('confirm?')}"

    def pay(state: Log) -> dict[str, Any]:
        runs["pay"] += 1
        return {"log": [confirm(charge(30).result()).result()]}

    b = lib.StateGraph(Log)
    b.add_node("pay", pay)
    b.add_edge(lib.START, "pay")
    return b


def _node_calls(lib: Any, drive: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {}
    for durability in DURABILITIES:
        runs: Counter[str] = Counter()
        saver = drive.saver()
        g = _paying(lib, runs).compile(checkpointer=saver)
        cfg = thread(durability)
        first = drive.invoke(g, {"log": []}, cfg, durability=durability)
        saved = _saved(drive, saver)
        out = drive.invoke(g, lib.Command(resume="yes"), cfg, durability=durability)
        rec[durability] = {"first": first, "saved": saved, "out": out, "runs": dict(runs)}
    return rec


@scenario()
def node_task_calls_and_a_task_that_asks(lib, drive):
    return _node_calls(lib, drive)


# --- (b) a stateful subgraph's state under "exit" ----------------------------------------


class Counted(TypedDict, total=False):
    count: Annotated[int, operator.add]


class Rounds(TypedDict, total=False):
    rounds: int


def _counter_loop(lib: Any, drive: Any, depth: int, stateful: Any) -> tuple[Any, Any]:
    """``counter`` (``depth`` levels, the innermost adds 1) then ``again``, three rounds."""
    inner = lib.StateGraph(Counted)
    inner.add_node("inc", lambda s: {"count": 1})
    inner.add_edge(lib.START, "inc")
    graph = inner.compile(checkpointer=stateful)
    for _ in range(depth - 1):
        b = lib.StateGraph(Counted)
        b.add_node("inner", graph)
        b.add_edge(lib.START, "inner")
        graph = b.compile(checkpointer=stateful)
    loop = lib.StateGraph(Rounds)
    loop.add_node("counter", graph)
    loop.add_node("again", lambda s: {"rounds": s.get("rounds", 0) + 1})
    loop.add_edge(lib.START, "counter")
    loop.add_edge("counter", "again")
    loop.add_conditional_edges("again", lambda s: "counter" if s["rounds"] < 3 else lib.END)
    saver = drive.saver()
    return loop.compile(checkpointer=saver), saver


def _counting(lib: Any, drive: Any, depth: int, stateful: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {}
    for durability in DURABILITIES:
        g, saver = _counter_loop(lib, drive, depth, stateful)
        cfg = thread(durability)
        seen = []
        for _ in range(2):  # two parent runs, three subgraph entries each
            for ns, values in drive.stream(
                g, {"rounds": 0}, cfg, subgraphs=True, stream_mode="values", durability=durability
            ):
                if len(ns) == depth:
                    seen.append(values.get("count"))
        rec[durability] = {
            "seen": seen,
            "saved": _saved(drive, saver),
            "history": drive.history(g, cfg),
            "sub_history": catch(drive.history, g, thread(durability, checkpoint_ns="counter")),
        }
    return rec


@scenario()
def stateful_subgraph_saves_its_end_depth1(lib, drive):
    return _counting(lib, drive, 1, True)


@scenario()
def stateful_subgraph_saves_its_end_depth2(lib, drive):
    return _counting(lib, drive, 2, True)


@scenario()
def stateful_subgraph_saves_its_end_depth3(lib, drive):
    return _counting(lib, drive, 3, True)


@scenario()
def per_task_subgraph_saves_nothing_at_its_end_depth2(lib, drive):
    return _counting(lib, drive, 2, None)


# --- (c) a subgraph that pauses, and finished siblings, under each durability ------------


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _paused_deep(lib: Any, drive: Any, runs: Counter[str], depth: int, stateful: Any) -> Any:
    """Root ``fan`` -> (``done`` || ``sub``) where ``sub`` is ``depth`` levels of
    ``step<k>`` then the next level, the innermost asking after ``work``."""

    def counted(tag: str, fn: Any) -> Any:
        def node(state: Any) -> Any:
            runs[tag] += 1
            return fn(state)

        return node

    inner = lib.StateGraph(Log)
    inner.add_node("work", counted("work", lambda s: {"log": ["work"]}))
    inner.add_node("ask", counted("ask", lambda s: {"log": [lib.interrupt("ok?")]}))
    inner.add_edge(lib.START, "work")
    inner.add_edge("work", "ask")
    graph = inner.compile(checkpointer=stateful)
    for k in range(depth - 1, 0, -1):
        b = lib.StateGraph(Log)
        b.add_node(f"step{k}", counted(f"step{k}", lambda s, k=k: {"log": [f"step{k}"]}))
        b.add_node(f"sub{k + 1}", graph)
        b.add_edge(lib.START, f"step{k}")
        b.add_edge(f"step{k}", f"sub{k + 1}")
        graph = b.compile(checkpointer=stateful)
    root = lib.StateGraph(Log)
    root.add_node("fan", counted("fan", lambda s: {"log": ["fan"]}))
    root.add_node("done", counted("done", lambda s: {"log": ["done"]}))
    root.add_node("sub1", graph)
    root.add_edge(lib.START, "fan")
    root.add_edge("fan", "done")
    root.add_edge("fan", "sub1")
    return root


def _paused(lib: Any, drive: Any, depth: int, stateful: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {}
    for durability in DURABILITIES:
        runs: Counter[str] = Counter()
        saver = drive.saver()
        g = _paused_deep(lib, drive, runs, depth, stateful).compile(checkpointer=saver)
        cfg = thread(durability)
        first = drive.invoke(g, {"log": []}, cfg, durability=durability)
        at_pause = {"saved": _saved(drive, saver), "seen": observe(drive, g, cfg)}
        chunks = drive.stream(
            g,
            lib.Command(resume="yes"),
            cfg,
            stream_mode=["updates", "debug"],
            subgraphs=True,
            durability=durability,
        )
        rec[durability] = {
            "first": first,
            "at_pause": at_pause,
            "resumed": [c for c in chunks if c[1] == "updates"],
            "events": _events([(c[0], c[2]) for c in chunks if c[1] == "debug"]),
            "runs": dict(runs),
            "saved": _saved(drive, saver),
            "end": observe(drive, g, cfg),
        }
    return rec


@scenario()
def paused_subgraph_and_finished_sibling_depth1(lib, drive):
    return _paused(lib, drive, 1, None)


@scenario()
def paused_subgraph_and_finished_sibling_depth2(lib, drive):
    return _paused(lib, drive, 2, None)


@scenario()
def paused_subgraph_and_finished_sibling_depth3(lib, drive):
    return _paused(lib, drive, 3, None)


@scenario()
def paused_stateful_subgraph_and_finished_sibling_depth2(lib, drive):
    return _paused(lib, drive, 2, True)


test_durability_exit = scenario.test()
