"""Workloads at scale: many paused threads on one saver, and state that grows.

``threads(n)`` pauses ``n`` threads on one in-memory saver (pausepoint's
``CompactingMemorySaver``: see ``cases.load_library``; each asks one question
through interrupt()) and then resumes them all: the time is for all ``2n`` invokes,
and its probe measures memory (see :func:`memory_probe`). ``list_growth(total)``
chains ``total / 100`` nodes that each append 100 items to an ``operator.add`` list,
so each checkpoint holds a bigger state than the last: checkpoint cost vs state size.
"""

from __future__ import annotations

import gc
import operator
import resource
import tracemalloc
from collections.abc import Callable
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

from cases import Case, ask_graph, config, drop, expect, forget

PER_STEP = 100  # items appended by each node of the growing-list chain


# --------------------------------------------------------------------------- memory


def memory_probe(pause: Callable[[str], Any], resume: Callable[[str], Any]) -> dict[str, float]:
    """Bytes of Python allocations over pausing then resuming every thread (tracemalloc).

    - ``peak``: the highest traced total while all are paused and then resumed;
    - ``retained``: what is still traced once every thread is paused and garbage is
      collected: the memory the paused threads hold.

    The caller has run the workload once already, so lazy imports are not counted.
    """
    gc.collect()
    tracemalloc.start()
    try:
        pause("traced")
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0]
        resume("traced")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return {"peak": peak, "retained": retained}


def max_rss() -> int:
    """The process's peak resident set so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# --------------------------------------------------------------------------- threads


def threads(n: int) -> Callable[[SimpleNamespace], Case]:
    def build(lib: SimpleNamespace) -> Case:
        runs = [0]
        saver = lib.memory_saver()
        graph = ask_graph(lib, saver, runs)

        def pause(tag: str, count: int = n) -> int:
            asked = 0
            for k in range(count):
                out = graph.invoke({"question": f"q{k}", "answer": ""}, config(f"{tag}-{k}"))
                asked += len(out["__interrupt__"])
            return asked

        def resume(tag: str, count: int = n) -> int:
            done = 0
            for k in range(count):
                out = graph.invoke(lib.Command(resume=f"a{k}"), config(f"{tag}-{k}"))
                done += out["answer"] == f"a{k}" and "__interrupt__" not in out
            return done

        def cleanup(tag: int | str) -> None:
            for k in range(n):
                saver.delete_thread(f"t{tag}-{k}")

        def probe() -> dict[str, float]:
            try:
                return memory_probe(pause, resume)
            finally:
                cleanup("traced")

        # One thread paused and resumed before the first measured run, so that run's
        # growth of the peak RSS is the threads' memory, not lazy imports.
        pause("warm", 1)
        resume("warm", 1)

        return Case(
            run=lambda i: (pause(str(i)), resume(str(i))),
            check=lambda out: expect("(paused, resumed) threads", out, (n, n)),
            cleanup=cleanup,
            node_runs=runs,
            probe=probe,
        )

    return build


def threads_floor(n: int) -> Callable[[], Case]:
    # Pausing stores the state and the question per thread in a dict; resuming pops
    # the record and answers.
    def build() -> Case:
        store: dict[str, dict[str, Any]] = {}

        def pause(tag: str) -> int:
            for k in range(n):
                state = {"question": f"q{k}", "answer": ""}
                store[f"t{tag}-{k}"] = {"state": state, "pending": state["question"]}
            return n

        def resume(tag: str) -> int:
            done = 0
            for k in range(n):
                saved = store.pop(f"t{tag}-{k}")
                done += {**saved["state"], "answer": f"a{k}"}["answer"] == f"a{k}"
            return done

        def probe() -> dict[str, float]:
            return memory_probe(pause, resume)

        return Case(
            run=lambda i: (pause(str(i)), resume(str(i))),
            check=lambda out: expect("(paused, resumed) threads", out, (n, n)),
            probe=probe,
        )

    return build


# --------------------------------------------------------------------------- list growth


class ListState(TypedDict):
    items: Annotated[list[int], operator.add]


def _chunks(total: int) -> list[list[int]]:
    return [list(range(k, k + PER_STEP)) for k in range(0, total, PER_STEP)]


def _check_items(total: int) -> Callable[[Any], str | None]:
    def check(out: Any) -> str | None:
        items = out.get("items", [])
        return expect("(len, last item)", (len(items), items[-1:]), (total, [total - 1]))

    return check


def list_growth(total: int, saver: bool) -> Callable[[SimpleNamespace], Case]:
    chunks = _chunks(total)

    def build(lib: SimpleNamespace) -> Case:
        builder = lib.StateGraph(ListState)
        names = [f"s{k}" for k in range(len(chunks))]
        for name, chunk in zip(names, chunks, strict=True):
            builder.add_node(name, lambda s, chunk=chunk: {"items": chunk})
        for a, b in zip([lib.START, *names], [*names, lib.END], strict=True):
            builder.add_edge(a, b)
        checkpointer = lib.memory_saver() if saver else None
        graph = builder.compile(checkpointer=checkpointer)
        return Case(
            run=lambda i: graph.invoke({"items": []}, config(i, len(chunks) + 10)),
            check=_check_items(total),
            cleanup=forget(checkpointer),
        )

    return build


def list_growth_floor(total: int, saver: bool) -> Callable[[], Case]:
    # The reducer's concatenation makes a new list each step, so keeping a shallow
    # copy of the state per step is a complete history: the cheapest checkpoint.
    chunks = _chunks(total)

    def build() -> Case:
        store: dict[str, list[dict[str, list[int]]]] = {}

        def run(i: int) -> dict[str, list[int]]:
            state: dict[str, list[int]] = {"items": []}
            history = store.setdefault(f"t{i}", []) if saver else None
            for chunk in chunks:
                state = {**state, "items": operator.add(state["items"], chunk)}
                if history is not None:
                    history.append(dict(state))
            return state

        return Case(run=run, check=_check_items(total), cleanup=drop(store))

    return build
