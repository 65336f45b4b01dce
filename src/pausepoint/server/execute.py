"""Executing one run: the graph's ``astream`` with the run's options, chunks as events.

The run's request becomes ``astream``'s arguments (`plan`): the input (or a
``Command`` built from ``command``; ``input`` is then ignored), the config (the
assistant's, then the run's, with the thread id and the checkpoint to start from),
the context, the stream modes, ``stream_subgraphs``, ``interrupt_before/after`` and
``durability``. Each chunk becomes an event named as the API names it (`event_name`):
``values``, ``updates``, ``messages`` (for ``messages-tuple``), ``custom``,
``debug``, ``tasks``, ``checkpoints``; with subgraphs, ``mode|ns1|ns2``. The
``messages`` mode folds tokens and the state's messages into ``messages/metadata``,
``messages/partial`` and ``messages/complete`` (`pausepoint.server.message_events`). The
``events`` mode is synthesised from task starts and results, as LangChain's
``astream_events`` dicts (``on_chain_start``/``on_chain_end`` with
``metadata.langgraph_node``), which Agent Inbox reads. A failure ends the stream
with an ``error`` event ``{"error": type name, "message": str}``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from pausepoint.server.errors import InvalidRequestError
from pausepoint.server.message_events import MessageEvents
from pausepoint.server.records import (
    Assistant,
    JsonObject,
    RunRecord,
    RunRequest,
    RunStatus,
    ThreadStatus,
)
from pausepoint.server.wire import jsonable
from pausepoint.types import Command, Send

if TYPE_CHECKING:
    from pausepoint.config import RunnableConfig
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.loop.run import RunResult

__all__ = [
    "STREAM_MODES",
    "Ended",
    "Plan",
    "check_request",
    "execute",
    "known_outcome",
    "outcome",
    "plan",
]

STREAM_MODES = {
    "values": "values",
    "updates": "updates",
    "messages": "messages",
    "messages-tuple": "messages",
    "custom": "custom",
    "debug": "debug",
    "tasks": "tasks",
    "checkpoints": "checkpoints",
    "events": "tasks",
}
"""The API's stream modes, and the engine's mode each is made from."""

_EVENT_NAMES = {"messages-tuple": "messages"}
_UNSET: Any = object()

Emit = Callable[[str, Any], None]


@dataclasses.dataclass(frozen=True, slots=True)
class Ended:
    """How a run ended: its status, the wait/join body, the thread's status after it."""

    status: RunStatus
    body: Any
    rest: ThreadStatus


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    """``astream``'s arguments for a run."""

    input: object
    config: RunnableConfig
    context: JsonObject | None
    modes: tuple[str, ...]
    """The API's modes asked for (``events`` and ``messages-tuple`` included)."""
    engine_modes: tuple[str, ...]
    subgraphs: bool
    interrupt_before: str | list[str] | None
    interrupt_after: str | list[str] | None
    durability: Any


def check_request(graph: CompiledStateGraph, request: RunRequest) -> None:
    """Refuse what the graph cannot run, before anything is recorded.

    Raises:
        InvalidRequestError: An unknown stream mode or node name, a ``command`` with
            other keys than ``resume``/``update``/``goto``.
    """
    unknown = [m for m in request.stream_mode if m not in STREAM_MODES]
    if unknown:
        raise InvalidRequestError(
            f"unknown stream_mode {unknown[0]!r}; known: {', '.join(sorted(STREAM_MODES))}"
        )
    nodes = set(graph.nodes)
    for name, value in (
        ("interrupt_before", request.interrupt_before),
        ("interrupt_after", request.interrupt_after),
    ):
        if value is None or value == "*":
            continue
        missing = [n for n in value if n not in nodes]
        if missing:
            raise InvalidRequestError(f"{name} names no node of the graph: {missing[0]!r}")
    if request.command is not None:
        extra = sorted(set(request.command) - {"resume", "update", "goto"})
        if extra:
            raise InvalidRequestError(
                f"command takes 'resume', 'update' and 'goto', not {extra[0]!r}"
            )
        goto = request.command.get("goto")
        for target in _goto_list(goto):
            name = target if isinstance(target, str) else target.node
            if name not in nodes:
                raise InvalidRequestError(f"command goto names no node of the graph: {name!r}")


