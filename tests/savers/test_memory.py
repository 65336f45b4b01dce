"""InMemorySaver specifics: what it keeps without encoding, and that reads stay isolated."""

from __future__ import annotations

from typing import Any

import pytest

from pausepoint.checkpoint.base import empty_checkpoint
from pausepoint.checkpoint.ids import new_stamp
from pausepoint.checkpoint.memory import InMemorySaver
from pausepoint.constants import INTERRUPT
from pausepoint.errors import SerializationError
from pausepoint.types import Interrupt


def _saved(saver: InMemorySaver, values: dict[str, Any]) -> Any:
    checkpoint = empty_checkpoint(*new_stamp())
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = dict.fromkeys(values, 1)
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    return saver.put(config, checkpoint, {"source": "loop", "step": 0, "parents": {}}, {})


def test_interrupts_read_back_as_new_objects() -> None:
    # Interrupts with immutable values are kept as data, not encoded; every read makes
    # new Interrupt objects, so changing one never changes what is stored.
    saver = InMemorySaver()
    config = _saved(saver, {"x": 1})
    saver.put_writes(config, [(INTERRUPT, (Interrupt("approve?", "a" * 32),))], "task-1")
    first = saver.get_tuple(config)
    assert first is not None
    assert first.pending_writes
    (found,) = first.pending_writes[0].value
    assert found == Interrupt("approve?", "a" * 32)
    found.value = "changed by the caller"
    again = saver.get_tuple(config)
    assert again is not None
    assert again.pending_writes
    assert again.pending_writes[0].value == (Interrupt("approve?", "a" * 32),)


@pytest.mark.parametrize("value", [0, -3, 2.5, float("inf"), "text", True, None])
def test_immutable_values_round_trip_with_their_type(value: Any) -> None:
    saver = InMemorySaver()
    config = _saved(saver, {"x": value})
    saver.put_writes(config, [("x", value)], "task-1")
    got = saver.get_tuple(config)
    assert got is not None
    assert got.pending_writes
    for read in (got.checkpoint["channel_values"]["x"], got.pending_writes[0].value):
        assert type(read) is type(value)
        assert read == value or value != value  # nan aside


def test_mutable_values_are_copied_and_unknown_types_refused() -> None:
    saver = InMemorySaver()
    items = [1, 2]
    config = _saved(saver, {"items": items})
    items.append(3)
    got = saver.get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"]["items"] == [1, 2]
    with pytest.raises(SerializationError, match="write to 'x'"):
        saver.put_writes(config, [("x", object())], "task-1")
    after = saver.get_tuple(config)
    assert after is not None
    assert after.pending_writes == []
