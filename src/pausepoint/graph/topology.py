"""Which edges a compiled graph can take: found by stepping through it, running no node.

A conditional edge's targets are only known when its function runs, so, as in
LangGraph, a branch declares the targets it *may* take: its ``path_map``, or a
``Literal[...]`` return annotation of its function; a node returning
``Command(goto=...)`` declares them with ``destinations=`` or a
``-> Command[Literal[...]]`` annotation. Undeclared targets are not drawn.

The picture then comes from a dry run over the graph's real channels: each step,
every triggered node "writes" its edge triggers and join marks, and — the first
time it runs — every target it declares. A node that becomes triggered gets an
edge from each node whose write triggered it. This reproduces what LangGraph
1.1.6's ``get_graph()`` shows (joins, deferred nodes and loops included), so the
nodes and edges match; see docs/differences.md for the drawing's own text.

`graph_of` is what ``get_graph(xray=...)`` returns: that picture, with subgraph nodes
replaced by their own pictures. The picture's types (`pausepoint.graph.drawing`) know
nothing of compiled graphs: this module imports them, never the other way round.
"""

from __future__ import annotations

import typing
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from pausepoint.constants import BRANCH_TO, END, START
from pausepoint.graph.drawing import Edge, Graph, Node
from pausepoint.types import Command

if TYPE_CHECKING:
    from pausepoint.channels import Channel
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.loop.spec import GraphSpec, NodeProc

__all__ = ["declared_targets", "discover", "graph_of"]

_STEP_LIMIT = 250
"""Steps of the dry run at most (a loop repeats its steps; the limit ends it)."""


class _Write(NamedTuple):
    """A trigger a node wrote: the channel, whether it was a declared route, its label."""

    channel: str
    conditional: bool
    label: str | None


class _Edge(NamedTuple):
    source: str
    target: str
    conditional: bool
    label: str | None


def _order(item: tuple[str | bool | None, ...]) -> tuple[str | bool | None, ...]:
    """A sort key for tuples whose last field is a label or ``None``."""
    return (*item[:-1], item[-1] or "")


