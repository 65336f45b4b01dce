"""The JSON the server sends: any value made JSON-able, and one-line JSON text.

`jsonable` turns what a graph holds or streams into plain JSON values the way
LangGraph's server shows them: an `Interrupt` as ``{"value", "id"}``, LangChain
messages (anything with ``model_dump``) as their dicts, dataclasses as dicts of their
fields, datetimes in ISO 8601, tuples and sets as lists. `dumps` writes it as ONE
line (SSE ``data:`` and the clients' decoders need that), without spaces.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
import math
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from pausepoint.server.records import Assistant, RunRecord, ThreadRecord
from pausepoint.types import Interrupt, PregelTask, StateSnapshot

__all__ = [
    "assistant_json",
    "checkpoint_json",
    "dumps",
    "empty_state_json",
    "error_json",
    "jsonable",
    "run_json",
    "state_json",
    "thread_json",
]

JSON = Any
"""A JSON value: None, bool, int, float, str, list of JSON, dict of str to JSON."""


def jsonable(value: object) -> JSON:
    """``value`` as plain JSON values (see the module docstring); never raises.

    What has no JSON form of its own (an arbitrary object) becomes its ``repr``
    text, and a non-finite float becomes None: JSON has no NaN, and the browser
    clients' ``JSON.parse`` rejects it.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        items = cast("Mapping[object, object]", value).items()
        return {_key(k): jsonable(v) for k, v in items}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in cast("Iterable[object]", value)]
    return _object(value)


def dumps(value: object) -> str:
    """``jsonable(value)`` as one line of JSON text (no newline, compact)."""
    return json.dumps(jsonable(value), separators=(",", ":"), ensure_ascii=False)


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, enum.Enum):
        return str(key.value)
    return str(key)


def _iso(value: datetime.date | datetime.time) -> str:
    return value.isoformat()


def _enum(value: enum.Enum) -> JSON:
    return jsonable(value.value)


def _b64(value: bytes | bytearray) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")


_SCALARS: tuple[tuple[type | tuple[type, ...], Callable[[Any], JSON]], ...] = (
    ((datetime.datetime, datetime.date, datetime.time), _iso),
    (uuid.UUID, str),
    (enum.Enum, _enum),
    ((bytes, bytearray), _b64),
)


def _object(value: object) -> JSON:
    if isinstance(value, Interrupt):
        return {"value": jsonable(value.value), "id": value.id}
    for kind, convert in _SCALARS:
        if isinstance(value, kind):
            return convert(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return jsonable(dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return repr(value)


# --- the API's objects -------------------------------------------------------------------


def assistant_json(assistant: Assistant) -> dict[str, JSON]:
    """An ``Assistant`` object of the API."""
    return {
        "assistant_id": assistant.assistant_id,
        "graph_id": assistant.graph_id,
        "config": jsonable(assistant.config),
        "context": jsonable(assistant.context),
        "created_at": _time(assistant.created_at),
        "updated_at": _time(assistant.updated_at),
        "metadata": jsonable(assistant.metadata),
        "version": assistant.version,
        "name": assistant.name,
        "description": assistant.description,
    }


def run_json(run: RunRecord) -> dict[str, JSON]:
    """A ``Run`` object of the API (``kwargs``: the request it was created with)."""
    return {
        "run_id": run.run_id,
        "thread_id": run.thread_id,
        "assistant_id": run.assistant_id,
        "created_at": _time(run.created_at),
        "updated_at": _time(run.updated_at),
        "status": run.status,
        "metadata": jsonable(run.metadata),
        "kwargs": jsonable(run.kwargs),
        "multitask_strategy": run.multitask_strategy,
    }


def thread_json(thread: ThreadRecord, head: StateSnapshot | None) -> dict[str, JSON]:
    """A ``Thread`` object: the record, with ``values`` and ``interrupts`` of its head.

    ``interrupts`` maps each task id to the questions that task waits on (only tasks
    that wait); ``values`` is None for a thread without a checkpoint yet.
    """
    has_state = head is not None and head.config.get("configurable", {}).get("checkpoint_id")
    return {
        "thread_id": thread.thread_id,
        "created_at": _time(thread.created_at),
        "updated_at": _time(thread.updated_at),
        "metadata": jsonable(thread.metadata),
        "status": thread.status,
        "config": {},
        "values": jsonable(head.values) if head is not None and has_state else None,
        "interrupts": _interrupts_by_task(head) if head is not None else {},
    }


def state_json(snapshot: StateSnapshot) -> dict[str, JSON]:
    """A ``ThreadState`` object from a snapshot (subgraph states nested in ``tasks``)."""
    return {
        "values": jsonable(snapshot.values),
        "next": list(snapshot.next),
        "checkpoint": checkpoint_json(snapshot.config),
        "metadata": jsonable(snapshot.metadata) if snapshot.metadata is not None else {},
        "created_at": snapshot.created_at,
        "parent_checkpoint": (
            checkpoint_json(snapshot.parent_config) if snapshot.parent_config else None
        ),
        "tasks": [_task_json(task) for task in snapshot.tasks],
        "interrupts": [jsonable(i) for i in snapshot.interrupts],
    }


def empty_state_json(thread_id: str) -> dict[str, JSON]:
    """The ``ThreadState`` of a thread that has no checkpoint (nor graph) yet."""
    return {
        "values": {},
        "next": [],
        "checkpoint": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": None},
        "metadata": {},
        "created_at": None,
        "parent_checkpoint": None,
        "tasks": [],
        "interrupts": [],
    }


def checkpoint_json(config: Mapping[str, Any]) -> dict[str, JSON]:
    """The ``Checkpoint`` object of a checkpoint's config (``checkpoint_map`` if it has one)."""
    conf: Mapping[str, Any] = config.get("configurable") or {}
    found: dict[str, JSON] = {
        "thread_id": conf.get("thread_id"),
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
        "checkpoint_id": conf.get("checkpoint_id"),
    }
    if conf.get("checkpoint_map"):
        found["checkpoint_map"] = jsonable(conf["checkpoint_map"])
    return found


def error_json(exc: BaseException) -> dict[str, str]:
    """``{"error": type name, "message": text}``: how a failure is reported."""
    return {"error": type(exc).__name__, "message": str(exc)}


def _task_json(task: PregelTask) -> dict[str, JSON]:
    state = task.state
    return {
        "id": task.id,
        "name": task.name,
        "path": jsonable(task.path),
        "error": f"{type(task.error).__name__}: {task.error}" if task.error else None,
        "interrupts": [jsonable(i) for i in task.interrupts],
        "checkpoint": checkpoint_json(state) if isinstance(state, Mapping) else None,
        "state": state_json(state) if isinstance(state, StateSnapshot) else None,
        "result": jsonable(task.result) if task.result is not None else None,
    }


def _interrupts_by_task(head: StateSnapshot) -> dict[str, JSON]:
    return {t.id: [jsonable(i) for i in t.interrupts] for t in head.tasks if t.interrupts}


def _time(value: datetime.datetime) -> str:
    return value.isoformat()
