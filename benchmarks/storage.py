"""Storage growth: what a long chat thread and many short threads cost on disk (issue 32).

``chat-N/KIND``: one thread of N turns on SQLite or PostgreSQL. The graph is a loop
``ask → reply → ask``: ``ask`` pauses on ``interrupt()`` and adds the answer as a
500-byte user message to an ``operator.add`` list; ``reply`` adds a 500-byte
assistant message. A turn is one ``invoke(Command(resume=...))``: about 1 KB of new
messages, two checkpoints, one question asked. Reported: the stored size (SQLite: the
file, after a WAL checkpoint; PostgreSQL: ``pg_total_relation_size`` of the saver's
tables) and the bytes per turn around turns 1, 100, 200 (1,000), averaged over the
turns since the previous mark (the first: turn 1 alone), then ``get_state`` and one
resume at the last turn (median of 9 and of 5), and ``get_state`` through a new saver
on the same connection (median of 9: what a process that did not write the thread
reads; the database's own cache stays warm).

``short-N/KIND``: N threads of one turn each (paused, answered, finished), the total
size. Both libraries run the same graph code (``cases.load_library``), each in its own
process: ``python benchmarks/storage.py [--quick] [--kinds sqlite postgres memory]``.

``memory`` (only when asked for): the in-memory saver the workloads use
(pausepoint's ``CompactingMemorySaver``, LangGraph's ``InMemorySaver``); "stored" is
then what the saver's objects take in memory (`retained_bytes`).
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import random
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import load_library, open_saver  # noqa: E402

MESSAGE = 500  # bytes of one message's text
_TABLES = {
    "pausepoint": ("pausepoint_checkpoints", "pausepoint_writes", "pausepoint_blobs"),
    "langgraph": ("checkpoints", "checkpoint_writes", "checkpoint_blobs"),
}


class ChatState(TypedDict, total=False):
    messages: Annotated[list[dict[str, str]], operator.add]


def chat_graph(lib: SimpleNamespace, saver: Any) -> Any:
    def ask(state: ChatState) -> dict[str, Any]:
        text = lib.interrupt("next message?")
        return {"messages": [{"role": "user", "content": text}]}

    def reply(state: ChatState) -> dict[str, Any]:
        n = len(state["messages"])
        return {"messages": [{"role": "assistant", "content": _text(f"reply {n}")}]}

    builder = lib.StateGraph(ChatState)
    builder.add_node("ask", ask)
    builder.add_node("reply", reply)
    builder.add_edge(lib.START, "ask")
    builder.add_edge("ask", "reply")
    builder.add_edge("reply", "ask")
    return builder.compile(checkpointer=saver)


_WORDS = [
    "".join(random.Random(k).choices(string.ascii_lowercase, k=2 + k % 8)) for k in range(2000)
]


def _text(head: str) -> str:
    # Words drawn at random, as prose compresses (PostgreSQL compresses large values):
    # a repeated phrase would make the database's compression look better than it is.
    rng = random.Random(head)
    words = [head]
    while sum(len(w) + 1 for w in words) < MESSAGE:
        words.append(rng.choice(_WORDS))
    return " ".join(words)[:MESSAGE]


def _config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 10**6}


def stored_bytes(lib: SimpleNamespace, saver: Any) -> int:
    """Bytes the saver's data takes: the SQLite file, the PostgreSQL tables, or memory."""
    conn = getattr(saver, "conn", None)
    if conn is None:
        return retained_bytes(saver)
    if "sqlite" in type(conn).__module__:
        return _sqlite_bytes(conn)
    total = 0
    for table in _TABLES[lib.family]:
        row = conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()
        found = row[0] if not isinstance(row, dict) else next(iter(row.values()))
        if found is None:
            continue
        row = conn.execute("SELECT pg_total_relation_size(%s)", (table,)).fetchone()
        total += int(row[0] if not isinstance(row, dict) else next(iter(row.values())))
    return total