def _goto_list(goto: object) -> list[str | Send]:
    if goto is None:
        return []
    items = cast("list[object]", goto) if isinstance(goto, list) else [goto]
    out: list[str | Send] = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping) and "node" in item:
            packet = cast("Mapping[str, Any]", item)
            out.append(Send(str(packet["node"]), packet.get("input")))
        else:
            raise InvalidRequestError(
                f"command goto takes node names or {{'node', 'input'}} objects, not {item!r}"
            )
    return out


def graph_input(request: RunRequest) -> object:
    """The run's input: a ``Command`` when ``command`` is given (``input`` ignored)."""
    command = request.command
    if command is None:
        return request.input
    return Command(
        resume=command.get("resume"),
        update=command.get("update"),
        goto=_goto_list(command.get("goto")),
    )


def plan(assistant: Assistant, run: RunRecord, *, continue_from_head: bool = False) -> Plan:
    """``astream``'s arguments for ``run``.

    ``continue_from_head``: input None, from the thread's head (a requeued run that
    already wrote checkpoints continues where it was).
    """
    request = run.request
    config = _merged_config(assistant.config, request.config or {})
    configurable: JsonObject = dict(config.get("configurable") or {})
    configurable["thread_id"] = run.thread_id
    checkpoint_id = request.checkpoint_id or (request.checkpoint or {}).get("checkpoint_id")
    if checkpoint_id and not continue_from_head:
        configurable["checkpoint_id"] = checkpoint_id
    else:
        configurable.pop("checkpoint_id", None)
    config["configurable"] = configurable
    # the graph's name in the checkpoints' metadata: the deadline sweep of a process
    # serving several graphs (`pausepoint.workers`) sweeps each graph's own questions
    metadata: JsonObject = dict(config.get("metadata") or {})
    metadata.setdefault("graph_id", assistant.graph_id)
    config["metadata"] = metadata
    context = {**assistant.context, **(request.context or {})} or None
    modes = tuple(dict.fromkeys(request.stream_mode))
    wanted = [STREAM_MODES[m] for m in modes]
    if "messages" in modes:  # the state's messages complete what the tokens began
        wanted.append("values")
    engine = tuple(dict.fromkeys(wanted))
    return Plan(
        input=None if continue_from_head else graph_input(request),
        config=cast("RunnableConfig", config),
        context=context,
        modes=modes,
        engine_modes=engine,
        subgraphs=request.stream_subgraphs,
        interrupt_before=request.interrupt_before,
        interrupt_after=request.interrupt_after,
        durability=request.durability,
    )


def _merged_config(base: Mapping[str, Any], over: Mapping[str, Any]) -> JsonObject:
    merged: JsonObject = {**base, **over}
    for key in ("configurable", "metadata"):
        if key in base or key in over:
            merged[key] = {**(base.get(key) or {}), **(over.get(key) or {})}
    return merged


def event_name(mode: str, ns: Sequence[str]) -> str:
    """The SSE event name of a chunk of ``mode`` from namespace ``ns``."""
    name = _EVENT_NAMES.get(mode, mode)
    return "|".join((name, *ns)) if ns else name


async def execute(
    graph: CompiledStateGraph,
    assistant: Assistant,
    run: RunRecord,
    the: Plan,
    emit: Emit,
    lost: Callable[[BaseException], bool] | None = None,
) -> Ended:
    """Run the graph as ``the`` plan says, emitting events; how it ended.

    A cancellation (``asyncio.CancelledError``) propagates: the engine winds the run
    down safely first (what its durability promises is saved). So does a failure
    ``lost`` says is the database's rather than the graph's (a lost connection): the
    run is not over, its worker hands it back.
    """
    events = "events" in the.modes
    folded = MessageEvents(emit, subgraphs=the.subgraphs) if "messages" in the.modes else None
    if events:
        emit("events", _chain_event("on_chain_start", graph.name, run.run_id, the.input, run))
    result: list[RunResult] = []
    try:
        chunks = graph.astream_outcome(
            the.input,
            the.config,
            result,
            stream_mode=list(the.engine_modes) or ["values"],
            subgraphs=the.subgraphs,
            interrupt_before=the.interrupt_before,
            interrupt_after=the.interrupt_after,
            durability=the.durability,
            context=the.context,
        )
        async for chunk in chunks:
            if the.subgraphs:
                ns, mode, data = cast("tuple[tuple[str, ...], str, Any]", chunk)
            else:
                ns, (mode, data) = (), cast("tuple[str, Any]", chunk)
            _deliver(the, run, mode, tuple(ns), data, emit, folded)
    except Exception as exc:  # the graph failed: the run ends with an error
        if lost is not None and lost(exc):
            raise
        error = {"error": type(exc).__name__, "message": str(exc)}
        emit("error", error)
        return Ended("error", {"__error__": error}, "error")
    body, rest = known_outcome(graph, result) or await outcome(graph, run.thread_id)
    if events:
        emit("events", _chain_event("on_chain_end", graph.name, run.run_id, body, run))
    return Ended("success", body, rest)


