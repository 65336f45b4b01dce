"""Public value types: interrupts, commands, sends, policies and snapshots.

``interrupt()`` lives here too, as in LangGraph. Everything here is plain data;
the machinery that acts on it lives in `pausepoint.loop`.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import warnings
from collections.abc import Callable, Hashable, Sequence
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Generic,
    Literal,
    NamedTuple,
    NotRequired,
    Self,
    TypeVar,
    cast,
    final,
)

from typing_extensions import TypedDict
from xxhash import xxh3_128_hexdigest

from pausepoint.running import current_task

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import BaseCheckpointSaver, CheckpointMetadata, SaverProtocol
    from pausepoint.config import RunnableConfig

__all__ = [
    "All",
    "Answer",
    "CachePolicy",
    "CheckpointStreamPart",
    "Checkpointer",
    "Command",
    "CustomStreamPart",
    "DebugStreamPart",
    "Durability",
    "GraphOutput",
    "Interrupt",
    "Overwrite",
    "PregelTask",
    "Reanswer",
    "RetryPolicy",
    "Send",
    "StateSnapshot",
    "StateUpdate",
    "StreamMode",
    "StreamPart",
    "StreamWriter",
    "TasksStreamPart",
    "TimedOut",
    "TimeoutAnswer",
    "UpdatesStreamPart",
    "ValuesStreamPart",
    "default_retry_on",
    "interrupt",
]

StreamMode = Literal["values", "updates", "checkpoints", "tasks", "debug", "messages", "custom"]
"""How ``stream`` reports progress; several may be given at once."""
Durability = Literal["sync", "async", "exit"]
"""When checkpoints are written: before the next step (sync), while it runs (async), or
only when the run ends (exit)."""
All = Literal["*"]
"""``interrupt_before="*"``: every visible node."""
StreamWriter = Callable[[Any], None]
"""The type of a node's injected ``writer`` parameter (``def node(state, writer:
StreamWriter)``) and of [`pausepoint.config.get_stream_writer`][]'s result: it sends
a value to ``stream_mode="custom"``."""

N = TypeVar("N", bound=Hashable)
_PLACEHOLDER_ID = "placeholder-id"


class _Terms:
    """pausepoint's own attributes of `Interrupt`: slots outside its dataclass fields."""

    __slots__ = ("deadline", "on_timeout", "position", "response_schema")
    position: int | None
    response_schema: dict[str, Any] | None
    deadline: datetime.datetime | None
    on_timeout: Literal["fail"] | TimeoutAnswer | None


