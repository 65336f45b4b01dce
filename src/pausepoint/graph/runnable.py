"""What LangGraph's compiled graphs inherit from LangChain's ``Runnable``, re-made small.

``with_config`` (a copy of the graph with default config), ``batch``/``abatch``
(many inputs at once), ``get_subgraphs`` and ``get_graph`` (a drawable picture of
the graph, `pausepoint.graph.drawing`). And the check every run method makes
of the keyword arguments it does not know: LangGraph accepts and ignores them, so
``stream(strem_mode="values")`` runs with the wrong mode; pausepoint refuses them.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import dataclasses
import difflib
import inspect
import warnings
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Self, TypedDict, TypeVar

from pausepoint.config import RunnableConfig, merge_configs, normalized
from pausepoint.types import All, Durability

if TYPE_CHECKING:
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.graph.drawing import Graph
    from pausepoint.loop.spec import GraphSpec

__all__ = [
    "Nodes",
    "RunArgs",
    "RunPassed",
    "RunnableMethods",
    "check_run_kwargs",
    "key_tuple",
    "node_names",
    "streamed_keys",
]

Nodes = All | Sequence[str] | None
"""``interrupt_before=``/``interrupt_after=`` as a caller gives them: ``"*"`` or names."""

A = TypeVar("A")
R = TypeVar("R")

_TOLERATED: frozenset[str] = frozenset()
"""Keywords LangGraph's run methods take that pausepoint accepts without a parameter."""

_CHECKPOINT_DURING = (
    "`checkpoint_during` is deprecated and will be removed. Please use `durability` instead."
)


def check_run_kwargs(
    method: Callable[..., object], kwargs: Mapping[str, object], durability: Durability | None
) -> Durability | None:
    """Refuse keyword arguments ``method`` does not take; return the durability to use.

    LangGraph's deprecated ``checkpoint_during=`` is honoured (with its warning):
    ``True`` is durability ``"async"``, ``False`` is ``"exit"``.

    Raises:
        TypeError: An unknown keyword, naming the closest valid one.
        ValueError: ``checkpoint_during`` together with ``durability``.
    """
    for name in kwargs:
        if name not in _TOLERATED and name != "checkpoint_during":
            raise _unexpected(method, name)
    during = kwargs.get("checkpoint_during")
    if during is None:
        return durability
    warnings.warn(_CHECKPOINT_DURING, DeprecationWarning, stacklevel=4)  # caller of invoke/stream
    if durability is not None:
        raise ValueError(
            "Cannot use both `checkpoint_during` and `durability` parameters. "
            "Please use `durability` instead."
        )
    return "async" if during else "exit"


def node_names(given: Nodes, default: tuple[str, ...] | str) -> tuple[str, ...] | str:
    """``interrupt_before``/``after`` as given to a run: the graph's ``default`` if None."""
    if given is None:
        return default
    if given == "*":
        return "*"
    return (given,) if isinstance(given, str) else tuple(given)


