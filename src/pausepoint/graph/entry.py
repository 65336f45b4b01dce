"""The graph of an ``@entrypoint``: one node reading the input, writing the output."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Sequence
from typing import Any

from pausepoint.channels import EphemeralValue, LastValue, Topic
from pausepoint.constants import END, PREVIOUS, START, TASKS
from pausepoint.graph.build import takes
from pausepoint.graph.compiled import CompiledStateGraph
from pausepoint.graph.schema import SchemaInfo
from pausepoint.loop.migration_ops import Migration
from pausepoint.loop.spec import GraphSpec, NodeProc
from pausepoint.types import Checkpointer, RetryPolicy

__all__ = ["build_entrypoint", "entrypoint_with"]


def build_entrypoint(
    func: Callable[..., Any],
    checkpointer: Checkpointer,
    retry: tuple[RetryPolicy, ...],
    context_schema: Any = None,
    final: type | None = None,
    migrations: Sequence[Migration] = (),
) -> CompiledStateGraph:
    """A compiled graph running ``func`` as its only node.

    ``final`` is ``entrypoint.final``: a return of that class saves ``.save`` and
    returns ``.value`` (`pausepoint.func` passes it, being above this package).
    """
    name = getattr(func, "__name__", "entrypoint")
    inject = frozenset(k for k in ("config", "writer", "previous", "runtime") if takes(func, k))
    node = NodeProc(
        name=name,
        triggers=(START,),
        reads=(),
        input_schema=None,
        fn=func,
        is_async=inspect.iscoroutinefunction(func),
        accepts_config=False,
        subgraph=None,
        retry=retry,
        hidden=False,
        edges=(),
        joins=(),
        branches=(),
        metadata={},
        input_channel=START,
        inject=inject,
        returns=(END, PREVIOUS),
        final=final,
    )
    plain = SchemaInfo.of(None)
    channels = {
        START: EphemeralValue(START),
        END: LastValue(END),
        PREVIOUS: LastValue(PREVIOUS),
        TASKS: Topic(TASKS),
    }
    spec = GraphSpec(
        name=name,
        channels=channels,
        nodes={name: node},
        state=plain,
        input=plain,
        output_keys=(END,),
        state_keys=(END, PREVIOUS),
        triggered_by={START: (name,)},
        transient=frozenset({START, TASKS}),
        output_channel=END,
        eager=True,
    )
    return _compiled(spec, func, checkpointer, context_schema, migrations)


def entrypoint_with(graph: CompiledStateGraph, checkpointer: Checkpointer) -> CompiledStateGraph:
    """An ``@entrypoint``'s graph again, saving with ``checkpointer``.

    It has no builder to compile again: ``pausepoint threads resume --graph`` gives it
    the CLI's saver this way.
    """
    (node,) = graph.spec.nodes.values()
    return _compiled(graph.spec, node.fn, checkpointer, graph.context_schema)


def _compiled(
    spec: GraphSpec,
    func: Callable[..., Any] | None,
    checkpointer: Checkpointer,
    context_schema: Callable[..., object] | None,
    migrations: Sequence[Migration] = (),
) -> CompiledStateGraph:
    """The entrypoint's one-node graph, saving with ``checkpointer``."""
    if func is not None:
        _allow_declared_types(func, checkpointer)
    return CompiledStateGraph(
        spec,
        builder=None,
        checkpointer=checkpointer,
        interrupt_before=(),
        interrupt_after=(),
        debug=False,
        context_schema=context_schema,
        migrations=migrations,
    )


def _allow_declared_types(func: Callable[..., Any], checkpointer: Checkpointer) -> None:
    """Let the saver store the types the entrypoint's signature names (DESIGN §4.7)."""
    register = getattr(getattr(checkpointer, "serde", None), "register_schema", None)
    if register is None:
        return
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # unresolvable annotations: nothing declared we can read
        return
    for hint in hints.values():
        register(hint)
