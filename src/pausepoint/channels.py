"""Channels: where state lives between supersteps.

Every state key is a channel, and so is every edge trigger. A channel takes the
writes of one superstep at once (``update``), so what a key does with two writes
in one step is the channel's decision: a last-value channel refuses them, a
reducer channel folds them. Channels are rebuilt from a checkpoint's stored
values at the start of a run and written back into the next checkpoint.
"""

from __future__ import annotations

import collections.abc
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Final, cast

from pausepoint.constants import OVERWRITE
from pausepoint.errors import EmptyChannelError, InvalidUpdateError
from pausepoint.types import Overwrite

__all__ = [
    "MISSING",
    "AfterFinish",
    "BinaryOperatorAggregate",
    "Channel",
    "EphemeralValue",
    "LastValue",
    "NamedBarrierValue",
    "Topic",
]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    # Channels test ``value is MISSING``, so a copy must be the sentinel itself: the
    # default reduction would make ``copy.deepcopy(MISSING)`` a second, distinct
    # ``_Missing`` that every such test takes for a value (an empty barrier copied for a
    # trial update then failed with "'_Missing' object is not iterable"). Reducing to
    # the module-level name makes copy, deepcopy and pickle return MISSING itself.
    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
"""Marks a channel with no value (never stored in a checkpoint). ``copy``, ``deepcopy``
and ``pickle`` return this same object."""


class Channel:
    """A value holder with a per-superstep update rule.

    Subclasses set ``value`` (``MISSING`` when empty) and implement ``update``.
    ``spawn`` makes a fresh channel of the same kind from a stored value.
    """

    __slots__ = ("key", "value")

    consumes: ClassVar[bool] = False
    """Whether ``consume`` can change the channel (a barrier's does; others need no call)."""

    ephemeral: ClassVar[bool] = False
    """Whether ``update(())`` (a step with no write) empties the channel, and does nothing
    else: the step's pass over last step's values then sets ``MISSING`` itself."""

    plain: ClassVar[bool] = True
    """Whether ``is_available()`` is ``value is not MISSING`` and ``checkpoint()`` and
    ``get()`` (when available) are ``value``: the loop's per-step passes then read
    ``value`` without a method call (~3 % of a superstep). False for channels that
    override any of them."""

    def __init__(self, key: str = "") -> None:
        self.key = key
        self.value: Any = MISSING

    def spawn(self, stored: object = MISSING) -> Channel:
        """A new channel of this kind holding ``stored`` (as saved by ``checkpoint``)."""
        # Every run spawns every channel of its graph: setting the slots here is ~2x
        # cheaper than going through the __init__ chain again.
        new = object.__new__(type(self))
        new.key = self.key
        new.value = stored
        return new

    def get(self) -> object:
        """The current value; raises ``EmptyChannelError`` when there is none."""
        if self.value is MISSING:
            raise EmptyChannelError(self.key)
        return self.value

    def is_available(self) -> bool:
        """Whether ``get`` would return a value."""
        return self.value is not MISSING

    def checkpoint(self) -> object:
        """The value to store (``MISSING`` stores nothing)."""
        return self.value

    def update(self, values: Sequence[object]) -> bool:
        """Apply one superstep's writes; return whether the channel changed."""
        raise NotImplementedError

    def consume(self) -> bool:
        """Called when a task triggered by this channel ran; return whether it changed."""
        return False


class LastValue(Channel):
    """Keeps the last value written; two writes in one superstep are an error."""

    __slots__ = ()

    def update(self, values: Sequence[object]) -> bool:  # noqa: D102
        if not values:
            return False
        if len(values) > 1:
            raise InvalidUpdateError(
                f"At key {self.key!r}: Can receive only one value per step. "
                "Use an Annotated key to handle multiple values."
            )
        value = values[0]
        self.value = value.value if isinstance(value, Overwrite) else value
        return True


class EphemeralValue(Channel):
    """Holds a value for the one superstep after it was written (edge triggers, input)."""

    __slots__ = ("guard",)

    ephemeral = True

    def __init__(self, key: str = "", guard: bool = False) -> None:
        super().__init__(key)
        self.guard = guard

    def spawn(self, stored: object = MISSING) -> Channel:  # noqa: D102
        new = object.__new__(EphemeralValue)
        new.key = self.key
        new.value = stored
        new.guard = self.guard
        return new

    def update(self, values: Sequence[object]) -> bool:  # noqa: D102
        if not values:
            if self.value is MISSING:
                return False
            self.value = MISSING
            return True
        if self.guard and len(values) > 1:
            raise InvalidUpdateError(f"At key {self.key!r}: Can receive only one value per step.")
        self.value = values[-1]
        return True


class BinaryOperatorAggregate(Channel):
    """Folds every write into the value with a reducer: ``value = reducer(value, write)``.

    Starts from ``typ()`` when the annotated type can be built with no arguments
    (an empty list for ``Annotated[list, operator.add]``). ``Overwrite(v)`` (or its
    JSON form ``{"__overwrite__": v}``) replaces the value instead, and is then the
    step's only write to the key; two ``Overwrite`` writes in one step are an error.
    """

    __slots__ = ("reducer", "typ")

    def __init__(self, key: str, reducer: Callable[[Any, Any], Any], typ: object = None) -> None:
        super().__init__(key)
        self.reducer = reducer
        self.typ = typ
        self.value = _initial(typ)

    def spawn(self, stored: object = MISSING) -> Channel:  # noqa: D102
        new = BinaryOperatorAggregate(self.key, self.reducer, self.typ)
        if stored is not MISSING:
            new.value = stored
        return new

    def update(self, values: Sequence[object]) -> bool:  # noqa: D102
        if not values:
            return False
        seen_overwrite = False
        for value in values:
            replace, replacement = overwrite_of(value)
            if replace:
                if seen_overwrite:
                    raise InvalidUpdateError(
                        f"At key {self.key!r}: Can receive only one Overwrite value per super-step."
                    )
                seen_overwrite = True
                self.value = replacement
            elif seen_overwrite:
                # As in LangGraph: the Overwrite is the step's value; the step's other
                # writes to the key, before or after it, are dropped.
                continue
            elif self.value is MISSING:
                self.value = value
            else:
                self.value = self.reducer(self.value, value)
        return True


