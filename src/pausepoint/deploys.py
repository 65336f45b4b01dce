"""The pre-deploy check: which stored threads a new graph cannot resume (issue 31).

`check_threads` reads every thread whose newest root checkpoint has work left — a
question waiting, or answered with its run pending, a static breakpoint, pending
tasks or ``Send`` packets — and lists those the given graph cannot resume, with the
problems ``GraphMismatchError`` would name (docs/deploys.md). It only reads: no
write, no lease, so it runs beside live workers, against production or a replica.

Threads are read in batches of their head checkpoints (``saver.thread_heads`` on the
SQL savers: one statement per batch, checkpoints peeked, not decoded). A thread
written by a graph with the same fingerprint is done there: one string comparison.
Only the others are read whole and checked as a resume would check them
(`pausepoint.loop.compat_check.deep_problems`, subgraphs included).

The logic is one generator (`check_flow`) that yields what to read and receives
it; `check_threads` drives it on a saver.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from pausepoint.checkpoint.heads import Head, head_of, unreadable_head
from pausepoint.errors import CheckpointDecodeError, GraphMismatchError, MigrationError
from pausepoint.loop.compat_check import Problem, deep_problems
from pausepoint.loop.effects import LoadCheckpoint
from pausepoint.loop.migrate import declares, plan_migration

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
    from pausepoint.config import RunnableConfig
    from pausepoint.loop.spec import GraphSpec

__all__ = ["CheckReport", "ThreadCheck", "check_flow", "check_threads"]

BATCH = 1000
"""Threads read per batch of heads."""

GRAPH_ID = "graph_id"
"""The checkpoint metadata key naming a thread's graph (as ``list_pending(graph=)``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadCheck:
    """One thread the graph cannot resume, or whose checkpoint cannot be read.

    Attributes:
        thread_id: The thread.
        checkpoint_id: Its newest root checkpoint, the one checked.
        graph: The name of the graph it was checked against (``""``: the one graph).
        fingerprint: The fingerprint stored with the checkpoint (None: written before
            fingerprints existed, or unreadable).
        version: The stored ``compile(version=...)`` label, if any.
        problems: What the graph lacks, as ``GraphMismatchError.problems`` lists it.
        error: Why the thread cannot be read (then ``problems`` is empty).
    """

    thread_id: str
    checkpoint_id: str
    graph: str
    fingerprint: str | None
    version: str | None
    problems: tuple[Problem, ...] = ()
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (``pausepoint check --json``)."""
        return {
            "thread_id": self.thread_id,
            "checkpoint_id": self.checkpoint_id,
            "graph": self.graph,
            "stored_fingerprint": self.fingerprint,
            "stored_version": self.version,
            "status": "unreadable" if self.error is not None else "cannot_resume",
            "problems": [
                {"kind": p.kind, "name": p.name, "detail": p.detail} for p in self.problems
            ],
            "error": self.error,
        }


@dataclasses.dataclass(slots=True)
class CheckReport:
    """What `check_threads` found.

    Attributes:
        cannot_resume: Threads with work left that the graph cannot resume.
        unreadable: Threads whose checkpoints cannot be read (not checked).
        unmatched: ``(thread id, graph_id)`` of threads with work left whose
            ``graph_id`` names none of the graphs given (only with named graphs).
        checked: Threads with work left that were checked.
        same: Of those, the ones written by a graph with the same fingerprint.
        finished: Threads with no work left (not checked: nothing to resume).
    """

    cannot_resume: list[ThreadCheck] = dataclasses.field(default_factory=list["ThreadCheck"])
    unreadable: list[ThreadCheck] = dataclasses.field(default_factory=list["ThreadCheck"])
    unmatched: list[tuple[str, str | None]] = dataclasses.field(
        default_factory=list[tuple[str, "str | None"]]
    )
    checked: int = 0
    same: int = 0
    finished: int = 0

    @property
    def ok(self) -> bool:
        """Whether every thread with work left can be resumed (and every one was read)."""
        return not self.cannot_resume and not self.unreadable


class _Graph(Protocol):
    """What the check needs of a compiled graph: its spec."""

    @property
    def spec(self) -> GraphSpec: ...


# --- effects ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class ReadHeads:
    """Up to ``limit`` threads' heads after thread id ``after`` (in id order)."""

    after: str
    limit: int

    def run(self, saver: BaseCheckpointSaver) -> list[Head]:
        """The heads: ``saver.thread_heads`` where it has one, else read one by one."""
        method = getattr(saver, "thread_heads", None)
        if callable(method):
            return cast("list[Head]", method(after=self.after, limit=self.limit))
        ids = sorted(t for t in _thread_ids(saver) if t > self.after)[: self.limit]
        heads: list[Head] = []
        for thread in ids:
            try:
                saved = saver.get_tuple(_config(thread))
            except Exception as exc:  # one unreadable thread is reported, not fatal
                heads.append(unreadable_head(thread, "", exc))
                continue
            if saved is not None:
                heads.append(head_of(saved))
        return heads


