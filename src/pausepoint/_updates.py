"""The forms a state update takes, read as ``(key, value)`` pairs.

Below the graph package (it imports nothing of pausepoint's but constants), so
``Command.update_items`` in `pausepoint.types` and the loop's node results can
read an update without importing `pausepoint.graph` (the package order pinned by
tests/test_architecture.py).
"""

# Updates are user values inspected at run time; pyright cannot know their members.
# pyright: reportUnknownArgumentType=false, reportUnknownVariableType=false
# pyright: reportUnknownMemberType=false

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from pausepoint.constants import ROOT

__all__ = ["is_pydantic_class", "update_as_pairs"]


def is_pydantic_class(schema: Any) -> bool:
    """Whether ``schema`` is a pydantic model class (pydantic is never imported here)."""
    pydantic = sys.modules.get("pydantic")
    return (
        pydantic is not None and isinstance(schema, type) and issubclass(schema, pydantic.BaseModel)
    )


def update_as_pairs(update: Any) -> list[tuple[str, Any]]:
    """A node's (or input's) update as ``(key, value)`` pairs.

    Accepts a dict, a list of ``(key, value)`` tuples, a dataclass or a pydantic
    model instance (its set fields). ``None`` is no update. Anything else becomes
    ``("__root__", value)``, which only a root-typed graph could take.
    """
    if update is None:
        return []
    if isinstance(update, dict):
        return list(update.items())
    if isinstance(update, (list, tuple)) and all(
        isinstance(t, tuple) and len(t) == 2 and isinstance(t[0], str) for t in update
    ):
        return list(update)
    if dataclasses.is_dataclass(update) and not isinstance(update, type):
        return [(f.name, getattr(update, f.name)) for f in dataclasses.fields(update)]
    if is_pydantic_class(type(update)):
        model: Any = update
        fields_set: set[str] = model.model_fields_set
        names: list[str] = list(type(model).model_fields)
        return [
            (name, getattr(model, name))
            for name in names
            if name in fields_set or getattr(model, name) is not None
        ]
    return [(ROOT, update)]
