"""The supersteps of ``bulk_update_state``, checked before anything is read or written.

Besides a node's name, ``as_node`` takes three special values (as in LangGraph
1.1.6), each of which changes what its whole superstep means:

- ``"__input__"``: the values are a new run input. The new checkpoint (source
  ``input``) has ``__start__`` due, so ``invoke(None)`` runs the graph from START
  with them.
- ``"__copy__"``: a copy of the checkpoint as a sibling (source ``fork``, the same
  parent), to run it again. Its values are None, or a list of ``(values,
  as_node)`` updates that make a second checkpoint on top of the copy.
- ``END`` with ``values=None``: finish the checkpoint's step. What its finished
  tasks wrote is kept, the tasks still due (paused ones included) are dropped.

So each must be the only update of its superstep. LangGraph checks that only when
the special value comes first (after another update it reports an unknown node),
and it ignores values ``"__copy__"`` cannot use. Here every misuse is refused with
an error saying what to do instead, before the checkpoint is even read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from typing import Any, Final, Literal

from pausepoint.constants import END, INPUT
from pausepoint.errors import InvalidUpdateError
from pausepoint.types import StateUpdate

__all__ = ["COPY", "Superstep", "parse_supersteps"]

COPY: Final = "__copy__"
"""``as_node`` value: copy the checkpoint as a sibling fork."""

SPECIAL: Final = (INPUT, COPY, END)

Kind = Literal["nodes", "input", "copy", "end"]


@dataclasses.dataclass(frozen=True, slots=True)
class Superstep:
    """One superstep of updates, parsed: what it does, and where the caller put it."""

    kind: Kind
    updates: tuple[StateUpdate, ...]
    where: str
    """How error messages name it (``""`` for a lone ``update_state``)."""


def parse_supersteps(
    supersteps: Sequence[Sequence[StateUpdate]], nodes: Collection[str]
) -> list[Superstep]:
    """Check the shape of ``supersteps`` against the graph's ``nodes``; say what each does.

    A ``"__copy__"`` with updates becomes two supersteps: the copy, then the updates.

    Raises:
        ValueError: No supersteps, or an empty one (LangGraph's type and text).
        InvalidUpdateError: A special ``as_node``
            sharing its superstep or given values it cannot take, several updates
            without ``as_node``, or an ``as_node`` that names no node.
    """
    if not supersteps:
        raise ValueError(
            "No supersteps provided: bulk_update_state takes a list of supersteps, each a "
            "list of StateUpdate(values, as_node)"
        )
    parsed: list[Superstep] = []
    for n, updates in enumerate(supersteps, 1):
        where = f" (superstep {n} of {len(supersteps)})" if len(supersteps) > 1 else ""
        parsed.extend(_parse(tuple(updates), nodes, where))
    return parsed


def _parse(updates: tuple[StateUpdate, ...], nodes: Collection[str], where: str) -> list[Superstep]:
    if not updates:
        raise ValueError(
            f"No updates provided{where}: each superstep of bulk_update_state needs at "
            "least one StateUpdate(values, as_node)"
        )
    special = [u for u in updates if _special(u)]
    if special and len(updates) > 1:
        raise InvalidUpdateError(
            f"{_lg_alone(special[0].as_node)}: as_node={special[0].as_node!r} must be the "
            f"only update of its superstep{where}, "
            f"which has {len(updates)}: it {_does(special[0].as_node)}. Give it a superstep "
            "of its own."
        )
    if special:
        return _parse_special(special[0], nodes, where)
    _check_nodes(updates, nodes, where)
    return [Superstep("nodes", updates, where)]


def _special(update: StateUpdate) -> bool:
    # END with values is not the "finish the step" update: it is refused as a node.
    return update.as_node in (INPUT, COPY) or (update.as_node == END and update.values is None)


def _lg_alone(as_node: Any) -> str:
    """LangGraph's text for a special update that shares its superstep (kept first)."""
    if as_node == INPUT:
        return "Cannot apply multiple updates when updating as input"
    if as_node == COPY:
        return "Cannot copy checkpoint with multiple updates"
    return "Cannot apply multiple updates when clearing state"


def _does(as_node: Any) -> str:
    if as_node == INPUT:
        return "writes a new run input"
    if as_node == COPY:
        return "copies the checkpoint"
    return "finishes the checkpoint's step"


def _parse_special(update: StateUpdate, nodes: Collection[str], where: str) -> list[Superstep]:
    if update.as_node == END:
        return [Superstep("end", (update,), where)]
    if update.as_node == INPUT:
        if update.values is None:
            raise InvalidUpdateError(
                f"as_node={INPUT!r} writes the values as a new run input, but values is "
                f"None{where}: pass the graph input (a dict of state values), as to invoke()"
            )
        return [Superstep("input", (update,), where)]
    copy = Superstep("copy", (update,), where)
    if update.values is None:
        return [copy]
    items = _copy_updates(update.values, where)
    if not items:  # an empty list: a plain copy
        return [copy]
    return [copy, *_parse(items, nodes, where)]


def _copy_updates(values: Any, where: str) -> tuple[StateUpdate, ...]:
    if not isinstance(values, list):
        raise InvalidUpdateError(
            f"as_node={COPY!r} takes values=None (a plain copy) or a list of (values, as_node) "
            f"updates to apply to the copy, got a {type(values).__name__}{where}. To copy and "
            f"change the state, pass [(values, node_name)]"
        )
    items: list[StateUpdate] = []
    for i, item in enumerate(values):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        if not isinstance(item, tuple | list) or not 2 <= len(item) <= 3:  # pyright: ignore[reportUnknownArgumentType]
            raise InvalidUpdateError(
                f"as_node={COPY!r}: item {i} of its values is not a (values, as_node) pair: "
                f"{item!r}{where}"
            )
        items.append(StateUpdate(*item))  # pyright: ignore[reportUnknownArgumentType]
    return tuple(items)


def _check_nodes(updates: tuple[StateUpdate, ...], nodes: Collection[str], where: str) -> None:
    for update in updates:
        name = update.as_node
        if name is None and len(updates) > 1:
            raise InvalidUpdateError(
                f"as_node is required when applying multiple updates{where}: "
                f"name the node that writes {update.values!r}"
            )
        if name is not None and name not in nodes:
            raise InvalidUpdateError(_unknown(name, nodes, where))


def _unknown(name: str, nodes: Collection[str], where: str) -> str:
    if name == END:
        return (
            f"as_node={END!r} takes values=None{where}: it finishes the checkpoint's step, "
            "keeping what finished tasks wrote and dropping the tasks still due. To write "
            "values, name the node that writes them."
        )
    known = ", ".join(repr(n) for n in nodes)
    return (
        f"Node {name} does not exist{where}: as_node={name!r} must name one of the graph's "
        f"nodes ({known}), or be {INPUT!r}, {COPY!r} or END"
    )
