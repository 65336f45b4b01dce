"""A Hypothesis state machine over the answer store: one answer, one question (DESIGN §4.1).

A person is shown questions and answers them; their client sends answers (plain or
by interrupt id), resends earlier requests, sends a different answer to an answered
question, re-answers with ``Reanswer``, retries with ``invoke(None)``; workers die
after an answer is stored (a :class:`FaultySaver` failing every save after the
answer's, or every one from a random later call on); nodes fail and are healed.
After every step:

- each value a node got from ``interrupt()`` is the answer the person gave to *that*
  question (or the re-answer that replaced it), and the person had been shown it;
- a refused resume changed no stored checkpoint, write or history, and ran no node;
- the snapshot says of every paused task what the model says: waiting, answered
  (run pending) or failed after the answer, at which question, with which answer;
- history is one line (no rule forks on purpose).

The model predicts every outcome exactly, except after a random crash: each task may
then be as before the run, with its answer stored, or as at the run's end, and the
snapshot must show one of those.

The person answers only what the client has shown (an invoke's ``__interrupt__``, or
``get_state``, read first after a failed run). Resends are blind, so they wait until
the client has seen every waiting question: a request cannot say which question of a
task it answers (one interrupt id per task), so after a failed run that asked a
task's next question, a blind resend answers it unseen. That known limitation is
pinned (xfail) by ``test_retried_request_after_a_failed_run_answers_no_unseen_question``
in tests/test_answers.py.

Longer runs: ``pytest -m stress tests/test_answers_stateful.py``.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import operator
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from pausepoint import END, START, Command, InMemorySaver, StateGraph, interrupt
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import (
    AlreadyAnsweredError,
    AmbiguousResumeError,
    NothingToResumeError,
)
from pausepoint.testing import FaultySaver, InjectedFault
from pausepoint.types import Reanswer

FAST = settings(
    max_examples=50,
    stateful_step_count=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
STRESS = settings(FAST, max_examples=1000, stateful_step_count=80)

VALUES = st.sampled_from(["yes", "no", "maybe", 7, 8, ["a", 1], {"k": "v"}])
"""Few values, so that the same answer is often sent again, to the same or another question."""


class S(TypedDict, total=False):
    log: Annotated[list[Any], operator.add]


class NodeFailure(Exception):
    """What a node raises after an answer when the machine breaks it."""


def question(name: str, pos: int) -> str:
    """The value of the ``pos``-th question of task ``name``."""
    return f"{name}:q{pos}"


def cfg(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


@dataclasses.dataclass(frozen=True)
class Seen:
    """One value an ``interrupt()`` call returned to a node."""

    thread: str
    name: str
    pos: int
    value: Any


class Family:
    """The graph under test: one node asking ``k`` questions in a row (``seq``), or two
    parallel nodes asking ``k`` each and a join (``par``). Nodes log what they get."""

    def __init__(self, variant: str, k: int) -> None:
        self.k = k
        self.names = ("ask",) if variant == "seq" else ("a", "b")
        self.fail_at: dict[str, set[int]] = {n: set() for n in self.names}
        self.seen: list[Seen] = []
        self.running = 0
        self._idle = threading.Condition()
        b = StateGraph(S)
        for name in self.names:
            b.add_node(name, self._node(name))
            b.add_edge(START, name)
        if variant == "seq":
            b.add_edge("ask", END)
        else:
            b.add_node("join", lambda state: {"log": ["joined"]})
            b.add_edge(["a", "b"], "join")
            b.add_edge("join", END)
        self.builder = b

    def _node(self, name: str) -> Any:
        def node(state: S, config: Any) -> dict[str, Any]:
            with self._idle:
                self.running += 1
            try:
                return ask(config["configurable"]["thread_id"])
            finally:
                with self._idle:
                    self.running -= 1
                    self._idle.notify_all()

        def ask(thread: str) -> dict[str, Any]:
            got: list[Any] = []
            for pos in range(self.k):
                value = interrupt(question(name, pos))
                self.seen.append(Seen(thread, name, pos, value))
                if pos in self.fail_at[name]:
                    raise NodeFailure(f"{name} fails after question {pos}")
                got.append(value)
            return {"log": [f"{name}={got!r}"]}

        return node

    def wait_idle(self) -> bool:
        """Wait for nodes still running: an invoke whose save failed does not wait for
        the other tasks of its step (their outcomes are dropped, but a node body runs on)."""
        with self._idle:
            return self._idle.wait_for(lambda: self.running == 0, timeout=30)


@dataclasses.dataclass
class TaskModel:
    """What the person knows of one task: its stored answers, and where it stands."""

    status: str = "waiting"  # waiting | answered | failed | done
    answers: list[Any] = dataclasses.field(default_factory=list[Any])
    iid: str | None = None

    @property
    def pos(self) -> int:
        """The question it is paused on (``k`` once done)."""
        return len(self.answers) - (self.status in ("answered", "failed"))

    def view(self) -> tuple[str, int, Any]:
        stored = self.answers[-1] if self.status in ("answered", "failed") else None
        return self.status, self.pos, stored


@dataclasses.dataclass(frozen=True)
class Resume:
    """A resume the client sends: a plain value, or values by task (sent by interrupt id)."""

    value: Any = None
    by_task: tuple[tuple[str, Any], ...] = ()


@dataclasses.dataclass
class ThreadModel:
    id: str
    tasks: dict[str, TaskModel]
    shown: set[tuple[str, int]] = dataclasses.field(default_factory=set[tuple[str, int]])
    sent: list[Resume] = dataclasses.field(default_factory=list[Resume])
    finished: bool = False
    moved_on: bool = False
    """A crash left the thread past its questions' step, its next step not run."""


