"""Graph building: ``StateGraph`` and its compiled form."""

from pausepoint.constants import END, START
from pausepoint.graph.compiled import CompiledStateGraph
from pausepoint.graph.state import StateGraph

__all__ = ["END", "START", "CompiledStateGraph", "StateGraph"]
