"""From a validated ``StateGraph`` to the loop's :class:`~pausepoint.loop.spec.GraphSpec`.

Each node is triggered by its own ``branch:to:<node>`` channel (written by edges,
branches and ``goto``) and by the barrier channel of every join it ends.
"""

from __future__ import annotations

import inspect
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from pausepoint.channels import Channel, EphemeralValue, LastValue, NamedBarrierValue, Topic
from pausepoint.constants import BRANCH_TO, END, JOIN, START, TAG_HIDDEN, TASKS
from pausepoint.graph.schema import SchemaInfo
from pausepoint.loop.spec import Branch, GraphSpec, NodeProc

if TYPE_CHECKING:
    from pausepoint.graph.state import NodeSpec, StateGraph

__all__ = ["build_spec"]


def build_spec(graph: StateGraph, name: str) -> GraphSpec:
    """Compile ``graph``'s declarations into channels and node procedures."""
    state, inp, output = graph.schema_info()
    channels: dict[str, Channel] = {}
    node_inputs = {
        n: SchemaInfo.of(spec.input_schema) if spec.input_schema is not None else state
        for n, spec in graph.nodes.items()
    }
    for info in (state, inp, output, *node_inputs.values()):
        for key, chan in info.channels.items():
            channels.setdefault(key, chan)
    state_keys = tuple(channels)
    channels[START] = EphemeralValue(START)
    channels[TASKS] = Topic(TASKS)
    for n in graph.nodes:
        channels[BRANCH_TO + n] = EphemeralValue(BRANCH_TO + n)
    edges: defaultdict[str, list[str]] = defaultdict(list)
    for src, dst in graph.edges:
        if dst != END:
            edges[src].append(BRANCH_TO + dst)
    joins: defaultdict[str, list[str]] = defaultdict(list)
    join_triggers: defaultdict[str, list[str]] = defaultdict(list)
    for srcs, dst in graph.waiting_edges:
        if dst == END:
            continue
        chan = f"{JOIN}{'+'.join(srcs)}:{dst}"
        channels[chan] = NamedBarrierValue(chan, frozenset(srcs))
        join_triggers[dst].append(chan)
        for src in srcs:
            joins[src].append(chan)
    branches: defaultdict[str, list[Branch]] = defaultdict(list)
    for b in graph.branches:
        branches[b.source].append(
            Branch(b.path, _is_async(b.path), b.path_map, _accepts_config(b.path))
        )
    nodes: dict[str, NodeProc] = {
        START: NodeProc(
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
            edges=tuple(edges[START]),
            joins=tuple(joins[START]),
            branches=tuple(branches[START]),
            metadata={"tags": [TAG_HIDDEN]},
        )
    }
    for n, spec in graph.nodes.items():
        nodes[n] = _node_proc(
            spec,
            (BRANCH_TO + n, *join_triggers[n]),
            node_inputs[n],
            tuple(edges[n]),
            tuple(joins[n]),
            tuple(branches[n]),
        )
    for key in output.keys:
        channels.setdefault(key, LastValue(key))
    return GraphSpec(
        name=name,
        channels=channels,
        nodes=nodes,
        state=state,
        input=inp,
        output_keys=output.keys or state_keys,
        state_keys=state_keys,
    )


def _node_proc(
    spec: NodeSpec,
    triggers: tuple[str, ...],
    input_schema: SchemaInfo,
    edges: tuple[str, ...],
    joins: tuple[str, ...],
    branches: tuple[Branch, ...],
) -> NodeProc:
    from pausepoint.graph.compiled import CompiledStateGraph

    action = spec.action
    subgraph = action if isinstance(action, CompiledStateGraph) else None
    return NodeProc(
        name=spec.name,
        triggers=triggers,
        reads=input_schema.keys,
        input_schema=input_schema,
        fn=None if subgraph is not None else action,  # pyright: ignore[reportArgumentType]
        is_async=subgraph is None and _is_async(action),
        accepts_config=subgraph is None and _accepts_config(action),
        subgraph=subgraph,
        retry=spec.retry,
        hidden=False,
        edges=edges,
        joins=joins,
        branches=branches,
        metadata=spec.metadata,
    )


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )


def _accepts_config(fn: Any) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    # As in LangGraph, only a parameter named ``config`` receives the config.
    return any(p.name == "config" for p in params)