@final
@dataclasses.dataclass(init=False, slots=True)
class Interrupt(_Terms):
    """A pause requested by a task, reported to the caller under ``"__interrupt__"``.

    Its dataclass fields are LangGraph's, ``value`` and ``id``: only they are compared,
    shown, and returned by ``dataclasses.asdict``. pausepoint's own attributes (from
    ``position`` on) sit beside them, kept by ``copy`` and ``pickle``.

    Attributes:
        value: What the node passed to ``interrupt()``: the question for the person.
        id: A 32-hex digest of the task's checkpoint namespace. Stable while the task
            is pending (it survives re-execution), shared by every ``interrupt()`` call
            of one task, and the key to resume this task with a resume map.
        position: Which ``interrupt()`` call of its task asked it (0 for the first),
            or None when unknown.
        response_schema: The JSON Schema the answer must match, or None (any answer).
            Stored with the question (`interrupt`'s ``response_schema``).
        deadline: When the question expires (aware, UTC), or None.
        on_timeout: What the sweeper does once the deadline passed: ``"fail"``, a
            `TimeoutAnswer`, or None (nothing).
    """

    value: Any
    id: str

    def __init__(
        self,
        value: Any,
        id: str = _PLACEHOLDER_ID,
        *,
        position: int | None = None,
        response_schema: dict[str, Any] | None = None,
        deadline: datetime.datetime | None = None,
        on_timeout: Literal["fail"] | TimeoutAnswer | None = None,
        **legacy: Any,
    ) -> None:
        # LangGraph still takes ``ns`` (the task namespace's parts: the id is the digest
        # of their "|"-join, as ``from_ns`` makes it) and ignores its 0.x fields.
        if unknown := sorted(set(legacy) - {"ns", "when", "resumable", "interrupt_id"}):
            raise TypeError(f"Interrupt() got unexpected keyword arguments {unknown!r}")
        ns = legacy.get("ns")
        if isinstance(ns, Sequence) and id == _PLACEHOLDER_ID:
            id = xxh3_128_hexdigest("|".join(cast(Sequence[str], ns)).encode())
        self.value, self.id, self.position = value, id, position
        self.response_schema, self.deadline, self.on_timeout = response_schema, deadline, on_timeout

    @classmethod
    def from_ns(cls, value: Any, ns: str, position: int | None = None) -> Interrupt:
        """Build the interrupt of the task whose checkpoint namespace is ``ns``."""
        return cls(value=value, id=xxh3_128_hexdigest(ns.encode()), position=position)

    def moved(self, id: str) -> Interrupt:
        """The same question under another id (its task moved: a fork, an update)."""
        twin = copy.copy(self)
        twin.id = id
        return twin

    def with_terms(
        self,
        schema: dict[str, Any] | None,
        deadline: datetime.datetime | None,
        on_timeout: Literal["fail"] | TimeoutAnswer | None,
    ) -> Interrupt:
        """A copy of this question with the given schema, deadline and timeout policy."""
        twin = copy.copy(self)
        twin.response_schema, twin.deadline, twin.on_timeout = schema, deadline, on_timeout
        return twin

    @property
    def question_id(self) -> str:
        """``"<id>:<position>"``: names this very question, not just its task.

        Every ``interrupt()`` call of a task shares the task's ``id``, so an answer
        keyed by ``id`` goes to whichever question of the task waits *now*. Keyed by
        ``question_id`` (``Command(resume={i.question_id: value})``) it answers this
        question only: sent again after the node has moved on — a retry whose first
        attempt went through — it changes nothing, where an ``id``-keyed one would
        answer the next question. The plain ``id`` when the position is unknown.
        """
        return self.id if self.position is None else f"{self.id}:{self.position}"

    @property
    def interrupt_id(self) -> str:
        """Deprecated alias of `id` (warns, as LangGraph's does)."""
        warnings.warn(_INTERRUPT_ID_DEPRECATED, DeprecationWarning, stacklevel=2)
        return self.id


_INTERRUPT_ID_DEPRECATED = "`interrupt_id` is deprecated. Use `id` instead."


@final
@dataclasses.dataclass(frozen=True, slots=True)
class Reanswer:
    """Replace the stored answer of a question: ``Command(resume=Reanswer(value))``.

    An answer is bound to the question it answers and kept until its task gets past
    it. Sending another answer to an answered question raises
    [`AlreadyAnsweredError`][pausepoint.errors.AlreadyAnsweredError]; wrap the new answer in
    ``Reanswer`` to replace the stored one on purpose — typically after the node
    failed with it (a typo'd key in an approval form). It replaces, it never queues:
    the question gets ``value`` and the questions after it are asked anew. On a
    question still waiting it is a plain answer. Also as a value of a resume map:
    ``Command(resume={interrupt_id: Reanswer(value)})``.
    """

    value: object


@final
@dataclasses.dataclass(frozen=True, slots=True)
class TimeoutAnswer:
    """The answer a question gets when its deadline passes: ``on_timeout=TimeoutAnswer(v)``.

    Checked against the question's ``response_schema`` when ``interrupt()`` is called,
    so a default that the question would refuse fails at once, not at expiry.
    """

    value: object


@final
@dataclasses.dataclass(frozen=True, slots=True)
class TimedOut:
    """The answer the sweeper stores for a question whose deadline passed.

    ``interrupt()`` never returns it: it returns the `TimeoutAnswer`'s value, or
    raises [`DeadlineExpiredError`][pausepoint.errors.DeadlineExpiredError] for
    ``on_timeout="fail"``. It shows in a snapshot's ``PregelTask.answered`` (who
    answered, and when). Every sweep stores a new one (``sweep_id``), so a second
    sweeper's answer to the same question is refused
    (`AlreadyAnsweredError`) and writes nothing: two sweepers act once.

    Attributes:
        deadline: The question's deadline.
        on_timeout: ``"fail"`` or the `TimeoutAnswer` it gave.
        swept_at: The sweeper's "now" (aware, UTC).
        sweep_id: A fresh id per sweeper action.
    """

    deadline: datetime.datetime
    on_timeout: Literal["fail"] | TimeoutAnswer
    swept_at: datetime.datetime
    sweep_id: str


