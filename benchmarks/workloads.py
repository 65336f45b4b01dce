"""The graph workloads and the registry of every workload.

Each workload is written once against a library namespace (see ``cases``) so the
same graph code runs on pausepoint and on LangGraph 1.1.6, and once as plain Python
(the floor). ``scale`` adds the many-threads and growing-state workloads,
``startup`` the fresh-interpreter ones (import time, cold start), ``throughput``
resumes per second with several worker processes on one database.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import deploycheck
import large
import pending
import scale
import startup
import throughput
from cases import (
    BASE,
    DATABASE,
    FAN_OUT,
    FLOOR,
    IMPLIED,
    IMPORT,
    LIBRARIES,
    OVERHEAD,
    Case,
    Target,
    Workload,
    ask_graph,
    config,
    drop,
    expect,
    forget,
    load_library,
    open_saver,
)

__all__ = [
    "BASE",
    "FLOOR",
    "LIBRARIES",
    "QUICK",
    "FULL",
    "WORKLOADS",
    "Case",
    "Workload",
    "make_case",
]


# --------------------------------------------------------------------------- chain


class ChainState(TypedDict):
    count: int


def _step(state: ChainState) -> dict[str, int]:
    return {"count": state["count"] + 1}


def chain(n: int, saver: bool) -> Callable[[SimpleNamespace], Case]:
    def build(lib: SimpleNamespace) -> Case:
        builder = lib.StateGraph(ChainState)
        names = [f"n{k}" for k in range(n)]
        for name in names:
            builder.add_node(name, _step)
        for a, b in zip([lib.START, *names], [*names, lib.END], strict=True):
            builder.add_edge(a, b)
        checkpointer = lib.memory_saver() if saver else None
        graph = builder.compile(checkpointer=checkpointer)
        return Case(
            run=lambda i: graph.invoke({"count": 0}, config(i, n + 10)),
            check=lambda out: expect("count", out.get("count"), n),
            cleanup=forget(checkpointer),
        )

    return build


def chain_floor(n: int, saver: bool) -> Callable[[], Case]:
    # The same node function and dict merge per step; with a "saver", a copy of the
    # state per step goes into a dict store, as a checkpoint would.
    def build() -> Case:
        store: dict[str, list[dict[str, int]]] = {}

        def run(i: int) -> dict[str, int]:
            state: dict[str, int] = {"count": 0}
            history = store.setdefault(f"t{i}", []) if saver else None
            for _ in range(n):
                state = {**state, **_step(state)}  # type: ignore[arg-type]
                if history is not None:
                    history.append(dict(state))
            return state

        return Case(
            run=run,
            check=lambda out: expect("count", out["count"], n),
            cleanup=drop(store),
        )

    return build


# --------------------------------------------------------------------------- fan-out


class FanState(TypedDict):
    out: Annotated[list[Any], operator.add]
    total: int


def _fan_graph(lib: SimpleNamespace, k: int, branch: Callable[[int], Any], saver: bool) -> Any:
    builder = lib.StateGraph(FanState)
    names = [f"b{j}" for j in range(k)]
    for j, name in enumerate(names):
        builder.add_node(name, branch(j))
        builder.add_edge(lib.START, name)
    builder.add_node("join", lambda s: {"total": sum(s["out"])})
    builder.add_edge(names, "join")
    builder.add_edge("join", lib.END)
    return builder.compile(checkpointer=lib.memory_saver() if saver else None)


def fanout(k: int, saver: bool) -> Callable[[SimpleNamespace], Case]:
    def build(lib: SimpleNamespace) -> Case:
        def branch(j: int) -> Callable[[Any], dict[str, Any]]:
            return lambda s: {"out": [j]}

        graph = _fan_graph(lib, k, branch, saver)
        return Case(
            run=lambda i: graph.invoke({"out": [], "total": 0}, config(i)),
            check=lambda out: expect("total", out.get("total"), k * (k - 1) // 2),
            cleanup=forget(graph.checkpointer),
        )

    return build


def fanout_floor(k: int, saver: bool) -> Callable[[], Case]:
    def build() -> Case:
        store: dict[str, list[dict[str, Any]]] = {}

        def run(i: int) -> dict[str, Any]:
            state: dict[str, Any] = {"out": [], "total": 0}
            updates = [{"out": [j]} for j in range(k)]
            for update in updates:
                state = {**state, "out": state["out"] + update["out"]}
            state = {**state, "total": sum(state["out"])}
            if saver:
                store[f"t{i}"] = [dict(state), dict(state)]
            return state

        return Case(
            run=run,
            check=lambda out: expect("total", out["total"], k * (k - 1) // 2),
            cleanup=drop(store),
        )

    return build


# --------------------------------------------------------------------------- interrupts


def roundtrip(lib: SimpleNamespace, kind: str = "memory") -> Case:
    runs = [0]
    saver = open_saver(lib, kind)
    graph = ask_graph(lib, saver, runs)
    prefix = f"{lib.name}-{os.getpid()}-"

    def run(i: int) -> tuple[Any, Any]:
        cfg = config(f"{prefix}{i}")
        paused = graph.invoke({"question": "ok?", "answer": ""}, cfg)
        return paused, graph.invoke(lib.Command(resume="yes"), cfg)

    def check(out: tuple[Any, Any]) -> str | None:
        paused, done = out
        pending = [x.value for x in paused.get("__interrupt__", [])]
        return expect("interrupts", pending, ["ok?"]) or expect(
            "answer", (done.get("answer"), "__interrupt__" in done), ("yes", False)
        )

    def cleanup(i: int) -> None:
        saver.delete_thread(f"t{prefix}{i}")

    return Case(run=run, check=check, cleanup=cleanup, node_runs=runs)


def roundtrip_floor() -> Case:
    # Pause: save the state and the question in a dict store; resume: load, answer.
    store: dict[str, dict[str, Any]] = {}

    def run(i: int) -> dict[str, str]:
        state = {"question": "ok?", "answer": ""}
        store[f"t{i}"] = {"state": dict(state), "pending": state["question"]}
        saved = store[f"t{i}"]
        return {**saved["state"], "answer": "yes"}

    return Case(
        run=run,
        check=lambda out: expect("answer", out["answer"], "yes"),
        cleanup=drop(store),
    )


class SequenceState(TypedDict):
    answers: list[Any]


def interrupt_sequence(n: int, kind: str = "memory") -> Callable[[SimpleNamespace], Case]:
    """One node asks ``n`` questions in a row; one invoke to start, ``n`` resumes.

    Each resume runs the node again from the top, and its earlier ``interrupt()``
    calls return their saved answers (both libraries), so node runs are ``n + 1``
    and a resume costs more the further the node has got.
    """

    def build(lib: SimpleNamespace) -> Case:
        runs = [0]

        def ask(state: SequenceState) -> dict[str, list[Any]]:
            runs[0] += 1
            return {"answers": [lib.interrupt(q) for q in range(n)]}

        builder = lib.StateGraph(SequenceState)
        builder.add_node("ask", ask)
        builder.add_edge(lib.START, "ask")
        builder.add_edge("ask", lib.END)
        saver = open_saver(lib, kind)
        graph = builder.compile(checkpointer=saver)
        prefix = f"{lib.name}-{os.getpid()}-"  # a database may outlive the process

        def run(i: int) -> tuple[list[Any], Any]:
            cfg = config(f"{prefix}{i}")
            out = graph.invoke({"answers": []}, cfg)
            asked: list[Any] = []
            while "__interrupt__" in out:
                (pending,) = out["__interrupt__"]
                asked.append(pending.value)
                out = graph.invoke(lib.Command(resume=pending.value * 2), cfg)
            return asked, out

        def check(result: tuple[list[Any], Any]) -> str | None:
            asked, out = result
            return expect("questions", asked, list(range(n))) or expect(
                "answers", out.get("answers"), [q * 2 for q in range(n)]
            )

        def cleanup(i: int) -> None:
            saver.delete_thread(f"t{prefix}{i}")

        return Case(run=run, check=check, cleanup=cleanup, node_runs=runs)

    return build


def interrupt_sequence_floor(n: int) -> Callable[[], Case]:
    # Per question: save the state and the question in a dict store; per answer:
    # load them, keep the answer.
    def build() -> Case:
        store: dict[str, dict[str, Any]] = {}

        def run(i: int) -> dict[str, Any]:
            answers: list[Any] = []
            for q in range(n):
                store[f"t{i}"] = {"state": {"answers": list(answers)}, "pending": q}
                saved = store[f"t{i}"]
                answers = [*saved["state"]["answers"], saved["pending"] * 2]
            return {"answers": answers}

        return Case(
            run=run,
            check=lambda out: expect("answers", out["answers"], [q * 2 for q in range(n)]),
            cleanup=drop(store),
        )

    return build


def fan_interrupt(k: int, one_by_one: bool) -> Callable[[SimpleNamespace], Case]:
    """K branches from START, each interrupts; resume by id map all at once or one by one."""

    def build(lib: SimpleNamespace) -> Case:
        runs = [0]

        def branch(j: int) -> Callable[[Any], dict[str, Any]]:
            def node(state: FanState) -> dict[str, Any]:
                runs[0] += 1  # under the GIL; an occasional lost count only blurs the report
                return {"out": [lib.interrupt(j)]}

            return node

        graph = _fan_graph(lib, k, branch, saver=True)

        def run(i: int) -> tuple[int, Any]:
            cfg = config(i)
            pending = graph.invoke({"out": [], "total": 0}, cfg)["__interrupt__"]
            answers = {p.id: p.value * 2 for p in pending}
            if not one_by_one:
                return len(pending), graph.invoke(lib.Command(resume=answers), cfg)
            out: Any = None
            for interrupt_id, value in answers.items():
                out = graph.invoke(lib.Command(resume={interrupt_id: value}), cfg)
            return len(pending), out

        def check(result: tuple[int, Any]) -> str | None:
            n_pending, out = result
            return expect("pending interrupts", n_pending, k) or expect(
                "total", (out.get("total"), "__interrupt__" in out), (k * (k - 1), False)
            )

        return Case(run=run, check=check, cleanup=forget(graph.checkpointer), node_runs=runs)

    return build


def fan_interrupt_floor(k: int, one_by_one: bool) -> Callable[[], Case]:
    # K pending questions in a dict store; each answer pops one; the join sums.
    def build() -> Case:
        store: dict[str, dict[int, Any]] = {}

        def run(i: int) -> dict[str, Any]:
            pending = store.setdefault(f"t{i}", {j: j for j in range(k)})
            answers: dict[int, Any] = {}
            batches = [[j] for j in range(k)] if one_by_one else [list(range(k))]
            for batch in batches:
                for j in batch:
                    answers[j] = pending.pop(j) * 2
            return {"out": list(answers.values()), "total": sum(answers.values())}

        return Case(
            run=run,
            check=lambda out: expect("total", out["total"], k * (k - 1)),
            cleanup=drop(store),
        )

    return build


# --------------------------------------------------------------------------- registry


def _database_kinds() -> list[str]:
    # PostgreSQL needs a server: .ci/run and `make bench` with PAUSEPOINT_PG_URL set.
    return ["sqlite", "postgres"] if os.environ.get("PAUSEPOINT_PG_URL") else ["sqlite"]


def _graph_workloads() -> list[Workload]:
    found: list[Workload] = []
    for n in (10, 100):
        for saver, tag in ((False, "none"), (True, "memory")):
            summary = f"a chain of {n} nodes, each adding 1 to an int; checkpointer: {tag}"
            found.append(
                Workload(
                    f"chain-{n}/{tag}", summary, chain(n, saver), chain_floor(n, saver), OVERHEAD
                )
            )
    for saver, tag in ((False, "none"), (True, "memory")):
        summary = f"10 nodes from START in one superstep, joined by one node; checkpointer: {tag}"
        found.append(
            Workload(
                f"fanout-10/{tag}", summary, fanout(10, saver), fanout_floor(10, saver), IMPLIED
            )
        )
    summary = "one node calls interrupt(); invoke pauses, Command(resume=...) finishes"
    found.append(Workload("interrupt-roundtrip", summary, roundtrip, roundtrip_floor, OVERHEAD))
    summary = "one node calls interrupt() 10 times in a row; 1 invoke to start, 10 resumes"
    found.append(
        Workload(
            "interrupt-sequence-10",
            summary,
            interrupt_sequence(10),
            interrupt_sequence_floor(10),
            OVERHEAD,
        )
    )
    for kind in _database_kinds():
        found.append(
            Workload(
                f"roundtrip/{kind}",
                f"the interrupt round trip on each library's own {kind} saver",
                lambda lib, kind=kind: roundtrip(lib, kind),
                roundtrip_floor,
                DATABASE,
            )
        )
        found.append(
            Workload(
                f"sequence-10/{kind}",
                f"interrupt-sequence-10 on each library's own {kind} saver",
                interrupt_sequence(10, kind),
                interrupt_sequence_floor(10),
                DATABASE,
            )
        )
    for k in (10, 100):
        for one_by_one, tag in ((False, "by-map"), (True, "one-by-one")):
            how = "one id per invoke, K invokes" if one_by_one else "one id map, one invoke"
            target = FAN_OUT if k == 100 and one_by_one else IMPLIED
            found.append(
                Workload(
                    f"fan-interrupt-{k}/{tag}",
                    f"{k} branches from START each interrupt; resumed {how}",
                    fan_interrupt(k, one_by_one),
                    fan_interrupt_floor(k, one_by_one),
                    target,
                )
            )
    return found


def _scale_workloads() -> list[Workload]:
    found: list[Workload] = []
    for n, rounds in ((1000, 3), (20, None)):
        found.append(
            Workload(
                f"threads-{n}",
                f"{n} threads each paused by interrupt() on one in-memory saver, then all "
                "resumed; time for all, and memory (see the memory table)",
                scale.threads(n),
                scale.threads_floor(n),
                IMPLIED,
                rounds=rounds,
            )
        )
    for total, tags in ((10_000, ("none", "memory")), (1_000, ("memory",))):
        for tag in tags:
            found.append(
                Workload(
                    f"list-{total}/{tag}",
                    f"an operator.add list grown to {total:,} items by 100 items a step "
                    f"({total // 100} chained nodes); checkpointer: {tag}",
                    scale.list_growth(total, tag == "memory"),
                    scale.list_growth_floor(total, tag == "memory"),
                    IMPLIED,
                )
            )
    return found


def _startup_workloads() -> list[Workload]:
    return [
        Workload(
            "import",
            "python -X importtime: cumulative µs of the top-level imports of the everyday "
            "names (StateGraph, START, END, interrupt, Command, InMemorySaver)",
            startup.import_time,
            None,
            IMPORT,
            by_name=True,
        ),
        Workload(
            "cold-start",
            "wall time of a fresh interpreter that imports, builds a 3-node graph and "
            "invokes it once; floor: python -c pass",
            startup.cold_start,
            startup.cold_start_floor,
            Target(0.1, "import of the everyday names", explicit=False),
            by_name=True,
        ),
    ]


PENDING = Target(0.1, "issue 20: first page of 50 of 10,000 waiting in < 20 ms", explicit=False)
PENDING_SIZES = ((100_000, 10_000), (1_000, 100))
"""Threads, of which waiting: the issue's size, and the quick one."""


