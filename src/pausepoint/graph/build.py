"""From a validated ``StateGraph`` to the loop's `GraphSpec`.

Each node is triggered by its own ``branch:to:<node>`` channel (written by edges,
branches and ``goto``) and by the barrier channel of every join it ends.
"""

from __future__ import annotations

import inspect
from collections import defaultdict
from typing import TYPE_CHECKING

from pausepoint.channels import (
    AfterFinish,
    Channel,
    EphemeralValue,
    LastValue,
    NamedBarrierValue,
    Topic,
)
from pausepoint.constants import BRANCH_TO, END, JOIN, ROOT, START, TAG_HIDDEN, TASKS
from pausepoint.graph.schema import SchemaInfo
from pausepoint.loop.spec import Branch, GraphSpec, NodeProc

if TYPE_CHECKING:
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.graph.state import NodeSpec, StateGraph

__all__ = ["build_spec"]


def build_spec(graph: StateGraph, name: str) -> GraphSpec:
    """Compile ``graph``'s declarations into channels and node procedures."""
    state, inp, output = graph.schema_info()
    node_inputs = {
        n: SchemaInfo.of(spec.input_schema) if spec.input_schema is not None else state
        for n, spec in graph.nodes.items()
    }
    channels: dict[str, Channel] = {}
    for info in (state, inp, output, *node_inputs.values()):
        for key, chan in info.channels.items():
            channels.setdefault(key, chan)
    state_keys = tuple(channels)
    channels[START] = EphemeralValue(START)
    channels[TASKS] = Topic(TASKS)
    for n in graph.nodes:
        channels[BRANCH_TO + n] = EphemeralValue(BRANCH_TO + n)
    wiring = _Wiring.of(graph, channels)
    deferred = _defer(graph, channels)
    nodes: dict[str, NodeProc] = {START: _start_proc(wiring)}
    for n, spec in graph.nodes.items():
        nodes[n] = _node_proc(spec, node_inputs[n], wiring)
    for key in output.keys:
        channels.setdefault(key, LastValue(key))
    triggered_by: defaultdict[str, list[str]] = defaultdict(list)
    for proc in nodes.values():
        for chan in proc.triggers:
            triggered_by[chan].append(proc.name)
    transient = frozenset(k for k, c in channels.items() if isinstance(c, (EphemeralValue, Topic)))
    return GraphSpec(
        name=name,
        channels=channels,
        nodes=nodes,
        state=state,
        input=inp,
        output_keys=output.keys or state_keys,
        state_keys=state_keys,
        triggered_by={k: tuple(v) for k, v in triggered_by.items()},
        transient=transient,
        deferred=deferred,
        output_channel=ROOT if output.kind == "root" else None,
    )


def _defer(graph: StateGraph, channels: dict[str, Channel]) -> tuple[str, ...]:
    """Wrap each deferred node's triggers so they wait until nothing else runs."""
    held = [
        chan
        for name, spec in graph.nodes.items()
        if spec.defer
        for chan in channels
        if chan == BRANCH_TO + name or (chan.startswith(JOIN) and chan.endswith(f":{name}"))
    ]
    for chan in held:
        channels[chan] = AfterFinish(channels[chan])
    return tuple(held)


class _Wiring:
    """What each node writes after it runs (edges, joins, branches) and what joins it."""

    def __init__(self) -> None:
        self.edges: defaultdict[str, list[str]] = defaultdict(list)
        self.joins: defaultdict[str, list[str]] = defaultdict(list)
        self.join_triggers: defaultdict[str, list[str]] = defaultdict(list)
        self.branches: defaultdict[str, list[Branch]] = defaultdict(list)

    @classmethod
    def of(cls, graph: StateGraph, channels: dict[str, Channel]) -> _Wiring:
        w = cls()
        for src, dst in graph.edges:
            if dst != END:
                w.edges[src].append(BRANCH_TO + dst)
        for srcs, dst in graph.waiting_edges:
            if dst == END:
                continue
            chan = f"{JOIN}{'+'.join(srcs)}:{dst}"
            channels[chan] = NamedBarrierValue(chan, frozenset(srcs))
            w.join_triggers[dst].append(chan)
            for src in srcs:
                w.joins[src].append(chan)
        for b in graph.branches:
            branch = Branch(
                b.path,
                _is_async(b.path),
                b.path_map,
                _accepts_config(b.path),
                takes(b.path, "runtime"),
            )
            w.branches[b.source].append(branch)
        return w


