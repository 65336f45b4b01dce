"""Graph building: ``StateGraph`` and its compiled form; chat messages in state."""

from typing import TYPE_CHECKING, Any

from pausepoint.constants import END, START
from pausepoint.graph.state import StateGraph

if TYPE_CHECKING:
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.graph.message import MessageGraph, MessagesState, add_messages

__all__ = [
    "END",
    "START",
    "CompiledStateGraph",
    "MessageGraph",
    "MessagesState",
    "StateGraph",
    "add_messages",
]

_MESSAGES = frozenset({"MessageGraph", "MessagesState", "add_messages"})


def __getattr__(name: str) -> Any:
    # The engine (loop, drivers) loads on first compile(), not on import: a program
    # that only declares graphs, or imports the everyday names, stays quick to start.
    # The message names (re-exported as langgraph.graph does) load when asked for.
    if name == "CompiledStateGraph":
        from pausepoint.graph.compiled import CompiledStateGraph

        return CompiledStateGraph
    if name in _MESSAGES:
        from pausepoint.graph import message

        return getattr(message, name)
    raise AttributeError(f"module 'pausepoint.graph' has no attribute {name!r}")