@final
@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    """A stored answer to a question that its task has not got past yet.

    Listed in `PregelTask.answered`: the answer is saved and the node will
    continue with it (the worker died, a run is in flight, or the node failed after
    ``interrupt()`` returned it; ``PregelTask.error`` says which).

    Attributes:
        interrupt: The question (value and id), as it was asked.
        position: Which ``interrupt()`` call of the task asked it (0 for the first).
        value: The stored answer.
    """

    interrupt: Interrupt
    position: int
    value: Any


@dataclasses.dataclass(frozen=True, slots=True)
class Overwrite:
    """Write ``value`` to a reducer channel as is, bypassing the reducer."""

    value: Any


class Send:
    """A packet for ``node``: run it in the next superstep with ``arg`` as its input.

    Returned from conditional edges (or in ``Command(goto=...)``) for map-reduce:
    each ``Send`` becomes its own task, with its own input.
    """

    __slots__ = ("arg", "node")

    node: str
    arg: Any

    def __init__(self, node: str, arg: Any) -> None:
        self.node = node
        self.arg = arg

    def __hash__(self) -> int:
        return hash((self.node, repr(self.arg)))

    def __repr__(self) -> str:
        return f"Send(node={self.node!r}, arg={self.arg!r})"

    def __eq__(self, value: object) -> bool:
        return isinstance(value, Send) and self.node == value.node and self.arg == value.arg


@dataclasses.dataclass(frozen=True, slots=True)
class Command(Generic[N]):
    """An instruction to the graph: resume interrupts, update state, go to nodes.

    As graph input: ``Command(resume=...)`` answers pending interrupts (a single
    value, or a map of interrupt id to value); ``update`` and ``goto`` act as if
    written by the node that ran last. As a node's return value: ``update`` is the
    node's state update and ``goto`` names the next nodes (or ``Send`` packets).
    ``graph=Command.PARENT`` sends the command to the parent graph.
    """

    graph: str | None = None
    update: Any | None = None
    resume: dict[str, Any] | Any | None = None
    goto: Send | Sequence[Send | N] | N = ()

    PARENT: ClassVar[Literal["__parent__"]] = "__parent__"

    def __repr__(self) -> str:
        parts = [
            f"{f.name}={getattr(self, f.name)!r}"
            for f in dataclasses.fields(self)
            if getattr(self, f.name)
        ]
        return f"Command({', '.join(parts)})"

    def update_items(self) -> list[tuple[str, Any]]:
        """The update as ``(key, value)`` pairs (``__root__`` for a non-dict update)."""
        from pausepoint._updates import update_as_pairs

        return update_as_pairs(self.update)

    def goto_targets(self) -> list[Send | str]:
        """The ``goto`` field as a list of node names and ``Send`` packets."""
        goto = self.goto
        if isinstance(goto, (Send, str)):
            return [goto]
        if isinstance(goto, Sequence):
            return [g if isinstance(g, Send) else str(g) for g in goto]  # type: ignore[misc]
        return [str(goto)]


def default_retry_on(exc: Exception) -> bool:
    """Retry transient failures, never programming errors.

    Connection errors are retried; ``ValueError``, ``TypeError``, lookup, arithmetic,
    import, name, runtime and OS errors are not; anything else is. An exception with a
    ``response.status_code`` (HTTP clients) is retried only for 5xx codes.
    """
    if isinstance(exc, ConnectionError):
        return True
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int):
        return 500 <= status < 600
    return not isinstance(exc, _NOT_RETRIED)


_BUGS = (ValueError, TypeError, ArithmeticError, ImportError, LookupError, NameError, SyntaxError)
_NOT_RETRIED = (*_BUGS, RuntimeError, ReferenceError, StopIteration, StopAsyncIteration, OSError)


