"""The running task's context: its scratchpad, namespace, config and writers.

While a node runs, its `TaskContext` sits in the ``TASK`` context
variable (`pausepoint.running`). The sync driver runs each task in a copy of the
caller's context and the async driver in its own asyncio task, so parallel tasks
never see each other's context. ``interrupt()``, ``get_config()``,
``get_stream_writer()`` and nested graphs read it; nothing else does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pausepoint._asking import ask, timed_out
from pausepoint.errors import GraphInterrupt
from pausepoint.running import outside_run
from pausepoint.scratchpad import Scratchpad
from pausepoint.types import Interrupt, TimedOut

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import SaverProtocol
    from pausepoint.config import RunnableConfig
    from pausepoint.loop.calls import CallRequest, CallSite, Memo
    from pausepoint.loop.namespaces import Afresh, ReplayPoint
    from pausepoint.runtime import Runtime
    from pausepoint.types import Durability, RetryPolicy, StreamWriter

__all__ = ["NestInfo", "TaskContext"]


@dataclasses.dataclass(frozen=True, slots=True)
class NestInfo:
    """What a graph run inside this task (a subgraph) inherits from its parent."""

    saver: SaverProtocol | None
    thread_id: str | None
    durability: Durability
    resume_map: Mapping[str, object]
    resume_positions: Mapping[str, int]
    """Which question of its task each answer sent by question id answers."""
    resume_plain: bool
    """The answer was sent as a plain value (see ``pending.nested_resume``)."""
    resuming: bool
    sink: Callable[[tuple[str, ...], str, object], None] | None
    stream_modes: frozenset[str]
    stream_subgraphs: bool
    parents: Mapping[str, str]
    up: Callable[[tuple[str, ...], str, object], None] | None = None
    """Where a graph run inside this task passes its chunks of ``up_modes`` (besides
    its own caller): the stream of the nearest run above that streams with
    ``subgraphs=True``, or None (`pausepoint.graph.output.deliver`)."""
    up_modes: frozenset[str] = frozenset()
    custom: Callable[[tuple[str, ...], object], None] | None = None
    """Where a graph run inside this task that does not stream ``custom`` itself sends
    its ``custom`` chunks while ``up`` is set: the custom stream of this task's run."""
    afresh: Afresh | None = None
    """A new answer a fork carries to a question re-asked inside a subgraph."""
    replay: ReplayPoint | None = None
    """Set while the root run replays from an old checkpoint: a subgraph's first run
    reads the state it had then (`pausepoint.loop.namespaces`)."""


class TaskContext:
    """The running task, as seen from inside its node function.

    ``config``, ``runtime``, ``nest`` and ``calls`` are either given or made on first use by the
    ``_make_*`` methods a subclass overrides (most nodes never read them: see
    `pausepoint.loop.prepare.ExecTask`); the scratchpad is made on first use
    from the saved answers in ``resume``.
    """

    __slots__ = (
        "_config",
        "_nest",
        "_resume",
        "_runtime",
        "_scratchpad",
        "checkpoint_ns",
        "graph_ns",
        "name",
        "open_calls",
        "spawn",
        "stream_writer",
        "task_id",
    )

    def __init__(
        self,
        name: str,
        task_id: str,
        checkpoint_ns: str,
        scratchpad: Scratchpad | None,
        stream_writer: StreamWriter,
        *,
        resume: Sequence[object] = (),
        config: RunnableConfig | None = None,
        nest: NestInfo | None = None,
        calls: CallSite | None = None,
        spawn: Callable[[CallRequest | Memo], object] | None = None,
        runtime: Runtime[Any] | None = None,
        graph_ns: str | None = None,
    ) -> None:
        self.name = name
        self.task_id = task_id
        self.checkpoint_ns = checkpoint_ns
        self.graph_ns = checkpoint_ns if graph_ns is None else graph_ns
        """Where the graphs this task runs keep their checkpoints (``checkpoint_ns`` but
        for a ``@task`` call's: under its caller's, as in LangGraph)."""
        self._scratchpad = scratchpad
        self._resume = resume
        self.stream_writer = stream_writer
        self.spawn = spawn
        self._config = config
        self._nest = nest
        self._runtime = runtime
        self.open_calls = calls
        """The call site if any ``@task`` call was made here (see ``calls``), else None."""

    @property
    def scratchpad(self) -> Scratchpad:
        """The task's interrupt and call counters (made on first use from ``resume``)."""
        if self._scratchpad is None:
            self._scratchpad = Scratchpad(list(self._resume))
        return self._scratchpad

    @property
    def config(self) -> RunnableConfig:
        """The node's config (what ``get_config()`` returns)."""
        if self._config is None:
            self._config = self._make_config()
        return self._config

    @property
    def runtime(self) -> Runtime[Any]:
        """The node's runtime (its ``runtime`` parameter and ``get_runtime()``)."""
        if self._runtime is None:
            self._runtime = self._make_runtime()
        return self._runtime

    @property
    def nest(self) -> NestInfo:
        """What a graph run inside this task inherits."""
        if self._nest is None:
            self._nest = self._make_nest()
        return self._nest

    @property
    def calls(self) -> CallSite | None:
        """The bookkeeping of this task's ``@task`` calls (made on the first call)."""
        if self.open_calls is None:
            self.open_calls = self._make_calls()
        return self.open_calls

    def _make_config(self) -> RunnableConfig:
        raise AssertionError("a context is made with a config, or by a subclass that makes one")

    def _make_nest(self) -> NestInfo:
        raise AssertionError("a context is made with nest info, or by a subclass that makes it")

    def _make_runtime(self) -> Runtime[Any]:
        raise AssertionError("a context is made with a runtime, or by a subclass that makes one")

    def _make_calls(self) -> CallSite | None:
        return None

    def call(
        self,
        name: str,
        fn: Callable[..., object],
        args: tuple[object, ...],
        kwargs: dict[str, object],
        is_async: bool,
        retry: tuple[RetryPolicy, ...],
    ) -> object:
        """Run a ``@task`` call for this task: a saved result, or a new run (a future).

        The future comes from ``spawn``, the factory the driver running the task
        handed over (`pausepoint.drivers.calls.spawned`).
        """
        if self.calls is None or self.spawn is None:
            raise outside_run(f"task {name!r}")
        index = self.scratchpad.next_call_index()
        return self.spawn(self.calls.request(index, name, fn, args, kwargs, is_async, retry))

    def carried_answer(self, value: object, position: int) -> tuple[object] | None:
        """An answer given for this question before it was asked, as a 1-tuple, or None.

        None here; a loop task may hold one (`pausepoint.loop.fork.take_afresh`).
        """
        return None

    def interrupt(
        self,
        value: object,
        schema: object = None,
        deadline: object = None,
        on_timeout: object = None,
    ) -> object:
        """``interrupt(value, ...)`` for this task; see `pausepoint.types.interrupt`."""
        idx = self.scratchpad.next_interrupt_index()
        resume = self.scratchpad.resume
        if idx < len(resume):
            answer = resume[idx]
        elif (carried := self.carried_answer(value, idx)) is not None:
            answer = carried[0]
            resume.append(answer)
        else:
            question = Interrupt.from_ns(value, self.checkpoint_ns, idx)
            if schema is not None or deadline is not None or on_timeout is not None:
                question = ask(question, schema, deadline, on_timeout)
            raise GraphInterrupt((question,), position=idx)
        # The sweeper's answer to an expired question: its default, or the error.
        return timed_out(answer) if type(answer) is TimedOut else answer
