"""An empty channel survives being copied: ``MISSING`` stays the one sentinel.

``update_state`` tries an update on a copy of each channel it touches (a deep copy
of the stored value). An empty channel's stored value is ``MISSING``; when a copy of
it was a second ``_Missing`` object, every ``value is MISSING`` test took it for a
value: an empty join barrier failed with "'_Missing' object is not iterable", an
empty deferred trigger with "not subscriptable", and a reducer key with no start
value had its first update refused (the reducer was handed the sentinel).
"""

from __future__ import annotations

import copy
import operator
import pickle
from collections.abc import Callable

import pytest

from pausepoint.channels import (
    MISSING,
    AfterFinish,
    BinaryOperatorAggregate,
    Channel,
    EphemeralValue,
    LastValue,
    NamedBarrierValue,
    Topic,
)
from pausepoint.loop.writes import rejected_writes

# Each kind of channel, empty, and a write it takes.
KINDS: dict[str, tuple[Callable[[], Channel], object]] = {
    "last_value": (lambda: LastValue("k"), 1),
    "ephemeral": (lambda: EphemeralValue("k"), 1),
    "topic": (lambda: Topic("k"), 1),
    "reducer_without_start": (lambda: BinaryOperatorAggregate("k", operator.add, None), [1]),
    "reducer_with_start": (lambda: BinaryOperatorAggregate("k", operator.add, list), [1]),
    "barrier": (lambda: NamedBarrierValue("k", frozenset({"a", "b"})), "a"),
    "deferred_barrier": (lambda: AfterFinish(NamedBarrierValue("k", frozenset({"a", "b"}))), "a"),
    "deferred_value": (lambda: AfterFinish(LastValue("k")), 1),
}


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy, lambda v: pickle.loads(pickle.dumps(v))])
def test_a_copy_of_missing_is_missing(how: Callable[[object], object]) -> None:
    assert how(MISSING) is MISSING
    assert how({"k": MISSING})["k"] is MISSING  # pyright: ignore[reportIndexIssue, reportUnknownMemberType]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_an_empty_channel_spawned_from_a_deep_copy_is_empty(kind: str) -> None:
    make, _ = KINDS[kind]
    empty = make().spawn()
    trial = empty.spawn(copy.deepcopy(empty.checkpoint()))
    assert _same(trial.checkpoint(), empty.checkpoint())
    assert trial.is_available() is empty.is_available()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_an_update_to_an_empty_channel_is_tried_and_accepted(kind: str) -> None:
    make, write = KINDS[kind]
    channel = make().spawn()
    assert rejected_writes({"k": channel}, [("k", write)]) == {}
    assert _same(channel.checkpoint(), make().spawn().checkpoint())  # the trial changed nothing


def _same(got: object, expected: object) -> bool:
    """Equal, and ``MISSING`` exactly where ``expected`` is (an equal copy is not it)."""
    return got is MISSING if expected is MISSING else got == expected