class RetryPolicy(NamedTuple):
    """How to retry a failing node.

    Attributes:
        initial_interval: Seconds before the first retry.
        backoff_factor: Multiplier of the interval after each retry.
        max_interval: Upper bound of the interval, in seconds.
        max_attempts: Attempts in all, the first included.
        jitter: Add a random 0–1 s to each interval.
        retry_on: Exception classes to retry, or a predicate on the exception.
    """

    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 128.0
    max_attempts: int = 3
    jitter: bool = True
    retry_on: type[Exception] | Sequence[type[Exception]] | Callable[[Exception], bool] = (
        default_retry_on
    )


@dataclasses.dataclass(frozen=True, slots=True)
class CachePolicy:
    """Accepted for API compatibility; node results are not cached yet."""

    key_func: Callable[..., str | bytes] | None = None
    ttl: int | None = None


class _TaskFields(NamedTuple):
    id: str
    name: str
    path: tuple[str | int | tuple[object, ...], ...]
    error: Exception | None = None
    interrupts: tuple[Interrupt, ...] = ()
    state: RunnableConfig | StateSnapshot | None = None
    result: Any | None = None


class PregelTask(_TaskFields):
    """A task of a snapshot: what will run (or ran) in the snapshot's step.

    A named tuple of LangGraph's seven fields. pausepoint's own ``answered`` (the
    stored `Answer`s of its questions) and ``status`` sit beside them: not unpacked,
    compared or shown; kept by ``copy``, ``pickle`` and ``_replace``. A paused task is

    - *waiting*: ``interrupts`` lists the question, nothing answers it yet;
    - *answered, run pending*: ``interrupts`` is empty and ``answered`` holds the
      stored answer (the worker died, or a run is in flight): ``invoke(None)``
      continues with it, and so does sending the same answer again;
    - *failed after the answer*: as answered, with ``error`` set: retry with
      ``invoke(None)``, or replace the answer with ``Command(resume=Reanswer(v))``.
    """

    answered: tuple[Answer, ...] = ()

    # typeshed marks ``_replace`` final; overriding it keeps ``answered`` on the copy.
    def _replace(self, **changes: Any) -> Self:  # pyright: ignore[reportIncompatibleMethodOverride]
        task = super()._replace(**changes)
        task.__dict__.update(self.__dict__)
        return task

    @property
    def status(self) -> Literal["waiting", "answered", "failed", "ready"]:
        """The task's state: one of four words.

        ``"waiting"`` for an answer, ``"answered"`` (run pending), ``"failed"``, or
        ``"ready"`` (not paused: it runs, or ran, in this step).
        """
        if self.error is not None:
            return "failed"
        if self.interrupts:
            return "waiting"
        return "answered" if self.answered else "ready"


class StateUpdate(NamedTuple):
    """One update of ``bulk_update_state``: values written as if ``as_node`` returned them."""

    values: dict[str, Any] | None
    as_node: str | None = None
    task_id: str | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GraphOutput(Generic[N]):
    """What ``invoke(..., version="v2")`` returns: the output and any pending interrupts."""

    value: Any
    interrupts: tuple[Interrupt, ...] = ()


class StateSnapshot(NamedTuple):
    """The state of a thread at one checkpoint, as returned by ``get_state``."""

    values: dict[str, Any] | Any
    next: tuple[str, ...]
    config: RunnableConfig
    metadata: CheckpointMetadata | None
    created_at: str | None
    parent_config: RunnableConfig | None
    tasks: tuple[PregelTask, ...]
    interrupts: tuple[Interrupt, ...]


# --- version="v2" stream parts -----------------------------------------------------------


class ValuesStreamPart(TypedDict):
    """The full state after a step (and the interrupts that ended the run, if any)."""

    type: Literal["values"]
    ns: tuple[str, ...]
    data: Any
    interrupts: tuple[Interrupt, ...]


class UpdatesStreamPart(TypedDict):
    """What one node wrote (``{node: update}``), or ``{"__interrupt__": (...)}``."""

    type: Literal["updates"]
    ns: tuple[str, ...]
    data: dict[str, Any]


