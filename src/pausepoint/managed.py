"""Managed values: state keys whose value the run computes for each step.

Declare one as a key of the state schema; it is never stored in a checkpoint and
never written by a node (a write to it is ignored). Its value is given to every node
and conditional edge of a step, as in LangGraph:

    class State(TypedDict):
        messages: list[str]
        remaining_steps: RemainingSteps  # steps left before the recursion limit
        is_last_step: IsLastStep  # True in the last step the limit allows

A run may take ``recursion_limit`` steps counted from where it starts (a resume
starts a new count), so an agent loop can stop itself cleanly instead of raising
``GraphRecursionError``.
"""

from __future__ import annotations

from typing import Annotated

__all__ = [
    "IsLastStep",
    "IsLastStepManager",
    "ManagedValue",
    "RemainingSteps",
    "RemainingStepsManager",
]


class ManagedValue:
    """A kind of managed value: ``value(steps_left)`` is what a node of the step sees.

    ``steps_left`` counts the step being run: it is 1 in the last step the run's
    ``recursion_limit`` allows.
    """

    @staticmethod
    def value(steps_left: int) -> object:
        """The value in a step with ``steps_left`` steps left, this one included."""
        raise NotImplementedError


class RemainingStepsManager(ManagedValue):
    """The steps the run may still take before it hits its recursion limit."""

    @staticmethod
    def value(steps_left: int) -> int:  # noqa: D102
        return steps_left


class IsLastStepManager(ManagedValue):
    """Whether this step is the last one the run's recursion limit allows."""

    @staticmethod
    def value(steps_left: int) -> bool:  # noqa: D102
        return steps_left == 1


RemainingSteps = Annotated[int, RemainingStepsManager]
"""A state key holding the number of steps left before the recursion limit."""

IsLastStep = Annotated[bool, IsLastStepManager]
"""A state key that is ``True`` in the last step before the recursion limit."""
