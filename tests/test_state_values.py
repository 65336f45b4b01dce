"""Overwrite, one-value states and managed values: the channel rules, and bad updates
refused with the thread left as it was (both drivers, memory and SQLite)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pausepoint import START, Command, StateGraph
from pausepoint.channels import BinaryOperatorAggregate, overwrite_of
from pausepoint.errors import GraphValidationError, InvalidUpdateError
from pausepoint.managed import IsLastStep, RemainingSteps
from pausepoint.types import Overwrite

THREAD = {"configurable": {"thread_id": "t"}}


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _stored(saver: Any) -> list[Any]:
    return [(t.checkpoint, t.metadata, t.pending_writes) for t in saver.list(THREAD)]


# --- the channel rule ------------------------------------------------------------------

writes = st.lists(
    st.one_of(
        st.lists(st.integers(), max_size=2),
        st.builds(Overwrite, st.lists(st.integers(), max_size=2)),
        st.lists(st.integers(), max_size=2).map(lambda v: {"__overwrite__": v}),
    ),
    max_size=5,
)


@given(start=st.lists(st.integers(), max_size=2), step=writes)
def test_a_step_with_one_overwrite_ends_with_its_value(start: list[int], step: list[Any]) -> None:
    chan = BinaryOperatorAggregate("k", operator.add, list).spawn(list(start))
    replacing = [v for w in step if (v := overwrite_of(w))[0]]
    if len(replacing) > 1:
        with pytest.raises(InvalidUpdateError, match="only one Overwrite value per super-step"):
            chan.update(step)
        return
    chan.update(step)
    if replacing:
        assert chan.value == replacing[0][1]
    else:
        assert chan.value == start + [x for w in step for x in w]


def test_only_a_dict_with_the_one_key_is_the_json_form() -> None:
    assert overwrite_of({"__overwrite__": 1}) == (True, 1)
    assert overwrite_of({"__overwrite__": 1, "other": 2})[0] is False
    assert overwrite_of(Overwrite(None)) == (True, None)
    assert overwrite_of([{"__overwrite__": 1}])[0] is False


# --- refused updates change nothing ----------------------------------------------------


def test_two_overwrites_in_one_update_are_refused_and_nothing_is_written(
    drive: Any, memory_or_sqlite: Any
) -> None:
    g = StateGraph(Log).add_node("a", lambda s: {"log": ["a"]}).add_edge(START, "a")
    g = g.compile(checkpointer=memory_or_sqlite)
    drive.invoke(g, {"log": ["start"]}, THREAD)
    before = _stored(memory_or_sqlite)
    twice = Command(update=[("log", Overwrite(["x"])), ("log", {"__overwrite__": ["y"]})])
    with pytest.raises(InvalidUpdateError, match="per super-step"):
        drive.update_state(g, THREAD, twice)
    assert _stored(memory_or_sqlite) == before
    drive.update_state(g, THREAD, {"log": {"__overwrite__": ["y"]}})
    assert drive.get_state(g, THREAD).values == {"log": ["y"]}


def test_a_one_value_state_refuses_what_its_reducer_cannot_take(
    drive: Any, memory_or_sqlite: Any
) -> None:
    g = StateGraph(Annotated[list, operator.add])
    g.add_node("a", lambda items: ["a"]).add_edge(START, "a")
    g = g.compile(checkpointer=memory_or_sqlite)
    assert drive.invoke(g, ["in"], THREAD) == ["in", "a"]
    before = _stored(memory_or_sqlite)
    with pytest.raises(InvalidUpdateError, match="Nothing was written"):
        drive.update_state(g, THREAD, 5)  # list + int
    assert _stored(memory_or_sqlite) == before
    drive.update_state(g, THREAD, Overwrite([]))
    assert drive.get_state(g, THREAD).values == []


def test_a_failed_step_of_two_overwrites_keeps_the_state_before_it(
    drive: Any, memory_or_sqlite: Any
) -> None:
    g = StateGraph(Log)
    g.add_node("a", lambda s: {"log": Overwrite(["a"])})
    g.add_node("b", lambda s: {"log": Overwrite(["b"])})
    g.add_edge(START, "a").add_edge(START, "b")
    g = g.compile(checkpointer=memory_or_sqlite)
    with pytest.raises(InvalidUpdateError, match="Can receive only one Overwrite value"):
        drive.invoke(g, {"log": ["start"]}, THREAD)
    saved = memory_or_sqlite.get_tuple(THREAD)
    assert saved.checkpoint["channel_values"]["log"] == ["start"]
    # Both tasks' writes are kept, so reading the state applies them and fails again,
    # as LangGraph's get_state does (the same holds for two writers of a plain key).
    with pytest.raises(InvalidUpdateError, match="per super-step"):
        drive.get_state(g, THREAD)


# --- schemas -----------------------------------------------------------------------------


def test_a_non_type_is_still_not_a_schema() -> None:
    g = StateGraph(42).add_node("a", lambda s: None).add_edge(START, "a")  # pyright: ignore[reportArgumentType]
    with pytest.raises(GraphValidationError, match="42 is not a state schema"):
        g.compile()


def test_managed_keys_are_not_channels_nor_stored(drive: Any, memory_or_sqlite: Any) -> None:
    class S(TypedDict):
        log: Annotated[list[str], operator.add]
        left: RemainingSteps
        last: IsLastStep

    g = StateGraph(S).add_node("a", lambda s: {"log": [f"{s['left']}{s['last']}"], "left": 0})
    g = g.add_edge(START, "a").compile(checkpointer=memory_or_sqlite)
    out = drive.invoke(g, {"log": [], "left": 7}, {**THREAD, "recursion_limit": 2})
    assert out == {"log": ["1True"]}
    for saved in memory_or_sqlite.list(THREAD):
        assert not {"left", "last"} & set(saved.checkpoint["channel_values"])
