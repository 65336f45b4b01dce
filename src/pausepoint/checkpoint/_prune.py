"""Retention: which checkpoints ``saver.prune`` drops, decided once for every saver.

A prune is a *flow* (as the SQL savers' operations are, see ``_dialect``): a
generator that yields three kinds of request — `ListThreads`, `ReadThread`,
`ApplyPlan` — and receives their results (or the exception a request raised),
then returns a `PruneReport`. ``saver.prune`` drives it with the saver's blocking
calls, ``saver.aprune`` with its awaitable ones (`pausepoint.checkpoint._retention`):
the policy, the rules below and the report exist once.

The rules (docs/persistence.md, "Storage and retention"):

- A thread whose head question waits for an answer, or has one stored whose run has
  not finished (a question with a deadline is one of these), is left alone unless
  ``include_waiting``; a thread whose lease is held is always left alone (its single
  writer is at work), checked again in the transaction that deletes.
- The head checkpoint of the root namespace and its pending writes are always kept
  when a thread is truncated: a resume after a prune re-runs nothing that finished.
- Root checkpoints are kept by policy (the newest ``keep_last``; those created at or
  after ``older_than``); the others go, with their writes. A thread none of whose
  checkpoints is that recent (idle since then) is deleted whole, unless
  ``keep_last`` keeps some.
- Subgraph namespaces: a checkpoint older than the *bound* (the oldest kept root
  checkpoint, or the parent of a kept ``update`` checkpoint, which is what a replay
  from it reads subgraphs before) goes, except, in a stateful subgraph's namespace
  (no task ids in it), the newest one older than the bound: the state a replay of
  a kept root checkpoint starts that subgraph from. Everything newer stays (a
  paused subgraph, the subgraph states a kept checkpoint's tasks show).
- Kept checkpoints keep their parent ids even when the parent is gone, so the head's
  snapshot (its ``parent_config``) is what it was; ``get_state_history`` lists
  what is kept.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Generator, Iterable, Sequence
from typing import TYPE_CHECKING, Literal

from pausepoint.checkpoint.ids import stamp_time
from pausepoint.checkpoint.questions import task_states
from pausepoint.constants import NS_END, NS_SEP

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import CheckpointTuple

__all__ = [
    "COLLECT_EVERY",
    "ApplyPlan",
    "Applied",
    "ListThreads",
    "PrunePolicy",
    "PruneReport",
    "ReadThread",
    "StoredRow",
    "ThreadInventory",
    "ThreadPrune",
    "plan_thread",
    "prune_flow",
]

COLLECT_EVERY = 16
"""Parts of a thread's prune between two collections of what no checkpoint needs."""

Key = tuple[str, str]
"""A checkpoint of a thread: ``(checkpoint_ns, checkpoint_id)``."""


@dataclasses.dataclass(frozen=True, slots=True)
class PrunePolicy:
    """What to keep; made by `PrunePolicy.of` from ``prune``'s arguments."""

    keep_last: int | None = None
    older_than: datetime.datetime | None = None
    delete: bool = False
    include_waiting: bool = False
    dry_run: bool = False
    batch_size: int = 500

    @classmethod
    def of(
        cls,
        *,
        strategy: str | None,
        keep_last: int | None,
        older_than: datetime.datetime | datetime.timedelta | None,
        include_waiting: bool,
        dry_run: bool,
        batch_size: int,
        now: datetime.datetime | None,
        thread_ids: Sequence[str] | None,
    ) -> PrunePolicy:
        """Check ``prune``'s arguments; ``ValueError`` naming a bad one (nothing is read)."""
        for name, n in (("keep_last", keep_last), ("batch_size", batch_size)):
            if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ValueError(f"prune({name}=...) must be a positive int, not {n!r}")
        if strategy not in (None, "keep_latest", "delete"):
            raise ValueError(
                f"prune(strategy=...) must be 'keep_latest' or 'delete' (LangGraph's), not "
                f"{strategy!r}; or pass keep_last=/older_than="
            )
        if strategy is not None and (keep_last is not None or older_than is not None):
            raise ValueError("prune(strategy=...) cannot be combined with keep_last/older_than")
        if strategy == "delete" and thread_ids is None:
            raise ValueError("prune(strategy='delete') deletes threads: name them (thread_ids)")
        if strategy == "keep_latest":
            keep_last = 1
        if strategy is None and keep_last is None and older_than is None:
            raise ValueError("prune() needs keep_last=, older_than= or strategy=")
        if thread_ids is not None and isinstance(thread_ids, str):
            raise ValueError("prune(thread_ids=...) takes a list of thread ids, not one string")
        cutoff = _cutoff(older_than, now)
        return cls(keep_last, cutoff, strategy == "delete", include_waiting, dry_run, batch_size)