def _start_proc(w: _Wiring) -> NodeProc:
    return NodeProc(
        name=START,
        triggers=(START,),
        reads=(),
        input_schema=None,
        fn=None,
        is_async=False,
        accepts_config=False,
        subgraph=None,
        retry=(),
        hidden=True,
        edges=tuple(w.edges[START]),
        joins=tuple(w.joins[START]),
        branches=tuple(w.branches[START]),
        metadata={"tags": [TAG_HIDDEN]},
    )


def _node_proc(spec: NodeSpec, input_schema: SchemaInfo, w: _Wiring) -> NodeProc:
    name = spec.name
    from pausepoint.graph.compiled import CompiledStateGraph

    action = spec.action
    subgraph = action if isinstance(action, CompiledStateGraph) else None
    called = () if subgraph is not None else _called_graphs(action, CompiledStateGraph)
    return NodeProc(
        name=name,
        triggers=(BRANCH_TO + name, *w.join_triggers[name]),
        reads=input_schema.keys,
        input_schema=input_schema,
        fn=None if subgraph is not None else action,  # pyright: ignore[reportArgumentType]
        is_async=subgraph is None and _is_async(action),
        accepts_config=subgraph is None and _accepts_config(action),
        subgraph=subgraph,
        retry=spec.retry,
        hidden=False,
        edges=tuple(w.edges[name]),
        joins=tuple(w.joins[name]),
        branches=tuple(w.branches[name]),
        metadata=spec.metadata,
        inject=_injected(action) if subgraph is None else frozenset(),
        input_channel=ROOT if input_schema.kind == "root" else None,
        calls_graph=called[0] if called else None,
        called_graphs=called,
    )


def _called_graphs(fn: object, kind: type[CompiledStateGraph]) -> tuple[CompiledStateGraph, ...]:
    """The compiled graphs ``fn`` refers to (closure variables, then globals it names).

    So a node that runs a subgraph from inside its function (``sub.invoke(...)``) shows
    that subgraph's state in snapshots, as a subgraph node does (LangGraph finds the
    first the same way). One with ``checkpointer=False`` keeps no state, so it is not
    one. The others tell which graph wrote a later run's namespace (``|1``, ...).
    """
    code = getattr(fn, "__code__", None)
    if code is None:
        return ()
    found: list[object] = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    names: set[str] = set()
    codes = [code]
    while codes:  # the function's own names and those of code nested in it (lambdas)
        current = codes.pop()
        names.update(current.co_names)
        codes.extend(c for c in current.co_consts if inspect.iscode(c))
    scope: dict[str, object] = getattr(fn, "__globals__", None) or {}
    found.extend(scope[n] for n in sorted(names) if n in scope)
    graphs = [g for g in found if isinstance(g, kind) and g.checkpointer is not False]
    return tuple(g for i, g in enumerate(graphs) if all(g is not h for h in graphs[:i]))


def _is_async(fn: object) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )


def _accepts_config(fn: object) -> bool:
    # As in LangGraph, only a parameter named ``config`` receives the config.
    return takes(fn, "config")


def _injected(fn: object) -> frozenset[str]:
    return frozenset(k for k in ("writer", "runtime") if takes(fn, k))


def takes(fn: object, name: str) -> bool:
    """Whether ``fn`` has a parameter called ``name`` (injected by keyword)."""
    if not callable(fn):  # no signature: inspect.signature raises TypeError for it
        return False
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