def retained_bytes(saver: Any) -> int:
    """Bytes of the objects an in-memory saver holds (``sys.getsizeof``, each object once).

    Walks from the saver's attributes through dicts, lists, tuples, sets and the
    objects of the savers' own classes (pausepoint's ``Stored``, ``Recent``, kept
    forms; LangGraph's dicts of tuples): what the saver keeps alive, not the
    process's other memory. Types, functions, locks and serializers are not walked.
    """
    seen: set[int] = set()
    total = 0
    stack: list[Any] = [v for k, v in vars(saver).items() if k not in _NOT_DATA]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        kind = type(obj)
        ours = kind.__module__.startswith(("pausepoint.checkpoint", "langgraph.checkpoint"))
        if not ours and not isinstance(obj, _DATA):
            continue  # types, functions, locks, serializers: not what is stored
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())  # pyright: ignore[reportUnknownArgumentType]
            stack.extend(obj.values())  # pyright: ignore[reportUnknownArgumentType]
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)  # pyright: ignore[reportUnknownArgumentType]
        elif ours:
            stack.extend(getattr(obj, "__dict__", {}).values())
            for cls in kind.__mro__:
                for name in getattr(cls, "__slots__", ()):
                    if hasattr(obj, name):
                        stack.append(getattr(obj, name))
    return total


_DATA = (dict, list, tuple, set, frozenset, bytes, bytearray, str, int, float, type(None))

# Attributes of a saver that are not what it stores.
_NOT_DATA = frozenset({"serde", "lease_clock", "_lock", "_leases", "stack", "jsonplus_serde"})


def _sqlite_bytes(conn: Any) -> int:
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    return int((pages - free) * size)


def _quiet(saver: Any) -> None:
    # Sizes, not fsyncs, are measured: SQLite without syncing (untimed parts are fast).
    conn = getattr(saver, "conn", None)
    if conn is not None and "sqlite" in type(conn).__module__:
        conn.execute("PRAGMA synchronous=OFF")


def chat(lib: SimpleNamespace, kind: str, turns: int) -> dict[str, Any]:
    saver = open_saver(lib, kind)
    graph = chat_graph(lib, saver)
    config = _config("chat")
    marks = sorted({1, 100, 200, 1000, turns} & set(range(1, turns + 1)))
    graph.invoke({"messages": []}, config)  # paused at the first question
    sizes = {0: stored_bytes(lib, saver)}
    out: dict[str, Any] = {"bytes": {}, "per_turn": {}}
    start = time.perf_counter()
    for turn in range(1, turns + 1):
        graph.invoke(lib.Command(resume=_text(f"user {turn}")), config)
        if turn in marks:
            sizes[turn] = stored_bytes(lib, saver)
    out["seconds"] = time.perf_counter() - start
    previous = 0
    for turn in marks:
        out["bytes"][turn] = sizes[turn]
        out["per_turn"][turn] = (sizes[turn] - sizes[previous]) / (turn - previous)
        previous = turn
    state = graph.get_state(config)
    if len(state.values["messages"]) != 2 * turns or not state.next:
        raise AssertionError(f"unexpected state after {turns} turns: {state.next}")
    reads = []
    for _ in range(9):
        t = time.perf_counter()
        graph.get_state(config)
        reads.append(time.perf_counter() - t)
    fresh = []  # a new saver on the same connection: nothing it wrote is in its memory
    for _ in range(9):
        other = chat_graph(lib, type(saver)(saver.conn))
        t = time.perf_counter()
        other.get_state(config)
        fresh.append(time.perf_counter() - t)
    resumes = []
    for k in range(5):
        t = time.perf_counter()
        graph.invoke(lib.Command(resume=_text(f"extra {k}")), config)
        resumes.append(time.perf_counter() - t)
    out["get_state"] = median(reads)
    out["get_state_fresh"] = median(fresh)
    out["resume"] = median(resumes)
    return out


