"""Interrupt and resume through both drivers, including pausepoint's deliberate fixes."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from pausepoint import END, START, Command, InMemorySaver, StateGraph, interrupt
from pausepoint.checkpoint.base import PendingWrite, StepCommit
from pausepoint.constants import ASKED, ERROR, INTERRUPT, RESUME
from pausepoint.errors import (
    AmbiguousResumeError,
    CheckpointerRequiredError,
    GraphBubbleUp,
    InvalidCommandError,
    NothingToResumeError,
    UnknownInterruptIdError,
)
from pausepoint.loop.pending import interrupt_owners, parse_resume, read_records
from pausepoint.types import Interrupt


class S(TypedDict, total=False):
    answers: Annotated[list[Any], operator.add]
    done: bool


def cfg(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def form_graph() -> Any:
    def form(state: S) -> dict[str, Any]:
        name = interrupt("name?")
        email = interrupt("email?")
        ok = interrupt(f"confirm {name} {email}?")
        return {"answers": [name, email, ok], "done": True}

    g = StateGraph(S)
    g.add_node("form", form)
    g.add_edge(START, "form")
    g.add_edge("form", END)
    return g.compile(checkpointer=InMemorySaver())


def parallel_graph(runs: dict[str, int]) -> Any:
    def make(name: str) -> Any:
        def node(state: S) -> dict[str, Any]:
            runs[name] = runs.get(name, 0) + 1
            return {"answers": [f"{name}={interrupt(name)}"]}

        return node

    g = StateGraph(S)
    for name in ("a", "b", "c"):
        g.add_node(name, make(name))
        g.add_edge(START, name)
    return g.compile(checkpointer=InMemorySaver())


def test_multi_step_form_advances_one_answer_at_a_time(drive):
    graph = form_graph()
    first = drive.invoke(graph, {"answers": []}, cfg("f"))
    (intr,) = first["__interrupt__"]
    assert intr.value == "name?"
    assert len(intr.id) == 32
    second = drive.invoke(graph, Command(resume="Ann"), cfg("f"))
    assert second["__interrupt__"][0].value == "email?"
    assert second["__interrupt__"][0].id == intr.id  # one id per task
    third = drive.invoke(graph, Command(resume="ann@x.org"), cfg("f"))
    assert third["__interrupt__"][0].value == "confirm Ann ann@x.org?"
    done = drive.invoke(graph, Command(resume="yes"), cfg("f"))
    assert done == {"answers": ["Ann", "ann@x.org", "yes"], "done": True}


def test_get_state_while_paused(drive):
    graph = form_graph()
    drive.invoke(graph, {"answers": []}, cfg("g"))
    snap = drive.get_state(graph, cfg("g"))
    assert snap.next == ("form",)
    assert [i.value for i in snap.interrupts] == ["name?"]
    assert snap.tasks[0].interrupts == snap.interrupts


def test_parallel_interrupts_resume_by_id_partially(drive):
    runs: dict[str, int] = {}
    graph = parallel_graph(runs)
    out = drive.invoke(graph, {"answers": []}, cfg("p"))
    ids = {i.value: i.id for i in out["__interrupt__"]}
    assert set(ids) == {"a", "b", "c"}
    with pytest.raises(AmbiguousResumeError, match="multiple pending interrupts"):
        drive.invoke(graph, Command(resume="x"), cfg("p"))
    out = drive.invoke(graph, Command(resume={ids["a"]: 1}), cfg("p"))
    assert out["answers"] == ["a=1"]
    assert sorted(i.value for i in out["__interrupt__"]) == ["b", "c"]
    out = drive.invoke(graph, Command(resume={ids["b"]: 2, ids["c"]: 3}), cfg("p"))
    assert out == {"answers": ["a=1", "b=2", "c=3"]}
    # DESIGN §4.6: each node ran once to pause and once per answer, no more
    assert runs == {"a": 2, "b": 2, "c": 2}


def test_snapshot_lists_only_pending_interrupts(drive):
    graph = parallel_graph({})
    out = drive.invoke(graph, {"answers": []}, cfg("q"))
    ids = {i.value: i.id for i in out["__interrupt__"]}
    drive.invoke(graph, Command(resume={ids["a"]: 1}), cfg("q"))
    snap = drive.get_state(graph, cfg("q"))
    assert sorted(i.value for i in snap.interrupts) == ["b", "c"]
    assert sorted(snap.next) == ["b", "c"]


def test_bad_resumes_raise_and_change_nothing(drive):
    graph = parallel_graph({})
    out = drive.invoke(graph, {"answers": []}, cfg("bad"))
    before = drive.get_state(graph, cfg("bad"))
    with pytest.raises(UnknownInterruptIdError, match="not pending"):
        drive.invoke(graph, Command(resume={"0" * 32: 1}), cfg("bad"))
    with pytest.raises(UnknownInterruptIdError):
        drive.invoke(graph, Command(resume={}), cfg("bad"))
    with pytest.raises(InvalidCommandError):
        drive.invoke(graph, Command(), cfg("bad"))
    with pytest.raises(InvalidCommandError):
        drive.invoke(graph, Command(graph=Command.PARENT, update={}), cfg("bad"))
    after = drive.get_state(graph, cfg("bad"))
    assert after.config == before.config
    assert after.interrupts == before.interrupts
    assert len(out["__interrupt__"]) == 3


def test_resume_on_fresh_thread_or_finished_run(drive):
    graph = form_graph()
    with pytest.raises(NothingToResumeError):
        drive.invoke(graph, Command(resume="x"), cfg("fresh"))


def test_resume_without_checkpointer(drive):
    g = StateGraph(S)
    g.add_node("n", lambda s: {"done": True})
    g.add_edge(START, "n")
    with pytest.raises(CheckpointerRequiredError):
        drive.invoke(g.compile(), Command(resume="x"))


def test_resume_value_consumed_once(drive):
    """DESIGN §4.1: a failure after the first answer never feeds it to the next interrupt."""
    fail = {"on": True}

    def node(state: S) -> dict[str, Any]:
        first = interrupt("first?")
        if fail["on"]:
            raise RuntimeError("boom")
        second = interrupt("second?")
        return {"answers": [first, second]}

    g = StateGraph(S)
    g.add_node("node", node)
    g.add_edge(START, "node")
    graph = g.compile(checkpointer=InMemorySaver())
    drive.invoke(graph, {"answers": []}, cfg("once"))
    with pytest.raises(RuntimeError, match="boom"):
        drive.invoke(graph, Command(resume="A"), cfg("once"))
    fail["on"] = False
    out = drive.invoke(graph, None, cfg("once"))
    assert out["__interrupt__"][0].value == "second?"
    assert drive.invoke(graph, Command(resume="B"), cfg("once"))["answers"] == ["A", "B"]


def test_a_task_that_failed_then_pauses_reads_as_paused(drive):
    """A failure saved by an earlier run is cleared when the task pauses on a re-run.

    LangGraph 1.1.6 keeps showing the old error next to the new interrupt; pausepoint
    shows the task as paused. A pause that follows no failure saves no error slot.
    """
    from pausepoint.constants import ERROR, INTERRUPT

    broken = {"on": True}

    def node(state: S) -> dict[str, Any]:
        if broken["on"]:
            raise ValueError("not yet")
        return {"answers": [interrupt("now?")]}

    g = StateGraph(S)
    g.add_node("node", node)
    g.add_edge(START, "node")
    saver = InMemorySaver()
    graph = g.compile(checkpointer=saver)
    with pytest.raises(ValueError, match="not yet"):
        drive.invoke(graph, {"answers": []}, cfg("f"))
    (failed,) = drive.get_state(graph, cfg("f")).tasks
    assert failed.error is not None
    assert not failed.interrupts
    broken["on"] = False
    assert drive.invoke(graph, None, cfg("f"))["__interrupt__"][0].value == "now?"
    (paused,) = drive.get_state(graph, cfg("f")).tasks
    assert paused.error is None
    assert [i.value for i in paused.interrupts] == ["now?"]
    saved = saver.get_tuple(cfg("f"))
    assert saved is not None
    assert saved.pending_writes is not None
    assert [(w.channel, w.value) for w in saved.pending_writes if w.channel == ERROR][-1:] == [
        (ERROR, None)
    ]
    assert drive.invoke(graph, Command(resume="ok"), cfg("f"))["answers"] == ["ok"]

    drive.invoke(graph, {"answers": []}, cfg("g"))
    fresh = saver.get_tuple(cfg("g"))
    assert fresh is not None
    assert fresh.pending_writes is not None
    assert [w.channel for w in fresh.pending_writes] == [INTERRUPT, ASKED]


def test_interrupt_is_not_swallowed_by_except_exception(drive):
    def node(state: S) -> dict[str, Any]:
        try:
            value = interrupt("q")
        except Exception:  # user code that catches too much
            value = "swallowed"
        return {"answers": [value]}

    g = StateGraph(S)
    g.add_node("node", node)
    g.add_edge(START, "node")
    graph = g.compile(checkpointer=InMemorySaver())
    assert "__interrupt__" in drive.invoke(graph, {"answers": []}, cfg("bx"))
    assert issubclass(GraphBubbleUp, BaseException)
    assert not issubclass(GraphBubbleUp, Exception)


def test_static_breakpoints_do_not_repause(drive):
    g = StateGraph(S)
    g.add_node("a", lambda s: {"answers": ["a"]})
    g.add_node("b", lambda s: {"answers": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    graph = g.compile(checkpointer=InMemorySaver(), interrupt_before=["b"])
    out = drive.invoke(graph, {"answers": []}, cfg("bp"))
    assert out == {"answers": ["a"]}
    assert drive.get_state(graph, cfg("bp")).next == ("b",)
    chunks = drive.stream(graph, None, cfg("bp"), stream_mode="updates")
    assert chunks == [{"b": {"answers": ["b"]}}]


def test_stream_reports_interrupt(drive):
    graph = form_graph()
    chunks = drive.stream(graph, {"answers": []}, cfg("st"), stream_mode="updates")
    assert list(chunks[-1]) == ["__interrupt__"]
    assert chunks[-1]["__interrupt__"][0].value == "name?"


def test_interrupt_in_subgraph_bubbles_and_resumes(drive):
    def ask(state: S) -> dict[str, Any]:
        return {"answers": [interrupt("inner?")]}

    inner = StateGraph(S)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    outer = StateGraph(S)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    graph = outer.compile(checkpointer=InMemorySaver())
    out = drive.invoke(graph, {"answers": []}, cfg("sub"))
    assert out["__interrupt__"][0].value == "inner?"
    done = drive.invoke(graph, Command(resume="deep"), cfg("sub"))
    assert done["answers"] == ["deep"]


def test_node_interrupt_is_deprecated_but_pauses(drive):
    from pausepoint.errors import NodeInterrupt

    def node(state: S) -> dict[str, Any]:
        raise NodeInterrupt("old style")

    g = StateGraph(S)
    g.add_node("node", node)
    g.add_edge(START, "node")
    graph = g.compile(checkpointer=InMemorySaver())
    with pytest.warns(DeprecationWarning, match="NodeInterrupt is deprecated"):
        out = drive.invoke(graph, {"answers": []}, cfg("ni"))
    (intr,) = out["__interrupt__"]
    assert intr.value == "old style"
    assert len(intr.id) == 32


def test_durability_exit_saves_only_at_the_end(drive):
    graph = form_graph()
    drive.invoke(graph, {"answers": []}, cfg("exit"), durability="exit")
    history = drive.history(graph, cfg("exit"))
    assert len(history) == 1  # one checkpoint, written when the run paused
    assert [i.value for i in history[0].interrupts] == ["name?"]
    drive.invoke(graph, Command(resume="Ann"), cfg("exit"), durability="exit")
    assert [i.value for i in drive.get_state(graph, cfg("exit")).interrupts] == ["email?"]


@pytest.mark.parametrize("durability", ["sync", "exit"])
def test_what_a_fork_saves_later_follows_the_fork(drive, durability):
    """A fork is saved at once whatever the durability; what the run saves after it
    (at exit too) names the fork as its parent, not the checkpoint it was copied from."""

    def first(state: S) -> dict[str, Any]:
        return {"answers": [interrupt("a?")]}

    def second(state: S) -> dict[str, Any]:
        return {"answers": [interrupt("b?")]}

    g = StateGraph(S)
    g.add_node("first", first)
    g.add_node("second", second)
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    graph = g.compile(checkpointer=InMemorySaver())
    drive.invoke(graph, {"answers": []}, cfg("f"))
    drive.invoke(graph, Command(resume="x"), cfg("f"))
    old = next(s for s in drive.history(graph, cfg("f")) if s.next == ("first",))
    out = drive.invoke(graph, Command(resume="y"), old.config, durability=durability)
    assert out["answers"] == ["y"]
    newest, fork, *_ = drive.history(graph, cfg("f"))
    assert fork.metadata["source"] == "fork"
    assert fork.parent_config == old.config
    assert newest.parent_config == fork.config
    assert newest.next == ("second",)


def test_interrupt_type_matches_the_chapter():
    from pausepoint.types import Interrupt

    intr = Interrupt.from_ns("q", "node:task-1")
    assert intr == Interrupt("q", intr.id)
    assert len(intr.id) == 32
    intr.value = "changed"  # not frozen, as in LangGraph
    assert intr.value == "changed"
    assert not hasattr(intr, "__dict__")  # slotted

    class Custom(Interrupt):  # @final only binds type checkers  # pyright: ignore[reportGeneralTypeIssues]
        pass

    assert issubclass(Custom, Interrupt)


def test_recursion_limit_is_per_invocation(drive):
    """Each resume gets a full budget: the limit counts steps since the run started."""

    class Loop(TypedDict):
        n: int

    def ask_every_third(state: Loop) -> dict[str, Any]:
        if state["n"] % 3 == 2:
            interrupt(f"checkpoint at {state['n']}")
        return {"n": state["n"] + 1}

    g = StateGraph(Loop)
    g.add_node("step", ask_every_third)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: END if s["n"] >= 9 else "step")
    graph = g.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "budget"}, "recursion_limit": 4}
    out = drive.invoke(graph, {"n": 0}, config)
    for paused_at in (2, 5, 8):  # 9 steps in all, never more than 4 per invocation
        assert out["__interrupt__"][0].value == f"checkpoint at {paused_at}"
        out = drive.invoke(graph, Command(resume="ok"), config)
    assert out == {"n": 9}


def test_a_root_graph_ignores_a_namespace_in_its_config(drive):
    """Only a graph run inside a task is nested; a copied checkpoint_ns changes nothing."""
    graph = form_graph()
    config = {"configurable": {"thread_id": "ns", "checkpoint_ns": "form:some-task"}}
    out = drive.invoke(graph, {"answers": []}, config)
    assert out["__interrupt__"][0].value == "name?"  # suppressed at the root, not raised
    assert drive.get_state(graph, cfg("ns")).next == ("form",)  # saved in the root namespace


def _a_then_b(saver: Any) -> Any:
    """START → a → b, each appending its name to ``answers``."""
    g = StateGraph(S)
    g.add_node("a", lambda s: {"answers": ["a"]})
    g.add_node("b", lambda s: {"answers": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    return g.compile(checkpointer=saver)


def test_invoke_with_another_stream_mode_keeps_the_run_options(drive):
    graph = _a_then_b(InMemorySaver())
    chunks = drive.invoke(
        graph, {"answers": []}, cfg("modes"), stream_mode="updates", interrupt_before=["b"]
    )
    assert chunks == [{"a": {"answers": ["a"]}}, {"__interrupt__": ()}]


class _PlainSaver:
    """A saver with LangGraph's methods only (no ``commit``, no ``put_after_writes``),
    delegating to an InMemorySaver."""

    def __init__(self) -> None:
        self.inner = InMemorySaver()
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if "after_writes" in name or "commit" in name or name in ("batches", "put_pair"):
            raise AttributeError(name)
        self.calls.append(name)
        return getattr(self.inner, name)


def test_a_saver_without_commit_gets_separate_calls(drive):
    # A saver that does not derive from BaseCheckpointSaver and has no commit() gets
    # each commit as put_writes and put calls, in the order commit() states.
    saver = _PlainSaver()
    g = StateGraph(S)
    g.add_node("ask", lambda s: {"answers": [interrupt("ok?")]})
    g.add_edge(START, "ask")
    graph = g.compile(checkpointer=saver)  # pyright: ignore[reportArgumentType]
    drive.invoke(graph, {"answers": []}, cfg("plain"))
    assert drive.invoke(graph, Command(resume="yes"), cfg("plain"))["answers"] == ["yes"]
    puts = [c for c in saver.calls if c in {"put", "aput", "put_writes", "aput_writes"}]
    # input checkpoint; input writes + step checkpoint; interrupt; resume; writes + checkpoint
    assert [c.lstrip("a") for c in puts] == [
        "put",
        "put_writes",
        "put",
        "put_writes",
        "put_writes",
        "put_writes",
        "put",
    ]


def test_in_memory_saver_gets_each_steps_last_writes_with_its_checkpoint(drive):
    # InMemorySaver batches writes: with no stream read, a step's only task's writes
    # reach it in the same call as the step's checkpoint (one call, one lock).
    calls: list[str] = []

    class Counting(InMemorySaver):
        def put_writes(self, *args: Any, **kwargs: Any) -> None:
            calls.append("put_writes")
            super().put_writes(*args, **kwargs)

        def commit(self, step: StepCommit) -> Any:
            calls.append(f"commit({[w.writes for w in step.writes]})")
            return super().commit(step)

    graph = _a_then_b(Counting())
    assert drive.invoke(graph, {"answers": []}, cfg("batched"))["answers"] == ["a", "b"]
    assert calls == [
        "commit([])",  # the input checkpoint
        "commit([[('answers', []), ('branch:to:a', None)]])",
        "commit([[('answers', ['a']), ('branch:to:b', None)]])",
        "commit([[('answers', ['b'])]])",
    ]


def test_interrupt_owners_index_answerable_interrupts_by_task():
    # The index a resume checks and binds answers with: a @task call's interrupt is
    # held by the call's record and by its caller's; a finished task's is not
    # answerable; a task that failed after pausing still is.
    call, other, done, failed = (c * 32 for c in "abcd")
    writes = [
        PendingWrite("call-task", INTERRUPT, (Interrupt("q", call),)),
        PendingWrite("entry-task", INTERRUPT, (Interrupt("q", call), Interrupt("r", other))),
        PendingWrite("done-task", INTERRUPT, (Interrupt("s", done),)),
        PendingWrite("done-task", RESUME, ["yes"]),
        PendingWrite("done-task", "out", 1),
        PendingWrite("failed-task", INTERRUPT, (Interrupt("t", failed),)),
        PendingWrite("failed-task", ERROR, "ValueError('boom')"),
    ]
    records, null_writes = read_records(writes)
    assert null_writes == []
    assert records["done-task"].done
    assert records["done-task"].writes == [("out", 1)]
    assert records["done-task"].resume == ["yes"]
    owners = interrupt_owners(records)
    assert owners == {
        call: ["call-task", "entry-task"],
        other: ["entry-task"],
        failed: ["failed-task"],
    }
    reported = [*records["entry-task"].interrupts]
    assert parse_resume({call: 1}, reported, owners).values == {call: 1}
    with pytest.raises(UnknownInterruptIdError, match="not pending"):
        parse_resume({done: 1}, reported, owners)
