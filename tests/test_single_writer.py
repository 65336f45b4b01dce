"""Single-writer threads: at most one run advances a thread at a time (issue 15).

Racing threads and asyncio tasks in one process, and (tests/test_single_writer_processes.py)
racing processes, on real SQLite files and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from pausepoint import START, Command, StateGraph, interrupt
from pausepoint.checkpoint.sqlite import AsyncSqliteSaver, SqliteSaver
from pausepoint.errors import AlreadyAnsweredError, LeaseLostError, ThreadBusyError
from pausepoint.graph import END


class S(TypedDict, total=False):
    log: Annotated[list[Any], operator.add]


def cfg(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


@pytest.fixture
def saver(memory_or_sqlite: Any) -> Any:
    """Each test on InMemorySaver and on SqliteSaver (tests/conftest.py)."""
    return memory_or_sqlite


def slow_approval(runs: Counter[str], gate: threading.Event | None = None) -> Any:
    """A question, then slow work after it (the window a second resume races into)."""

    def ask(state: S) -> dict[str, Any]:
        answer = interrupt("approve?")
        runs[f"after {answer}"] += 1
        if gate is not None:
            gate.wait(10)
        return {"log": [answer]}

    b = StateGraph(S)
    b.add_node("ask", ask)
    b.add_edge(START, "ask")
    b.add_edge("ask", END)
    return b


def history_shape(graph: Any, thread: str = "t") -> tuple[int, int]:
    """(checkpoints, the most children any checkpoint has): 1 means no fork."""
    children: Counter[str | None] = Counter()
    snaps = list(graph.get_state_history(cfg(thread)))
    for snap in snaps:
        parent = (snap.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        children[parent] += 1
    return len(snaps), max(children.values(), default=0)


def test_a_second_run_while_one_is_in_flight_is_refused(saver):
    runs: Counter[str] = Counter()
    gate = threading.Event()
    graph = slow_approval(runs, gate).compile(checkpointer=saver)
    graph.invoke({"log": []}, cfg())
    results: dict[str, Any] = {}

    def first() -> None:
        results["first"] = graph.invoke(Command(resume="yes"), cfg())

    worker = threading.Thread(target=first)
    worker.start()
    deadline = time.monotonic() + 10
    while not runs and time.monotonic() < deadline:  # the first run is in the node
        time.sleep(0.005)
    before = saver.get_tuple(cfg())
    with pytest.raises(ThreadBusyError) as caught:
        graph.invoke({"log": ["new input"]}, cfg())
    assert "nothing was written" in str(caught.value)
    assert caught.value.thread_id == "t"
    with pytest.raises(ThreadBusyError):
        graph.invoke(None, cfg())
    with pytest.raises(ThreadBusyError):  # the same answer again, while it runs
        graph.invoke(Command(resume="yes"), cfg())
    with pytest.raises(AlreadyAnsweredError):  # another answer to the same question
        graph.invoke(Command(resume="no"), cfg())
    after = saver.get_tuple(cfg())
    assert (after.config, len(after.pending_writes or [])) == (
        before.config,
        len(before.pending_writes or []),
    )
    gate.set()
    worker.join(10)
    assert results["first"]["log"] == ["yes"]
    assert runs == Counter({"after yes": 1})
    assert history_shape(graph)[1] == 1
    # Once it is done the thread is free again.
    assert graph.invoke(None, cfg())["log"] == ["yes"]


@pytest.mark.parametrize("racers", [2, 4, 8])
def test_racing_threads_on_one_question_one_wins(saver, racers):
    runs: Counter[str] = Counter()
    graph = slow_approval(runs).compile(checkpointer=saver, lease_wait=0)
    graph.invoke({"log": []}, cfg())
    start = threading.Barrier(racers)
    outcomes: list[str] = []
    lock = threading.Lock()

    def racer(n: int) -> None:
        start.wait()
        try:
            out = graph.invoke(Command(resume=f"answer {n}"), cfg())
            what = f"ok {out['log']}"
        except (ThreadBusyError, AlreadyAnsweredError) as exc:
            what = type(exc).__name__
        except BaseException as exc:
            what = f"unexpected {exc!r}"
        with lock:
            outcomes.append(what)

    threads = [threading.Thread(target=racer, args=(n,)) for n in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    winners = [o for o in outcomes if o.startswith("ok")]
    assert len(winners) == 1, outcomes
    assert sum(runs.values()) == 1, runs  # the code after interrupt() ran once
    (answer,) = [k.removeprefix("after ") for k in runs]
    assert winners == [f"ok [{answer!r}]"]
    assert graph.get_state(cfg()).values == {"log": [answer]}
    assert history_shape(graph)[1] == 1


def reviewers(runs: Counter[str]) -> Any:
    def reviewer(name: str) -> Any:
        def node(state: S) -> dict[str, Any]:
            verdict = interrupt(f"review {name}")
            runs[name] += 1
            time.sleep(0.05)
            return {"log": [f"{name}={verdict}"]}

        return node

    def join(state: S) -> dict[str, Any]:
        runs["join"] += 1
        return {"log": ["joined"]}

    b = StateGraph(S)
    for n in "ab":
        b.add_node(n, reviewer(n))
        b.add_edge(START, n)
    b.add_node("join", join)
    b.add_edge(["a", "b"], "join")
    return b


def test_two_reviewers_answering_two_questions_at_once_both_count(saver):
    runs: Counter[str] = Counter()
    graph = reviewers(runs).compile(checkpointer=saver)
    first = graph.invoke({"log": []}, cfg())
    ids = {i.value: i.id for i in first["__interrupt__"]}
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def review(name: str) -> None:
        start.wait()
        try:
            graph.invoke(Command(resume={ids[f"review {name}"]: name.upper()}), cfg())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=review, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    state = graph.get_state(cfg())
    assert state.next == ()
    assert sorted(state.values["log"]) == ["a=A", "b=B", "joined"]
    assert runs == Counter({"a": 1, "b": 1, "join": 1})
    assert history_shape(graph)[1] == 1


def test_a_waiting_answer_gives_up_after_lease_wait(saver):
    runs: Counter[str] = Counter()
    graph = reviewers(runs).compile(checkpointer=saver, lease_wait=0.05)
    first = graph.invoke({"log": []}, cfg())
    ids = {i.value: i.id for i in first["__interrupt__"]}
    # Another run holds the thread (and keeps it).
    held = saver.acquire_lease("t", "otherhost/1/x", 60)
    assert held.acquired
    before = saver.get_tuple(cfg())
    started = time.monotonic()
    with pytest.raises(ThreadBusyError):
        graph.invoke(Command(resume={ids["review a"]: "A"}), cfg())
    assert time.monotonic() - started >= 0.05
    after = saver.get_tuple(cfg())
    assert after.pending_writes == before.pending_writes
    saver.release_lease("t", "otherhost/1/x")
    assert graph.invoke(Command(resume={ids["review a"]: "A"}), cfg())["log"] == ["a=A"]


def test_an_expired_lease_is_taken_over_and_its_late_writes_refused(tmp_path: Path):
    now = [1000.0]
    with SqliteSaver.from_conn_string(str(tmp_path / "expiry.sqlite")) as saver:
        saver.lease_clock = lambda: now[0]
        runs: Counter[str] = Counter()
        graph = slow_approval(runs).compile(checkpointer=saver, lease_ttl=30)
        graph.invoke({"log": []}, cfg())
        # A worker on another machine took the thread, then went silent.
        assert saver.acquire_lease("t", "otherhost/1/stalled", 30).acquired
        with pytest.raises(ThreadBusyError):
            graph.invoke(Command(resume="yes"), cfg())
        now[0] += 31  # its lease ran out
        assert graph.invoke(Command(resume="yes"), cfg())["log"] == ["yes"]
        # The stalled worker wakes up and tries to write: fenced out, nothing stored.
        head = saver.get_tuple(cfg())
        with pytest.raises(LeaseLostError):
            saver.put_writes(
                head.config, [("log", ["late"])], "task-x", lease="otherhost/1/stalled"
            )
        assert saver.get_tuple(cfg()).pending_writes == head.pending_writes


def test_a_dead_local_process_lease_is_taken_at_once(saver, tmp_path: Path):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = int(done.stdout)
    from pausepoint.drivers.owners import process_owner

    host = process_owner().split("/")[0]
    graph = slow_approval(Counter()).compile(checkpointer=saver)
    graph.invoke({"log": []}, cfg())
    assert saver.acquire_lease("t", f"{host}/{dead}/gone", 600).acquired
    assert graph.invoke(Command(resume="yes"), cfg())["log"] == ["yes"]


def test_lease_ttl_none_turns_single_writer_off(saver):
    graph = slow_approval(Counter()).compile(checkpointer=saver, lease_ttl=None)
    graph.invoke({"log": []}, cfg())
    assert saver.acquire_lease("t", "otherhost/1/x", 60).acquired
    assert graph.invoke(Command(resume="yes"), cfg())["log"] == ["yes"]


def test_the_lease_is_let_go_when_the_run_pauses_fails_or_is_closed(saver):
    def ask(state: S) -> dict[str, Any]:
        answer = interrupt("approve?")
        if answer == "boom":
            raise ValueError("boom")
        return {"log": [answer]}

    b = StateGraph(S)
    b.add_node("ask", ask)
    b.add_node("after", lambda state: {"log": ["after"]})
    b.add_edge(START, "ask")
    b.add_edge("ask", "after")
    graph = b.compile(checkpointer=saver)
    graph.invoke({"log": []}, cfg())
    assert saver.get_lease("t") is None  # paused: let go
    with pytest.raises(ValueError, match="boom"):
        graph.invoke(Command(resume="boom"), cfg())
    assert saver.get_lease("t") is None  # failed: let go
    from pausepoint.types import Reanswer

    stream = graph.stream(Command(resume=Reanswer("ok")), cfg(), stream_mode="updates")
    next(stream)
    assert saver.get_lease("t") is not None  # held while the run goes on
    stream.close()  # the caller stops reading
    assert saver.get_lease("t") is None


def test_asyncio_tasks_racing_on_one_question_one_wins(tmp_path: Path):
    async def main() -> tuple[list[str], Counter[str]]:
        runs: Counter[str] = Counter()

        async def ask(state: S) -> dict[str, Any]:
            answer = interrupt("approve?")
            runs[f"after {answer}"] += 1
            await asyncio.sleep(0.05)
            return {"log": [answer]}

        b = StateGraph(S)
        b.add_node("ask", ask)
        b.add_edge(START, "ask")
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.sqlite")) as saver:
            graph = b.compile(checkpointer=saver, lease_wait=0)
            await graph.ainvoke({"log": []}, cfg())

            async def racer(n: int) -> str:
                try:
                    out = await graph.ainvoke(Command(resume=f"answer {n}"), cfg())
                except (ThreadBusyError, AlreadyAnsweredError) as exc:
                    return type(exc).__name__
                return f"ok {out['log']}"

            outcomes = await asyncio.gather(*(racer(n) for n in range(8)))
            assert saver.get_lease("t") is None
        return list(outcomes), runs

    outcomes, runs = asyncio.run(main())
    assert len([o for o in outcomes if o.startswith("ok")]) == 1, outcomes
    assert sum(runs.values()) == 1


def test_a_cancelled_ainvoke_lets_the_lease_go(tmp_path: Path):
    async def main() -> None:
        started = asyncio.Event()

        async def ask(state: S) -> dict[str, Any]:
            answer = interrupt("approve?")
            if not started.is_set():  # the first run is cancelled here
                started.set()
                await asyncio.sleep(30)
            return {"log": [answer]}

        b = StateGraph(S)
        b.add_node("ask", ask)
        b.add_edge(START, "ask")
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as saver:
            graph = b.compile(checkpointer=saver)
            await graph.ainvoke({"log": []}, cfg())
            run = asyncio.create_task(graph.ainvoke(Command(resume="yes"), cfg()))
            await started.wait()
            assert saver.get_lease("t") is not None
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            assert saver.get_lease("t") is None
            # The answer was stored before the node ran: the thread shows it, and the
            # cancelled node as failed with CancelledError (LangGraph's error too).
            (task,) = (await graph.aget_state(cfg())).tasks
            assert (task.status, str(task.error)) == ("failed", "CancelledError()")
            assert [a.value for a in task.answered] == ["yes"]
            # The next run takes the thread at once and runs the node with the answer.
            assert (await graph.ainvoke(None, cfg()))["log"] == ["yes"]

    asyncio.run(main())
