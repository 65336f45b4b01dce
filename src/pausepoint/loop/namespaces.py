"""Where a subgraph's checkpoints live, and which of them a nested run reads (issue 16).

Why a module of its own: a subgraph's state is found by its checkpoint namespace,
and a few rules decide which namespace and which checkpoint in it; spread over the
loop, they drifted apart from LangGraph's (a replay that reused an old answer, a
stateful subgraph that forgot its state). The rules, as LangGraph 1.1.6 has them:

- **Per task** (``compile(checkpointer=None)``, the default): a subgraph's namespace
  is its parent task's, ``node:<task id>`` (``|``-joined with its ancestors'). Its
  state lasts as long as that task: a later step, a loop or another parent run calls
  it with a new task id, so it starts afresh; a resume of the same task finds it.
- **Stateful** (``checkpointer=True``): the same namespace without the task ids
  (``node``, ``outer|node``), so the subgraph keeps its state across parent runs.
- **Several in one task**: a node that runs two subgraphs (or one twice, or in a
  loop) gives each run its own namespace: the first takes the task's, the n-th
  (from 0) adds a segment ``|n`` (``node:<id>|1``). The count is the task's and
  restarts when the task re-runs, so a resume finds each run where it paused
  (`nested_ns`).
- **Addressed**: a config taken from inside a subgraph carries ``checkpoint_map``
  (namespace → checkpoint id, every level from the root down). Given to the root
  graph, the root runs from the map's root entry and each subgraph on the path from
  its own entry: a replay, resume or fork from inside a subgraph, at any depth.
  A resume of an old checkpoint forks (DESIGN §4.2), which renames the root's tasks
  and so their subgraphs' namespaces: the fork records old → new
  (`ReplayPoint.moved`), and each addressed level starts from a copy of its
  entry in its new namespace, leaving the old branch untouched.
- **Unsaved** (``checkpointer=False``): no checkpoints, so nothing records what
  its tasks asked. Its run's (unsaved) checkpoint id is derived from its namespace,
  so a resume of its parent's task re-runs it with the same task ids, and each
  question finds its answer in the parent's resume map by its id
  (`unsaved_answer`), as LangGraph's do.
- **Replay**: when the root graph runs again from a checkpoint of its history, a
  subgraph's first run in it reads the newest checkpoint of its namespace made
  *before* that point — nothing for a per-task subgraph (it starts afresh, asking
  its questions again), the state it had then for a stateful one. Later runs of
  the same subgraph in that root run (a loop) read their namespace's newest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from xxhash import xxh3_128_hexdigest

from pausepoint.constants import NS_END, NS_SEP
from pausepoint.types import Interrupt

if TYPE_CHECKING:
    from pausepoint.task_context import NestInfo

__all__ = [
    "Afresh",
    "ReplayPoint",
    "addressed",
    "nested_ns",
    "parents_of",
    "replay_before",
    "stateful_ns",
    "unsaved_answer",
    "unsaved_id",
]


def stateful_ns(ns: str, *, keep_runs: bool = False) -> str:
    """The namespace of a stateful subgraph run in task namespace ``ns``: ids dropped.

    ``"outer:<id>|inner:<id>"`` → ``"outer|inner"``; a numeric part (a task's
    second, third, ... graph run: `nested_ns`) is dropped too, unless
    ``keep_runs``: LangGraph's history of ``"outer|1"`` lists that namespace, while
    its ``get_state`` reads ``"outer"``'s.
    """
    parts = ns.split(NS_SEP)
    return NS_SEP.join(
        part.split(NS_END, 1)[0] for part in parts if keep_runs or not part.isdigit()
    )


def nested_ns(task_ns: str, index: int, stateful: bool) -> str:
    """The namespace of the ``index``-th graph run (from 0) that task ``task_ns`` started.

    The first run's is the task's (``stateful_ns`` of it for a stateful subgraph):
    threads paused before runs were counted stored it so. Later runs add ``|index``.
    """
    ns = stateful_ns(task_ns) if stateful else task_ns
    return f"{ns}{NS_SEP}{index}" if index else ns


class ReplayPoint:
    """The checkpoint a root run replays from, shared by every subgraph run under it.

    ``checkpoint_id``: the subgraphs' checkpoints older than it are the ones they
    had at that point. Parallel subgraphs ask at once (the sync driver's threads):
    ``dict.setdefault`` with a str key is one atomic step, so exactly one of them
    is first (the loop package takes no locks: it does no I/O and has no threads).
    """

    __slots__ = ("_visited", "checkpoint_id", "moved", "targets")

    def __init__(self, checkpoint_id: str, targets: Mapping[str, str] | None = None) -> None:
        self.checkpoint_id = checkpoint_id
        self.targets: Mapping[str, str] = targets or {}
        """Namespace → the checkpoint its subgraph runs from: a config taken from inside
        a subgraph (its ``checkpoint_map``) addresses that subgraph checkpoint."""
        self.moved: dict[str, str] = {}
        """New namespace → the one it replaces. A fork renames its tasks (their ids hash
        the checkpoint id), so an addressed subgraph runs in a new namespace; it starts
        from its target in the old one (a copy: the old branch is not written to)."""
        self._visited: dict[str, object] = {}

    def source(self, ns: str) -> tuple[str, str | None]:
        """Where a subgraph run in ``ns`` starts: a namespace and its addressed checkpoint.

        The checkpoint is None when the caller's config addressed none there.
        """
        old = self.moved.get(ns, ns)
        return old, self.targets.get(old)

    def move(self, old_ns: str, new_ns: str) -> None:
        """Record that a fork renamed task namespace ``old_ns`` to ``new_ns``.

        Only if a target lies at or under it: a subgraph run there must find it.
        """
        old = self.moved.get(old_ns, old_ns)
        if old_ns != new_ns and any(t == old or t.startswith(old + NS_SEP) for t in self.targets):
            self.moved[new_ns] = old

    def first_visit(self, ns: str) -> bool:
        """Whether this is the first run in namespace ``ns`` (its own task id aside).

        Its ancestors' ids count: two parallel parents' subgraphs are two subgraphs;
        so does its run number: a task's second graph run (``|1``) is another subgraph.
        """
        mark = object()
        return self._visited.setdefault(_without_own_id(ns), mark) is mark


def _without_own_id(ns: str) -> str:
    """``ns`` without the task id of its last level (``a:<id>|b:<id>|1`` → ``a:<id>|b|1``)."""
    parts = ns.split(NS_SEP)
    own = next((i for i in range(len(parts) - 1, -1, -1) if not parts[i].isdigit()), None)
    if own is not None:
        parts[own] = parts[own].split(NS_END, 1)[0]
    return NS_SEP.join(parts)


class Afresh:
    """A new answer to a question inside a subgraph that will be asked again, afresh.

    Sent to an old checkpoint, it forks: the fork renames the parent's task, so the
    subgraph runs afresh in a new namespace and asks its questions again under new
    ids. Sent to the thread after an ``update_state`` restarted the subgraph's paused
    node (`pausepoint.loop.fork.restarted_by_update`), the node asks again under
    a new id too. This carries the answer, with the question's value, down every
    level; the first subgraph run started afresh whose task asks, as its first
    question, a question of that value takes it, once: as it asks
    (`pausepoint.loop.fork.take_afresh`), or after its step asked
    (`pausepoint.loop.fork.answer_afresh`).
    """

    __slots__ = ("_taken", "answer", "question")

    def __init__(self, question: object, answer: object) -> None:
        self.question = question
        self.answer = answer
        self._taken: dict[str, object] = {}

    def take(self, task_id: str | None = None) -> bool:
        """Take the answer; False if another run or task took it.

        A task that took it (``task_id``) may take it again (a retry). Atomic: see
        ``ReplayPoint``.
        """
        mark: object = task_id if task_id is not None else object()
        return self._taken.setdefault("taken", mark) == mark

    def taken_by(self, task_id: str) -> bool:
        """Whether task ``task_id`` took the answer while it ran (``fork.take_afresh``)."""
        return self._taken.get("taken") == task_id


def addressed(config: Mapping[str, object]) -> dict[str, str]:
    """The checkpoints a config's ``checkpoint_map`` names, by namespace (root: ``""``).

    A config taken from inside a subgraph (a subgraph snapshot's, a subgraph
    history entry's) names the checkpoint of every level down to it.
    """
    found = config.get("checkpoint_map")
    if not isinstance(found, Mapping):
        return {}
    return {str(k): str(v) for k, v in found.items() if v}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]


def parents_of(nest: NestInfo | None, configurable: Mapping[str, object]) -> Mapping[str, str]:
    """What a run's checkpoints record as their ``parents`` metadata.

    A subgraph's: the checkpoint of every graph above it. A root run's: the
    ``checkpoint_map`` of the config it was given, if any — a run started from a
    config taken inside a subgraph records where it started, as LangGraph does (its
    snapshots' configs then carry that map, which addresses the same checkpoints).
    """
    return nest.parents if nest is not None else addressed(configurable)


def unsaved_id(ns: str) -> str:
    """The checkpoint id of a subgraph run that saves nothing, in namespace ``ns``.

    Stable (task ids hash it, and the ids of the questions they ask hash those), and
    shaped like a saved one; the version nibble 0 tells it was never stored.
    """
    digest = xxh3_128_hexdigest(ns.encode())
    return f"{digest[:8]}-{digest[8:12]}-0{digest[13:16]}-{digest[16:20]}-{digest[20:32]}"


def unsaved_answer(nest: NestInfo | None, ns: str, position: int) -> tuple[object] | None:
    """The answer to question ``position`` of task ``ns``, in a run that saves nothing.

    A 1-tuple, or None. Nothing recorded the question, so the parent's resume map,
    keyed by the question's id (the task's: see
    `from_ns`), is all there is.
    """
    if nest is None or not nest.resume_map:
        return None
    iid = Interrupt.from_ns(None, ns).id
    if iid not in nest.resume_map or nest.resume_positions.get(iid, 0) != position:
        return None
    return (nest.resume_map[iid],)


def replay_before(nest: NestInfo | None, ns: str) -> str | None:
    """The checkpoint id a subgraph run in ``ns`` reads the state before, or None.

    None: it reads its namespace's newest (not in a replay, or not its first run).
    """
    if nest is None or nest.replay is None or not nest.replay.first_visit(ns):
        return None
    return nest.replay.checkpoint_id
