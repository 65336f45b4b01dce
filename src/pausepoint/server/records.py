"""What the server stores and hands to the HTTP layer: assistants, threads, runs, events.

Plain frozen dataclasses with JSON-able fields (``dict``/``list``/``str``...); times
are aware UTC ``datetime``s. ``pausepoint.server.wire`` renders them as the API's JSON.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, Literal

__all__ = [
    "Assistant",
    "CancelAction",
    "Json",
    "JsonObject",
    "MultitaskStrategy",
    "RunEvent",
    "RunRecord",
    "RunRequest",
    "RunStatus",
    "ThreadRecord",
    "ThreadStatus",
]

RunStatus = Literal["pending", "running", "error", "success", "timeout", "interrupted"]
"""A run's status: ``pending`` until a worker claims it, ``running`` while it executes,
then ``success`` (also when the graph stopped at ``interrupt()``), ``error`` (the graph
raised), ``interrupted`` (cancelled: ``cancel`` or the ``interrupt`` strategy)."""

ThreadStatus = Literal["idle", "busy", "interrupted", "error"]
"""A thread's status: ``busy`` while a run of it is pending or running, else ``error``
if its last run failed, else ``interrupted`` if its head waits (questions or ``next``),
else ``idle``."""

MultitaskStrategy = Literal["reject", "enqueue", "interrupt", "rollback"]
"""What a new run on a busy thread does: ``reject`` (409), ``enqueue`` (runs after the
others, the default), ``interrupt`` (cancels the runs in flight, keeps their
checkpoints), ``rollback`` (cancels and deletes them and the checkpoints they wrote)."""

CancelAction = Literal["interrupt", "rollback"]
"""How a run is cancelled: ``interrupt`` keeps what it wrote (status ``interrupted``);
``rollback`` deletes the run and the checkpoints it wrote."""

StreamMode = str
Json = Any
"""A JSON value (what ``json.loads`` returns): the server's records hold only these."""
JsonObject = dict[str, Json]
"""A JSON object: configs, contexts, metadata, request bodies."""


@dataclasses.dataclass(frozen=True, slots=True)
class Assistant:
    """An assistant: a graph with a stored configuration."""

    assistant_id: str
    graph_id: str
    config: JsonObject
    context: JsonObject
    metadata: JsonObject
    name: str
    description: str | None
    version: int
    created_at: datetime.datetime
    updated_at: datetime.datetime


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadRecord:
    """A thread's server record (its values and interrupts are read from checkpoints)."""

    thread_id: str
    metadata: JsonObject
    status: ThreadStatus
    created_at: datetime.datetime
    updated_at: datetime.datetime


@dataclasses.dataclass(frozen=True, slots=True)
class RunRequest:
    """A run-create body, already type-checked by the HTTP layer.

    When ``command`` is given, ``input`` is ignored (agent-chat-ui sends ``input: {}``
    alongside a resume).
    """

    assistant_id: str
    input: Json = None
    command: JsonObject | None = None
    config: JsonObject | None = None
    context: JsonObject | None = None
    metadata: JsonObject | None = None
    stream_mode: list[StreamMode] = dataclasses.field(default_factory=lambda: ["values"])
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    checkpoint: JsonObject | None = None
    checkpoint_id: str | None = None
    multitask_strategy: MultitaskStrategy = "enqueue"
    if_not_exists: Literal["create", "reject"] = "reject"
    on_disconnect: Literal["cancel", "continue"] = "cancel"
    after_seconds: float | None = None
    durability: Literal["sync", "async", "exit"] | None = None

    def to_json(self) -> JsonObject:
        """The request as a JSON-able dict (``RunRecord.kwargs``)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, kwargs: JsonObject) -> RunRequest:
        """The request back from ``to_json``'s dict (unknown keys ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in kwargs.items() if k in names})


@dataclasses.dataclass(frozen=True, slots=True)
class RunRecord:
    """A run's record; ``kwargs`` is its ``RunRequest`` as JSON."""

    run_id: str
    thread_id: str
    assistant_id: str
    status: RunStatus
    metadata: JsonObject
    kwargs: JsonObject
    multitask_strategy: MultitaskStrategy
    created_at: datetime.datetime
    updated_at: datetime.datetime

    @property
    def request(self) -> RunRequest:
        """The request the run was created with."""
        return RunRequest.from_json(self.kwargs)


@dataclasses.dataclass(frozen=True, slots=True)
class RunEvent:
    """One event of a run's stream: SSE ``id``, ``event`` name and JSON-able ``data``."""

    id: str
    event: str
    data: Json
