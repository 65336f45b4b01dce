"""Reserved names: graph endpoints, channel names and special write names.

These names are persisted in checkpoints and pending writes, so they are a
storage format (see ``docs/format.md``): changing one is a breaking change.
They match LangGraph 1.1.6's names so that stored state reads the same way.
"""

from __future__ import annotations

from typing import Final

__all__ = ["END", "START", "TAG_HIDDEN"]

START: Final = "__start__"
"""The virtual first node: the graph input is written to it."""
END: Final = "__end__"
"""The virtual last node: an edge to it ends a branch."""
TAG_HIDDEN: Final = "langsmith:hidden"
"""Tag of nodes hidden from ``updates`` output and ``interrupt_*="*"``."""

# --- special channels and writes -------------------------------------------------
INPUT: Final = "__input__"
INTERRUPT: Final = "__interrupt__"
RESUME: Final = "__resume__"
ASKED: Final = "__asked__"
"""Write of a paused task: which ``interrupt()`` call (0, 1, ...) asked its question."""
ASKED_SPAN: Final = "__asked_span__"
"""Write of a paused task, made only while traced (`pausepoint.otel`): the W3C
``traceparent`` of the span that asked, for the answering run's link to it."""
ERROR: Final = "__error__"
NO_WRITES: Final = "__no_writes__"
SCHEDULED: Final = "__scheduled__"
TASKS: Final = "__pregel_tasks"
RETURN: Final = "__return__"
PREVIOUS: Final = "__previous__"
OVERWRITE: Final = "__overwrite__"
"""The key of ``Overwrite``'s JSON form, ``{"__overwrite__": value}``."""
ROOT: Final = "__root__"
"""The one channel of a graph whose whole state is one value (``StateGraph(list)``)."""

RESERVED_NAMES: Final = frozenset(
    {
        START,
        END,
        INPUT,
        INTERRUPT,
        RESUME,
        ASKED,
        ASKED_SPAN,
        ERROR,
        NO_WRITES,
        SCHEDULED,
        TASKS,
        RETURN,
        PREVIOUS,
    }
)

# Fixed indexes of the special writes: one of each per task, upserted in place.
WRITES_IDX_MAP: Final[dict[str, int]] = {
    ERROR: -1,
    SCHEDULED: -2,
    INTERRUPT: -3,
    RESUME: -4,
    ASKED: -5,
    ASKED_SPAN: -6,
}

DEFAULT_LEASE_TTL: Final = 120.0
"""Seconds a run's lease on its thread lasts unless renewed (``compile(lease_ttl=...)``)."""

DEFAULT_LEASE_WAIT: Final = 10.0
"""Seconds a resume of waiting questions waits for a busy thread (``compile(lease_wait=...)``)."""

NULL_TASK_ID: Final = "00000000-0000-0000-0000-000000000000"
"""Task id of writes that belong to no task (input updates, ``Command(resume=...)``)."""

# --- task path kinds ----------------------------------------------------------------
PULL: Final = "__pregel_pull"
PUSH: Final = "__pregel_push"

# --- checkpoint namespaces -------------------------------------------------------------
NS_SEP: Final = "|"
NS_END: Final = ":"

# Edge-trigger channel name prefixes (internal channels, kept out of state values).
BRANCH_TO: Final = "branch:to:"
JOIN: Final = "join:"