def _cutoff(
    older_than: datetime.datetime | datetime.timedelta | None, now: datetime.datetime | None
) -> datetime.datetime | None:
    if older_than is None:
        return None
    if isinstance(older_than, datetime.timedelta):
        if older_than < datetime.timedelta(0):
            raise ValueError(f"prune(older_than=...) must not be negative, not {older_than!r}")
        return (now or datetime.datetime.now(datetime.UTC)) - older_than
    if not isinstance(older_than, datetime.datetime) or older_than.tzinfo is None:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(
            "prune(older_than=...) must be a timedelta or a timezone-aware datetime, "
            f"not {older_than!r}"
        )
    return older_than


@dataclasses.dataclass(frozen=True, slots=True)
class StoredRow:
    """One stored checkpoint of a thread, as a prune sees it (nothing decoded)."""

    ns: str
    checkpoint_id: str
    parent_id: str | None
    source: str
    writes: int = 0
    size: int | None = None
    """Bytes of its row and its writes' rows, where the saver can measure them."""


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadInventory:
    """What a prune reads of one thread: its checkpoints, its decoded head, its lease."""

    thread_id: str
    rows: Sequence[StoredRow]
    head: CheckpointTuple | None
    leased: bool


@dataclasses.dataclass(frozen=True, slots=True)
class ListThreads:
    """Request: up to ``limit`` thread ids after ``after``, in id order."""

    after: str
    limit: int


@dataclasses.dataclass(frozen=True, slots=True)
class ReadThread:
    """Request: the `ThreadInventory` of a thread (None if it has no checkpoint)."""

    thread_id: str


@dataclasses.dataclass(frozen=True, slots=True)
class ApplyPlan:
    """Request: delete ``drop`` (or, ``whole``, the thread) in one transaction.

    Only if the thread's lease is free, its root head is still ``head_id`` and the
    head still has ``head_writes`` writes; else nothing changes and the result is
    ``"busy"``. Returns an `Applied` (or the string ``"busy"``).
    """

    thread_id: str
    head_id: str
    head_writes: int
    drop: tuple[Key, ...]
    whole: bool = False
    deleting: bool = False
    """A first part of a thread deleted whole: a saver that deletes only whole threads
    may skip it (the last part, ``whole``, deletes everything)."""
    collect: bool = True
    """Also delete what no remaining checkpoint of the thread needs (stored values
    checkpoints share): set on the last part of a thread's prune and on every
    `COLLECT_EVERY`-th, so that the work of finding it stays linear in the thread."""


@dataclasses.dataclass(frozen=True, slots=True)
class Applied:
    """What an `ApplyPlan` deleted."""

    checkpoints: int
    writes: int


Request = ListThreads | ReadThread | ApplyPlan
PruneFlow = Generator[Request, object, "PruneReport"]

Action = Literal["kept", "truncated", "deleted", "skipped", "error"]


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadPrune:
    """What a prune did (or, dry, would do) to one thread.

    Attributes:
        thread_id: The thread.
        action: ``"kept"`` (nothing to drop), ``"truncated"`` (old checkpoints dropped),
            ``"deleted"`` (the whole thread), ``"skipped"`` (left alone: ``reason``
            says why) or ``"error"`` (its rows could not be read: ``reason``).
        reason: Why it was skipped, or the error; "" otherwise.
        checkpoints: Checkpoints deleted (or that would be).
        writes: Pending writes deleted with them.
        bytes: Bytes of those rows, or None where the saver cannot measure them.
    """

    thread_id: str
    action: Action
    reason: str = ""
    checkpoints: int = 0
    writes: int = 0
    bytes: int | None = 0