@dataclasses.dataclass
class Plan:
    """The expected outcome of a resume (or of ``invoke(None)``)."""

    refused: type[Exception] | None = None
    bound: dict[str, TaskModel] = dataclasses.field(default_factory=dict[str, TaskModel])
    after: dict[str, TaskModel] = dataclasses.field(default_factory=dict[str, TaskModel])
    failed: bool = False
    finished: bool = False


def bind(task: TaskModel, given: Any) -> bool:
    """Store ``given`` at the task's question; False if it is refused (another answer)."""
    replace = isinstance(given, Reanswer)
    value = _unwrapped(given)
    if task.status == "waiting":
        task.answers.append(value)
        task.status = "answered"
    elif task.answers[-1] != value:
        if not replace:
            return False
        task.answers[-1] = value
    return True


def _unwrapped(given: Any) -> Any:
    return given.value if isinstance(given, Reanswer) else given


def advance(task: TaskModel, fail_at: set[int], k: int) -> bool:
    """Run the task's node once; True if it fails."""
    if task.status == "waiting":
        return False  # it asks its question again
    if task.pos in fail_at:
        task.status = "failed"
        return True
    task.status = "done" if task.pos + 1 == k else "waiting"
    return False


def targets(thread: ThreadModel, resume: Resume) -> dict[str, Any] | type[Exception]:
    """The tasks a resume answers, or the error refusing it (``parse_resume``'s rules)."""
    pending = [n for n, t in thread.tasks.items() if t.status != "done"]
    if not pending and (thread.finished or thread.moved_on or not resume.by_task):
        # Every task is done. A crash may have left the step unfinished (its tasks
        # done, its checkpoint unsaved): an answer by id to a task that used it is
        # then a resend, dropped, and the run goes on; a plain value answers nothing.
        # Past that step (its checkpoint saved, the join's not), no question is
        # pending at all: any resume is refused.
        return NothingToResumeError
    if resume.by_task:
        kept: dict[str, Any] = {}
        for name, given in resume.by_task:
            task = thread.tasks[name]
            if task.status != "done":
                kept[name] = given
            elif not task.answers or task.answers[-1] != _unwrapped(given):
                # A finished task's last answer is kept: another one is refused (a
                # Reanswer too: the task has used it)...
                return AlreadyAnsweredError
            # ...and the same one again is dropped (a resend, of a Reanswer too).
        return kept
    waiting = [n for n in pending if thread.tasks[n].status == "waiting"]
    chosen = waiting or pending
    if len(chosen) > 1:
        return AmbiguousResumeError
    return {chosen[0]: resume.value}


def plan(thread: ThreadModel, resume: Resume | None, family: Family) -> Plan:
    """What ``Command(resume=...)`` (or ``invoke(None)`` for None) does to the thread."""
    tasks = copy.deepcopy(thread.tasks)
    answered: dict[str, Any] = {}
    if resume is not None:
        found = targets(thread, resume)
        if isinstance(found, type):
            return Plan(refused=found)
        answered = found
        for name, given in answered.items():
            if not bind(tasks[name], given):
                return Plan(refused=AlreadyAnsweredError)
    bound = copy.deepcopy(tasks)
    failed = False
    for name, task in tasks.items():
        # Re-run: what this resume answers, what has a stored answer, and on
        # invoke(None) every paused task (a waiting one asks again).
        if task.status != "done" and (
            resume is None or name in answered or task.status != "waiting"
        ):
            failed |= advance(task, family.fail_at[name], family.k)
    finished = not failed and all(t.status == "done" for t in tasks.values())
    return Plan(None, bound, tasks, failed, finished)