@dataclasses.dataclass(frozen=True, slots=True)
class ReadWhole:
    """Root checkpoints by ``(thread id, checkpoint id)``, whole (``saver.thread_tuples``)."""

    keys: list[tuple[str, str]]

    def run(self, saver: BaseCheckpointSaver) -> Whole:
        """The checkpoint tuples; one that cannot be read maps to its error."""
        method = getattr(saver, "thread_tuples", None)
        if callable(method):
            return cast("Whole", method(self.keys))
        found: Whole = {}
        for thread, checkpoint_id in self.keys:
            try:
                saved = saver.get_tuple(_config(thread, checkpoint_id))
            except Exception as exc:  # reported with its thread
                found[thread, checkpoint_id] = exc
                continue
            if saved is not None:
                found[thread, checkpoint_id] = saved
        return found


Whole = dict[tuple[str, str], "CheckpointTuple | Exception"]


def _thread_ids(saver: BaseCheckpointSaver) -> Iterable[str]:
    listed = getattr(saver, "thread_ids", None)
    if callable(listed):
        return [str(t) for t in cast("list[object]", listed())]
    found: set[str] = set()
    for saved in saver.list(None):
        conf = saved.config.get("configurable") or {}
        if not conf.get("checkpoint_ns"):
            found.add(str(conf.get("thread_id")))
    return found


def _config(thread: str, checkpoint_id: str | None = None) -> RunnableConfig:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


Effect = ReadHeads | ReadWhole | LoadCheckpoint
Pick = Callable[[Head], "tuple[str, GraphSpec] | str | None"]
"""The graph a thread is checked against: ``(name, spec)``, or its ``graph_id`` (a
``str`` or None) when no graph given has that name."""


# --- the check ----------------------------------------------------------------------------


def check_flow(pick: Pick, batch: int = BATCH) -> Generator[Effect, Any, CheckReport]:
    """The check as a generator: yields what to read, returns the report.

    `ReadHeads` for a batch of heads, `ReadWhole` for those of its threads written by
    another graph, ``LoadCheckpoint`` for a subgraph's checkpoint. The driver sends
    back each effect's result, or throws its exception in.
    """
    report = CheckReport()
    after = ""
    while True:
        heads: list[Head] = yield ReadHeads(after, batch)
        todo = [c for head in heads if (c := _sort(head, pick, report)) is not None]
        if todo:
            whole: Whole = yield ReadWhole([(h.thread_id, h.checkpoint_id) for h, _, _ in todo])
            for head, name, spec in todo:
                yield from _check_one(head, name, spec, whole, report)
        if len(heads) < batch:
            return report
        after = heads[-1].thread_id