def short(lib: SimpleNamespace, kind: str, threads: int) -> dict[str, Any]:
    saver = open_saver(lib, kind)
    _quiet(saver)
    graph = _short_graph(lib, saver)
    before = stored_bytes(lib, saver)
    for k in range(threads):
        config = _config(f"short-{k}")
        graph.invoke({"messages": []}, config)
        graph.invoke(lib.Command(resume=_text(f"user {k}")), config)
    total = stored_bytes(lib, saver) - before
    return {"bytes": total, "per_thread": total / threads}


def _short_graph(lib: SimpleNamespace, saver: Any) -> Any:
    # One turn and done: START → ask → reply → END.
    def ask(state: ChatState) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": lib.interrupt("message?")}]}

    def reply(state: ChatState) -> dict[str, Any]:
        return {"messages": [{"role": "assistant", "content": _text("reply")}]}

    builder = lib.StateGraph(ChatState)
    builder.add_node("ask", ask)
    builder.add_node("reply", reply)
    builder.add_edge(lib.START, "ask")
    builder.add_edge("ask", "reply")
    builder.add_edge("reply", lib.END)
    return builder.compile(checkpointer=saver)


# --------------------------------------------------------------------------- runner


def worker(library: str, what: str, kind: str, n: int) -> dict[str, Any]:
    lib = load_library(library)
    return chat(lib, kind, n) if what == "chat" else short(lib, kind, n)


def _spawn(library: str, what: str, kind: str, n: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--worker", library, what, kind, str(n)]
    done = subprocess.run(
        command, check=False, capture_output=True, text=True, env=os.environ.copy()
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or ["failed"]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def _ms(s: float) -> str:
    return f"{s * 1000:.3g} ms"


def report(results: dict[tuple[str, str], dict[str, dict[str, Any]]]) -> str:
    lines = [
        "| workload | library | stored | bytes/turn at turn 1 · 100 · 200 · 1000 "
        "| get_state (last turn) | get_state, new saver | resume (last turn) |",
        "|---|---|---|---|---|---|---|",
    ]
    for (what, kind), by_lib in results.items():
        for library, found in by_lib.items():
            if "error" in found:
                lines.append(f"| {what}/{kind} | {library} | error: {found['error']} | | | | |")
            elif what.startswith("chat"):
                per = " · ".join(_size(v) for v in found["per_turn"].values())
                last = max(found["bytes"], key=int)
                lines.append(
                    f"| {what}/{kind} | {library} | {_size(found['bytes'][last])} | {per} "
                    f"| {_ms(found['get_state'])} | {_ms(found['get_state_fresh'])} "
                    f"| {_ms(found['resume'])} |"
                )
            else:
                lines.append(
                    f"| {what}/{kind} | {library} | {_size(found['bytes'])} "
                    f"({_size(found['per_thread'])} a thread) | | | | |"
                )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="chat-200 and 500 short threads")
    parser.add_argument(
        "--kinds", nargs="*", help="sqlite, postgres, memory (default: sqlite, and postgres if set)"
    )
    parser.add_argument("--libraries", nargs="*", default=["pausepoint", "langgraph"])
    parser.add_argument("--only", help="workloads whose name contains this")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        library, what, kind, n = args.worker
        print(json.dumps(worker(library, what, kind, int(n))))
        return 0
    kinds = args.kinds or ["sqlite", *(["postgres"] if os.environ.get("PAUSEPOINT_PG_URL") else [])]
    plan = [("chat", 200), ("short", 500 if args.quick else 10_000)]
    if not args.quick:
        plan.insert(1, ("chat", 1000))
    results: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for what, n in plan:
        name = f"{what}-{n}"
        if args.only and args.only not in name:
            continue
        for kind in kinds:
            for library in args.libraries:
                print(f"{name}/{kind} on {library} …", file=sys.stderr, flush=True)
                results.setdefault((name, kind), {})[library] = _spawn(library, what, kind, n)
    print(report(results))
    return 0


if __name__ == "__main__":
    tempfile.tempdir = tempfile.gettempdir()
    raise SystemExit(main(sys.argv[1:]))
