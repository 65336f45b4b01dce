"""Whether a stored thread fits the running graph (issue 31, docs/deploys.md).

Every checkpoint carries the fingerprint of the graph that wrote it (``checkpoint
["graph"]``, made at compile time: `pausepoint.graph.fingerprint`). Where a thread is
loaded, `same_graph` compares it with the running graph's: equal (the everyday case)
costs that one comparison and nothing else. When they differ, `find_mismatch` looks
at what the thread depends on — its pending tasks and triggers, pending ``Send``
packets, questions waiting or answered, and the stored value of each key — and
lists each piece the running graph cannot honour as a `Problem`. A run or an update
then raises ``GraphMismatchError`` before writing anything (`refuse_mismatch`); a
snapshot lists the tasks that cannot run, questions included, each carrying it.
Subgraphs are checked the same way, in their own namespaces (`deep_problems`).
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from pausepoint.constants import BRANCH_TO, JOIN, PULL, PUSH, TASKS
from pausepoint.errors import GraphMismatchError
from pausepoint.loop.effects import LoadCheckpoint
from pausepoint.loop.namespaces import stateful_ns
from pausepoint.loop.restore import Restored, restore
from pausepoint.loop.spec import NodeProc
from pausepoint.loop.tasks import UNREAD, Task, prepare_tasks, task_id, task_ns
from pausepoint.types import Send

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import Checkpoint, CheckpointTuple
    from pausepoint.loop.pending import TaskRecord
    from pausepoint.loop.spec import GraphSpec

__all__ = [
    "STAMP",
    "GraphShape",
    "Mismatch",
    "Problem",
    "deep_problems",
    "find_mismatch",
    "mismatch_error",
    "refuse_mismatch",
    "same_graph",
    "step_tasks",
    "written_by",
]

STAMP = "graph"
"""The checkpoint field holding the stamp of the graph that wrote it (docs/format.md)."""

_short = reprlib.Repr()  # a stored value in a message: its start, never all of it
_short.maxstring, _short.maxother, _short.maxlist, _short.maxdict = 40, 40, 4, 4


@dataclasses.dataclass(frozen=True, slots=True)
class GraphShape:
    """What a compiled graph stamps on its checkpoints, and checks stored values with."""

    fingerprint: str
    """xxh3-128 hex digest of the graph's structure (`pausepoint.graph.fingerprint`)."""
    version: str | None
    """The human label given to ``compile(version=...)``."""
    reducers: Mapping[str, str]
    """State key → the name of its reducer, for keys that have one."""
    accepts: Mapping[str, tuple[str, Callable[[object], bool]]]
    """State key → (its declared type as text, whether a stored value fits it)."""
    stamp: Mapping[str, object]
    """``checkpoint["graph"]``: fingerprint, reducers and version (when given). One
    object per compiled graph, shared by its checkpoints: read-only."""


@dataclasses.dataclass(frozen=True, slots=True)
class Problem:
    """One piece of a stored thread the running graph cannot honour."""

    kind: str
    """``node`` (a pending task's node is gone), ``send``, ``task`` (a question no node
    of the graph runs), ``key`` (a stored key without channel), ``reducer``, ``type``;
    ``migration`` (a declared migration raised: `pausepoint check` only)."""
    name: str
    detail: str

    def __str__(self) -> str:
        return self.detail


@dataclasses.dataclass(slots=True)
class Mismatch:
    """What `find_mismatch` found at one checkpoint."""

    problems: list[Problem]
    tasks: list[Task]
    """The tasks of the step: those the running graph would run, then those of
    missing nodes (a placeholder node each), so a snapshot still lists them."""
    pending: set[str]
    """Ids of the tasks that have not finished: they cannot run while problems last."""


def same_graph(spec: GraphSpec, checkpoint: Checkpoint | Mapping[str, Any]) -> bool:
    """Whether ``checkpoint`` was written by a graph with ``spec``'s fingerprint.

    A checkpoint without a stamp (older pausepoint, another saver) is checked as if
    it differed: it keeps working when it fits.
    """
    shape = spec.shape
    if shape is None:
        return True
    stamp: object = checkpoint.get(STAMP)
    if stamp is shape.stamp:  # the in-memory savers keep the object itself
        return True
    return type(stamp) is dict and cast("dict[str, object]", stamp).get("fingerprint") == (
        shape.fingerprint
    )


