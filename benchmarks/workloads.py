"""Benchmark workloads, each written once against a library namespace.

A *library* is a namespace holding ``StateGraph, START, END, interrupt, Command,
InMemorySaver``, loaded from pausepoint or from LangGraph 1.1.6 by the same names, so
one function builds the same graph on either side. ``floor`` is not a graph library:
it is the same work done in plain Python (dict updates in a loop, a dict as the
store), so each ratio to it says how far a library is from the limit.

Every workload returns a :class:`Case`: ``run(i)`` does one timed iteration (``i`` is
unique per iteration, used as the thread id), ``check(result)`` returns an error
message or ``None``, ``cleanup(i)`` runs outside the timed region, and ``node_runs``
counts how many times a node body ran (to show re-execution on resume).
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

LIBRARIES = ("pausepoint", "langgraph")
FLOOR = "floor"


def load_library(name: str) -> SimpleNamespace:
    """Import the graph names of ``name`` (pausepoint or langgraph) into one namespace."""
    if name == "pausepoint":
        from pausepoint.checkpoint.memory import InMemorySaver
        from pausepoint.graph import END, START, StateGraph
        from pausepoint.types import Command, interrupt
    elif name == "langgraph":
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.graph import END, START, StateGraph
        from langgraph.types import Command, interrupt
    else:
        raise ValueError(f"unknown library {name!r}; expected one of {LIBRARIES}")
    return SimpleNamespace(
        name=name,
        StateGraph=StateGraph,
        START=START,
        END=END,
        interrupt=interrupt,
        Command=Command,
        InMemorySaver=InMemorySaver,
    )


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    run: Callable[[int], Any]
    check: Callable[[Any], str | None]
    cleanup: Callable[[int], None] = lambda i: None
    node_runs: list[int] = field(default_factory=lambda: [0])


@dataclass(frozen=True)
class Workload:
    name: str
    summary: str
    build: Callable[[SimpleNamespace], Case]
    floor: Callable[[], Case] | None = None


def _config(i: int, limit: int = 10_000) -> dict[str, Any]:
    return {"configurable": {"thread_id": f"t{i}"}, "recursion_limit": limit}


def _forget(saver: Any) -> Callable[[int], None]:
    # Drop each finished thread outside the timed region, so a long run does not
    # time a saver that grows with the iteration count.
    if saver is None:
        return lambda i: None
    return lambda i: saver.delete_thread(f"t{i}")


def _drop(store: dict[str, Any]) -> Callable[[int], None]:
    def cleanup(i: int) -> None:
        store.pop(f"t{i}", None)

    return cleanup


def _expect(what: str, got: Any, want: Any) -> str | None:
    return None if got == want else f"wrong result: {what} is {got!r}, expected {want!r}"


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
        checkpointer = lib.InMemorySaver() if saver else None
        graph = builder.compile(checkpointer=checkpointer)
        return Case(
            run=lambda i: graph.invoke({"count": 0}, _config(i, n + 10)),
            check=lambda out: _expect("count", out.get("count"), n),
            cleanup=_forget(checkpointer),
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
            check=lambda out: _expect("count", out["count"], n),
            cleanup=_drop(store),
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
    return builder.compile(checkpointer=lib.InMemorySaver() if saver else None)


def fanout(k: int, saver: bool) -> Callable[[SimpleNamespace], Case]:
    def build(lib: SimpleNamespace) -> Case:
        def branch(j: int) -> Callable[[Any], dict[str, Any]]:
            return lambda s: {"out": [j]}

        graph = _fan_graph(lib, k, branch, saver)
        return Case(
            run=lambda i: graph.invoke({"out": [], "total": 0}, _config(i)),
            check=lambda out: _expect("total", out.get("total"), k * (k - 1) // 2),
            cleanup=_forget(graph.checkpointer),
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
            check=lambda out: _expect("total", out["total"], k * (k - 1) // 2),
            cleanup=_drop(store),
        )

    return build


# --------------------------------------------------------------------------- interrupts


class AskState(TypedDict):
    question: str
    answer: str


def open_saver(lib: SimpleNamespace, kind: str) -> Any:
    """A saver of ``kind`` (memory, sqlite, postgres) from ``lib``'s own packages.

    SQLite uses a fresh file in a temporary directory; PostgreSQL uses
    ``PAUSEPOINT_PG_URL`` (each library keeps to its own tables).
    """
    if kind == "memory":
        return lib.InMemorySaver()
    if kind == "sqlite":
        import sqlite3
        import tempfile

        path = Path(tempfile.mkdtemp(prefix=f"bench-{lib.name}-")) / "bench.db"
        conn = sqlite3.connect(str(path), check_same_thread=False)
        if lib.name == "pausepoint":
            from pausepoint.checkpoint.sqlite import SqliteSaver

            return SqliteSaver(conn)
        from langgraph.checkpoint.sqlite import SqliteSaver as LGSqliteSaver

        return LGSqliteSaver(conn)
    return _postgres_saver(lib)


def _postgres_saver(lib: SimpleNamespace) -> Any:
    import psycopg
    from psycopg.rows import dict_row

    url = os.environ["PAUSEPOINT_PG_URL"]
    if lib.name == "pausepoint":
        from pausepoint.checkpoint.postgres import PostgresSaver

        saver = PostgresSaver(psycopg.connect(url, autocommit=True, prepare_threshold=None))
    else:
        from langgraph.checkpoint.postgres import PostgresSaver as LGPostgresSaver

        conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        saver = LGPostgresSaver(conn)  # pyright: ignore[reportArgumentType]
    saver.setup()
    return saver


def roundtrip(lib: SimpleNamespace, kind: str = "memory") -> Case:
    runs = [0]

    def ask(state: AskState) -> dict[str, str]:
        runs[0] += 1
        return {"answer": lib.interrupt(state["question"])}

    builder = lib.StateGraph(AskState)
    builder.add_node("ask", ask)
    builder.add_edge(lib.START, "ask")
    builder.add_edge("ask", lib.END)
    saver = open_saver(lib, kind)
    graph = builder.compile(checkpointer=saver)
    prefix = f"{lib.name}-{os.getpid()}-"

    def run(i: int) -> tuple[Any, Any]:
        config = _config(i)
        config["configurable"]["thread_id"] = prefix + config["configurable"]["thread_id"]
        paused = graph.invoke({"question": "ok?", "answer": ""}, config)
        return paused, graph.invoke(lib.Command(resume="yes"), config)

    def check(out: tuple[Any, Any]) -> str | None:
        paused, done = out
        pending = [x.value for x in paused.get("__interrupt__", [])]
        return _expect("interrupts", pending, ["ok?"]) or _expect(
            "answer", (done.get("answer"), "__interrupt__" in done), ("yes", False)
        )

    def cleanup(i: int) -> None:
        saver.delete_thread(f"{prefix}t{i}")

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
        check=lambda out: _expect("answer", out["answer"], "yes"),
        cleanup=_drop(store),
    )


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
            config = _config(i)
            pending = graph.invoke({"out": [], "total": 0}, config)["__interrupt__"]
            answers = {p.id: p.value * 2 for p in pending}
            if not one_by_one:
                return len(pending), graph.invoke(lib.Command(resume=answers), config)
            out: Any = None
            for interrupt_id, value in answers.items():
                out = graph.invoke(lib.Command(resume={interrupt_id: value}), config)
            return len(pending), out

        def check(result: tuple[int, Any]) -> str | None:
            n_pending, out = result
            return _expect("pending interrupts", n_pending, k) or _expect(
                "total", (out.get("total"), "__interrupt__" in out), (k * (k - 1), False)
            )

        return Case(run=run, check=check, cleanup=_forget(graph.checkpointer), node_runs=runs)

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
            check=lambda out: _expect("total", out["total"], k * (k - 1)),
            cleanup=_drop(store),
        )

    return build


# --------------------------------------------------------------------------- registry


def _all() -> list[Workload]:
    found: list[Workload] = []
    for n in (10, 100):
        for saver, tag in ((False, "none"), (True, "memory")):
            found.append(
                Workload(
                    f"chain-{n}/{tag}",
                    f"a chain of {n} nodes, each adding 1 to an int; checkpointer: {tag}",
                    chain(n, saver),
                    chain_floor(n, saver),
                )
            )
    for saver, tag in ((False, "none"), (True, "memory")):
        found.append(
            Workload(
                f"fanout-10/{tag}",
                f"10 nodes from START in one superstep, joined by one node; checkpointer: {tag}",
                fanout(10, saver),
                fanout_floor(10, saver),
            )
        )
    found.append(
        Workload(
            "interrupt-roundtrip",
            "one node calls interrupt(); invoke pauses, Command(resume=...) finishes",
            roundtrip,
            roundtrip_floor,
        )
    )
    for kind in ("sqlite", "postgres"):
        if kind == "postgres" and not os.environ.get("PAUSEPOINT_PG_URL"):
            continue  # needs a server: .ci/run and `make bench` with PAUSEPOINT_PG_URL set
        found.append(
            Workload(
                f"roundtrip/{kind}",
                f"the interrupt round trip on each library's own {kind} saver",
                lambda lib, kind=kind: roundtrip(lib, kind),
                roundtrip_floor,
            )
        )
    for k in (10, 100):
        for one_by_one, tag in ((False, "by-map"), (True, "one-by-one")):
            how = "one id per invoke, K invokes" if one_by_one else "one id map, one invoke"
            found.append(
                Workload(
                    f"fan-interrupt-{k}/{tag}",
                    f"{k} branches from START each interrupt; resumed {how}",
                    fan_interrupt(k, one_by_one),
                    fan_interrupt_floor(k, one_by_one),
                )
            )
    return found


WORKLOADS: dict[str, Workload] = {w.name: w for w in _all()}
QUICK = ["chain-10/none", "chain-10/memory", "fanout-10/none", "interrupt-roundtrip"]
QUICK += ["fan-interrupt-10/by-map", "fan-interrupt-10/one-by-one"]
QUICK += [name for name in WORKLOADS if name.startswith("roundtrip/")]
FULL = [name for name in WORKLOADS]


def make_case(library: str, workload: str) -> Case:
    """Build the case for ``workload`` on ``library`` (or on the plain-Python floor)."""
    spec = WORKLOADS[workload]
    if library == FLOOR:
        if spec.floor is None:
            raise ValueError(f"workload {workload!r} has no plain-Python floor")
        return spec.floor()
    return spec.build(load_library(library))