class _DryRun:
    """The state of the dry run: channels, what each node wrote, the edges found."""

    def __init__(
        self, spec: GraphSpec, declared: Mapping[str, list[tuple[str, str | None]]]
    ) -> None:
        self.spec = spec
        self.declared = declared
        self.channels: dict[str, Channel] = spec.fresh_channels({})
        self.edges: set[_Edge] = set()
        self.sources: dict[str, set[_Write]] = {}
        self.routes: defaultdict[str, set[_Write]] = defaultdict(set)
        self.routed: set[str] = set()
        self.step_sources: dict[str, set[_Write]] = {}

    def run(self) -> list[str]:
        """Step until nothing runs; return the first step's tasks."""
        first = tasks = self.apply([], {START: [None]})
        for _ in range(_STEP_LIMIT):
            if not tasks:
                break
            writes = {name: self.writes_of(name) for name in tasks}
            self.step_sources = {n: w for n, (w, _) in writes.items()}
            self.sources.update(self.step_sources)
            by_trigger = self.by_trigger()
            sent: dict[str, list[str | None]] = defaultdict(list)
            for _, values in writes.values():
                for chan, value in values:
                    sent[chan].append(value)
            nxt = self.apply(tasks, sent)
            for name in nxt:
                self.connect(name, by_trigger)
            tasks = nxt
        return first

    def writes_of(self, name: str) -> tuple[set[_Write], list[tuple[str, str | None]]]:
        """The triggers ``name`` writes this step (as drawn, and as channel writes)."""
        proc = self.spec.nodes[name]
        sent: list[tuple[str, str | None]] = [(c, None) for c in proc.edges]
        sent += [(c, name) for c in proc.joins]
        labels: dict[str, str | None] = {}
        if name not in self.routed:  # declared routes are written the first time only
            self.routed.add(name)
            for target, label in self.declared.get(name, ()):
                if target == END:
                    self.edges.add(_Edge(name, END, True, label))
                    continue
                chan = BRANCH_TO + target
                labels[chan] = label
                self.routes[name].add(_Write(chan, True, label))
                sent.append((chan, None))
        drawn = {
            _Write(c, c in labels and v is None, labels.get(c) if v is None else None)
            for c, v in sent
        }
        return drawn | self.routes.get(name, set()), sent

    def by_trigger(self) -> dict[str, set[tuple[str, bool, str | None]]]:
        """Trigger channel → the ``(node, conditional, label)`` that wrote it."""
        out: defaultdict[str, set[tuple[str, bool, str | None]]] = defaultdict(set)
        for src, written in self.sources.items():
            for w in written:
                out[w.channel].add((src, w.conditional, w.label))
        return out

    def connect(
        self, name: str, by_trigger: Mapping[str, set[tuple[str, bool, str | None]]]
    ) -> None:
        """Add the edges into ``name`` from the nodes whose writes triggered it."""
        fresh = False
        for trigger in sorted(self.spec.nodes[name].triggers):
            for src, cond, label in sorted(by_trigger.get(trigger, ()), key=_order):
                self.edges.add(_Edge(src, name, cond, label))
                if _Write(trigger, cond, label) in self.step_sources.get(src, ()):
                    fresh = True
                else:  # an older write: used once
                    self.sources[src].discard(_Write(trigger, cond, label))
        if not fresh:  # triggered by nothing of the last step (a held trigger)
            for src in self.step_sources:
                self.edges.add(_Edge(src, name, True, None))

    def apply(self, ran: Iterable[str], sent: Mapping[str, list[str | None]]) -> list[str]:
        """Apply one step's writes to the channels; return the nodes triggered next."""
        for name in ran:
            for chan in self.spec.nodes[name].triggers:
                channel = self.channels.get(chan)
                if channel is not None and channel.consumes:
                    channel.consume()
        updated = {c for c, v in sent.items() if self.channels[c].update(v)}
        for chan, channel in self.channels.items():
            if chan not in sent and chan in self.spec.transient:
                channel.update(())
        updated = {c for c in updated if self.channels[c].is_available()}
        if updated.isdisjoint(self.spec.triggered_by):
            updated |= {c for c in self.spec.deferred if _finish(self.channels[c])}
        names = {n for c in updated for n in self.spec.triggered_by.get(c, ())}
        return [n for n in self.spec.nodes if n in names]


def _finish(channel: Channel) -> bool:
    finish = getattr(channel, "finish", None)
    return bool(finish()) if finish is not None else False


def graph_of(compiled: CompiledStateGraph, xray: int | bool) -> Graph:
    """The picture of ``compiled``; subgraphs drawn inside it ``xray`` levels deep."""
    picture = discover(compiled)
    if not xray:
        return picture
    deeper = xray if isinstance(xray, bool) or xray <= 0 else xray - 1
    for name, sub in compiled.get_subgraphs():
        _inline(picture, name, graph_of(sub, deeper))
    return picture


def _inline(picture: Graph, name: str, sub: Graph) -> None:
    """Replace node ``name`` with the inside of ``sub`` (its start and end trimmed)."""
    if len(sub.nodes) <= 1 or name not in picture.nodes:
        return
    if sub.first_node() is None or sub.last_node() is None:
        return
    sub.trim_first_node()
    sub.trim_last_node()
    picture.nodes.pop(name)
    first, last = picture.extend(sub, prefix=name)
    # Edges into the subgraph node now enter its first node; edges out leave its last.
    picture.edges = [_rewired(e, name, first, last) for e in picture.edges]


def _rewired(edge: Edge, name: str, first: Node | None, last: Node | None) -> Edge:
    if edge.source == name and last is not None:
        edge = edge.copy(source=last.id)
    if edge.target == name and first is not None:
        edge = edge.copy(target=first.id)
    return edge


def discover(compiled: CompiledStateGraph) -> Graph:
    """The picture of ``compiled`` (its subgraphs as single nodes)."""
    spec = compiled.spec
    declared = {name: declared_targets(compiled, name) for name in spec.nodes}
    dry = _DryRun(spec, declared)
    first = dry.run()
    picture = Graph()
    deferred = {c[len(BRANCH_TO) :] for c in spec.deferred if c.startswith(BRANCH_TO)}
    for name, proc in spec.nodes.items():
        meta = _metadata(compiled, name, proc, name in deferred)
        picture.add_node(name, None if name == START else _data(proc), meta)
    if START not in spec.nodes:  # an entrypoint: its input is not a node of its own
        picture.add_node(START)
        for name in first:
            picture.add_edge(START, name)
    _add_edges(picture, dry)
    return picture


