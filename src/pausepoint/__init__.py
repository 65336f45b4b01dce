"""pausepoint: durable human-in-the-loop graphs.

A node calls [`interrupt`][]; the run pauses and is saved in a checkpoint; later,
maybe in another process, ``Command(resume=answer)`` continues it. The API mirrors
LangGraph 1.1.6 for everything around interrupt/resume.
"""

from pausepoint.checkpoint.memory import InMemorySaver
from pausepoint.constants import END, START
from pausepoint.graph.state import StateGraph
from pausepoint.types import Command, Interrupt, RetryPolicy, Send, interrupt

__version__ = "0.1.0.dev0"

__all__ = [
    "END",
    "START",
    "Command",
    "InMemorySaver",
    "Interrupt",
    "RetryPolicy",
    "Send",
    "StateGraph",
    "interrupt",
]


def __getattr__(name: str) -> object:
    # SqliteSaver is imported on first use so `import pausepoint` stays light.
    if name == "SqliteSaver":
        from pausepoint.checkpoint.sqlite import SqliteSaver

        return SqliteSaver
    raise AttributeError(f"module 'pausepoint' has no attribute {name!r}")
