"""The span attributes pausepoint sets (their names are a format: dashboards use them)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "ANSWERS",
    "CHECKPOINT_ID",
    "CHECKPOINT_NS",
    "CONVERSATION_ID",
    "GRAPH",
    "INTERRUPTED",
    "NODE",
    "PAUSED",
    "QUESTIONS",
    "STEP",
    "TASK_ID",
    "THREAD_ID",
]

THREAD_ID: Final = "pausepoint.thread_id"
"""The run's thread (every span of a run with a checkpointer)."""
CONVERSATION_ID: Final = "gen_ai.conversation.id"
"""The thread id again, under OpenTelemetry's GenAI semantic-convention name."""
GRAPH: Final = "pausepoint.graph"
"""The graph's name (run spans)."""
CHECKPOINT_NS: Final = "pausepoint.checkpoint_ns"
"""A subgraph run's namespace (run spans of nested runs)."""
CHECKPOINT_ID: Final = "pausepoint.checkpoint_id"
"""Run span: the checkpoint the run ended at; step and node spans: the one the step
started from."""
STEP: Final = "pausepoint.step"
"""The superstep number (step and node spans)."""
NODE: Final = "pausepoint.node"
"""The node's (or ``@task`` function's) name."""
TASK_ID: Final = "pausepoint.task_id"
"""The task's id (node and ``@task`` spans): the ``task_id`` of ``get_state().tasks``."""
PAUSED: Final = "pausepoint.paused"
"""Run span: True when the run ended waiting for answers (status OK, never ERROR)."""
QUESTIONS: Final = "pausepoint.questions"
"""Run span of a paused run: how many questions wait (0: a static breakpoint)."""
INTERRUPTED: Final = "pausepoint.interrupted"
"""Node and ``@task`` spans: True when the task paused (it asked, or its subgraph did)."""
ANSWERS: Final = "pausepoint.answers"
"""Run span: how many questions this run answers (each asking span is linked)."""