def _pending_workloads() -> list[Workload]:
    return [
        Workload(
            f"pending-{total}/{kind}",
            f"{total:,} threads on one {kind} saver, {waiting:,} waiting on a question: "
            "the first page of 50 (pausepoint: list_pending; LangGraph: a scan of list())",
            pending.pending(total, waiting, kind),
            pending.pending_floor(total, waiting, kind),
            PENDING,
            rounds=1 if total > 10_000 else None,
        )
        for total, waiting in PENDING_SIZES
        for kind in _database_kinds()
    ]


CHECK = Target(0.1, "issue 31: pausepoint check, 10 s per 10,000 waiting threads", explicit=False)
CHECK_SIZES = (10_000, 200)
"""Waiting threads: the issue's size, and the quick one."""


def _check_workloads() -> list[Workload]:
    return [
        Workload(
            f"check-{waiting}/{kind}/{edit}",
            f"`pausepoint check` (deploys.check_threads) over {waiting:,} threads waiting on "
            f"a question in {kind}: "
            + (
                "the graph that wrote them (same fingerprint: the fast path)"
                if edit == "same"
                else "a graph whose paused node was renamed (every thread read and listed)"
            ),
            deploycheck.check(waiting, kind, edit),
            deploycheck.check_floor(waiting),
            CHECK,
            rounds=3 if waiting > 1000 else None,
            pausepoint_only=True,
        )
        for waiting in CHECK_SIZES
        for kind in _database_kinds()
        for edit in ("same", "changed")
    ]


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in _graph_workloads()
    + _pending_workloads()
    + _check_workloads()
    + _scale_workloads()
    + _startup_workloads()
    + throughput.workloads(_database_kinds())
    + large.workloads(_database_kinds())
}
QUICK = ["chain-10/none", "chain-10/memory", "fanout-10/none", "interrupt-roundtrip"]
QUICK += ["interrupt-sequence-10", "fan-interrupt-10/by-map", "fan-interrupt-10/one-by-one"]
QUICK += [name for name in WORKLOADS if name.startswith(("roundtrip/", "sequence-10/"))]
_QUICK_THROUGHPUT = [f"throughput-{throughput.QUICK_SHAPE[0]}/{k}" for k in _database_kinds()]
# One large value, small (large.QUICK_MB): its write and read on every saver.
_QUICK_LARGE = [n for n in WORKLOADS if n.startswith(f"large-records-{large.QUICK_MB}mb/")]
QUICK += [
    "threads-20",
    "list-1000/memory",
    "import",
    "cold-start",
    *_QUICK_THROUGHPUT,
    *_QUICK_LARGE,
]
_QUICK_PENDING = [n for n in WORKLOADS if n.startswith(f"pending-{PENDING_SIZES[1][0]}/")]
_QUICK_PENDING += [n for n in WORKLOADS if n.startswith(f"check-{CHECK_SIZES[1]}/")]
QUICK += _QUICK_PENDING
_QUICK_ONLY = {"threads-20", "list-1000/memory", *_QUICK_THROUGHPUT, *large.quick_only(WORKLOADS)}
_QUICK_ONLY |= set(_QUICK_PENDING)
FULL = [name for name in WORKLOADS if name not in _QUICK_ONLY]


def make_case(library: str, workload: str) -> Case:
    """Build the case for ``workload`` on ``library`` (or on the plain-Python floor)."""
    spec = WORKLOADS[workload]
    if library == FLOOR:
        if spec.floor is None:
            raise ValueError(f"workload {workload!r} has no plain-Python floor")
        return spec.floor()
    if spec.by_name:
        return spec.build(library)
    return spec.build(load_library(library))