async def outcome(graph: CompiledStateGraph, thread_id: str) -> tuple[Any, ThreadStatus]:
    """The thread's values now (the wait/join body) and its resting status.

    The body is the head's values, with ``"__interrupt__": [{"value", "id"}]`` when
    questions wait; the thread is ``interrupted`` if its head waits (questions, or
    ``next`` nodes at a breakpoint), else ``idle``.
    """
    config = cast("RunnableConfig", {"configurable": {"thread_id": thread_id}})
    snapshot = await graph.aget_state(config)
    body: Any = jsonable(snapshot.values)
    if snapshot.interrupts and isinstance(body, dict):
        values = cast("JsonObject", body)
        body = {**values, "__interrupt__": jsonable(snapshot.interrupts)}
    waiting = bool(snapshot.next or snapshot.interrupts)
    return body, "interrupted" if waiting else "idle"


def known_outcome(
    graph: CompiledStateGraph, result: Sequence[RunResult]
) -> tuple[Any, ThreadStatus] | None:
    """`outcome` as the run knows it, where that is exactly what the read would give.

    A run that ran to its end (no pause): the thread's head is the checkpoint it
    ended with, with no task left (``idle``), and its values are the run's output when
    the graph's output is its whole state. None otherwise (a pause: the head's
    questions and the finished siblings' writes are the snapshot's to list).
    """
    if len(result) != 1 or result[0].paused:
        return None
    spec = graph.spec
    if spec.output_channel is None and spec.output_keys != spec.state_keys:
        return None
    return jsonable(result[0].values), "idle"


def _deliver(
    the: Plan,
    run: RunRecord,
    mode: str,
    ns: tuple[str, ...],
    data: Any,
    emit: Emit,
    folded: MessageEvents | None,
) -> None:
    if folded is not None:
        folded.take(mode, ns, data)
    payload: Any = _UNSET
    for asked in the.modes:
        if asked == "messages" or STREAM_MODES[asked] != mode:
            continue
        if payload is _UNSET:
            payload = jsonable(data)
        if asked == "events":
            emit("events", _task_event(payload, ns, run))
        else:
            emit(event_name(asked, ns), payload)


def _chain_event(kind: str, name: str, run_id: str, value: Any, run: RunRecord) -> JsonObject:
    key = "input" if kind == "on_chain_start" else "output"
    return {
        "event": kind,
        "name": name,
        "run_id": run_id,
        "tags": [],
        "metadata": {"run_id": run_id, "thread_id": run.thread_id},
        "data": {key: jsonable(value)},
        "parent_ids": [],
    }


def _task_event(payload: Any, ns: tuple[str, ...], run: RunRecord) -> JsonObject:
    task = cast("JsonObject", payload) if isinstance(payload, dict) else {}
    start = "input" in task
    node = str(task.get("name", ""))
    metadata: JsonObject = {
        "run_id": run.run_id,
        "thread_id": run.thread_id,
        "langgraph_node": node,
        "langgraph_checkpoint_ns": "|".join(ns),
    }
    if start:
        metadata["langgraph_triggers"] = task.get("triggers", [])
        data: JsonObject = {"input": task.get("input")}
    else:
        data = {"output": task.get("result")}
        if task.get("error") is not None:
            data["error"] = task.get("error")
    return {
        "event": "on_chain_start" if start else "on_chain_end",
        "name": node,
        "run_id": str(task.get("id", "")),
        "tags": [],
        "metadata": metadata,
        "data": data,
        "parent_ids": [run.run_id],
    }