def key_tuple(output_keys: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``output_keys`` as a tuple (None: the graph's own)."""
    if output_keys is None:
        return None
    return (output_keys,) if isinstance(output_keys, str) else tuple(output_keys)


def streamed_keys(spec: GraphSpec, output_keys: str | Sequence[str] | None) -> str | Sequence[str]:
    """The keys a ``stream`` reports: those asked for, else every state key.

    Not only the output schema's: LangGraph's ``stream_channels``.
    """
    return spec.stream_keys if output_keys is None else output_keys


def _unexpected(method: Callable[..., object], name: str) -> TypeError:
    params = inspect.signature(method).parameters
    valid = [
        p.name
        for p in params.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
        or (p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and p.name != "self")
    ]
    close = difflib.get_close_matches(name, [*valid, *_TOLERATED], n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else f"; it takes {', '.join(valid)}"
    return TypeError(f"{method.__name__}() got an unexpected keyword argument {name!r}{hint}")


@dataclasses.dataclass(frozen=True, slots=True)
class RunArgs:
    """The run options a caller passes to invoke/stream and their async forms."""

    modes: frozenset[str]
    subgraphs: bool
    durability: Durability | None
    interrupt_before: Nodes
    interrupt_after: Nodes
    output_keys: str | Sequence[str] | None
    context: object = None
    printing: frozenset[str] = frozenset()
    """The modes printed as they come (``print_mode=``, ``debug=True``)."""

    @classmethod
    def checked(
        cls,
        method: Callable[..., object],
        kwargs: dict[str, object],
        modes: frozenset[str],
        subgraphs: bool,
        durability: Durability | None,
        interrupt_before: Nodes,
        interrupt_after: Nodes,
        output_keys: str | Sequence[str] | None,
        context: object,
        printing: frozenset[str] = frozenset(),
    ) -> RunArgs:
        """The options of a call to ``method``, its stray keywords checked first.

        ``modes`` are those the run reports (printed ones included).
        """
        durability = check_run_kwargs(method, kwargs, durability)
        return cls(
            modes | printing, subgraphs, durability, interrupt_before, interrupt_after,
            output_keys, context, printing,
        )  # fmt: skip

    def passed(self, spec: GraphSpec, version: str) -> RunPassed:
        """The keyword arguments an ``invoke`` hands on to ``stream``/``astream``.

        Its chunks report the output schema's keys unless told others (``stream``'s
        default is every state key), and come in the ``version`` asked for: as
        LangGraph's ``invoke(stream_mode=...)`` does. ``subgraphs`` and what to print
        go on as given.
        """
        return RunPassed(
            subgraphs=self.subgraphs,
            print_mode=tuple(self.printing),
            durability=self.durability,
            interrupt_before=self.interrupt_before,
            interrupt_after=self.interrupt_after,
            output_keys=spec.output_keys if self.output_keys is None else self.output_keys,
            context=self.context,
            version=version,
        )


class RunPassed(TypedDict):
    """What an ``invoke`` with another ``stream_mode`` hands on to ``stream``."""

    subgraphs: bool
    print_mode: tuple[str, ...]
    durability: Durability | None
    interrupt_before: Nodes
    interrupt_after: Nodes
    output_keys: str | Sequence[str]
    context: object
    version: str


class RunnableMethods:
    """Mixed into `CompiledStateGraph`."""

    config: RunnableConfig | None = None
    """Default config merged under every call's (set by [`with_config`][])."""
    spec: GraphSpec

    def _merged(self, config: RunnableConfig | None) -> RunnableConfig:
        """The caller's config over the graph's default, top-level keys normalised."""
        return merge_configs(self.config, config) if self.config else normalized(config)

    def with_config(self, config: RunnableConfig | None = None, **kwargs: Any) -> Self:
        """A copy of this graph whose calls use ``config`` (and ``kwargs``) by default.

        ``g.with_config(recursion_limit=5)`` or
        ``g.with_config({"configurable": {"thread_id": "t1"}})``; the config given to
        a call is merged over it (``configurable`` and ``metadata`` key by key).
        """
        bound = copy.copy(self)
        bound.config = merge_configs(self.config, config, kwargs)  # type: ignore[arg-type]
        return bound

    def batch(
        self,
        inputs: Sequence[object],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: object,
    ) -> list[Any]:
        """``invoke`` each input (in threads, at most ``max_concurrency`` at once).

        ``config`` is one config for all inputs or one per input. With
        ``return_exceptions=True`` an input that fails gives its exception in place
        of its output; otherwise the first failure is raised.
        """
        configs = [self._merged(c) for c in _configs_for(inputs, config)]
        if not inputs:
            return []
        graph: Any = self
        # Each run sees the caller's context (a batch inside a node runs as its child).
        contexts = [contextvars.copy_context() for _ in inputs]

        def one(pair: tuple[object, RunnableConfig | None]) -> object:
            try:
                return graph.invoke(pair[0], pair[1], **kwargs)
            except Exception as exc:
                if return_exceptions:
                    return exc
                raise

        pairs = list(zip(inputs, configs, strict=True))
        workers = _workers(configs, len(inputs))
        if workers == 1:
            return [one(pair) for pair in pairs]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(_run_in, contexts, [one] * len(pairs), pairs))

    async def abatch(
        self,
        inputs: Sequence[object],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: object,
    ) -> list[Any]:
        """Async [`batch`][]: ``ainvoke`` each input, at most ``max_concurrency`` at once."""
        configs = [self._merged(c) for c in _configs_for(inputs, config)]
        limit = asyncio.Semaphore(_workers(configs, max(len(inputs), 1)))
        graph: Any = self

        async def one(item: object, cfg: RunnableConfig | None) -> object:
            async with limit:
                return await graph.ainvoke(item, cfg, **kwargs)

        runs = [one(item, cfg) for item, cfg in zip(inputs, configs, strict=True)]
        return list(await asyncio.gather(*runs, return_exceptions=return_exceptions))

    def get_subgraphs(
        self, *, namespace: str | None = None, recurse: bool = False
    ) -> Iterator[tuple[str, CompiledStateGraph]]:
        """``(name, graph)`` of each subgraph node (and each graph a node's function runs).

        Args:
            namespace: Only the subgraph at this path (``"outer"`` or ``"outer|inner"``).
            recurse: Also the subgraphs of subgraphs, named ``"outer|inner"``.
        """
        for name, node in self.spec.nodes.items():
            sub: CompiledStateGraph | None = node.subgraph or node.calls_graph
            if sub is None or (namespace is not None and not namespace.startswith(name)):
                continue
            if name == namespace:
                yield name, sub
                return
            if namespace is None:
                yield name, sub
            if recurse:
                rest = None if namespace is None else namespace[len(name) + 1 :]
                for inner, graph in sub.get_subgraphs(namespace=rest, recurse=True):
                    yield f"{name}|{inner}", graph

    async def aget_subgraphs(
        self, *, namespace: str | None = None, recurse: bool = False
    ) -> AsyncIterator[tuple[str, CompiledStateGraph]]:
        """Async [`get_subgraphs`][]."""
        for found in self.get_subgraphs(namespace=namespace, recurse=recurse):
            yield found

    def get_graph(self, config: RunnableConfig | None = None, *, xray: int | bool = False) -> Graph:
        """A drawable picture of the graph: nodes, edges, ``draw_mermaid()``, ``draw_ascii()``.

        Args:
            config: Accepted for compatibility; the picture does not depend on it.
            xray: Draw subgraphs' insides too: ``True`` at every depth, an int to that
                many levels.
        """
        from pausepoint.graph.topology import graph_of

        return graph_of(self, xray)  # type: ignore[arg-type]

    async def aget_graph(
        self, config: RunnableConfig | None = None, *, xray: int | bool = False
    ) -> Graph:
        """Async [`get_graph`][]."""
        return self.get_graph(config, xray=xray)


def _run_in(ctx: contextvars.Context, fn: Callable[[A], R], arg: A) -> R:
    return ctx.run(fn, arg)


def _configs_for(
    inputs: Sequence[object], config: RunnableConfig | Sequence[RunnableConfig] | None
) -> list[RunnableConfig | None]:
    """One config per input: the one given, or the list given (of the same length)."""
    if config is None or isinstance(config, dict):
        return [config] * len(inputs)  # type: ignore[list-item]
    configs = list(config)
    if len(configs) != len(inputs):
        raise ValueError(
            f"batch() got {len(inputs)} inputs and {len(configs)} configs: pass one "
            "config for all inputs or exactly one per input"
        )
    return configs  # type: ignore[return-value]


def _workers(configs: Sequence[RunnableConfig], count: int) -> int:
    """At most ``max_concurrency`` (of the first config that sets it), else ``count``."""
    for cfg in configs:
        limit = cfg.get("max_concurrency")
        if limit:
            return max(1, min(int(limit), count))
    return count
