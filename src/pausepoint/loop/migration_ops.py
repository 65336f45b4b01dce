"""Declared migrations: what a deploy changed, said so a stored thread can follow it.

A migration is declared on the graph (``compile(..., migrations=[...])``,
``@entrypoint(migrations=[...])``) and applied, in order, to a thread whose newest
checkpoint another graph wrote (docs/deploys.md). Each works on a `StoredThread`: the
stored checkpoint and its pending writes as plain, typed data — channel values and
versions, what each node has seen, pending ``Send`` packets, and each pending task
by its node (not by its id: a task's id hashes its node's name, so ids are made
anew once the migrations ran, `pausepoint.loop.migrate`).

The common cases are one line each (`rename_node`, `reroute`, `rename_channel`,
`drop_channel`, `convert_channel`); `migration` wraps a function for the rest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Literal, cast

from pausepoint.checkpoint.base import Version
from pausepoint.constants import BRANCH_TO, JOIN, TASKS
from pausepoint.types import Send

__all__ = [
    "Migration",
    "StoredTask",
    "StoredThread",
    "convert_channel",
    "drop_channel",
    "migration",
    "rename_channel",
    "rename_node",
    "reroute",
]


@dataclasses.dataclass(slots=True)
class StoredTask:
    """One pending task of a stored checkpoint: what its node has saved so far.

    Attributes:
        node: The node it runs (a migration may change it: the task follows).
        kind: ``"pull"`` (triggered by a channel), ``"push"`` (a ``Send`` packet, at
            ``index`` of the pending packets) or ``"call"`` (an ``@task`` call of the
            functional API, the ``index``-th of its ``parent``).
        index: The packet's index (push), the call's position (call), else 0.
        writes: Everything the task saved, in order, as ``(channel, value)``: its
            output once finished, and its interrupts, answers and error.
        parent: The task that made the call (``kind == "call"``).
    """

    node: str
    kind: Literal["pull", "push", "call"]
    index: int
    writes: list[tuple[str, object]]
    parent: StoredTask | None = None
    old_node: str = ""
    """The node it ran as when it was stored (set by the loader)."""
    old_id: str = ""
    """Its id at the stored checkpoint (set by the loader)."""


@dataclasses.dataclass(slots=True)
class StoredThread:
    """A stored checkpoint and its pending writes, as migrations see and change them.

    Attributes:
        values: Channel values (state keys, and internal channels such as
            ``branch:to:<node>`` edge triggers and ``__pregel_tasks``).
        versions: Each channel's version.
        seen: Node → the channel versions it has seen (``__interrupt__``: those a
            static breakpoint saw).
        tasks: The pending tasks of the next step that saved something.
        updates: Writes that belong to no task (a ``Command(update=...)`` stored).
        reducers: State key → the name of the reducer its stored value was folded
            with (as the writing graph stamped it).
        converted: Keys whose stored value a migration converted: their reducer and
            type are taken as the running graph's.
        namespace: The checkpoint namespace (``""``: the root graph).
        step: The step that starts at the checkpoint.
    """

    values: dict[str, object]
    versions: dict[str, Version]
    seen: dict[str, dict[str, Version]]
    tasks: list[StoredTask]
    updates: list[tuple[str, object]]
    reducers: dict[str, str]
    converted: set[str] = dataclasses.field(default_factory=set[str])
    namespace: str = ""
    step: int = 0

    @property
    def sends(self) -> list[Send]:
        """The pending ``Send`` packets (to move one, replace ``values["__pregel_tasks"]``)."""
        packets = self.values.get(TASKS)
        if not isinstance(packets, list):
            return []
        return [p for p in packets if isinstance(p, Send)]  # pyright: ignore[reportUnknownVariableType]

    def rename_key(self, rename: Callable[[str], str]) -> None:
        """Rename channels everywhere they are named: values, versions, seen, writes."""
        self.values = {rename(k): v for k, v in self.values.items()}
        self.versions = {rename(k): v for k, v in self.versions.items()}
        self.seen = {n: {rename(k): v for k, v in s.items()} for n, s in self.seen.items()}
        for task in self.tasks:
            task.writes = [(rename(c), v) for c, v in task.writes]
        self.updates = [(rename(c), v) for c, v in self.updates]
        self.reducers = {rename(k): v for k, v in self.reducers.items()}
        self.converted = {rename(k) for k in self.converted}


class Migration:
    """A declared change a stored thread follows. Subclasses implement `apply`.

    Attributes:
        label: How history and errors name it (``rename_node('ask', 'approve')``).
    """

    label: str = "migration"
    nodes: tuple[str, ...] = ()
    """Node names it refers to, old ones included: where stored tasks are looked for."""

    def apply(self, thread: StoredThread) -> bool:
        """Change ``thread`` in place; return whether anything changed."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.label


