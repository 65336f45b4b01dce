"""``@task`` calls made while a node runs: ids, memoized results, bound answers.

A call to a ``@task`` function inside a running node (or entrypoint) is a task of
its own, with an id derived from its parent task and its position among the
parent's calls, so it is the same task every time the parent re-runs. When a
call finishes, its result is saved as a pending write; when the parent runs
again (after an interrupt, a failure or a crash), the call finds that write and
returns the saved result without running. Calls must therefore be made in the
same order on every run: pausepoint checks that the task recorded at a position
is the one called there (`NondeterministicTaskError`).

Pure bookkeeping: the drivers run the calls and save their writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from pausepoint.checkpoint.base import CheckpointRef
from pausepoint.checkpoint.ids import now_iso
from pausepoint.constants import PUSH, RETURN
from pausepoint.errors import GraphInterrupt, NondeterministicTaskError
from pausepoint.loop.answers import bind_answer
from pausepoint.loop.pending import TaskRecord, is_own_interrupt
from pausepoint.loop.tasks import task_id, task_ns
from pausepoint.observing import OBSERVING, TaskTrace
from pausepoint.types import RetryPolicy

__all__ = ["CallEvents", "CallRequest", "CallSite", "Memo", "returned"]


@dataclasses.dataclass(frozen=True, slots=True)
class CallRequest:
    """A ``@task`` call the driver must run (and whose writes it must save)."""

    id: str
    name: str
    ns: str
    fn: Callable[..., Any]
    args: tuple[object, ...]
    kwargs: Mapping[str, object]
    is_async: bool
    retry: tuple[RetryPolicy, ...]
    resume: tuple[object, ...]
    new_answer: bool
    save_at: CheckpointRef | None
    site: CallSite
    trace: TaskTrace | None = None
    """The call's observation (`pausepoint.observing`), when an observer is installed."""


@dataclasses.dataclass(frozen=True, slots=True)
class Memo:
    """A call whose outcome is already known: a saved result, or a pause still pending."""

    value: object = None
    pause: GraphInterrupt | None = None


def returned(name: str, value: object) -> dict[str, object]:
    """The ``RETURN`` write of a finished call (the name is kept for the determinism check)."""
    return {"task": name, "value": value}


def _saved_return(rec: TaskRecord) -> dict[str, object]:
    saved: object = next((v for c, v in rec.writes if c == RETURN), None)
    if isinstance(saved, dict):
        record: dict[str, object] = saved  # pyright: ignore[reportUnknownVariableType]
        return record
    return {"value": saved}


class CallEvents:
    """How ``@task`` calls show in the streams being read (``updates``, ``tasks``, ``debug``).

    A call is a task of its own, as in LangGraph: a ``task`` event when it is made
    (a saved result replayed too), and when it finishes here an ``updates`` chunk
    and a ``task_result`` event (none for a pause: its parent reports it).
    Called from the threads that run calls; the sink is thread-safe.
    """

    __slots__ = ("debug", "ns", "sink", "step", "tasks", "updates")

    def __init__(
        self,
        sink: Callable[[tuple[str, ...], str, Any], None],
        ns: tuple[str, ...],
        modes: frozenset[str],
        step: int,
    ) -> None:
        self.sink, self.ns, self.step = sink, ns, step
        self.updates = "updates" in modes
        self.tasks = "tasks" in modes
        self.debug = "debug" in modes

    @classmethod
    def wanted(
        cls,
        sink: Callable[[tuple[str, ...], str, Any], None] | None,
        ns: tuple[str, ...],
        modes: frozenset[str],
        step: int,
    ) -> CallEvents | None:
        """The reporter for a run streaming ``modes``, or None if none of them shows calls."""
        if sink is None or modes.isdisjoint(("updates", "tasks", "debug")):
            return None
        return cls(sink, ns, modes, step)

    def started(
        self, call_id: str, name: str, args: tuple[object, ...], kwargs: Mapping[str, object]
    ) -> None:
        """A call was made: its ``task`` event (input ``(args, kwargs)``)."""
        given = (args, dict(kwargs))
        self._task_event("task", {"id": call_id, "name": name, "input": given, "triggers": (PUSH,)})

    def finished(self, call_id: str, name: str, value: object, error: BaseException | None) -> None:
        """A call ended with ``value`` or ``error`` (not a pause): its result events."""
        if error is None and self.updates:
            self.sink(self.ns, "updates", {name: value})
        result: dict[str, object] = {RETURN: value} if error is None else {}
        payload: dict[str, object] = {
            "id": call_id,
            "name": name,
            "error": error,
            "result": result,
            "interrupts": [],
        }
        self._task_event("task_result", payload)

    def _task_event(self, kind: str, payload: dict[str, object]) -> None:
        if self.tasks:
            self.sink(self.ns, "tasks", payload)
        if self.debug:
            event = {"step": self.step, "timestamp": now_iso(), "type": kind, "payload": payload}
            self.sink(self.ns, "debug", event)