@dataclasses.dataclass(frozen=True, slots=True)
class PruneReport:
    """What ``saver.prune`` did: one `ThreadPrune` per thread it read.

    Attributes:
        threads: Per thread, in the order read.
        dry_run: Nothing was deleted; the figures say what would be.
    """

    threads: tuple[ThreadPrune, ...]
    dry_run: bool = False

    @property
    def checkpoints(self) -> int:
        """Checkpoints deleted (or that would be)."""
        return sum(t.checkpoints for t in self.threads)

    @property
    def writes(self) -> int:
        """Pending writes deleted (or that would be)."""
        return sum(t.writes for t in self.threads)

    @property
    def bytes(self) -> int | None:
        """Bytes freed (or that would be); None if the saver cannot measure them."""
        sizes = [t.bytes for t in self.threads if t.checkpoints]
        return None if any(s is None for s in sizes) else sum(s or 0 for s in sizes)

    @property
    def errors(self) -> tuple[ThreadPrune, ...]:
        """The threads whose rows could not be read (reported, never fatal)."""
        return tuple(t for t in self.threads if t.action == "error")

    def count(self, action: Action) -> int:
        """How many threads had ``action``."""
        return sum(1 for t in self.threads if t.action == action)


# --- the decisions ------------------------------------------------------------------------


def protection(head: CheckpointTuple | None, leased: bool, include_waiting: bool) -> str:
    """Why a thread must be left alone ("" if it need not)."""
    if leased:
        return "its lease is held: a run is writing it"
    if include_waiting or head is None:
        return ""
    for state in task_states(head.pending_writes or ()).values():
        if state.waiting():
            return "a question waits for an answer"
        if state.interrupts and not state.done:
            return "an answered question's run has not finished"
    return ""


def plan_thread(policy: PrunePolicy, inv: ThreadInventory) -> tuple[tuple[Key, ...], bool]:
    """The checkpoints a prune drops from an unprotected thread, and whether all go."""
    root = sorted((r for r in inv.rows if not r.ns), key=_cid, reverse=True)
    if policy.delete or not root:
        return tuple((r.ns, r.checkpoint_id) for r in inv.rows), True
    kept = _kept_roots(policy, root)
    if not kept:  # idle since the cutoff: the thread's time is up
        return tuple((r.ns, r.checkpoint_id) for r in inv.rows), True
    kept_ids = {r.checkpoint_id for r in kept}
    drop = [("", r.checkpoint_id) for r in root if r.checkpoint_id not in kept_ids]
    drop += _dropped_nested(inv.rows, _bound(kept))
    return tuple(drop), False


def _cid(row: StoredRow) -> str:
    return row.checkpoint_id


def _kept_roots(policy: PrunePolicy, root: list[StoredRow]) -> list[StoredRow]:
    """The root checkpoints the policy keeps (newest first); the head unless none."""
    by_count = root[: policy.keep_last] if policy.keep_last is not None else []
    if policy.older_than is None:
        return by_count
    recent = [r for r in root if not _older(r.checkpoint_id, policy.older_than)]
    if not recent and not by_count:
        return []
    ids = {r.checkpoint_id for r in by_count} | {r.checkpoint_id for r in recent}
    ids.add(root[0].checkpoint_id)  # the head, though idle, while anything is kept
    return [r for r in root if r.checkpoint_id in ids]


def _older(checkpoint_id: str, cutoff: datetime.datetime) -> bool:
    """Whether a checkpoint was made before ``cutoff`` (a foreign id: never, it stays)."""
    ts = stamp_time(checkpoint_id)
    return ts is not None and datetime.datetime.fromisoformat(ts) < cutoff


def _bound(kept: Iterable[StoredRow]) -> str:
    """The oldest point a replay of a kept root checkpoint reads subgraphs before."""
    points = [r.checkpoint_id for r in kept]
    points += [r.parent_id for r in kept if r.source == "update" and r.parent_id]
    return min(points)


def _dropped_nested(rows: Iterable[StoredRow], bound: str) -> list[Key]:
    by_ns: dict[str, list[str]] = {}
    for r in rows:
        if r.ns and r.checkpoint_id < bound:
            by_ns.setdefault(r.ns, []).append(r.checkpoint_id)
    drop: list[Key] = []
    for ns, ids in by_ns.items():
        ids.sort()
        if _stateful(ns):
            ids.pop()  # its state as of the bound: what a replay starts it from
        drop += [(ns, cid) for cid in ids]
    return drop


