"""Which tasks run in a superstep, and their deterministic ids.

A node runs when a channel it is triggered by has a version it has not seen
(a *pull* task); each ``Send`` packet written in the previous step becomes a
*push* task. Task ids hash the checkpoint id, namespace, step, node and path,
so the same checkpoint always yields the same tasks — which is what lets a
resumed run find the writes and interrupts its tasks saved before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from operator import attrgetter, itemgetter
from typing import Any, Final

from xxhash import xxh3_128_hexdigest

from pausepoint.channels import MISSING, Channel
from pausepoint.checkpoint.base import Checkpoint, Version
from pausepoint.constants import NS_END, NS_SEP, PULL, PUSH, START, TASKS
from pausepoint.loop.spec import GraphSpec, NodeProc
from pausepoint.loop.writes import TaskPath
from pausepoint.types import Send

__all__ = [
    "UNREAD",
    "Task",
    "count_steps_left",
    "triggered_pulls",
    "prepare_tasks",
    "task_id",
    "task_input",
    "task_ns",
]


@dataclasses.dataclass(slots=True, eq=False)
class Task:
    """A node to run in one superstep, with its input and (once known) its writes."""

    id: str
    name: str
    path: TaskPath
    input: Any
    triggers: tuple[str, ...]
    node: NodeProc
    ns: str
    writes: Sequence[tuple[str, object]]
    """Set once the task finished (never changed in place): ``()`` until then."""
    steps_left: int | None = None
    """Steps the run may take, this one included (for managed values); set by the run."""

    def path_repr(self) -> str:
        """``repr(path)``, as savers store it; a pull task's is made once per node."""
        return self.node.pull_path if self.path[0] == PULL else repr(self.path)

    def is_pure_start(self) -> bool:
        """The ``__start__`` task with no conditional edge: its writes need no user code."""
        return self.name == START and not self.node.branches and not self.node.retry


def task_id(checkpoint_id: str, ns: str, step: int, name: str, kind: str, key: str) -> str:
    """A uuid-shaped xxh3-128 digest of the task's coordinates."""
    return _hashed(f"{_id_prefix(checkpoint_id, ns, step)}{name}\x00{kind}\x00{key}")


def _id_prefix(checkpoint_id: str, ns: str, step: int) -> str:
    """The part of a task id's key that every task of one step shares."""
    return f"{checkpoint_id}\x00{ns}\x00{step}\x00"


def _hashed(key: str) -> str:
    # (prepare_tasks makes a pull task's id the same way, in line: a call less a task)
    return "-".join(_uuid_parts(xxh3_128_hexdigest(key.encode())))


_uuid_parts: Callable[[str], tuple[str, ...]] = itemgetter(
    slice(0, 8), slice(8, 12), slice(12, 16), slice(16, 20), slice(20, None)
)
"""A 32-digit hex digest's five groups, uuid-shaped (cut in C: the slices in an
f-string were ~35 bytecodes per task id)."""


_last_loaded: tuple[str, dict[str, tuple[str, str]]] = ("", {})
"""``(id prefix, {node name: (task id, task namespace)})`` of the step last prepared
right after a load. Each resume of one of K paused tasks prepares the same K pull tasks
again (same checkpoint, same step): hashing and formatting an id and a namespace
costs six times a lookup here (benchmarks/README.md, "Figures behind the comments").
Both are functions of the prefix and the node's name alone, so a stale table is never
wrong, only missed. One tuple, replaced whole, so a thread never pairs one step's
prefix with another's table. Steps within a run (all new ids) do not use it: an lru
for every step cost ~2 % of a chain's step."""


def _loaded_step_ids(id_prefix: str) -> dict[str, tuple[str, str]]:
    global _last_loaded
    found = _last_loaded
    if found[0] != id_prefix:
        found = _last_loaded = (id_prefix, {})
    return found[1]


def task_ns(parent_ns: str, name: str, tid: str) -> str:
    """The checkpoint namespace of a task (its interrupts' ids hash this)."""
    return f"{_ns_prefix(parent_ns)}{name}{NS_END}{tid}"