def written_by(
    spec: GraphSpec, others: Sequence[GraphSpec], checkpoint: Checkpoint | Mapping[str, Any]
) -> GraphSpec:
    """Which of ``spec`` and ``others`` wrote ``checkpoint``, by fingerprint; else ``spec``.

    A node's function may run several graphs, each in a namespace of its own: the
    one a namespace names is the one whose fingerprint its checkpoints carry.
    """
    if not others or same_graph(spec, checkpoint):
        return spec
    return next((o for o in others if same_graph(o, checkpoint)), spec)


def step_tasks(spec: GraphSpec, saved: CheckpointTuple, loaded: Restored) -> list[Task]:
    """The tasks of the step at ``saved`` (those of missing nodes too, when it differs)."""
    if same_graph(spec, saved.checkpoint):
        return prepare_tasks(spec, loaded.checkpoint, loaded.channels, loaded.step, _ns(saved))
    return find_mismatch(spec, saved, loaded).tasks


def find_mismatch(spec: GraphSpec, saved: CheckpointTuple, loaded: Restored) -> Mismatch:
    """What of ``saved`` (restored as ``loaded``) the graph ``spec`` cannot honour."""
    ns, step, records = _ns(saved), loaded.step, loaded.records
    stored = saved.checkpoint
    values = stored["channel_values"]
    problems: list[Problem] = []
    ghosts: list[Task] = []
    for key, value in values.items():
        if key in spec.channels:
            continue
        node = _trigger_target(key)
        if node is None:
            problems.append(Problem("key", key, _dropped(key, value)))
        elif node not in spec.nodes:
            tid = task_id(stored["id"], ns, step, node, PULL, node)
            ghosts.append(_ghost(tid, node, (PULL, node), ns))
            what = f"a pending task of node {node!r} (triggered by {key!r})"
            problems.append(Problem("node", node, _missing(what, node, records.get(tid))))
    real = _pushes(spec, stored, ns, step, ghosts, problems)
    no_sends = {k: c for k, c in loaded.channels.items() if k != TASKS}
    real += prepare_tasks(spec, loaded.checkpoint, no_sends, step, ns)
    known = {t.id for t in real} | {t.id for t in ghosts}
    for tid, rec in records.items():
        if tid not in known and rec.resumable:
            ghosts.append(_ghost(tid, "?", (PULL, "?"), ns))
            problems.append(Problem("task", tid, _lost(tid, rec)))
    problems += _value_problems(spec, stored)
    tasks = real + ghosts
    pending = {t.id for t in tasks if not (r := records.get(t.id)) or not r.done}
    return Mismatch(problems, tasks, pending)