@dataclasses.dataclass(frozen=True, slots=True, repr=False)
class _Reroute(Migration):
    old: str
    new: str
    whole: bool
    """Rename the node (what it has seen, its joins) rather than move its pending work."""

    @property
    def label(self) -> str:  # pyright: ignore[reportIncompatibleVariableOverride]
        what = "rename_node" if self.whole else "reroute"
        return f"{what}({self.old!r}, {self.new!r})"

    @property
    def nodes(self) -> tuple[str, ...]:  # pyright: ignore[reportIncompatibleVariableOverride]
        return (self.old, self.new)

    def apply(self, thread: StoredThread) -> bool:
        old, new = self.old, self.new
        changed = False
        packets: object = thread.values.get(TASKS)
        if isinstance(packets, list) and any(
            isinstance(p, Send) and p.node == old
            for p in packets  # pyright: ignore[reportUnknownVariableType]
        ):
            thread.values[TASKS] = [
                Send(new, p.arg) if isinstance(p, Send) and p.node == old else p
                for p in packets  # pyright: ignore[reportUnknownVariableType]
            ]
            changed = True
        for task in thread.tasks:
            if task.node == old:
                task.node, changed = new, True
        trigger = BRANCH_TO + old
        if trigger in thread.values or trigger in thread.versions:
            changed = True
            _move_channel(thread, trigger, BRANCH_TO + new)
        if self.whole:
            if old in thread.seen:
                thread.seen[new] = thread.seen.pop(old)
                changed = True
            joins = [k for k in {*thread.values, *thread.versions} if k.startswith(JOIN)]
            for key in joins:
                renamed = _join_renamed(key, old, new)
                if renamed != key:
                    changed = True
                    _move_channel(thread, key, renamed)
                    thread.values[renamed] = _members_renamed(thread.values.get(renamed), old, new)
        return changed


def _move_channel(thread: StoredThread, old: str, new: str) -> None:
    thread.rename_key(lambda k: new if k == old else k)


def _join_renamed(key: str, old: str, new: str) -> str:
    """A join barrier's channel (``join:<a>+<b>:<dst>``) with node ``old`` renamed."""
    body = key[len(JOIN) :]
    srcs, sep, dst = body.rpartition(":")
    if not sep:
        return key
    names = [new if s == old else s for s in srcs.split("+")]
    return f"{JOIN}{'+'.join(names)}:{new if dst == old else dst}"


def _members_renamed(value: object, old: str, new: str) -> object:
    if isinstance(value, set | frozenset):
        items: Iterable[object] = cast("Iterable[object]", value)
        renamed: list[object] = [new if v == old else v for v in items]
        return frozenset(renamed) if isinstance(value, frozenset) else set(renamed)
    return value


@dataclasses.dataclass(frozen=True, slots=True, repr=False)
class _RenameChannel(Migration):
    old: str
    new: str

    @property
    def label(self) -> str:  # pyright: ignore[reportIncompatibleVariableOverride]
        return f"rename_channel({self.old!r}, {self.new!r})"

    def apply(self, thread: StoredThread) -> bool:
        if self.old not in thread.values and self.old not in thread.versions:
            return False
        _move_channel(thread, self.old, self.new)
        return True