def _ns_prefix(parent_ns: str) -> str:
    """The part of a task namespace that every task of one graph run shares."""
    return f"{parent_ns}{NS_SEP}" if parent_ns else ""


def prepare_tasks(
    spec: GraphSpec,
    checkpoint: Checkpoint,
    channels: Mapping[str, Channel],
    step: int,
    ns: str,
    updated: Collection[str] | None = None,
    pulls: Sequence[NodeProc] | None = None,
    by_name: bool = False,
) -> list[Task]:
    """The tasks of the superstep that starts at ``checkpoint``: pushes first, then pulls.

    ``updated`` (the channels the previous step changed, when known) limits the
    nodes considered to those these channels trigger: a step then costs what it
    changed, not the size of the graph. ``pulls``: the nodes triggered, when
    `triggered_pulls` found them for this checkpoint already.

    Pushes come in the order of their packets. Pulls come sorted by node name when
    ``updated`` is known or ``by_name`` is set (the first step after loading a
    checkpoint that recorded what its step changed), in graph order otherwise (a
    snapshot): LangGraph 1.1.6's order, seen in task and checkpoint events.
    """
    tasks: list[Task] = []
    sends = channels[TASKS].value if TASKS in channels else None
    if sends and isinstance(sends, list):
        for idx, send in enumerate(sends):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            tasks.append(_push_task(spec, checkpoint, step, ns, idx, send))  # pyright: ignore[reportUnknownArgumentType]
    pushes = len(tasks)
    versions = checkpoint["channel_versions"]
    seen_all = checkpoint["versions_seen"]
    # task_id() and task_ns() of each pull task, with the parts shared by the step's
    # tasks made once (a step of a chain makes one task: ~2 % of it went to the calls;
    # the two prefixes are _id_prefix() and _ns_prefix() in line, for a call less each).
    id_prefix = f"{checkpoint['id']}\x00{ns}\x00{step}\x00"
    ns_prefix = f"{ns}{NS_SEP}" if ns else ""
    known = _loaded_step_ids(id_prefix) if updated is None else None
    for node in _candidates(spec, updated) if pulls is None else pulls:
        # Triggered: a channel it is triggered by holds a version it has not seen. (In
        # line, not a function: a resume of one of K paused tasks checks every node.)
        if pulls is None:
            seen = seen_all.get(node.name, _NONE_SEEN)
            for c in node.triggers:
                version = versions.get(c)
                if version is not None and version > seen.get(c, 0):
                    chan = channels[c]
                    if chan.value is not MISSING if chan.plain else chan.is_available():
                        break
            else:
                continue
        ids = known.get(node.name) if known is not None else None
        if ids is not None:
            tid, own_ns = ids
        else:
            tid = "-".join(_uuid_parts(xxh3_128_hexdigest((id_prefix + node.pull_key).encode())))
            own_ns = f"{ns_prefix}{node.name}{NS_END}{tid}"
            if known is not None:
                known[node.name] = (tid, own_ns)
        # The input is read when the task runs (UNREAD): a paused task never does.
        # Task(tid, node.name, node.pull, UNREAD, node.triggers, node, own_ns, ()), with
        # its fields set here: a class call with an __init__ costs ~1/3 more.
        task = _new_task(Task)
        task.id = tid
        task.name = node.name
        task.path = node.pull
        task.input = UNREAD
        task.triggers = node.triggers
        task.node = node
        task.ns = own_ns
        task.writes = ()
        task.steps_left = None
        tasks.append(task)
    if by_name and updated is None and len(tasks) - pushes > 1:
        tasks[pushes:] = sorted(tasks[pushes:], key=_by_name)
    return tasks


_by_name: Callable[[Task], str] = attrgetter("name")

_new_task: Callable[[type[Task]], Task] = object.__new__


_NONE_SEEN: Mapping[str, Version] = {}