def _sort(head: Head, pick: Pick, report: CheckReport) -> tuple[Head, str, GraphSpec] | None:
    """Count ``head`` where it belongs; the thread and its graph if it needs reading whole."""
    if head.error is not None:
        report.unreadable.append(_unreadable(head, "", head.error))
        return None
    if not head.work_left:
        report.finished += 1
        return None
    chosen = pick(head)
    if not isinstance(chosen, tuple):
        report.unmatched.append((head.thread_id, chosen))
        return None
    report.checked += 1
    if chosen[1].fingerprint is None or head.fingerprint == chosen[1].fingerprint:
        report.same += 1  # the everyday case: one comparison
        return None
    return head, chosen[0], chosen[1]


def _check_one(
    head: Head, name: str, spec: GraphSpec, whole: Whole, report: CheckReport
) -> Generator[Effect, Any, None]:
    saved = whole.get((head.thread_id, head.checkpoint_id))
    if saved is None:  # deleted since its head was read
        report.checked -= 1
        return
    try:
        if isinstance(saved, BaseException):
            raise saved
        problems = yield from _problems(spec, saved)
    except Exception as exc:  # a thread that cannot be read is reported, never a crash
        report.unreadable.append(_unreadable(head, name, exc))
        return
    if problems:
        found = ThreadCheck(
            head.thread_id, head.checkpoint_id, name, head.fingerprint, head.version, problems
        )
        report.cannot_resume.append(found)


def _problems(
    spec: GraphSpec, saved: CheckpointTuple
) -> Generator[Effect, Any, tuple[Problem, ...]]:
    """What of ``saved`` the graph cannot honour, as a resume would find it.

    A graph that declares migrations is checked as its next run would load the
    thread: what the migrations fix is not a problem; what they leave is, and so is a
    migration that raises (kind ``migration``). Nothing is written either way.
    """
    if not declares(spec):
        return tuple((yield from deep_problems(spec, saved)))
    try:
        yield from plan_migration(spec, saved)
    except GraphMismatchError as exc:
        return tuple(exc.problems)
    except MigrationError as exc:
        return (Problem("migration", exc.label, str(exc)),)
    return ()


def _unreadable(head: Head, graph: str, exc: BaseException) -> ThreadCheck:
    text = str(exc) if isinstance(exc, CheckpointDecodeError) else f"{type(exc).__name__}: {exc}"
    return ThreadCheck(
        head.thread_id, head.checkpoint_id, graph, head.fingerprint, head.version, error=text
    )


def picker(graphs: _Graph | Mapping[str, _Graph]) -> Pick:
    """How threads find their graph.

    One graph checks every thread; named graphs check each thread against the one its
    metadata's ``graph_id`` names.
    """
    if not isinstance(graphs, Mapping):
        one = ("", graphs.spec)
        return lambda head: one
    specs = {name: (name, g.spec) for name, g in graphs.items()}

    def pick(head: Head) -> tuple[str, GraphSpec] | str | None:
        gid = head.metadata.get(GRAPH_ID)
        found = specs.get(gid) if isinstance(gid, str) else None
        return found if found is not None else (str(gid) if gid is not None else None)

    return pick


def check_threads(
    saver: BaseCheckpointSaver, graphs: _Graph | Mapping[str, _Graph], *, batch: int = BATCH
) -> CheckReport:
    """Which threads in ``saver`` with work left ``graphs`` cannot resume; reads only.

    Args:
        saver: Where the threads are (any saver; the SQL savers read heads in batches).
        graphs: A compiled graph, against which every thread is checked; or graphs by
            name, each thread checked against the one its metadata's ``graph_id``
            names (threads naming none are listed in ``unmatched``).
        batch: Threads read per batch.
    """
    flow = check_flow(picker(graphs), batch)
    sent: object = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.send(sent) if error is None else flow.throw(error)
        except StopIteration as stop:
            return cast("CheckReport", stop.value)
        sent, error = None, None
        try:
            if isinstance(effect, ReadHeads | ReadWhole):
                sent = effect.run(saver)
            else:
                sent = saver.get_tuple(cast("RunnableConfig", effect.config))
        except Exception as exc:
            error = exc