@dataclasses.dataclass(frozen=True, slots=True, repr=False)
class _DropChannel(Migration):
    name: str

    @property
    def label(self) -> str:  # pyright: ignore[reportIncompatibleVariableOverride]
        return f"drop_channel({self.name!r})"

    def apply(self, thread: StoredThread) -> bool:
        name = self.name
        if name not in thread.values and name not in thread.versions:
            return False
        thread.values.pop(name, None)
        thread.versions.pop(name, None)
        for seen in thread.seen.values():
            seen.pop(name, None)
        for task in thread.tasks:
            task.writes = [(c, v) for c, v in task.writes if c != name]
        thread.updates = [(c, v) for c, v in thread.updates if c != name]
        thread.reducers.pop(name, None)
        return True


@dataclasses.dataclass(frozen=True, slots=True, repr=False)
class _ConvertChannel(Migration):
    name: str
    convert: Callable[[object], object]

    @property
    def label(self) -> str:  # pyright: ignore[reportIncompatibleVariableOverride]
        fn = getattr(self.convert, "__qualname__", None) or type(self.convert).__name__
        return f"convert_channel({self.name!r}, {fn})"

    def apply(self, thread: StoredThread) -> bool:
        name, convert = self.name, self.convert
        found = name in thread.values
        if found:
            thread.values[name] = convert(thread.values[name])
        for task in thread.tasks:
            if any(c == name for c, _ in task.writes):
                found = True
                task.writes = [(c, convert(v) if c == name else v) for c, v in task.writes]
        thread.updates = [(c, convert(v) if c == name else v) for c, v in thread.updates]
        if found:
            thread.converted.add(name)
        return found


@dataclasses.dataclass(frozen=True, slots=True, repr=False)
class _Function(Migration):
    name: str
    fn: Callable[[StoredThread], StoredThread | None]
    touches: tuple[str, ...]

    @property
    def label(self) -> str:  # pyright: ignore[reportIncompatibleVariableOverride]
        return f"migration({self.name!r})"

    @property
    def nodes(self) -> tuple[str, ...]:  # pyright: ignore[reportIncompatibleVariableOverride]
        return self.touches

    def apply(self, thread: StoredThread) -> bool:
        out = self.fn(thread)
        if out is not None and out is not thread:
            for field in dataclasses.fields(StoredThread):
                setattr(thread, field.name, getattr(out, field.name))
        return True


def rename_node(old: str, new: str) -> Migration:
    """The node ``old`` is now called ``new``.

    Its pending tasks, questions (waiting or answered), triggers, ``Send`` packets,
    joins and what it has seen follow.
    """
    return _Reroute(old, new, whole=True)


def reroute(old: str, new: str) -> Migration:
    """Pending work of node ``old`` goes to node ``new``.

    Its triggered task, its ``Send`` packets, their questions and answers move;
    what ``old`` has seen stays.
    """
    return _Reroute(old, new, whole=False)


def rename_channel(old: str, new: str) -> Migration:
    """The state key (or channel) ``old`` is now ``new``: value, version, writes."""
    return _RenameChannel(old, new)


def drop_channel(name: str) -> Migration:
    """The state key (or channel) ``name`` is gone: its value and writes are dropped."""
    return _DropChannel(name)


def convert_channel(name: str, convert: Callable[[object], object]) -> Migration:
    """Convert the stored value of ``name`` with ``convert``, for a new type or reducer.

    Pending writes to it are converted too: ``convert_channel("count", int)``.
    """
    return _ConvertChannel(name, convert)


def migration(
    name: str,
    fn: Callable[[StoredThread], StoredThread | None],
    *,
    nodes: Iterable[str] = (),
) -> Migration:
    """Any other change: ``fn`` changes the `StoredThread` in place (or returns a new one).

    ``nodes``: node names it moves tasks from or to, so their stored tasks are found.
    """
    return _Function(name, fn, tuple(nodes))
