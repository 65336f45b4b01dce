"""What ``pausepoint threads`` reports about a thread, read from stored checkpoints.

A `ThreadView` is built through the graph when ``--graph`` is given (exact:
``get_state``), else inferred from the stored data alone (``next`` from the stored
edge triggers, values as stored). A thread whose newest checkpoint cannot be read is
a view of its own (``unreadable``), so one bad row never hides the others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from pausepoint.checkpoint.base import CheckpointTuple
from pausepoint.checkpoint.heads import trigger_target
from pausepoint.cli.output import jsonable
from pausepoint.constants import BRANCH_TO, JOIN, PULL, PUSH, RESERVED_NAMES, TASKS
from pausepoint.loop.answers import stored_answers
from pausepoint.loop.breakpoints import changed_since_pause
from pausepoint.loop.pending import read_records
from pausepoint.loop.restore import next_step
from pausepoint.loop.tasks import task_id
from pausepoint.types import Answer, Interrupt, Send, StateSnapshot

if TYPE_CHECKING:
    from pausepoint.checkpoint._sql_prune import ThreadSize
    from pausepoint.checkpoint.base import BaseCheckpointSaver
    from pausepoint.config import RunnableConfig
    from pausepoint.graph.compiled import CompiledStateGraph

__all__ = [
    "STATUSES",
    "CliError",
    "ThreadView",
    "graph_version",
    "latest",
    "latest_checkpoints",
    "stored_size",
    "thread_config",
    "thread_ids",
    "unreadable",
    "view_of",
]


class CliError(Exception):
    """A problem with the command's input: reported on stderr with exit status 2."""


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadView:
    """What the CLI reports about one checkpoint of a thread."""

    thread_id: str
    status: str
    step: int
    source: str
    next: tuple[str, ...]
    interrupts: tuple[Interrupt, ...]
    values: dict[str, object]
    checkpoint_id: str
    parent_checkpoint_id: str | None
    created_at: str
    errors: tuple[str, ...] = ()
    answered: tuple[Answer, ...] = ()
    """Questions whose answer is stored while their node has not got past them."""
    paused_at: str = ""
    """The static breakpoint the thread is paused at (``before 'node'``), if any."""
    graph_version: str | None = None
    """The ``compile(version=...)`` label of the graph that wrote the checkpoint."""

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict of the view."""
        return {
            "thread_id": self.thread_id,
            "status": self.status,
            "step": self.step,
            "source": self.source,
            "next": list(self.next),
            "interrupts": [{"id": i.id, "value": i.value} for i in self.interrupts],
            "values": self.values,
            "checkpoint_id": self.checkpoint_id,
            "parent_checkpoint_id": self.parent_checkpoint_id,
            "created_at": self.created_at,
            "errors": list(self.errors),
            "paused_at": self.paused_at or None,
            "graph_version": self.graph_version,
            "answered": [
                {
                    "id": a.interrupt.id,
                    "position": a.position,
                    "question": a.interrupt.value,
                    "answer": a.value,
                }
                for a in self.answered
            ],
        }


def thread_ids(saver: BaseCheckpointSaver) -> list[str]:
    """Every thread's id, newest first, without decoding checkpoints where it can."""
    listed = getattr(saver, "thread_ids", None)
    if callable(listed):
        return [str(t) for t in cast(list[object], listed())]
    return [_thread_of(saved) for saved in latest_checkpoints(saver)]


def latest_checkpoints(saver: BaseCheckpointSaver) -> list[CheckpointTuple]:
    """The newest root checkpoint of every thread, newest thread first.

    Built on ``saver.list(None)`` (newest first across threads), so it reads every
    checkpoint once; the savers have no "distinct threads" query yet.
    """
    seen: set[str] = set()
    out: list[CheckpointTuple] = []
    for saved in saver.list(None):
        conf = _conf(saved.config)
        thread = str(conf.get("thread_id"))
        if conf.get("checkpoint_ns") or thread in seen:
            continue
        seen.add(thread)
        out.append(saved)
    return out


