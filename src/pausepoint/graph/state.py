"""``StateGraph``: declare nodes, edges and branches over a state schema, then compile.

The builder only records; ``compile()`` validates everything at once (raising a
single `GraphValidationError` that lists every
problem) and produces a `CompiledStateGraph`.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pausepoint.constants import DEFAULT_LEASE_TTL, DEFAULT_LEASE_WAIT, END, RESERVED_NAMES, START
from pausepoint.graph.schema import SchemaInfo, refuse_managed_io
from pausepoint.types import All, CachePolicy, Checkpointer, RetryPolicy

if TYPE_CHECKING:
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.loop.migration_ops import Migration

__all__ = ["StateGraph"]


@dataclasses.dataclass(frozen=True, slots=True)
class NodeSpec:
    """A node as declared: its function (or subgraph) and options."""

    name: str
    action: Any
    retry: tuple[RetryPolicy, ...]
    metadata: Mapping[str, object]
    input_schema: object
    defer: bool = False
    """Run only when nothing else is left to run (``add_node(..., defer=True)``)."""
    destinations: tuple[tuple[str, str | None], ...] | None = None
    """Where a node's ``Command(goto=...)`` may go, as ``(node, label)``: for drawing."""


@dataclasses.dataclass(frozen=True, slots=True)
class BranchSpec:
    """A conditional edge as declared."""

    source: str
    path: Callable[..., object]
    path_map: Mapping[Hashable, str] | None