class CustomStreamPart(TypedDict):
    """A value a node passed to ``get_stream_writer()``."""

    type: Literal["custom"]
    ns: tuple[str, ...]
    data: Any


class CheckpointStreamPart(TypedDict):
    """A checkpoint as it is saved."""

    type: Literal["checkpoints"]
    ns: tuple[str, ...]
    data: dict[str, Any]


class TasksStreamPart(TypedDict):
    """A task starting or finishing."""

    type: Literal["tasks"]
    ns: tuple[str, ...]
    data: dict[str, Any]


class DebugStreamPart(TypedDict):
    """A checkpoint, task or task result event, with step and timestamp."""

    type: Literal["debug"]
    ns: tuple[str, ...]
    data: dict[str, Any]


class MessagesStreamPart(TypedDict):
    """Accepted for API compatibility; pausepoint has no chat-model integration."""

    type: Literal["messages"]
    ns: tuple[str, ...]
    data: tuple[Any, dict[str, Any]]
    extra: NotRequired[Any]


StreamPart = (
    ValuesStreamPart
    | UpdatesStreamPart
    | CustomStreamPart
    | CheckpointStreamPart
    | TasksStreamPart
    | DebugStreamPart
    | MessagesStreamPart
)
"""One part of a ``version="v2"`` stream: a dict whose ``type`` names its stream mode."""


def interrupt(
    value: Any,
    *,
    response_schema: object = None,
    deadline: datetime.timedelta | datetime.datetime | None = None,
    on_timeout: Literal["fail"] | TimeoutAnswer | None = None,
) -> Any:
    """Pause the running task and ask the caller for a value.

    The first time it runs, ``interrupt`` saves ``value`` in the checkpoint and stops
    the run; the caller sees it under ``"__interrupt__"``. When the caller sends
    ``Command(resume=answer)``, the node runs again from the top and this call returns
    ``answer``. Several calls in one node are matched to answers by their order.

    Code before ``interrupt()`` runs again on resume: keep it idempotent.

    Each answer is stored against the question it answers (the task and this
    call's position in it): sending it again is harmless, and it never answers a
    later ``interrupt()`` call.

    Args:
        value: Any serializable value describing what is asked.
        response_schema: What the answer must look like (pausepoint's own): a
            TypedDict, a dataclass, a pydantic model or a JSON Schema dict, stored as
            JSON Schema with the question (`Interrupt.response_schema`). A resume
            that does not match is refused with
            [`InvalidAnswerError`][pausepoint.errors.InvalidAnswerError] before
            anything is written. The answer is returned as sent (JSON-shaped: a dict,
            not the dataclass or model); build the class from it in the node.
        deadline: When the question expires (pausepoint's own): an aware
            ``datetime``, or a ``timedelta`` from when the question is first asked
            (asking it again on a re-run keeps the first deadline).
        on_timeout: What the sweeper (`pausepoint.questions.sweep`) does once the
            deadline passed: ``TimeoutAnswer(v)`` answers ``v`` (checked against the
            schema now), ``"fail"`` makes this call raise
            [`DeadlineExpiredError`][pausepoint.errors.DeadlineExpiredError]; None
            (the default) does nothing.

    Returns:
        The resume value for this call.

    Raises:
        GraphInterrupt: To pause (never catch it: it is a ``BaseException``).
        DeadlineExpiredError: The deadline passed and ``on_timeout="fail"``.
        RuntimeError: When called outside a running graph node.
        TypeError: A ``response_schema`` with no JSON form.
        ValueError: A malformed schema, a naive ``datetime`` deadline, an
            ``on_timeout`` without a deadline, or a default answer the schema refuses.
    """
    return current_task("interrupt()").interrupt(value, response_schema, deadline, on_timeout)


if TYPE_CHECKING:
    Checkpointer = BaseCheckpointSaver | SaverProtocol | bool | None
    """What ``compile(checkpointer=)`` takes: a saver, or ``None``/``True``/``False``."""
else:

    def __getattr__(name: str) -> object:  # Checkpointer: see pausepoint._checkpointer
        if name == "Checkpointer":
            from pausepoint._checkpointer import Checkpointer

            return Checkpointer
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
