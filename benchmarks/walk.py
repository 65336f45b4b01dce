"""How far a maintainer walks: the functions a resume and a save pass through (SQLite).

    python benchmarks/walk.py                 # this checkout's pausepoint
    PYTHONPATH=OTHER/src python benchmarks/walk.py   # another tree's, to compare

Two walks, on a thread in a real SQLite file, after a warm-up run (so imports and
caches are done), traced with ``sys.setprofile``:

- **resume**: from the call to ``invoke(Command(resume=...))`` until ``interrupt()``
  returns the answer in the node (docs/concepts.md, "How a resume travels");
- **save**: from the return of a node until the ``INSERT`` of the checkpoint its step
  makes (docs/concepts.md, "How a step is saved").

For each it prints the calls made to pausepoint's functions, how many distinct
functions (a comprehension or generator expression counts: it is a function in
Python 3.11) and files they are, and the frames of pausepoint's at the end of the walk:
those on the stack, plus the generators suspended under them (the run's loop is a
generator the driver steps, so its frames are not on the stack while a node runs).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
import types
from collections.abc import Callable

from typing_extensions import TypedDict

import pausepoint
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.graph import END, START, StateGraph
from pausepoint.types import Command, interrupt

ROOT = os.path.dirname(pausepoint.__file__)


class S(TypedDict):
    x: str


def _ask(state: S) -> dict[str, str]:
    return {"x": interrupt("which?")}


def _first(state: S) -> dict[str, str]:
    return {"x": state["x"] + "a"}


def _second(state: S) -> dict[str, str]:
    return {"x": state["x"] + "b"}


class Walk:
    """Calls to pausepoint's functions between a start and an end event."""

    def __init__(self) -> None:
        self.calls = 0
        self.functions: set[tuple[str, int, str]] = set()
        self.frames: list[str] = []
        self.on = False
        self.done = False

    def note(self, frame: types.FrameType) -> None:
        code = frame.f_code
        self.calls += 1
        self.functions.add((code.co_filename, code.co_firstlineno, code.co_qualname))

    def end(self, frame: types.FrameType | None) -> None:
        self.done = True
        self.frames = _frames(frame)

    def report(self, name: str) -> str:
        files = {f for f, _, _ in self.functions}
        frame_files = {f.split(":")[0] for f in self.frames}
        return (
            f"{name}: {self.calls} calls, {len(self.functions)} distinct functions in "
            f"{len(files)} files; {len(self.frames)} frames in {len(frame_files)} files "
            f"at its end ({' > '.join(f.split(':')[1] for f in self.frames)})"
        )


def _ours(code: types.CodeType) -> bool:
    return code.co_filename.startswith(ROOT)


def _frames(frame: types.FrameType | None) -> list[str]:
    """pausepoint's frames from the outermost in: on the stack, and suspended under them.

    A suspended generator is found in the locals of the frame that steps it (several
    frames may hold the same one: it is counted once, under the innermost).
    """
    found: list[str] = []
    seen: set[int] = set()
    while frame is not None:
        if _ours(frame.f_code):
            found.append(_name(frame.f_code))
            for value in list(frame.f_locals.values()):
                found[-1:-1] = _suspended(value, seen)
        frame = frame.f_back
    return found[::-1]


def _suspended(value: object, seen: set[int]) -> list[str]:
    """The chain of pausepoint generators suspended in ``value`` (innermost first)."""
    chain: list[str] = []
    while isinstance(value, types.GeneratorType) and value.gi_frame is not None:
        if value.gi_running or not _ours(value.gi_code) or id(value) in seen:
            break
        seen.add(id(value))
        chain.append(_name(value.gi_code))
        value = value.gi_yieldfrom
    return chain[::-1]


def _name(code: types.CodeType) -> str:
    return f"{os.path.relpath(code.co_filename, ROOT)}:{code.co_qualname}"


Event = Callable[[types.FrameType, str], bool]


def _traced(walk: Walk, run: Callable[[], object], starts: Event, ends: Event) -> None:
    """Run ``run``, noting every call to pausepoint from ``starts`` until ``ends``."""

    def profile(frame: types.FrameType, event: str, arg: object) -> None:
        if walk.done:
            return
        if not walk.on:
            walk.on = starts(frame, event)
        elif _ours(frame.f_code):
            if event == "call":
                walk.note(frame)
            if ends(frame, event):
                walk.end(frame)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)


def resume_walk(saver: SqliteSaver) -> Walk:
    builder = StateGraph(S)
    builder.add_node("ask", _ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(checkpointer=saver)
    for thread in ("warm", "t"):
        graph.invoke({"x": ""}, {"configurable": {"thread_id": thread}})
    graph.invoke(Command(resume="w"), {"configurable": {"thread_id": "warm"}})
    walk = Walk()

    def ends(frame: types.FrameType, event: str) -> bool:
        back = frame.f_back
        return (
            event == "return"
            and frame.f_code.co_name == "interrupt"
            and back is not None
            and back.f_code is _ask.__code__
        )

    def run() -> None:
        assert graph.invoke(Command(resume="a"), {"configurable": {"thread_id": "t"}}) == {"x": "a"}

    walk.on = True  # from the call to invoke
    _traced(walk, run, lambda frame, event: True, ends)
    return walk


def save_walk(saver: SqliteSaver) -> Walk:
    builder = StateGraph(S)
    builder.add_node("first", _first)
    builder.add_node("second", _second)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"x": ""}, {"configurable": {"thread_id": "warm-save"}})
    walk = Walk()

    def starts(frame: types.FrameType, event: str) -> bool:
        return event == "return" and frame.f_code is _first.__code__

    def ends(frame: types.FrameType, event: str) -> bool:
        if event != "call" or frame.f_code.co_name != "_execute":
            return False
        stmt = frame.f_locals.get("stmt")
        return "INSERT INTO pausepoint_checkpoints" in str(getattr(stmt, "sql", ""))

    def run() -> None:
        assert graph.invoke({"x": ""}, {"configurable": {"thread_id": "s"}}) == {"x": "ab"}

    _traced(walk, run, starts, ends)
    return walk


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(os.path.join(tmp, "walk.sqlite"), check_same_thread=False)
        saver = SqliteSaver(conn)
        print(f"pausepoint from {ROOT}")
        for name, walk in (("resume", resume_walk(saver)), ("save", save_walk(saver))):
            assert walk.done, f"the {name} walk did not reach its end"
            print(walk.report(name))
            if "-v" in sys.argv:
                for file, _, qualname in sorted(walk.functions):
                    print("   ", os.path.relpath(file, ROOT), qualname)
        conn.close()


if __name__ == "__main__":
    main()
