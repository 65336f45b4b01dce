"""``CompiledStateGraph``: run a graph, inspect and change its saved state.

Every public method is a thin adapter: it parses its arguments once (into
``RunOptions``), hands the loop to the sync or async driver, and shapes the
driver's chunks for the caller. Sync and async methods share everything but
the driver call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pausepoint.checkpoint._caller_keys import with_caller_keys
from pausepoint.checkpoint._commit import committing
from pausepoint.checkpoint.base import SaverProtocol
from pausepoint.config import RunConfig, RunnableConfig
from pausepoint.constants import DEFAULT_LEASE_TTL, DEFAULT_LEASE_WAIT
from pausepoint.drivers import sync as sdriver
from pausepoint.drivers.owners import process_owner, run_token
from pausepoint.errors import CheckpointerRequiredError
from pausepoint.graph.addressing import address
from pausepoint.graph.fingerprint import stamped
from pausepoint.graph.output import (
    ChunkShape,
    Sink,
    async_sink,
    custom_target,
    deliver,
    invoke_output,
    message_tap,
    nested_message_tap,
    print_modes,
    queue_sink,
)
from pausepoint.graph.runnable import (
    Nodes,
    RunArgs,
    RunnableMethods,
    key_tuple,
    node_names,
    streamed_keys,
)
from pausepoint.graph.update import update_effects
from pausepoint.loop.inspection import history_snapshot, read_state
from pausepoint.loop.lease import RunLease
from pausepoint.loop.namespaces import addressed, nested_ns
from pausepoint.loop.run import RunOptions, RunResult, run
from pausepoint.loop.spec import GraphSpec, NodeProc
from pausepoint.running import TASK
from pausepoint.runtime import coerce_context
from pausepoint.task_context import NestInfo
from pausepoint.types import Checkpointer, Durability, StateSnapshot, StateUpdate

if TYPE_CHECKING:
    from pausepoint.graph.state import StateGraph
    from pausepoint.loop.effects import Effect
    from pausepoint.loop.migration_ops import Migration

__all__ = ["CompiledStateGraph"]

_Loop = Generator["Effect", object, RunResult]
"""One run's loop, as `pausepoint.loop.run.run` makes it."""


