"""A compiled graph as the loop sees it: channels, nodes, edges and branches.

Built once by ``StateGraph.compile()``; immutable afterwards.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any

from pausepoint.channels import MISSING
from pausepoint.constants import PULL
from pausepoint.types import RetryPolicy

if TYPE_CHECKING:
    from pausepoint.channels import Channel
    from pausepoint.graph.schema import SchemaInfo
    from pausepoint.loop.compat_check import GraphShape
    from pausepoint.loop.migration_ops import Migration

__all__ = ["Branch", "GraphSpec", "NodeProc"]


@dataclasses.dataclass(frozen=True, slots=True)
class Branch:
    """A conditional edge: ``path(state)`` names the next nodes (through ``path_map``)."""

    path: Callable[..., Any]
    path_is_async: bool
    path_map: Mapping[Hashable, str] | None
    accepts_config: bool
    accepts_runtime: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class NodeProc:
    """One node: what triggers it, what it reads, what it calls and where it leads."""

    name: str
    triggers: tuple[str, ...]
    reads: tuple[str, ...]
    input_schema: SchemaInfo | None
    fn: Callable[..., Any] | None
    is_async: bool
    accepts_config: bool
    subgraph: Any | None
    retry: tuple[RetryPolicy, ...]
    hidden: bool
    edges: tuple[str, ...]
    joins: tuple[str, ...]
    branches: tuple[Branch, ...]
    metadata: Mapping[str, object]
    input_channel: str | None = None
    """Read this one channel's value as the input (an entrypoint reads ``__start__``)."""
    inject: frozenset[str] = frozenset()
    """Keyword arguments to pass: ``config``, ``writer``, ``previous``, ``runtime``."""
    returns: tuple[str, str] | None = None
    """Write the return value to these ``(output, saved)`` channels (an entrypoint)."""
    final: type | None = None
    """The class of a return that splits output and saved value (``entrypoint.final``):
    handed over at compile time, so the loop does not import `pausepoint.func`."""
    calls_graph: Any | None = None
    """A compiled graph the node's function calls (found in what its code refers to):
    its state is shown as this node's task's, like a subgraph node's (snapshot.py)."""
    called_graphs: tuple[Any, ...] = ()
    """Every compiled graph the function refers to, ``calls_graph`` first: it may run
    several, each in a namespace of its own (``|1``, ...: `pausepoint.graph.addressing`)."""
    after_writes: tuple[tuple[str, object], ...] = dataclasses.field(init=False)
    """The writes that follow every run: edge triggers, then join marks (made once)."""
    pull_key: str = dataclasses.field(init=False)
    """The node's part of its pull task's id (see ``loop.tasks.task_id``), made once."""
    pull: tuple[str, str] = dataclasses.field(init=False)
    """Its pull task's path, ``(PULL, name)``: one tuple for all its tasks."""
    pull_path: str = dataclasses.field(init=False)
    """``repr`` of its pull task's path, as savers store it with the task's writes."""

    @property
    def graphs(self) -> tuple[Any, ...]:
        """The compiled graphs a task of this node may run, ``calls_graph`` first.

        Its subgraph, or those its function refers to.
        """
        return (self.subgraph,) if self.subgraph is not None else self.called_graphs

    def __post_init__(self) -> None:
        after = [(chan, None) for chan in self.edges]
        after += [(chan, self.name) for chan in self.joins]
        object.__setattr__(self, "after_writes", tuple(after))
        object.__setattr__(self, "pull_key", f"{self.name}\x00{PULL}\x00{self.name}")
        object.__setattr__(self, "pull", (PULL, self.name))
        object.__setattr__(self, "pull_path", repr(self.pull))


@dataclasses.dataclass(frozen=True, slots=True)
class GraphSpec:
    """Everything the loop needs to know about a compiled graph."""

    name: str
    channels: Mapping[str, Channel]
    nodes: Mapping[str, NodeProc]
    state: SchemaInfo
    input: SchemaInfo
    output_keys: tuple[str, ...]
    state_keys: tuple[str, ...]
    triggered_by: Mapping[str, tuple[str, ...]]
    """Channel name → the nodes it triggers, in graph order (to skip scanning all nodes)."""
    transient: frozenset[str]
    """Channels whose value lasts one step (edge triggers, input, ``Send`` packets)."""
    output_channel: str | None = None
    """A graph whose output is one channel's bare value (an entrypoint's return)."""
    deferred: tuple[str, ...] = ()
    """Channels that hold back a deferred node's trigger until nothing else runs."""
    eager: bool = False
    """Stream chunks as tasks make them, whatever the modes (an entrypoint's calls)."""
    shape: GraphShape | None = None
    """Its fingerprint and what it stamps on checkpoints: set by the compiled graph
    (`pausepoint.graph.fingerprint`); None for a spec made by hand (never checked)."""
    migrations: tuple[Migration, ...] = ()
    """What a thread another graph wrote follows when loaded (`pausepoint.loop.migrate`)."""
    state_key_set: frozenset[str] = dataclasses.field(init=False)
    """``state_keys`` as a set, for membership tests on every write."""
    stream_keys: tuple[str, ...] = dataclasses.field(init=False)
    """What ``stream`` reports by default (``values``, ``updates``, task results): every
    state key, whatever the output schema (LangGraph's ``stream_channels``); an
    entrypoint's or one-value graph's output channel alone."""
    root: bool = dataclasses.field(init=False)
    """Whether the whole state is one value (``StateGraph(list)``): nodes return it bare."""
    managed: bool = dataclasses.field(init=False)
    """Whether a node reads a managed value (``RemainingSteps``, ``IsLastStep``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "state_key_set", frozenset(self.state_keys))
        single = self.output_channel
        object.__setattr__(self, "stream_keys", self.state_keys if single is None else (single,))
        object.__setattr__(self, "root", self.state.kind == "root")
        managed = any(n.input_schema and n.input_schema.managed for n in self.nodes.values())
        object.__setattr__(self, "managed", bool(self.state.managed) or managed)

    @property
    def fingerprint(self) -> str | None:
        """The structural fingerprint of the graph (docs/deploys.md), or None."""
        return None if self.shape is None else self.shape.fingerprint

    def fresh_channels(self, stored: Mapping[str, object]) -> dict[str, Channel]:
        """Channels rebuilt from a checkpoint's stored values."""
        return {k: proto.spawn(stored.get(k, MISSING)) for k, proto in self.channels.items()}