class CallSite:
    """The calls of one parent task, shared by its attempts."""

    def __init__(
        self,
        parent_id: str,
        checkpoint_id: str,
        graph_ns: str,
        step: int,
        records: Mapping[str, TaskRecord],
        answers: Mapping[str, object],
        save_at: CheckpointRef | None,
    ) -> None:
        self.parent_id = parent_id
        self.checkpoint_id = checkpoint_id
        self.graph_ns = graph_ns
        self.step = step
        self.records = records
        self.answers = answers
        self.save_at = save_at
        # Outcomes reached in this invocation: a retried parent reuses them too.
        # Written by the threads that run calls: single dict operations, which
        # need no lock.
        self.finished: dict[str, TaskRecord] = {}
        self.started: list[Any] = []  # the drivers' call futures (loop/ cannot name them)
        """Futures of the calls started here: the parent's outcome waits for them."""
        self.events: CallEvents | None = None
        """Reports calls in the streams (set when one that shows them is streamed)."""
        self.kept: list[tuple[str, list[tuple[str, object]]]] | None = None
        """Where calls' writes wait for the run's exit (durability ``"exit"``; ``save_at``
        is None then): the step's list, shared by every call site of the step."""

    def request(
        self,
        index: int,
        name: str,
        fn: Callable[..., Any],
        args: tuple[object, ...],
        kwargs: Mapping[str, object],
        is_async: bool,
        retry: tuple[RetryPolicy, ...],
    ) -> CallRequest | Memo:
        """What to do for the parent's ``index``-th call, of task ``name``."""
        cid = task_id(
            self.checkpoint_id,
            self.graph_ns,
            self.step,
            "__call__",
            PUSH,
            f"{self.parent_id}/{index}",
        )
        rec = self.finished.get(cid) or self.records.get(cid)
        ns = task_ns(self.graph_ns, name, cid)
        if self.events is not None:
            self.events.started(cid, name, args, kwargs)
        if rec is not None and rec.done:
            return self._memo(rec, index, name)
        resume = tuple(rec.resume or ()) if rec is not None else ()
        new_answer = False
        asked_span: str | None = None
        if rec is not None and rec.resumable:
            answer = [self.answers[i.id] for i in rec.interrupts if i.id in self.answers]
            if answer and is_own_interrupt(rec.interrupts[0], ns):
                # Bound to the call's question, as a node's answer is (answers.py).
                bound = bind_answer(rec, rec.interrupts[0], answer[0])
                if bound is not None:
                    resume, new_answer = tuple(bound), True
                    asked_span = rec.asked_span
            elif not answer and rec.paused and self.answers and not rec.answered:
                # (An answer to a question of a graph the call runs reaches it through
                # the resume map the graph inherits: the call runs again.)
                # Partially resumed parent: a call nobody answered stays paused (§4.6).
                return Memo(pause=GraphInterrupt(rec.interrupts))
        # The call's observation, if an observer is installed (``asked_span``: what the
        # asker of the question this call answers stored, for a link to it).
        watch = OBSERVING.observer
        return CallRequest(
            cid,
            name,
            ns,
            fn,
            args,
            kwargs,
            is_async,
            retry,
            resume,
            new_answer,
            self.save_at,
            self,
            None if watch is None else watch.call_started(name, cid, asked_span),
        )

    def _memo(self, rec: TaskRecord, index: int, name: str) -> Memo:
        saved = _saved_return(rec)
        recorded = saved.get("task")
        if recorded is not None and recorded != name:
            raise NondeterministicTaskError(
                f"call #{index} of this node ran task {recorded!r} before, but now calls "
                f"{name!r}. Saved task results are matched to calls by their order, so a "
                "node must call the same tasks in the same order every time it runs "
                "(move decisions that change the calls into a task of their own, or "
                "after the interrupt)."
            )
        return Memo(value=saved.get("value"))

    def report(self, request: CallRequest, value: object, error: BaseException | None) -> None:
        """Stream a finished call's result (or error) when someone listens; not a pause."""
        if self.events is not None and not isinstance(error, GraphInterrupt):
            self.events.finished(request.id, request.name, value, error)

    def keep(self, request: CallRequest, writes: list[tuple[str, object]]) -> None:
        """Keep a call's writes for the run's exit, when they are not saved now.

        Called from the threads that run calls: ``list.append`` needs no lock.
        """
        if self.kept is not None:
            self.kept.append((request.id, writes))

    def record(self, request: CallRequest, rec: TaskRecord) -> None:
        """Remember a call's outcome for later attempts of the same parent."""
        self.finished[request.id] = rec
