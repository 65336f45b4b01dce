"""The observer `instrument` installs: pausepoint's runs as OpenTelemetry spans.

A run's span is a child of whatever span is current where the run starts (the
caller's, or, for a subgraph, its parent node's). Step spans are children of the
run's, node spans of their step's; those are given their parent explicitly, never
made current in the loop (a generator that two drivers resume from anywhere).
Only a task's span is made current, in the task's own context (a copy made for
the task by its driver, so nothing is detached after it), so that what the task
starts — a subgraph's run, a ``@task`` call, the user's own spans — nests under it.
"""

from __future__ import annotations

from collections.abc import Callable

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, Status, StatusCode, Tracer

import pausepoint.otel.attributes as attr
from pausepoint.errors import GraphBubbleUp, GraphInterrupt
from pausepoint.observing import RunStart
from pausepoint.otel.traceparent import from_traceparent, to_traceparent

__all__ = ["SpanObserver"]


class SpanObserver:
    """`pausepoint.observing.Observer` with spans from ``tracer()``."""

    __slots__ = ("tracer", "tracing")

    def __init__(self, tracer: Tracer, tracing: Callable[[], bool]) -> None:
        self.tracer = tracer
        self.tracing = tracing
        """Whether spans would be recorded now (False: no tracer provider configured)."""

    def run_started(self, start: RunStart) -> RunSpans | None:
        """A run's span, started now; None when no tracer provider is configured."""
        if not self.tracing():
            return None
        return RunSpans(self.tracer, start)

    def call_started(self, name: str, call_id: str, answers: str | None) -> TaskSpan | None:
        """A ``@task`` call's span, a child of its caller's (the current span)."""
        if not self.tracing():
            return None
        links = _links(answers)
        span = self.tracer.start_span(
            f"task {name}", links=links, attributes={attr.NODE: name, attr.TASK_ID: call_id}
        )
        if links:
            span.set_attribute(attr.ANSWERS, len(links))
        return TaskSpan(span)


class TaskSpan:
    """One node's or ``@task`` call's span (`pausepoint.observing.TaskTrace`)."""

    __slots__ = ("context", "span")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.context = trace.set_span_in_context(span)

    def enter(self) -> None:
        """Make the span current in the task's own context (a copy: never detached)."""
        otel_context.attach(self.context)

    def ended(self, error: BaseException | None) -> None:
        """End the span: ERROR for an exception, OK for a pause or a command sent up."""
        _end(self.span, error)

    def asked(self) -> str | None:
        """The span's ``traceparent``, if it is sampled (else nothing to link to)."""
        ctx = self.span.get_span_context()
        return to_traceparent(ctx) if ctx.is_valid and ctx.trace_flags.sampled else None


class RunSpans:
    """One run's spans (`pausepoint.observing.RunTrace`): the run's, its step's, its tasks'."""

    __slots__ = (
        "answers",
        "context",
        "run",
        "step",
        "step_context",
        "step_no",
        "tasks",
        "thread",
        "tracer",
    )

    def __init__(self, tracer: Tracer, start: RunStart) -> None:
        self.tracer = tracer
        thread = start.thread_id
        self.thread = (
            {} if thread is None else {attr.THREAD_ID: thread, attr.CONVERSATION_ID: thread}
        )
        attributes: dict[str, str] = {attr.GRAPH: start.graph, **self.thread}
        if start.checkpoint_ns:
            attributes[attr.CHECKPOINT_NS] = start.checkpoint_ns
        self.run = tracer.start_span(f"run {start.graph}", attributes=attributes)
        self.context = trace.set_span_in_context(self.run)
        self.step: Span | None = None
        self.step_context = self.context
        self.step_no = -1
        self.tasks: dict[str, TaskSpan] = {}
        self.answers = 0

    def step_started(self, step: int, checkpoint_id: str) -> None:
        """Start the step's span (a step left open by a pause or a failure ends with the run)."""
        if self.step is not None:
            self.step.end()
        self.step_no = step
        self.step = self.tracer.start_span(
            f"step {step}",
            self.context,
            attributes={attr.STEP: step, attr.CHECKPOINT_ID: checkpoint_id, **self.thread},
        )
        self.step_context = trace.set_span_in_context(self.step)

    def step_ended(self) -> None:
        """End the step's span."""
        if self.step is not None:
            _end(self.step, None)
            self.step = None

    def task_started(self, name: str, task_id: str) -> None:
        """Start a node task's span, a child of the step's."""
        attributes: dict[str, str | int] = {
            attr.NODE: name,
            attr.TASK_ID: task_id,
            attr.STEP: self.step_no,
            **self.thread,
        }
        span = self.tracer.start_span(f"node {name}", self.step_context, attributes=attributes)
        self.tasks[task_id] = TaskSpan(span)

    def task_entered(self, task_id: str) -> None:
        """Make the task's span current in its own context."""
        if (task := self.tasks.get(task_id)) is not None:
            task.enter()

    def task_ended(self, task_id: str, error: BaseException | None) -> None:
        """End the task's span (its context stays readable for `task_asked`)."""
        if (task := self.tasks.get(task_id)) is not None:
            task.ended(error)

    def task_asked(self, task_id: str) -> str | None:
        """The ``traceparent`` of the task's span, stored with its question."""
        task = self.tasks.get(task_id)
        return None if task is None else task.asked()

    def answered(self, asked: str | None) -> None:
        """Link the run's span to the span that asked a question this run answers."""
        for link in _links(asked):
            self.run.add_link(link.context, link.attributes)
            self.answers += 1
            self.run.set_attribute(attr.ANSWERS, self.answers)

    def ended(
        self, checkpoint_id: str, interrupts: int | None, error: BaseException | None
    ) -> None:
        """End the run's span, and any span of it a pause or a failure left open."""
        run = self.run
        if checkpoint_id:
            run.set_attribute(attr.CHECKPOINT_ID, checkpoint_id)
        if interrupts is not None:
            run.set_attribute(attr.PAUSED, True)
            run.set_attribute(attr.QUESTIONS, interrupts)
        for task in self.tasks.values():
            if task.span.is_recording():  # not ended: the run stopped before its outcome
                task.ended(error)
        if self.step is not None:
            _end(self.step, error)
            self.step = None
        _end(run, error)


def _links(asked: str | None) -> list[Link]:
    if asked is None or (ctx := from_traceparent(asked)) is None:
        return []
    return [Link(ctx, {"pausepoint.link": "answers"})]


def _end(span: Span, error: BaseException | None) -> None:
    """End ``span`` with the status its end deserves.

    ERROR for an exception; OK for a pause (or another control signal); unset, marked
    cancelled, for a run stopped early (a closed stream, a cancelled task).
    """
    if error is None:
        span.set_status(Status(StatusCode.OK))
    elif isinstance(error, GraphInterrupt):
        span.set_attribute(attr.INTERRUPTED, True)
        span.set_status(Status(StatusCode.OK))
    elif isinstance(error, GraphBubbleUp):
        span.set_status(Status(StatusCode.OK))
    elif isinstance(error, Exception):
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
    else:
        span.set_attribute("pausepoint.cancelled", True)
    span.end()
