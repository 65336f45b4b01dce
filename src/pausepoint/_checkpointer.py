"""``Checkpointer``: what ``compile(checkpointer=...)`` takes (``pausepoint.types`` has it).

A module of its own because the saver classes' module imports ``pausepoint.types``:
here, at run time, they are named by reference (resolved when read, as
``typing.get_type_hints`` does), so nothing is imported in a cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ForwardRef, TypeAlias, Union

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import BaseCheckpointSaver, SaverProtocol

__all__ = ["Checkpointer"]

if TYPE_CHECKING:
    Checkpointer: TypeAlias = BaseCheckpointSaver | SaverProtocol | bool | None
else:
    _SAVERS = "pausepoint.checkpoint.base"
    Checkpointer = Union[  # noqa: UP007 (a ForwardRef has no "|")
        ForwardRef("BaseCheckpointSaver", module=_SAVERS),
        ForwardRef("SaverProtocol", module=_SAVERS),
        bool,
        None,
    ]
"""The run-time form of ``pausepoint.types.Checkpointer`` (documented there)."""