def view_of(
    saved: CheckpointTuple, graph: CompiledStateGraph | None, *, latest: bool
) -> ThreadView:
    """The view of one stored checkpoint, through the graph when there is one."""
    if graph is None:
        view = _view_of_raw(saved, latest=latest)
    else:
        config = saved.config if not latest else thread_config(_thread_of(saved))
        view = _view_of_snapshot(graph.get_state(config))
        if latest and view.status == "running" and (at := _breakpoint(graph, saved, view)):
            view = dataclasses.replace(view, status="paused", paused_at=at)
    label = graph_version(saved.checkpoint)
    return view if label is None else dataclasses.replace(view, graph_version=label)


def graph_version(checkpoint: Mapping[str, object]) -> str | None:
    """The ``compile(version=...)`` label stored with a checkpoint (docs/deploys.md)."""
    stamp = checkpoint.get("graph")
    label = cast(dict[str, object], stamp).get("version") if isinstance(stamp, dict) else None
    return label if isinstance(label, str) else None


def unreadable(thread: str, exc: BaseException) -> ThreadView:
    """The row of a thread whose newest checkpoint cannot be read."""
    return ThreadView(
        thread_id=thread,
        status="unreadable",
        step=-1,
        source="",
        next=(),
        interrupts=(),
        values={},
        checkpoint_id="",
        parent_checkpoint_id=None,
        created_at="",
        errors=(f"{type(exc).__name__}: {exc}",),
    )


def _breakpoint(graph: CompiledStateGraph, saved: CheckpointTuple, view: ThreadView) -> str:
    """``before 'x'``/``after 'y'`` if a static breakpoint of ``graph`` paused here."""
    if not changed_since_pause(saved.checkpoint):
        return ""
    before = graph.interrupt_before_nodes
    for node in view.next:
        if before == "*" or node in before:
            return f"before {node!r}"
    after = graph.interrupt_after_nodes
    if after and saved.parent_config is not None:
        ran = graph.get_state(saved.parent_config).next
        for node in ran:
            if after == "*" or node in after:
                return f"after {node!r}"
    return ""


def _view_of_snapshot(snap: StateSnapshot) -> ThreadView:
    conf = _conf(snap.config)
    errors = tuple(str(t.error) for t in snap.tasks if t.error is not None)
    answered = tuple(a for t in snap.tasks for a in t.answered)
    return ThreadView(
        thread_id=str(conf.get("thread_id")),
        status=_status(snap.interrupts, snap.next, answered, errors),
        step=int(snap.metadata.get("step", -1)) if snap.metadata else -1,
        source=str(snap.metadata.get("source", "")) if snap.metadata else "",
        next=tuple(snap.next),
        interrupts=tuple(snap.interrupts),
        values=_as_dict(snap.values),
        checkpoint_id=str(conf.get("checkpoint_id")),
        parent_checkpoint_id=_checkpoint_id(snap.parent_config),
        created_at=str(snap.created_at or ""),
        errors=errors,
        answered=answered,
    )


def _as_dict(values: object) -> dict[str, object]:
    # A state schema may be a dataclass or a Pydantic model: show its fields.
    if isinstance(values, dict):
        return dict(cast(dict[str, object], values))
    found = jsonable(values)
    return cast(dict[str, object], found) if isinstance(found, dict) else {"": values}