class StateGraph:
    """A graph whose nodes read and update a shared state.

    Args:
        state_schema: A TypedDict, dataclass or pydantic model; each key is a channel.
            ``Annotated[T, reducer]`` keys fold updates with ``reducer``. A type with
            no keys (``int``, ``dict``, ``Annotated[list, operator.add]``) makes the
            whole state one value, which nodes receive and return bare.
        context_schema: The type of the run's ``context=`` (a dataclass, pydantic
            model or TypedDict); a dict given for a class is turned into one. Nodes
            read it as ``runtime.context`` ([`pausepoint.runtime`][]).
        input_schema: The keys the graph accepts as input (default: the state's).
        output_schema: The keys the graph returns (default: the state's).

    Raises:
        ValueError: ``input_schema`` or ``output_schema`` declares a managed value
            (``RemainingSteps``, ``IsLastStep``): only the state schema may.
    """

    def __init__(
        self,
        state_schema: object = None,
        context_schema: Callable[..., object] | None = None,
        *,
        input_schema: object = None,
        output_schema: object = None,
    ) -> None:
        self.state_schema: object = state_schema if state_schema is not None else dict
        self.context_schema = context_schema
        self.input_schema = input_schema if input_schema is not None else self.state_schema
        self.output_schema = output_schema if output_schema is not None else self.state_schema
        for schema in (self.input_schema, self.output_schema):
            refuse_managed_io(schema, self.state_schema)
        self.nodes: dict[str, NodeSpec] = {}
        self.edges: list[tuple[str, str]] = []
        self.waiting_edges: list[tuple[tuple[str, ...], str]] = []
        self.branches: list[BranchSpec] = []
        self.problems: list[str] = []
        self.compiled = False

    # --- nodes ---------------------------------------------------------------------------

    def add_node(
        self,
        node: object,
        action: object = None,
        *,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        metadata: Mapping[str, object] | None = None,
        input_schema: object = None,
        cache_policy: CachePolicy | None = None,
        defer: bool = False,
        destinations: Mapping[str, str | None] | Sequence[str] | None = None,
    ) -> StateGraph:
        """Add a node: ``add_node("name", fn)`` or ``add_node(fn)`` (named after ``fn``).

        ``fn`` may be sync or async, take ``(state)`` or ``(state, config)``, and return
        a dict of updates, ``None`` or a ``Command``. A compiled graph is a subgraph node.

        Args:
            node: The node's name, or its function (then named after it).
            action: The function (or compiled subgraph) when ``node`` is a name.
            retry_policy: How to retry the node when it fails.
            metadata: Kept with the node; shown by ``get_graph()``.
            input_schema: The keys the node reads (default: the state's).
            cache_policy: Not supported: anything but ``None`` raises
                ``NotImplementedError`` (pausepoint has no node cache yet).
            defer: Run the node only when nothing else is left to run, once, however
                many of its edges fired in different steps (a fan-in of uneven
                branches).
            destinations: Where a node returning ``Command(goto=...)`` may go (names,
                or ``{name: label}``): used to draw the graph only, as in LangGraph.
        """
        from pausepoint.graph.validate import check_cache

        check_cache("add_node(cache_policy=...)", cache_policy)
        if not isinstance(node, str):
            action, node = node, _name_of(node)
        if action is None:
            self.problems.append(f"node {node!r} has no function")
        if node in self.nodes:
            self.problems.append(f"node {node!r} is added more than once")
        if node in RESERVED_NAMES or any(c in node for c in ("|", ":")):
            self.problems.append(f"node name {node!r} is reserved or contains '|' or ':'")
        if isinstance(retry_policy, RetryPolicy):
            retry: tuple[RetryPolicy, ...] = (retry_policy,)
        else:
            retry = tuple(retry_policy or ())
        self.nodes[node] = NodeSpec(
            node,
            action,
            retry,
            dict(metadata or {}),
            input_schema,
            defer,
            _destinations(destinations),
        )
        return self

    def add_sequence(self, nodes: Sequence[object]) -> StateGraph:
        """Add nodes (functions or ``(name, fn)`` pairs) chained by edges in order."""
        if not nodes:
            self.problems.append("add_sequence() needs at least one node")
        previous: str | None = None
        for item in nodes:
            name, fn = item if isinstance(item, tuple) else (_name_of(item), item)  # pyright: ignore[reportUnknownVariableType]
            self.add_node(name, fn)  # pyright: ignore[reportUnknownArgumentType]
            if previous is not None:
                self.add_edge(previous, name)  # pyright: ignore[reportUnknownArgumentType]
            previous = name  # pyright: ignore[reportUnknownVariableType]
        return self

    # --- edges ---------------------------------------------------------------------------

    def add_edge(self, start_key: str | Sequence[str], end_key: str) -> StateGraph:
        """``a → b``; with a list of sources, ``b`` runs once all of them have finished."""
        if isinstance(start_key, str):
            if start_key == END:
                self.problems.append("END cannot be the start of an edge")
            if end_key == START:
                self.problems.append("START cannot be the end of an edge")
            self.edges.append((start_key, end_key))
        else:
            self.waiting_edges.append((tuple(start_key), end_key))
        return self

    def add_conditional_edges(
        self,
        source: str,
        path: Callable[..., object],
        path_map: Mapping[Hashable, str] | Sequence[str] | None = None,
    ) -> StateGraph:
        """After ``source``, ``path(state)`` names the next node(s), ``Send``s or ``END``."""
        mapping: Mapping[Hashable, str] | None
        if path_map is None:
            mapping = None
        elif isinstance(path_map, Mapping):
            mapping = dict(path_map)
        else:
            mapping = {name: name for name in path_map}
        self.branches.append(BranchSpec(source, path, mapping))
        return self

    def set_entry_point(self, key: str) -> StateGraph:
        """Same as ``add_edge(START, key)``."""
        return self.add_edge(START, key)

    def set_conditional_entry_point(
        self,
        path: Callable[..., object],
        path_map: Mapping[Hashable, str] | Sequence[str] | None = None,
    ) -> StateGraph:
        """Same as ``add_conditional_edges(START, path, path_map)``."""
        return self.add_conditional_edges(START, path, path_map)

    def set_finish_point(self, key: str) -> StateGraph:
        """Same as ``add_edge(key, END)``."""
        return self.add_edge(key, END)

    # --- compile -------------------------------------------------------------------------

    def validate(self, interrupt: Sequence[str]) -> None:
        """Raise one ``GraphValidationError`` listing every problem of the definition."""
        from pausepoint.graph.validate import collect_problems

        collect_problems(self, interrupt)

    def compile(
        self,
        checkpointer: Checkpointer = None,
        *,
        cache: object = None,
        store: object = None,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        debug: bool = False,
        name: str | None = None,
        lease_ttl: float | None = DEFAULT_LEASE_TTL,
        lease_wait: float = DEFAULT_LEASE_WAIT,
        version: str | None = None,
        migrations: Sequence[Migration] = (),
    ) -> CompiledStateGraph:
        """Validate the graph and build its runnable form.

        Args:
            checkpointer: A saver (``InMemorySaver``, ``SqliteSaver``, ...) to persist
                runs; ``None`` inherits the parent's when used as a subgraph.
            interrupt_before: Node names (or ``"*"``) to pause before.
            interrupt_after: Node names (or ``"*"``) to pause after.
            debug: Print each run's ``updates`` and ``values`` chunks to stdout, as
                ``invoke(..., debug=True)`` does (LangGraph's format).
            name: The graph's name (default ``"LangGraph"``).
            cache: Not supported: anything but ``None`` raises
                ``NotImplementedError`` (pausepoint has no node cache yet).
            store: Not supported: anything but ``None`` raises ``NotImplementedError``
                (pausepoint has no long-term memory store yet).
            lease_ttl: Seconds a run's lease on its thread lasts unless renewed (each
                save renews it): at most one run advances a thread at a time, and
                a worker that died holds it this long. ``None`` turns single-writer
                threads off. pausepoint's own; see docs/concepts.md.
            lease_wait: Seconds a resume that only answers questions still waiting
                (a second reviewer of a parallel step) waits for a busy thread before
                it raises ``ThreadBusyError``; any other run raises at once.
            version: A label for this version of the graph (``"2026-12"``), stored
                with its fingerprint in every checkpoint. pausepoint's own; see
                docs/deploys.md.
            migrations: What a thread an older version of the graph wrote follows
                when it is loaded (`pausepoint.migrations`: ``rename_node("ask",
                "approve")``, ...), applied in order. pausepoint's own; see
                docs/deploys.md.

        Returns:
            A [`CompiledStateGraph`][pausepoint.graph.CompiledStateGraph].

        Raises:
            GraphValidationError: Every problem of the graph's definition, at once.
            TypeError: ``checkpointer`` is not a saver (nor ``None``/``True``/``False``).
        """
        from pausepoint.graph.build import build_spec
        from pausepoint.graph.compiled import CompiledStateGraph
        from pausepoint.graph.validate import check_cache, check_checkpointer, check_store

        check_checkpointer(checkpointer)
        check_store(store)
        check_cache("compile(cache=...)", cache)
        before = _node_list(interrupt_before)
        after = _node_list(interrupt_after)
        self.validate([n for n in (before, after) if isinstance(n, tuple) for n in n])
        spec = build_spec(self, name or "LangGraph")
        _register_types(checkpointer, self)
        self.compiled = True
        return CompiledStateGraph(
            spec,
            builder=self,
            checkpointer=checkpointer,
            interrupt_before=before,
            interrupt_after=after,
            debug=debug,
            lease_ttl=lease_ttl,
            lease_wait=lease_wait,
            context_schema=self.context_schema,
            version=version,
            migrations=migrations,
        )

    def schema_info(self) -> tuple[SchemaInfo, SchemaInfo, SchemaInfo]:
        """``(state, input, output)`` schema analyses."""
        return (
            SchemaInfo.of(self.state_schema),
            SchemaInfo.of(self.input_schema),
            SchemaInfo.of(self.output_schema),
        )


