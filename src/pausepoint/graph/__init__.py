"""Graph building: ``StateGraph`` and its compiled form."""

from typing import TYPE_CHECKING, Any

from pausepoint.constants import END, START
from pausepoint.graph.message import MessageGraph, MessagesState, add_messages
from pausepoint.graph.state import StateGraph

if TYPE_CHECKING:
    from pausepoint.graph.compiled import CompiledStateGraph

__all__ = [
    "END",
    "START",
    "CompiledStateGraph",
    "MessageGraph",
    "MessagesState",
    "StateGraph",
    "add_messages",
]


def __getattr__(name: str) -> Any:
    # The engine (loop, drivers) loads on first compile(), not on import: a program
    # that only declares graphs, or imports the everyday names, stays quick to start.
    if name == "CompiledStateGraph":
        from pausepoint.graph.compiled import CompiledStateGraph

        return CompiledStateGraph
    raise AttributeError(f"module 'pausepoint.graph' has no attribute {name!r}")