def observe(snap: Any, name: str, k: int) -> tuple[str, int, Any]:
    """A task's state as the snapshot shows it, in the form of :meth:`TaskModel.view`."""
    task = next((t for t in snap.tasks if t.name == name), None)
    if task is None or task.status == "ready":
        return "done", k, None
    if task.status == "waiting":
        assert task.answered == ()
        (intr,) = task.interrupts
        return "waiting", int(intr.value.rsplit(":q", 1)[1]), None
    assert task.interrupts == ()
    (answer,) = task.answered
    assert answer.interrupt.value == question(name, answer.position)
    return task.status, answer.position, answer.value


def stored(saver: Any, thread: str) -> Any:
    """What a refused resume must leave unchanged: the head checkpoint, its writes, history."""
    t = saver.get_tuple(cfg(thread))
    writes = sorted((w.task_id, w.channel, repr(w.value)) for w in t.pending_writes or [])
    return t.config, writes, len(list(saver.list(cfg(thread))))


class AnswerStore(RuleBasedStateMachine):
    """A person, a client and crashing workers against one saver (see the module doc)."""

    saver_kind = "memory"
    drive: Any = None  # the conftest Driver (sync or async), set per test

    def __init__(self) -> None:
        super().__init__()
        self._closing = contextlib.ExitStack()
        self.saver = self._open_saver()
        self.count = 0

    def _open_saver(self) -> Any:
        if self.saver_kind == "memory":
            return InMemorySaver()
        folder = tempfile.mkdtemp(prefix="pp-answers-")
        self._closing.callback(shutil.rmtree, folder, ignore_errors=True)
        opened = SqliteSaver.from_conn_string(str(Path(folder) / "answers.sqlite"))
        saver = opened.__enter__()
        self._closing.callback(opened.__exit__)
        return saver

    def teardown(self) -> None:
        self._closing.close()

    # -- the graph and the thread --------------------------------------------------

    @initialize(shape=st.sampled_from([("seq", 2), ("seq", 3), ("par", 1), ("par", 2)]))
    def start(self, shape: tuple[str, int]) -> None:
        self.family = Family(*shape)
        self.graph = self.family.builder.compile(checkpointer=self.saver)
        self.start_thread()

    @precondition(lambda self: self.thread.finished)
    @rule()
    def next_thread(self) -> None:
        """The thread is done: the person starts another one."""
        self.start_thread()

    def start_thread(self) -> None:
        self.count += 1
        for flags in self.family.fail_at.values():
            flags.clear()
        self.thread = ThreadModel(f"t{self.count}", {n: TaskModel() for n in self.family.names})
        out = self.drive.invoke(self.graph, {"log": []}, cfg(self.thread.id))
        self.show(out["__interrupt__"])

    def show(self, interrupts: Any) -> None:
        """The person sees these questions (an invoke's output, or ``get_state``)."""
        for intr in interrupts:
            name, pos = intr.value.rsplit(":q", 1)
            self.thread.shown.add((name, int(pos)))
            self.thread.tasks[name].iid = intr.id

    def waiting(self, shown: bool = True) -> list[str]:
        return [
            n
            for n, t in self.thread.tasks.items()
            if t.status == "waiting" and (not shown or (n, t.pos) in self.thread.shown)
        ]

    def in_status(self, *statuses: str) -> list[str]:
        return [n for n, t in self.thread.tasks.items() if t.status in statuses]

    def up_to_date(self) -> bool:
        """The client has seen every waiting question (it may send an answer)."""
        return self.waiting() == self.waiting(shown=False)

    def form(self, data: Any, name: str, value: Any) -> Resume:
        """The answer as a plain value, or by the task's interrupt id."""
        if self.thread.tasks[name].iid is not None and data.draw(st.booleans(), label="by id"):
            return Resume(by_task=((name, value),))
        return Resume(value)

    # -- what the person and the client do -----------------------------------------
    # The person answers what the client shows; the client reads ``get_state`` first
    # when it has not seen every waiting question (``catch_up``). Only a resend is
    # blind, so it waits until the client is up to date (see the module doc).

    def catch_up(self) -> None:
        if not self.up_to_date():
            self.look()

    @precondition(lambda self: self.waiting(shown=False))
    @rule(data=st.data(), values=st.lists(VALUES, min_size=2, max_size=2))
    def answer(self, data: Any, values: list[Any]) -> None:
        """Answer a waiting question, or both in one request by id (``par``)."""
        self.catch_up()
        names = self.waiting()
        if len(names) > 1 and data.draw(st.booleans(), label="both"):
            self.send(Resume(by_task=tuple(zip(names, values, strict=True))))
            return
        name = data.draw(st.sampled_from(names), label="task")
        self.send(self.form(data, name, values[0]))

    @precondition(lambda self: self.up_to_date() and self.thread.sent)
    @rule(data=st.data())
    def resend(self, data: Any) -> None:
        """Send an earlier request again, as it was (a client retry, a double submit)."""
        self.send(data.draw(st.sampled_from(self.thread.sent[::-1]), label="request"))

    @precondition(lambda self: self.in_status("answered", "failed"))
    @rule(data=st.data())
    def answer_differently(self, data: Any) -> None:
        """Another answer to a question that has one: refused (a plain value goes to a
        question that waits, if one does)."""
        self.catch_up()
        name = data.draw(st.sampled_from(self.in_status("answered", "failed")), label="task")
        stored_value = self.thread.tasks[name].answers[-1]
        value = data.draw(VALUES.filter(lambda v: v != stored_value), label="value")
        self.send(self.form(data, name, value))

    @precondition(lambda self: self.in_status("answered", "failed", "waiting"))
    @rule(data=st.data(), value=VALUES)
    def reanswer(self, data: Any, value: Any) -> None:
        """Replace a stored answer on purpose: ``Reanswer`` (a plain answer if none is)."""
        self.catch_up()
        names = self.in_status("answered", "failed") + self.waiting()
        name = data.draw(st.sampled_from(names), label="task")
        self.send(self.form(data, name, Reanswer(value)))

    @rule()
    def retry(self) -> None:
        """``invoke(None)``: continue with the stored answers."""
        self.send(None)

    @rule()
    def look(self) -> None:
        """The client reads ``get_state`` and shows the person what waits."""
        self.show(self.drive.get_state(self.graph, cfg(self.thread.id)).interrupts)

    @precondition(lambda self: self.in_status("waiting", "answered"))
    @rule(data=st.data())
    def break_node(self, data: Any) -> None:
        """Make a node fail after the answer to its current or a later question."""
        name = data.draw(st.sampled_from(self.in_status("waiting", "answered")), label="task")
        pos = data.draw(st.integers(self.thread.tasks[name].pos, self.family.k - 1), label="pos")
        self.family.fail_at[name].add(pos)

    @precondition(lambda self: any(self.family.fail_at.values()))
    @rule(data=st.data())
    def heal_node(self, data: Any) -> None:
        """Fix what made a node fail."""
        broken = [(n, p) for n, ps in self.family.fail_at.items() for p in sorted(ps)]
        name, pos = data.draw(st.sampled_from(broken), label="flag")
        self.family.fail_at[name].discard(pos)

    @precondition(lambda self: self.waiting(shown=False))
    @rule(data=st.data(), value=VALUES, again=st.booleans())
    def crash_after_answer(self, data: Any, value: Any, again: bool) -> None:
        """The worker dies right after the answer is stored (every later save fails);
        ``again``: the client retries the request at once."""
        self.catch_up()
        name = data.draw(st.sampled_from(self.waiting()), label="task")
        resume = self.form(data, name, value)
        self.send(resume, fault=("put_writes", 1), exact=True)
        if again:
            self.send(resume)

    @rule(
        data=st.data(),
        point=st.sampled_from([("put_writes", n) for n in range(4)] + [("put", 0), ("put", 1)]),
        again=st.booleans(),
    )
    def crash_somewhere(self, data: Any, point: tuple[str, int], again: bool) -> None:
        """The worker dies at some save of an answer or a retry (maybe after the end);
        ``again``: the client retries at once, unless a question it has not seen waits."""
        self.catch_up()
        options: list[Resume | None] = [
            self.form(data, name, data.draw(VALUES, label=f"to {name}")) for name in self.waiting()
        ]
        options.append(None)
        resume = data.draw(st.sampled_from(options), label="request")
        self.send(resume, fault=point)
        if again and self.up_to_date():
            self.send(resume)

    # -- sending, and checking what happened -------------------------------------------

    def send(
        self, resume: Resume | None, fault: tuple[str, int] | None = None, exact: bool = False
    ) -> None:
        thread = self.thread
        expected = plan(thread, resume, self.family)
        shown_before = set(thread.shown)
        seen_from = len(self.family.seen)
        if resume is not None:
            thread.sent.append(resume)
        if expected.refused is not None:
            event("refused", expected.refused.__name__)
            self.refused(self.command(resume), expected.refused, seen_from)
            return
        graph, faulty = self.graph, None
        if fault is not None:
            faulty = FaultySaver(self.saver, fail_on=fault[0], after=fault[1], times=None)
            graph = self.family.builder.compile(checkpointer=faulty)
        out: Any = None
        try:
            out = self.drive.invoke(graph, self.command(resume), cfg(thread.id))
        except NodeFailure:
            assert expected.failed or (faulty is not None and faulty.failures)
        except InjectedFault:
            assert faulty is not None
        else:
            assert not expected.failed or (faulty is not None and faulty.failures)
        assert self.family.wait_idle()
        self.check_seen(seen_from, expected.bound, shown_before)
        if faulty is not None and faulty.failures:
            event("crash", "exact" if exact else "random")
            self.after_crash(expected, exact)
            return
        thread.tasks, thread.finished = expected.after, expected.finished
        thread.moved_on = False
        if out is not None:  # the output lists every question that waits
            asked = out.get("__interrupt__", ())
            waiting = self.waiting(shown=False)
            assert {i.value for i in asked} == {question(n, thread.tasks[n].pos) for n in waiting}
            self.show(asked)

    def command(self, resume: Resume | None) -> Command[Any] | None:
        if resume is None:
            return None
        if not resume.by_task:
            return Command(resume=resume.value)
        return Command(resume={self.thread.tasks[n].iid: v for n, v in resume.by_task})

    def refused(self, command: Any, error: type[Exception], seen_from: int) -> None:
        """A refused resume raises ``error``, runs no node and writes nothing."""
        before = stored(self.saver, self.thread.id)
        with pytest.raises(error):
            self.drive.invoke(self.graph, command, cfg(self.thread.id))
        assert stored(self.saver, self.thread.id) == before
        assert len(self.family.seen) == seen_from

    def check_seen(
        self, seen_from: int, bound: dict[str, TaskModel], shown_before: set[tuple[str, int]]
    ) -> None:
        """Each value a node got is the person's answer to that question, which they saw."""
        for seen in self.family.seen[seen_from:]:
            assert seen.thread == self.thread.id
            assert (seen.name, seen.pos) in shown_before, f"{seen} answers an unseen question"
            answers = bound[seen.name].answers
            assert seen.pos < len(answers), f"{seen}: no answer was given to it"
            assert seen.value == answers[seen.pos], (
                f"{seen}: the person answered {answers[seen.pos]!r}"
            )

    def after_crash(self, expected: Plan, exact: bool) -> None:
        """A run that died: each task is as before, with its answers stored, or as at the end."""
        before = self.thread.tasks
        snap = self.drive.get_state(self.graph, cfg(self.thread.id))
        for name in self.family.names:
            seen = observe(snap, name, self.family.k)
            options = (
                [expected.bound[name]]
                if exact
                else [before[name], expected.bound[name], expected.after[name]]
            )
            match = next((t for t in options if t.view() == seen), None)
            assert match is not None, (
                f"{name} is {seen} after a crash; expected one of {[t.view() for t in options]}"
            )
            before[name] = copy.deepcopy(match)
        finished = not snap.tasks and not snap.next
        assert finished in (self.thread.finished, expected.finished)
        self.thread.finished = finished
        self.thread.moved_on = not finished and not any(
            t.name in self.family.names for t in snap.tasks
        )

    # -- invariants ------------------------------------------------------------------

    @invariant()
    def snapshot_matches_model(self) -> None:
        snap = self.drive.get_state(self.graph, cfg(self.thread.id))
        for name, task in self.thread.tasks.items():
            assert observe(snap, name, self.family.k) == task.view(), name
        waiting = {
            question(n, t.pos) for n, t in self.thread.tasks.items() if t.status == "waiting"
        }
        assert {i.value for i in snap.interrupts} == waiting
        assert (not snap.tasks and not snap.next) == self.thread.finished

    @invariant()
    def history_is_one_line(self) -> None:
        items = list(self.saver.list(cfg(self.thread.id)))
        ids = [t.config["configurable"]["checkpoint_id"] for t in items]
        parents = [
            t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
            for t in items
        ]
        assert parents == [*ids[1:], None]


def machine(saver_kind: str, drive: Any) -> type[AnswerStore]:
    name = f"AnswerStore_{saver_kind}_{drive.kind}"
    return type(name, (AnswerStore,), {"saver_kind": saver_kind, "drive": drive})


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_one_answer_one_question(saver_kind: str, drive: Any) -> None:
    run_state_machine_as_test(machine(saver_kind, drive), settings=FAST)


@pytest.mark.stress
@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_one_answer_one_question_stress(saver_kind: str, drive: Any) -> None:
    run_state_machine_as_test(machine(saver_kind, drive), settings=STRESS)