class CompiledStateGraph(RunnableMethods):
    """A runnable graph: ``invoke``/``stream`` (and async forms), state and history.

    Built by [`pausepoint.graph.StateGraph.compile`][]; not constructed directly.
    """

    def __init__(
        self,
        spec: GraphSpec,
        *,
        builder: StateGraph | None,  # None for an @entrypoint (cli/threads.py reads it)
        checkpointer: Checkpointer,
        interrupt_before: tuple[str, ...] | str,
        interrupt_after: tuple[str, ...] | str,
        debug: bool,
        lease_ttl: float | None = DEFAULT_LEASE_TTL,
        lease_wait: float = DEFAULT_LEASE_WAIT,
        context_schema: Callable[..., object] | None = None,
        version: str | None = None,
        migrations: Sequence[Migration] = (),
    ) -> None:
        # Fingerprinted once, here: every checkpoint carries it (docs/deploys.md).
        spec = stamped(spec, interrupt_before, interrupt_after, version)
        self.spec = dataclasses.replace(spec, migrations=tuple(migrations)) if migrations else spec
        self.builder = builder
        self.checkpointer = checkpointer
        self.interrupt_before_nodes = interrupt_before
        self.interrupt_after_nodes = interrupt_after
        self.debug = debug
        self.name = spec.name
        self.lease_ttl = lease_ttl
        self.lease_wait = lease_wait
        self.context_schema = context_schema

    @property
    def nodes(self) -> dict[str, NodeProc]:
        """The graph's nodes by name (``__start__`` included)."""
        return dict(self.spec.nodes)

    # --- setup (shared by every run method) -----------------------------------------------

    def _options(
        self,
        config: RunnableConfig | None,
        modes: frozenset[str],
        *,
        subgraphs: bool,
        durability: Durability | None,
        interrupt_before: Nodes,
        interrupt_after: Nodes,
        sink: Sink | None,
        output_keys: str | Sequence[str] | None = None,
        context: object = None,
    ) -> tuple[RunOptions, SaverProtocol | None]:
        parent = TASK.get()
        cfg = RunConfig.parse(self._merged(config))
        context = coerce_context(self.context_schema, context)
        if parent is not None:  # a subgraph (checkpointer=False too: no saver of its own)
            context = context or parent.runtime.context  # its parent's, unless given one
            ns = nested_ns(
                parent.graph_ns,
                parent.scratchpad.next_graph_index(),
                stateful=self.checkpointer is True,
            )
            opts, saver = self._nested_options(cfg, ns, parent.nest, modes, sink)
            opts.stream_subgraphs = subgraphs
            opts.context = context
            return opts, saver
        if self.checkpointer is True:
            raise RuntimeError(
                "checkpointer=True cannot be used for root graphs: it makes a subgraph "
                "keep its state across its parent's runs. Compile the graph you call "
                "with a saver (checkpointer=InMemorySaver(), SqliteSaver, ...)"
            )
        saver = committing(self.checkpointer)
        if saver is None and durability is not None:
            warnings.warn(_NO_DURABILITY, stacklevel=4)
        if cfg.checkpoint_ns:
            # A graph run on its own is a root graph, whatever namespace the config
            # names. One taken from inside a subgraph names, in its checkpoint_map,
            # the root's checkpoint and each subgraph's down to it (loop/namespaces.py);
            # without one, the root's newest: as in LangGraph.
            root = addressed(cfg.configurable).get("")
            cfg = dataclasses.replace(cfg, checkpoint_ns="", checkpoint_id=root)
        if saver is not None and cfg.thread_id is None:
            raise ValueError(
                "Checkpointer requires one or more of the following 'configurable' keys: "
                "thread_id, checkpoint_ns, checkpoint_id"
            )
        lease = self._lease(saver, cfg)
        saver = with_caller_keys(saver, cfg.configurable)
        opts = RunOptions(
            config=cfg,
            has_saver=saver is not None,
            durability=durability or "async",
            stream_modes=modes,
            stream_subgraphs=subgraphs,
            ns=(),
            nest=None,
            interrupt_before=node_names(interrupt_before, self.interrupt_before_nodes),
            interrupt_after=node_names(interrupt_after, self.interrupt_after_nodes),
            sink=sink,
            saver=saver,
            output_keys=key_tuple(output_keys),
            lease=lease,
            context=context,
            messages=message_tap(sink, (), modes),
            custom=custom_target(sink, modes),
        )
        return opts, saver

    def _lease(self, saver: SaverProtocol | None, cfg: RunConfig) -> RunLease | None:
        """The lease a root run takes on its thread (single-writer threads)."""
        if saver is None or self.lease_ttl is None or not hasattr(saver, "acquire_lease"):
            return None
        return RunLease(
            str(cfg.thread_id), process_owner(), run_token(), self.lease_ttl, self.lease_wait
        )

    def _nested_options(
        self, cfg: RunConfig, ns: str, nest: NestInfo, modes: frozenset[str], sink: Sink | None
    ) -> tuple[RunOptions, SaverProtocol | None]:
        """The options of a run inside a task (a subgraph).

        ``sink`` and ``modes`` are its own caller's; it also passes its chunks up as
        the task's `NestInfo` says (`pausepoint.graph.output.deliver`).
        """
        # Inside a parent, a graph's own saver is not used (as in LangGraph): its
        # checkpoints go with its parent's, where get_state(subgraphs=True) reads them.
        given = None if self.checkpointer is False else nest.saver
        inner = RunConfig.parse(
            {
                **cfg.raw,
                "configurable": {
                    **cfg.configurable,
                    "thread_id": nest.thread_id,
                    "checkpoint_ns": ns,
                },
            }
        )
        saver = with_caller_keys(committing(given), inner.configurable)
        ns_parts = tuple(ns.split("|"))
        up_modes: frozenset[str] = nest.up_modes if nest.up is not None else frozenset()
        # As LangGraph's: custom chunks go to the nearest run streaming them, up only
        # through runs with subgraphs=True; nowhere else.
        custom = custom_target(sink, modes) or (nest.custom if nest.up is not None else None)
        opts = RunOptions(
            config=inner,
            has_saver=saver is not None,
            durability=nest.durability,
            stream_modes=modes | up_modes,
            stream_subgraphs=False,
            ns=ns_parts,
            nest=nest,
            interrupt_before=self.interrupt_before_nodes,
            interrupt_after=self.interrupt_after_nodes,
            sink=sink,
            saver=saver,
            messages=nested_message_tap(nest, ns_parts),
            up=nest.up,
            up_modes=up_modes,
            own_modes=modes,
            custom=custom,
        )
        return opts, saver

    def _begin(
        self, input: object, config: RunnableConfig | None, args: RunArgs, sink: Sink | None
    ) -> tuple[_Loop, RunOptions, Any]:
        """The loop of one run, its options and its saver: shared by every run method."""
        opts, saver = self._options(
            config,
            args.modes,
            subgraphs=args.subgraphs,
            durability=args.durability,
            interrupt_before=args.interrupt_before,
            interrupt_after=args.interrupt_after,
            sink=sink,
            output_keys=args.output_keys,
            context=args.context,
        )
        return run(self.spec, input, opts), opts, saver

    # --- sync ------------------------------------------------------------------------------

    def stream(
        self,
        input: object,
        config: RunnableConfig | None = None,
        *,
        stream_mode: str | Sequence[str] | None = None,
        output_keys: str | Sequence[str] | None = None,
        interrupt_before: Nodes = None,
        interrupt_after: Nodes = None,
        durability: Durability | None = None,
        subgraphs: bool = False,
        debug: bool | None = None,
        print_mode: str | Sequence[str] = (),
        version: str = "v1",
        context: object = None,
        **kwargs: object,
    ) -> Iterator[Any]:
        """Run the graph, yielding what ``stream_mode`` asks for after each step.

        Yields single-mode chunks as they are, several modes as ``(mode, chunk)``,
        ``subgraphs=True`` as ``(namespace, ...)``, and ``version="v2"`` as dicts
        with ``type``, ``ns`` and ``data``. An interrupt ends the stream normally
        (with ``{"__interrupt__": (...)}`` in ``updates``).

        Raises:
            TypeError: A keyword argument it does not take (``strem_mode=``).
        """
        printing = print_modes(print_mode, debug, self.debug)
        shape = ChunkShape.of(stream_mode, subgraphs, version, "updates", output_keys, printing)
        args = RunArgs.checked(
            self.stream, kwargs, shape.modes, subgraphs, durability, interrupt_before,
            interrupt_after, streamed_keys(self.spec, output_keys), context, printing,
        )  # fmt: skip
        events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        loop, opts, saver = self._begin(input, config, args, queue_sink(events))
        # Closed early, the driver is closed now (not when collected): it saves what
        # the run owes and lets the thread's lease go before close() returns.
        with contextlib.closing(
            sdriver.drive(loop, saver, events, opts.config.max_concurrency)
        ) as run:
            for chunk in run:
                if (shaped := deliver(opts, shape, chunk)) is not None:
                    yield shaped

    def invoke(
        self,
        input: object,
        config: RunnableConfig | None = None,
        *,
        stream_mode: str = "values",
        output_keys: str | Sequence[str] | None = None,
        interrupt_before: Nodes = None,
        interrupt_after: Nodes = None,
        durability: Durability | None = None,
        subgraphs: bool = False,
        debug: bool | None = None,
        print_mode: str | Sequence[str] = (),
        version: str = "v1",
        context: object = None,
        **kwargs: object,
    ) -> Any:
        """Run the graph to its end (or to a pause) and return the output state.

        When the run pauses, the returned dict also holds ``"__interrupt__"``: the
        list of pending [`Interrupt`][pausepoint.types.Interrupt]s. Another
        ``stream_mode`` returns the list of ``stream``'s chunks (``subgraphs=True``:
        namespaced). ``debug=True`` (or ``print_mode``) prints chunks as ``stream`` does.

        Raises:
            TypeError: A keyword argument it does not take (``strem_mode=``).
        """
        printing = print_modes(print_mode, debug, self.debug)
        args = RunArgs.checked(
            self.invoke, kwargs, frozenset(), subgraphs, durability, interrupt_before,
            interrupt_after, output_keys, context, printing,
        )  # fmt: skip
        if stream_mode != "values":
            kw = args.passed(self.spec, version)
            return list(self.stream(input, config, stream_mode=stream_mode, **kw))
        events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        shape, args = _printer(args)
        sink = queue_sink(events) if shape is not None or TASK.get() is not None else None
        loop, opts, saver = self._begin(input, config, args, sink)
        driver = sdriver.drive(loop, saver, events, opts.config.max_concurrency)
        while True:
            try:
                deliver(opts, shape, next(driver))
            except StopIteration as stop:
                result: RunResult = stop.value
                return invoke_output(result, output_keys, version)

    def get_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """The thread's state at its newest checkpoint (or at the config's checkpoint_id).

        A config whose ``checkpoint_ns`` names a subgraph task (as found in a
        snapshot's ``tasks[i].state``) reads that subgraph's state. With
        ``subgraphs=True``, subgraph tasks carry their own snapshots.
        """
        saver = self._require_saver(config)
        at = address(self, self._merged(config))
        flow = read_state(at.graph.spec, at.config, subgraphs, at.others)
        return sdriver.run_effects(flow, saver)

    def get_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[StateSnapshot]:
        """The thread's checkpoints as snapshots, newest first."""
        saver = self._require_saver(config)
        at = address(self, self._merged(config), keep_runs=True)
        listed = _listed(at.config)
        for saved in saver.list(listed, filter=filter, before=before, limit=limit):
            yield history_snapshot(at.graph.spec, saved, at.others)

    def update_state(
        self,
        config: RunnableConfig,
        values: Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> RunnableConfig:
        """Write ``values`` as if node ``as_node`` returned them; return the new config.

        The new checkpoint is a child of the one ``config`` names (or the newest),
        so updating an old checkpoint forks the thread.
        """
        return self.bulk_update_state(config, [[StateUpdate(values, as_node, task_id)]])

    def bulk_update_state(
        self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
    ) -> RunnableConfig:
        """Apply supersteps of updates in order: one new checkpoint per superstep.

        Every value is checked against its channel (its reducer run on a copy)
        before anything is saved: a value a reducer rejects raises
        [`InvalidUpdateError`][pausepoint.errors.InvalidUpdateError] and writes nothing.
        """
        saver = self._require_saver(config)
        at = address(self, self._merged(config))
        flow = update_effects(at.graph.spec, at.config, supersteps, at.others)
        return sdriver.run_effects(flow, saver)

    # --- async -----------------------------------------------------------------------------

    async def astream(
        self,
        input: object,
        config: RunnableConfig | None = None,
        *,
        stream_mode: str | Sequence[str] | None = None,
        output_keys: str | Sequence[str] | None = None,
        interrupt_before: Nodes = None,
        interrupt_after: Nodes = None,
        durability: Durability | None = None,
        subgraphs: bool = False,
        debug: bool | None = None,
        print_mode: str | Sequence[str] = (),
        version: str = "v1",
        context: object = None,
        **kwargs: object,
    ) -> AsyncIterator[Any]:
        """Async [`stream`][]."""
        printing = print_modes(print_mode, debug, self.debug)
        shape = ChunkShape.of(stream_mode, subgraphs, version, "updates", output_keys, printing)
        args = RunArgs.checked(
            self.astream, kwargs, shape.modes, subgraphs, durability, interrupt_before,
            interrupt_after, streamed_keys(self.spec, output_keys), context, printing,
        )  # fmt: skip
        async with contextlib.aclosing(self._astream(input, config, shape, args, [])) as run:
            async for chunk in run:
                yield chunk

    def astream_outcome(
        self,
        input: object,
        config: RunnableConfig | None,
        result: list[RunResult],
        *,
        stream_mode: Sequence[str],
        subgraphs: bool = False,
        interrupt_before: Nodes = None,
        interrupt_after: Nodes = None,
        durability: Durability | None = None,
        context: object = None,
    ) -> AsyncIterator[Any]:
        """[`astream`][], and its run's end (`RunResult`) put in ``result``: no read back."""
        shape = ChunkShape.of(stream_mode, subgraphs, "v1", "updates")
        args = RunArgs.checked(
            self.astream_outcome, {}, shape.modes, subgraphs, durability, interrupt_before,
            interrupt_after, self.spec.stream_keys, context,
        )  # fmt: skip
        return self._astream(input, config, shape, args, result)

    async def _astream(
        self,
        input: object,
        config: RunnableConfig | None,
        shape: ChunkShape,
        args: RunArgs,
        result: list[RunResult],
    ) -> AsyncGenerator[Any]:
        sink = _adriver().AsyncSink()
        loop, opts, saver = self._begin(input, config, args, async_sink(sink))
        limit = opts.config.max_concurrency
        # aclose() (or collection) closes the driver at once, as stream() does.
        async with contextlib.aclosing(_adriver().drive(loop, saver, sink, result, limit)) as run:
            async for chunk in run:
                if (shaped := deliver(opts, shape, chunk)) is not None:
                    yield shaped

    async def ainvoke(
        self,
        input: object,
        config: RunnableConfig | None = None,
        *,
        stream_mode: str = "values",
        output_keys: str | Sequence[str] | None = None,
        interrupt_before: Nodes = None,
        interrupt_after: Nodes = None,
        durability: Durability | None = None,
        subgraphs: bool = False,
        debug: bool | None = None,
        print_mode: str | Sequence[str] = (),
        version: str = "v1",
        context: object = None,
        **kwargs: object,
    ) -> Any:
        """Async [`invoke`][]."""
        printing = print_modes(print_mode, debug, self.debug)
        args = RunArgs.checked(
            self.ainvoke, kwargs, frozenset(), subgraphs, durability, interrupt_before,
            interrupt_after, output_keys, context, printing,
        )  # fmt: skip
        if stream_mode != "values":
            kw = args.passed(self.spec, version)
            chunks = self.astream(input, config, stream_mode=stream_mode, **kw)
            return [c async for c in chunks]
        sink = _adriver().AsyncSink()
        shape, args = _printer(args)
        nested = shape is not None or TASK.get() is not None
        loop, opts, saver = self._begin(input, config, args, async_sink(sink) if nested else None)
        result: list[RunResult] = []
        limit = opts.config.max_concurrency
        async with contextlib.aclosing(_adriver().drive(loop, saver, sink, result, limit)) as run:
            async for chunk in run:
                deliver(opts, shape, chunk)
        return invoke_output(result[0], output_keys, version)

    async def aget_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """Async [`get_state`][] (with the saver's async methods)."""
        saver = self._require_saver(config)
        at = address(self, self._merged(config))
        flow = read_state(at.graph.spec, at.config, subgraphs, at.others)
        return await _adriver().run_effects(flow, saver)

    async def aget_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[StateSnapshot]:
        """Async [`get_state_history`][] (with the saver's ``alist``)."""
        saver = self._require_saver(config)
        at = address(self, self._merged(config), keep_runs=True)
        listed = _listed(at.config)
        async for saved in saver.alist(listed, filter=filter, before=before, limit=limit):
            yield history_snapshot(at.graph.spec, saved, at.others)

    async def aupdate_state(
        self,
        config: RunnableConfig,
        values: Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> RunnableConfig:
        """Async [`update_state`][]."""
        return await self.abulk_update_state(config, [[StateUpdate(values, as_node, task_id)]])

    async def abulk_update_state(
        self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
    ) -> RunnableConfig:
        """Async [`bulk_update_state`][] (with the saver's async methods)."""
        saver = self._require_saver(config)
        at = address(self, self._merged(config))
        flow = update_effects(at.graph.spec, at.config, supersteps, at.others)
        return await _adriver().run_effects(flow, saver)

    # --- helpers ---------------------------------------------------------------------------

    def _require_saver(self, config: RunnableConfig) -> SaverProtocol:
        """The saver state inspection uses, handed the caller's ``configurable`` keys."""
        saver = committing(self.checkpointer)
        if saver is None:
            raise CheckpointerRequiredError(
                "this graph has no checkpointer: compile it with "
                "checkpointer=InMemorySaver() (or SqliteSaver) to keep and read state"
            )
        return with_caller_keys(saver, self._merged(config).get("configurable") or {})


_NO_DURABILITY = "`durability` has no effect when no checkpointer is present."


def _printer(args: RunArgs) -> tuple[ChunkShape | None, RunArgs]:
    """What an ``invoke`` in ``values`` mode streams: only the chunks it prints.

    Its result is the run's, whatever ``subgraphs`` says (LangGraph's lists a
    subgraph's interrupt twice then: docs/differences.md); ``subgraphs=True``
    only prints the subgraphs' chunks too.
    """
    if not args.printing:  # the common call: no copy (dataclasses.replace is slow)
        return None, dataclasses.replace(args, subgraphs=False) if args.subgraphs else args
    key = args.output_keys if isinstance(args.output_keys, str) else None
    return ChunkShape(frozenset(), True, args.subgraphs, False, key, args.printing), args


def _listed(config: RunnableConfig) -> RunnableConfig:
    """The config a history lists checkpoints with: its namespace, the root's by default."""
    conf = dict(config.get("configurable") or {})
    conf.setdefault("checkpoint_ns", "")
    return {"configurable": conf}


def _adriver() -> Any:
    # The async driver (and asyncio with it) is imported on first async use:
    # `import pausepoint` stays light for sync programs. Kept after that, so an
    # ainvoke runs no import statement (one of a loaded module still takes the import
    # lock and looks it up: not free on every call).
    global _async_driver
    if _async_driver is None:
        from pausepoint.drivers import async_

        _async_driver = async_
    return _async_driver


_async_driver: Any = None