def deep_problems(
    spec: GraphSpec, saved: CheckpointTuple
) -> Generator[LoadCheckpoint, Any, list[Problem]]:
    """`find_mismatch`'s problems at ``saved`` and in the subgraphs its questions wait in.

    Reads a subgraph's checkpoint only when the fingerprints differ (a subgraph's
    fingerprint is part of its parent's) and one of the graph's tasks paused in it.
    """
    if same_graph(spec, saved.checkpoint):
        return []
    loaded = restore(spec, saved)
    found = find_mismatch(spec, saved, loaded)
    problems = list(found.problems)
    thread = (saved.config.get("configurable") or {}).get("thread_id")
    for task in found.tasks:
        sub: Any = task.node.subgraph or task.node.calls_graph
        rec = loaded.records.get(task.id)
        if sub is None or rec is None or not rec.resumable:
            continue
        keeps = getattr(sub, "checkpointer", None)
        if keeps is False or getattr(sub, "spec", None) is None:
            continue
        ns = stateful_ns(task.ns) if keeps is True else task.ns
        inner: CheckpointTuple | None = yield LoadCheckpoint(
            {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
        )
        if inner is not None:
            # Which of the graphs the node's function runs wrote it: `written_by`.
            kin = [g.spec for g in task.node.graphs if (g.checkpointer is True) is (keeps is True)]
            wrote = written_by(sub.spec, kin, inner.checkpoint)
            for p in (yield from deep_problems(wrote, inner)):
                where = f"in subgraph node {task.name!r} (namespace {ns!r}): {p.detail}"
                problems.append(Problem(p.kind, p.name, where))
    return problems


def refuse_mismatch(
    spec: GraphSpec, saved: CheckpointTuple
) -> Generator[LoadCheckpoint, Any, None]:
    """Raise ``GraphMismatchError`` if ``saved`` (or a subgraph under it) does not fit."""
    problems = yield from deep_problems(spec, saved)
    if problems:
        raise mismatch_error(saved, problems)


def mismatch_error(saved: CheckpointTuple, problems: list[Problem]) -> GraphMismatchError:
    """The error for ``problems`` found at ``saved``."""
    conf = saved.config.get("configurable") or {}
    return GraphMismatchError(str(conf.get("thread_id")), saved.checkpoint["id"], problems)


# --- the pieces -------------------------------------------------------------------------


def _ns(saved: CheckpointTuple) -> str:
    return str((saved.config.get("configurable") or {}).get("checkpoint_ns", ""))


def _trigger_target(channel: str) -> str | None:
    """The node an edge trigger (``branch:to:<node>``) or join barrier leads to."""
    if channel.startswith(BRANCH_TO):
        return channel[len(BRANCH_TO) :]
    if channel.startswith(JOIN) and ":" in channel[len(JOIN) :]:
        return channel.rsplit(":", 1)[1]
    return None


def _pushes(
    spec: GraphSpec,
    stored: Checkpoint,
    ns: str,
    step: int,
    ghosts: list[Task],
    problems: list[Problem],
) -> list[Task]:
    """Push tasks of the stored ``Send`` packets; those to missing nodes as ghosts."""
    sends: object = stored["channel_values"].get(TASKS)
    real: list[Task] = []
    if not isinstance(sends, list):
        return real
    for idx, send in enumerate(sends):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        if not isinstance(send, Send):
            continue
        tid = task_id(stored["id"], ns, step, send.node, PUSH, str(idx))
        node = spec.nodes.get(send.node)
        if node is None:
            ghosts.append(_ghost(tid, send.node, (PUSH, idx), ns))
            what = f"a pending Send to node {send.node!r} (packet {idx})"
            problems.append(Problem("send", send.node, what + "; the graph has no such node"))
            continue
        task_ns_ = task_ns(ns, node.name, tid)
        real.append(Task(tid, node.name, (PUSH, idx), send.arg, (PUSH,), node, task_ns_, ()))
    return real


def _ghost(tid: str, name: str, path: tuple[str, str | int], ns: str) -> Task:
    """A task of a node the graph lacks: listed, never run."""
    node = NodeProc(name, (), (), None, None, False, False, None, (), False, (), (), (), {})
    return Task(tid, name, path, UNREAD, (), node, task_ns(ns, name, tid), ())


def _questions(rec: TaskRecord | None) -> str:
    if rec is None or not rec.interrupts:
        return ""
    state = "answered, its run pending" if rec.answered else "waiting"
    asked = ", ".join(_short.repr(i.value) for i in rec.interrupts)
    return f", with a question {state}: {asked}"


def _missing(what: str, node: str, rec: TaskRecord | None) -> str:
    return f"{what}{_questions(rec)}; the graph has no node {node!r}"


def _lost(tid: str, rec: TaskRecord) -> str:
    return f"task {tid!r}{_questions(rec)}: no node of this graph runs it"


def _dropped(key: str, value: object) -> str:
    return f"the stored key {key!r} (holding {_short.repr(value)}) has no channel in this graph"


def _value_problems(spec: GraphSpec, stored: Checkpoint) -> list[Problem]:
    """Stored values of state keys whose reducer changed or that do not fit their type."""
    shape = spec.shape
    if shape is None:
        return []
    stamp: object = stored.get(STAMP)
    old: object = stamp.get("reducers") if isinstance(stamp, dict) else None  # pyright: ignore[reportUnknownMemberType]
    values = stored["channel_values"]
    problems: list[Problem] = []
    for key in spec.state_keys:
        if key not in values:
            continue
        if isinstance(old, dict):
            was = cast("dict[str, object]", old).get(key, "")
            now = shape.reducers.get(key, "")
            if was != now:
                said = f"the stored key {key!r} was folded with {was or 'no reducer'}"
                problems.append(Problem("reducer", key, f"{said}; this graph uses {now or 'none'}"))
                continue
        check = shape.accepts.get(key)
        if check is not None and not check[1](values[key]):
            said = f"the stored value of {key!r} ({_short.repr(values[key])})"
            problems.append(Problem("type", key, f"{said} is not a {check[0]}"))
    return problems