def _view_of_raw(saved: CheckpointTuple, *, latest: bool) -> ThreadView:
    """Infer what a snapshot would say from the stored data alone (no graph)."""
    records, _ = read_records(saved.pending_writes or [])
    tasks = _raw_tasks(saved)
    done = {tid for tid, rec in records.items() if rec.done}
    # Like get_state: the newest checkpoint leaves out tasks that already finished;
    # history lists every task of the step.
    nxt = tuple(name for tid, name in tasks if not (latest and tid in done))
    interrupts = tuple(i for r in records.values() if r.waiting for i in r.interrupts)
    answered = tuple(a for r in records.values() for a in stored_answers(r))
    errors = tuple(str(r.error) for r in records.values() if r.error is not None and not r.done)
    channel_values = saved.checkpoint["channel_values"]
    return ThreadView(
        thread_id=_thread_of(saved),
        status=_status(interrupts, nxt, answered, errors),
        step=int(saved.metadata.get("step", -1)),
        source=str(saved.metadata.get("source", "")),
        next=nxt,
        interrupts=interrupts,
        values={k: v for k, v in channel_values.items() if not _internal(k)},
        checkpoint_id=str(saved.checkpoint["id"]),
        parent_checkpoint_id=_checkpoint_id(saved.parent_config),
        created_at=str(saved.checkpoint["ts"]),
        errors=errors,
        answered=answered,
    )


def _raw_tasks(saved: CheckpointTuple) -> list[tuple[str, str]]:
    """``(task id, node)`` of the step that starts at ``saved``, from stored triggers."""
    cp = saved.checkpoint
    values, versions, seen = cp["channel_values"], cp["channel_versions"], cp["versions_seen"]
    step = next_step(saved.metadata)
    ns = str(_conf(saved.config).get("checkpoint_ns", ""))
    out: list[tuple[str, str]] = []
    sends: object = values.get(TASKS)
    for idx, send in enumerate(cast(list[object], sends) if isinstance(sends, list) else []):
        if isinstance(send, Send):
            out.append((task_id(cp["id"], ns, step, send.node, PUSH, str(idx)), send.node))
    triggered: dict[str, None] = {}
    for chan, version in versions.items():
        node = trigger_target(chan, values)
        if node is not None and version > seen.get(node, {}).get(chan, 0):
            triggered[node] = None
    for node in triggered:
        out.append((task_id(cp["id"], ns, step, node, PULL, node), node))
    return out


def _internal(key: str) -> bool:
    return key in RESERVED_NAMES or key.startswith((BRANCH_TO, JOIN))


STATUSES = ("interrupted", "answered", "failed", "paused", "running", "done", "unreadable")


def _status(
    interrupts: Sequence[Interrupt],
    nxt: Sequence[str],
    answered: Sequence[Answer] = (),
    errors: Sequence[str] = (),
) -> str:
    """One word for a thread: what, if anything, it waits for (see the module doc)."""
    if interrupts:
        return "interrupted"
    if errors and nxt:
        return "failed"
    if answered:
        return "answered"
    return "running" if nxt else "done"


def _thread_of(saved: CheckpointTuple) -> str:
    return str(_conf(saved.config).get("thread_id"))


def _conf(config: RunnableConfig | None) -> dict[str, object]:
    """The ``configurable`` dict of a config (empty for ``None``)."""
    if config is None:
        return {}
    return config.get("configurable") or {}


def _checkpoint_id(config: RunnableConfig | None) -> str | None:
    found = _conf(config).get("checkpoint_id")
    return None if found is None else str(found)


def thread_config(thread: str) -> RunnableConfig:
    """The config of a thread's newest root checkpoint."""
    return {"configurable": {"thread_id": thread}}


def latest(saver: BaseCheckpointSaver, thread: str) -> CheckpointTuple:
    """The thread's newest root checkpoint; ``CliError`` if there is no such thread."""
    saved = saver.get_tuple(thread_config(thread))
    if saved is None:
        raise CliError(f"no thread {thread!r} in this database; `threads list` shows them")
    return saved


def stored_size(saver: BaseCheckpointSaver, thread: str) -> dict[str, int] | None:
    """A thread's rows and their bytes as stored, where the saver measures them."""
    measure = getattr(saver, "thread_size", None)
    if not callable(measure):
        return None
    size = cast("ThreadSize", measure(thread))
    return {"checkpoints": size.checkpoints, "writes": size.writes, "bytes": size.bytes}
