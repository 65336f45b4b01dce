"""The functional API and durable task calls, through both drivers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, TypedDict

import pytest

from pausepoint import START, Command, InMemorySaver, StateGraph, interrupt
from pausepoint.errors import NondeterministicTaskError
from pausepoint.func import entrypoint, task


def cfg(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def test_task_before_interrupts_runs_once_in_a_graph_node(drive):
    """The issue's headline: an expensive task, then three interrupts; the task ran once."""
    runs: Counter[str] = Counter()

    @task
    def expensive(x: int) -> int:
        runs["expensive"] += 1
        return x * 10

    class S(TypedDict, total=False):
        out: list[Any]

    def node(state: S) -> dict[str, Any]:
        runs["node"] += 1
        value = expensive(4).result()
        answers = [interrupt(f"q{i}") for i in range(3)]
        return {"out": [value, *answers]}

    g = StateGraph(S)
    g.add_node("node", node)
    g.add_edge(START, "node")
    graph = g.compile(checkpointer=InMemorySaver())
    out = drive.invoke(graph, {"out": []}, cfg("n"))
    for i, answer in enumerate(["a", "b", "c"]):
        assert out["__interrupt__"][0].value == f"q{i}"
        out = drive.invoke(graph, Command(resume=answer), cfg("n"))
    assert out == {"out": [40, "a", "b", "c"]}
    assert runs == {"expensive": 1, "node": 4}


def test_entrypoint_previous_final_and_parallel_tasks(drive):
    @task
    def square(x: int) -> int:
        return x * x

    @entrypoint(checkpointer=InMemorySaver())
    def total(numbers: list[int], *, previous: Any = None) -> entrypoint.final[int, int]:
        futures = [square(n) for n in numbers]
        result = sum(f.result() for f in futures)
        return entrypoint.final(value=result, save=result + (previous or 0))

    assert drive.invoke(total, [1, 2, 3], cfg("e")) == 14
    assert drive.invoke(total, [2], cfg("e")) == 4
    assert drive.get_state(total, cfg("e")).values == 4


def test_async_entrypoint_awaits_tasks(drive):
    if drive.kind == "sync":
        pytest.skip("an async entrypoint runs through ainvoke")

    @task
    async def fetch(n: int) -> str:
        return f"item-{n}"

    @entrypoint(checkpointer=InMemorySaver())
    async def gather(n: int) -> list[str]:
        items = [await fetch(i) for i in range(n)]
        ok = interrupt(f"publish {len(items)} items?")
        return [*items, ok]

    assert drive.invoke(gather, 2, cfg("a"))["__interrupt__"][0].value == "publish 2 items?"
    assert drive.invoke(gather, Command(resume="yes"), cfg("a")) == ["item-0", "item-1", "yes"]


def test_calling_another_task_at_a_recorded_position_is_an_error(drive):
    flip = {"on": False}

    @task
    def first() -> str:
        return "first"

    @task
    def second() -> str:
        return "second"

    @entrypoint(checkpointer=InMemorySaver())
    def flow(_: Any) -> str:
        chosen = second if flip["on"] else first
        value = chosen().result()
        return f"{value}:{interrupt('go?')}"

    drive.invoke(flow, 0, cfg("d"))
    flip["on"] = True
    with pytest.raises(NondeterministicTaskError, match=r"call #0 .* 'first' .* 'second'"):
        drive.invoke(flow, Command(resume="x"), cfg("d"))
    flip["on"] = False  # back to the recorded order: the pause is intact
    assert drive.invoke(flow, Command(resume="x"), cfg("d")) == "first:x"


def test_interrupt_inside_a_task(drive):
    runs: Counter[str] = Counter()

    @task
    def approve(item: str) -> str:
        runs[item] += 1
        return f"{item}:{interrupt(f'approve {item}?')}"

    @entrypoint(checkpointer=InMemorySaver())
    def flow(item: str) -> str:
        return approve(item).result()

    paused = drive.invoke(flow, "deploy", cfg("t"))
    assert paused["__interrupt__"][0].value == "approve deploy?"
    assert drive.invoke(flow, Command(resume="ok"), cfg("t")) == "deploy:ok"
    assert runs == {"deploy": 2}


def test_task_outside_a_graph_is_a_clear_error():
    @task
    def lonely() -> None:
        return None

    with pytest.raises(RuntimeError, match="outside a running graph node"):
        lonely()


def test_task_result_saved_before_a_crash_is_not_recomputed(tmp_path: Path):
    """SIGKILL between the task and the interrupt: the task's saved result is reused."""
    db = tmp_path / "crash.db"
    log = tmp_path / "runs.log"
    script = Path(__file__).with_name("func_crash_process.py")
    proc = subprocess.Popen([sys.executable, str(script), str(db), str(log), "start"])
    try:
        deadline = time.monotonic() + 30
        while "after-task" not in (log.read_text() if log.exists() else ""):
            assert proc.poll() is None, "the process ended before it could be killed"
            assert time.monotonic() < deadline, "the task never finished"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert log.read_text().split() == ["task", "after-task"]
    out = subprocess.run(
        [sys.executable, str(script), str(db), str(log), "continue"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"interrupt": "ship 42?"}
    done = subprocess.run(
        [sys.executable, str(script), str(db), str(log), "resume"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"result": "42:yes"}
    # The task body ran once; the entrypoint ran three times (crashed, paused, resumed).
    assert log.read_text().split().count("task") == 1
