"""What a stored value is, in the words of the graph's author, for error messages.

Savers store channels and writes, and channels have internal names (``__start__``
holds the graph's input, ``__pregel_tasks`` the ``Send`` packets). A value that
cannot be stored is named here by what the user wrote — the input's key, the key
a node returned, the ``Send`` a node made — never by the channel it travels in.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

from pausepoint.constants import PULL, ROOT, START, TASKS
from pausepoint.errors import SerializationError
from pausepoint.types import Send

__all__ = ["channel_label", "explain_checkpoint", "write_label"]


def _node_of(task_path: str) -> str | None:
    """The node of a pull task's path (``"('__pregel_pull', 'draft')"``), else None."""
    try:
        path: object = ast.literal_eval(task_path) if task_path.startswith("(") else None
    except (ValueError, SyntaxError):
        return None
    if not isinstance(path, tuple):
        return None
    parts = cast(tuple[object, ...], path)
    return str(parts[1]) if len(parts) == 2 and parts[0] == PULL else None


def channel_label(channel: str) -> str:
    """A checkpoint's channel value: the input, a state key, the pending ``Send``s."""
    if channel == START:
        return "the graph's input"
    if channel == TASKS:
        return "a Send waiting to run"
    if channel == ROOT:
        return "the state"
    return f"state key {channel!r}"


def write_label(channel: str, value: Any, task_id: str = "", task_path: str = "") -> str:
    """A task's write: the key a node returned, or the ``Send`` it made."""
    node = _node_of(task_path)
    by = f"node {node!r}" if node is not None else f"task {task_id!r}" if task_id else ""
    if channel == TASKS:
        target = f" to node {value.node!r}" if isinstance(value, Send) else ""
        return f"the Send{target}" + (f" made by {by}" if by else "")
    if node == START or (not by and channel == START):
        return f"key {channel!r} of the graph's input"
    subject = "the state" if channel == ROOT else f"key {channel!r}"
    return f"{subject} as returned by {by}" if by else f"{subject} written to the state"


def explain_checkpoint(
    values: Mapping[str, object], dump: Callable[[object, str], object], error: SerializationError
) -> SerializationError:
    """The error naming the channel value that failed, by `channel_label`.

    A checkpoint is encoded as one value, so its error names an internal path
    (``checkpoint['channel_values']['__start__']``); encoding each channel value
    again (only on this failing path) finds the one to name.
    """
    for label, value in _parts(values):
        try:
            dump(value, label)
        except SerializationError as exc:
            return exc
    return error


def _parts(values: Mapping[str, object]) -> Iterator[tuple[str, object]]:
    """Each channel value with its label; the input's keys one by one."""
    for channel, value in values.items():
        if channel == START and isinstance(value, dict):
            for key, item in cast(dict[object, object], value).items():
                yield f"key {key!r} of the graph's input", item
        else:
            yield channel_label(channel), value