def overwrite_of(value: object) -> tuple[bool, object]:
    """``(True, v)`` for ``Overwrite(v)`` or its JSON form ``{"__overwrite__": v}``."""
    if isinstance(value, Overwrite):
        return True, value.value
    if type(value) is dict:
        written = cast("dict[object, object]", value)
        if len(written) == 1 and OVERWRITE in written:
            return True, written[OVERWRITE]
    return False, None


def _initial(typ: object) -> object:
    origin: object = getattr(typ, "__origin__", typ)
    # An abstract collection starts as its concrete kind, as in LangGraph: a reducer
    # (add_messages on Annotated[Sequence[...], ...]) then sees the very first write too.
    origin = _CONCRETE.get(origin, origin)
    empty = _EMPTY.get(origin)
    return MISSING if empty is None else empty()


# The kinds a reducer channel starts empty as (``typ()``), by the annotated type.
_EMPTY: dict[object, Callable[[], object]] = {
    t: t for t in (list, dict, set, tuple, frozenset, int, float, str, bool)
}
_CONCRETE: dict[object, type] = {
    collections.abc.Sequence: list,
    collections.abc.MutableSequence: list,
    collections.abc.Set: set,
    collections.abc.MutableSet: set,
    collections.abc.Mapping: dict,
    collections.abc.MutableMapping: dict,
}


class Topic(Channel):
    """Collects every value written in one superstep, cleared the next (``Send`` packets)."""

    __slots__ = ()

    plain = False

    def update(self, values: Sequence[object]) -> bool:  # noqa: D102
        had = self.value is not MISSING and bool(self.value)
        if not values:
            self.value = MISSING
            return had
        self.value = list(values)
        return True

    def is_available(self) -> bool:  # noqa: D102
        return bool(self.value) if self.value is not MISSING else False


class NamedBarrierValue(Channel):
    """Becomes available once every named source has written (``add_edge([a, b], c)``)."""

    __slots__ = ("names",)

    consumes = True
    plain = False

    def __init__(self, key: str, names: frozenset[str]) -> None:
        super().__init__(key)
        self.names = names
        self.value = set()

    # ``stored`` is what ``checkpoint`` saved (the sorted names), as read back: typed by
    # that contract, not checked again (every run spawns every channel).
    def spawn(self, stored: Any = MISSING) -> Channel:  # noqa: D102
        new = NamedBarrierValue(self.key, self.names)
        if stored is not MISSING:
            new.value = set(stored)
        return new

    def get(self) -> None:  # noqa: D102
        if self.value != self.names:
            raise EmptyChannelError(self.key)

    def is_available(self) -> bool:  # noqa: D102
        return self.value == self.names

    def checkpoint(self) -> object:  # noqa: D102
        return sorted(self.value) if self.value else MISSING

    def update(self, values: Sequence[object]) -> bool:  # noqa: D102
        changed = False
        for name in values:
            if name not in self.names:
                raise InvalidUpdateError(f"At key {self.key!r}: unexpected source {name!r}")
            if name not in self.value:
                self.value.add(name)
                changed = True
        return changed

    def consume(self) -> bool:  # noqa: D102
        if self.value == self.names:
            self.value = set()
            return True
        return False


class AfterFinish(Channel):
    """Holds another channel's value back until the run has nothing else to do.

    The trigger of a deferred node (``add_node(..., defer=True)``): writes collect
    in ``inner`` as usual, but the node is triggered only after [`finish`][],
    which the loop calls when a step leaves no other node to run. Running the node
    consumes the value. Stored as ``[inner's stored value, finished]``.
    """

    __slots__ = ("finished", "inner")

    consumes = True
    plain = False

    def __init__(self, inner: Channel) -> None:
        super().__init__(inner.key)
        self.inner = inner
        self.finished = False

    # ``stored`` is what ``checkpoint`` saved (``[inner's value, finished]``), as read back.
    def spawn(self, stored: Any = MISSING) -> Channel:  # noqa: D102
        new = AfterFinish(self.inner.spawn())
        if stored is not MISSING:
            new.inner = self.inner.spawn(stored[0])
            new.finished = bool(stored[1])
        return new

    def get(self) -> object:  # noqa: D102
        if not self.finished:
            raise EmptyChannelError(self.key)
        return self.inner.get()

    def is_available(self) -> bool:  # noqa: D102
        return self.finished and self.inner.is_available()

    def checkpoint(self) -> object:  # noqa: D102
        stored = self.inner.checkpoint()
        return MISSING if stored is MISSING else [stored, self.finished]

    def update(self, values: Sequence[object]) -> bool:  # noqa: D102
        # No write, no change: the value waits across steps (an edge trigger's inner
        # channel would clear itself on an empty update).
        if not values or not self.inner.update(values):
            return False
        self.finished = False
        return True

    def finish(self) -> bool:
        """Release a waiting value; return whether the channel changed."""
        if self.finished or self.inner.checkpoint() is MISSING:
            return False
        self.finished = True
        return self.is_available()

    def consume(self) -> bool:  # noqa: D102
        if not self.finished:
            return False
        self.inner = self.inner.spawn()
        self.finished = False
        return True
