"""A graph compiled again with another saver, keeping everything else it was compiled with.

What the CLI's commands and ``pausepoint serve`` do with the graph a user names: it may
have been compiled with a saver of its own (or none), and must run on the one the
command opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pausepoint.graph.compiled import CompiledStateGraph
from pausepoint.graph.entry import entrypoint_with
from pausepoint.graph.state import StateGraph

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import BaseCheckpointSaver

__all__ = ["compiled_with"]


def compiled_with(obj: object, saver: BaseCheckpointSaver) -> CompiledStateGraph:
    """``obj`` (a ``StateGraph`` or a compiled graph) compiled with ``saver``.

    A compiled graph is compiled again from its builder with the same static
    breakpoints, name, version label, migrations and lease settings; an
    ``@entrypoint`` (no builder) is made again with ``saver``.

    Raises:
        TypeError: ``obj`` is neither.
    """
    if isinstance(obj, CompiledStateGraph):
        if obj.builder is None:  # an @entrypoint
            return entrypoint_with(obj, saver)
        return obj.builder.compile(
            checkpointer=saver,
            interrupt_before=obj.interrupt_before_nodes or None,
            interrupt_after=obj.interrupt_after_nodes or None,
            name=obj.name,
            lease_ttl=obj.lease_ttl,
            lease_wait=obj.lease_wait,
            version=obj.spec.shape.version if obj.spec.shape is not None else None,
            migrations=obj.spec.migrations,
        )
    if isinstance(obj, StateGraph):
        return obj.compile(checkpointer=saver)
    raise TypeError(f"a {type(obj).__name__}, not a StateGraph or a compiled graph")