def triggered_pulls(
    spec: GraphSpec,
    checkpoint: Checkpoint,
    channels: Mapping[str, Channel],
    updated: Collection[str] | None = None,
) -> list[NodeProc] | None:
    """The nodes the superstep at ``checkpoint`` runs as pull tasks; None if it has pushes.

    ``prepare_tasks`` without the ids, for a step's checkpoint before it is saved (the
    ids need the id it gets then); ``prepare_tasks(pulls=...)`` takes the list on.
    """
    sends = channels[TASKS].value if TASKS in channels else None
    if sends and isinstance(sends, list):
        return None
    return [node for node in _candidates(spec, updated) if _triggered(node, checkpoint, channels)]


def _triggered(node: NodeProc, checkpoint: Checkpoint, channels: Mapping[str, Channel]) -> bool:
    """Whether a channel ``node`` is triggered by holds a version it has not seen."""
    versions = checkpoint["channel_versions"]
    seen = checkpoint["versions_seen"].get(node.name, _NONE_SEEN)
    for c in node.triggers:
        version = versions.get(c)
        if version is not None and version > seen.get(c, 0):
            chan = channels[c]
            if chan.value is not MISSING if chan.plain else chan.is_available():
                return True
    return False


def _candidates(spec: GraphSpec, updated: Collection[str] | None) -> Iterable[NodeProc]:
    """The nodes that ``updated`` can trigger, by name (all of them, in graph order, if unknown)."""
    if updated is None:
        return spec.nodes.values()
    triggered_by = spec.triggered_by
    names: set[str] = set()
    for chan in updated:
        if chan in triggered_by:
            names.update(triggered_by[chan])
    if len(names) == 1:  # a chain's step: no sort, no map
        return [spec.nodes[next(iter(names))]]
    return list(map(spec.nodes.__getitem__, sorted(names)))


def _push_task(
    spec: GraphSpec, checkpoint: Checkpoint, step: int, ns: str, idx: int, send: Send
) -> Task:
    node = spec.nodes[send.node]
    tid = task_id(checkpoint["id"], ns, step, node.name, PUSH, str(idx))
    return Task(
        id=tid,
        name=node.name,
        path=(PUSH, idx, False),  # the path is not hashed into the id: ids stay as they were
        input=send.arg,
        triggers=(PUSH,),
        node=node,
        ns=task_ns(ns, node.name, tid),
        writes=(),
    )


def count_steps_left(tasks: Iterable[Task], steps_left: int) -> None:
    """Give a step's tasks its count of steps left.

    Called when a node reads a managed value (``GraphSpec.managed``: RemainingSteps /
    IsLastStep keys).
    """
    for task in tasks:
        task.steps_left = steps_left


class _Unread:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNREAD"


UNREAD: Final = _Unread()
"""A pull task's input before it is read (see `task_input`)."""


def task_input(spec: GraphSpec, task: Task, channels: Mapping[str, Channel]) -> object:
    """The task's input, read from the channels on first use (before the step applies).

    Reading it lazily spares the tasks that do not run (paused ones, when a partial
    resume answers another) a copy of the state each.
    """
    if task.input is UNREAD:
        task.input = read_input(spec, task.node, channels, task.steps_left)
    return task.input


def read_input(
    spec: GraphSpec, node: NodeProc, channels: Mapping[str, Channel], steps_left: int | None = None
) -> object:
    """The value a pull task receives: its read keys and managed values, as its schema."""
    if node.name == START:
        return channels[START].get()
    if node.input_channel is not None:
        chan = channels[node.input_channel]
        return chan.get() if chan.is_available() else None
    values = read_values(channels, node.reads)
    schema = node.input_schema
    if schema is not None and schema.managed:
        values = schema.with_managed(values, steps_left)
    # A dict state is read into a new dict already: coerce() would copy it again.
    return schema.coerce(values) if schema is not None and not schema.is_dict else values


def read_values(channels: Mapping[str, Channel], keys: tuple[str, ...]) -> dict[str, object]:
    """The available values of ``keys`` as a dict."""
    out: dict[str, object] = {}
    for key in keys:
        chan = channels.get(key)
        if chan is None:
            continue
        if chan.plain:  # get() is value: no call per key
            if (value := chan.value) is not MISSING:
                out[key] = value
        elif chan.is_available():
            out[key] = chan.get()
    return out