def _register_types(checkpointer: object, graph: StateGraph) -> None:
    """Allow the saver's serializer to store the types this graph declares (DESIGN §4.7)."""
    serde = getattr(checkpointer, "serde", None)
    register = getattr(serde, "register_schema", None)
    if register is None:
        return
    for schema in _declared_schemas(graph):
        register(schema)


def _declared_schemas(graph: StateGraph) -> list[object]:
    """The schemas of a graph and of its subgraphs (which store through its saver)."""
    found = [graph.state_schema, graph.input_schema, graph.output_schema]
    for node in graph.nodes.values():
        if node.input_schema is not None:
            found.append(node.input_schema)
        sub = getattr(node.action, "builder", None)
        if isinstance(sub, StateGraph):
            found.extend(_declared_schemas(sub))
    return [s for s in found if s is not dict]


def _destinations(
    given: Mapping[str, str | None] | Sequence[str] | None,
) -> tuple[tuple[str, str | None], ...] | None:
    """``destinations=`` as ``(node, label)`` pairs: names or a ``{name: label}`` dict."""
    if given is None:
        return None
    if isinstance(given, Mapping):
        return tuple((str(k), None if v is None else str(v)) for k, v in given.items())
    return tuple((str(name), None) for name in given)


def _node_list(value: All | Sequence[str] | None) -> tuple[str, ...] | str:
    if value is None:
        return ()
    if value == "*":
        return "*"
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def _name_of(fn: object) -> str:
    name = getattr(fn, "name", None) if not inspect.isfunction(fn) else None
    return str(name or getattr(fn, "__name__", None) or type(fn).__name__)