def _stateful(ns: str) -> bool:
    """Whether a namespace is a stateful subgraph's (no task id in it), not one task's."""
    return not any(NS_END in part for part in ns.split(NS_SEP))


# --- the flow -----------------------------------------------------------------------------


def prune_flow(policy: PrunePolicy, thread_ids: Sequence[str] | None) -> PruneFlow:
    """Prune the named threads (every thread if None); see the module docstring."""
    out: list[ThreadPrune] = []
    if thread_ids is not None:
        for thread in dict.fromkeys(str(t) for t in thread_ids):
            out.append((yield from _thread_flow(policy, thread)))
        return PruneReport(tuple(out), policy.dry_run)
    after = ""
    while True:
        page = yield ListThreads(after, policy.batch_size)
        if isinstance(page, BaseException):
            raise page
        assert isinstance(page, list)
        for thread in page:  # pyright: ignore[reportUnknownVariableType]
            out.append((yield from _thread_flow(policy, str(thread))))  # pyright: ignore[reportUnknownArgumentType]
        if len(page) < policy.batch_size:  # pyright: ignore[reportUnknownArgumentType]
            return PruneReport(tuple(out), policy.dry_run)
        after = str(page[-1])  # pyright: ignore[reportUnknownArgumentType]


def _thread_flow(policy: PrunePolicy, thread: str) -> Generator[Request, object, ThreadPrune]:
    inv = yield ReadThread(thread)
    if isinstance(inv, BaseException):  # a corrupt row: reported, the batch goes on
        return ThreadPrune(thread, "error", f"{type(inv).__name__}: {inv}")
    if inv is None:
        return ThreadPrune(thread, "kept")
    assert isinstance(inv, ThreadInventory)
    why = protection(inv.head, inv.leased, policy.include_waiting)
    if why:
        return ThreadPrune(thread, "skipped", why)
    drop, whole = plan_thread(policy, inv)
    if not drop:
        return ThreadPrune(thread, "kept")
    rows = {(r.ns, r.checkpoint_id): r for r in inv.rows}
    gone = [rows[k] for k in drop]
    sizes = [r.size for r in gone]
    size = None if any(s is None for s in sizes) else sum(s or 0 for s in sizes)
    action: Action = "deleted" if whole else "truncated"
    done = ThreadPrune(thread, action, "", len(gone), sum(r.writes for r in gone), size)
    if policy.dry_run:
        return done
    return (yield from _apply(policy, inv, drop, whole, done))


def _apply(
    policy: PrunePolicy,
    inv: ThreadInventory,
    drop: tuple[Key, ...],
    whole: bool,
    done: ThreadPrune,
) -> Generator[Request, object, ThreadPrune]:
    """Delete in transactions of at most ``batch_size`` checkpoints, oldest first.

    Each is complete on its own (what is left is what a prune keeping more would
    leave), so a kill between two loses nothing a rerun would not drop anyway. Stored
    values only dropped checkpoints needed are collected in every `COLLECT_EVERY`-th
    part and in the last: after a kill in between, in the rerun's last part.
    """
    head = inv.head
    head_id = head.checkpoint["id"] if head is not None else ""
    head_writes = len(head.pending_writes or ()) if head is not None else 0
    order = sorted((k for k in drop if not (whole and k == ("", head_id))), key=lambda k: k[1])
    size = policy.batch_size
    chunks = [tuple(order[i : i + size]) for i in range(0, len(order), size)]
    if whole:  # the head and whatever is left go last, with the lease row
        chunks.append(())
    checkpoints = writes = 0
    for n, chunk in enumerate(chunks):
        last = whole and n == len(chunks) - 1
        collect = n == len(chunks) - 1 or n % COLLECT_EVERY == COLLECT_EVERY - 1
        result = yield ApplyPlan(
            inv.thread_id, head_id, head_writes, chunk, last, whole, collect and not whole
        )
        if isinstance(result, Applied):
            checkpoints, writes = checkpoints + result.checkpoints, writes + result.writes
            continue
        why = _BUSY if result == "busy" else f"{type(result).__name__}: {result}"
        action: Action = "skipped" if result == "busy" else "error"
        return ThreadPrune(inv.thread_id, action, why, checkpoints, writes, None)
    return done  # the figures read with the thread: what the plan deleted


_BUSY = "a run took the thread while it was being pruned (lease taken or new head); run again"