def _add_edges(picture: Graph, dry: _DryRun) -> None:
    """The edges found, then edges to END from where the graph can stop."""
    for src, dst, cond, label in sorted(dry.edges, key=_order):
        _edge(picture, src, dst, None if label == dst else label, cond)
    targets = {e.target for e in dry.edges if e.target != END}
    ends = sorted(targets - {e.source for e in dry.edges})
    if ends:
        for src in ends:
            _edge(picture, src, END, None, False)
    elif len(dry.step_sources) == 1 and not any(e.target == END for e in dry.edges):
        for src in dry.step_sources:
            _edge(picture, src, END, None, True)


def _edge(picture: Graph, src: str, dst: str, label: str | None, cond: bool) -> None:
    if dst == END and END not in picture.nodes:
        picture.add_node(END)
    picture.add_edge(src, dst, label, cond)


def _data(proc: NodeProc) -> object:
    return proc.subgraph if proc.subgraph is not None else proc.fn


def _metadata(
    compiled: CompiledStateGraph, name: str, proc: NodeProc, deferred: bool
) -> dict[str, Any] | None:
    """The node's own metadata, ``defer`` and where a static breakpoint pauses at it."""
    meta = {} if name == START else dict(proc.metadata)
    if deferred:
        meta["defer"] = True
    marks = [
        when
        for when, nodes in (
            ("before", compiled.interrupt_before_nodes),
            ("after", compiled.interrupt_after_nodes),
        )
        if name != START and (nodes == "*" or name in nodes)
    ]
    if marks:
        meta["__interrupt"] = ",".join(marks)
    return meta or None


def declared_targets(compiled: CompiledStateGraph, name: str) -> list[tuple[str, str | None]]:
    """``(target, label)`` of every route node ``name`` declares: branches, then goto."""
    proc = compiled.spec.nodes[name]
    out: list[tuple[str, str | None]] = []
    for branch in proc.branches:
        ends = branch.path_map if branch.path_map is not None else _literal_map(branch.path)
        out += [(target, str(key)) for key, target in (ends or {}).items()]
    out += _goto_targets(compiled, name, proc)
    return out


def _goto_targets(
    compiled: CompiledStateGraph, name: str, proc: NodeProc
) -> list[tuple[str, str | None]]:
    builder = compiled.builder
    spec = getattr(builder, "nodes", {}).get(name) if builder is not None else None
    given = getattr(spec, "destinations", None)
    if given is not None:
        return list(given)
    return [(t, None) for t in _command_literal(proc.fn)] if proc.fn is not None else []


def _hints(fn: object) -> dict[str, object]:
    """``fn``'s type hints (those of ``__call__`` for a callable object), or none."""
    target = fn if callable(fn) and hasattr(fn, "__code__") else getattr(fn, "__call__", fn)  # noqa: B004
    try:
        return typing.get_type_hints(target)
    except Exception:  # unresolvable annotations declare nothing
        return {}


def _literal_map(path: object) -> dict[Hashable, str] | None:
    """``{name: name}`` from a branch function's ``-> Literal[...]`` annotation."""
    ret = _hints(path).get("return")
    if typing.get_origin(ret) is not typing.Literal:
        return None
    return {value: value for value in typing.get_args(ret)}


def _command_literal(fn: object) -> tuple[str, ...]:
    """The targets of a ``-> Command[Literal[...]]`` annotation (also inside a union)."""
    ret = _hints(fn).get("return")
    options = typing.get_args(ret) if typing.get_origin(ret) in (typing.Union, _UNION) else (ret,)
    for option in options:
        args = typing.get_args(option)
        if typing.get_origin(option) is Command and args and _is_literal(args[0]):
            return tuple(str(a) for a in typing.get_args(args[0]))
    return ()


def _is_literal(hint: object) -> bool:
    return typing.get_origin(hint) is typing.Literal


_UNION: type[object] = type(int | str)
"""``X | Y`` unions (``types.UnionType``), which ``typing.Union`` does not cover."""
