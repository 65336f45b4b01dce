"""The in-memory savers: reads stay isolated and values round-trip, on both of them.

``InMemorySaver`` (the reference) stores encodings only; ``CompactingMemorySaver``
keeps immutable values as they are, shares parts of idle threads' checkpoints and
encodes only what a list gained. Each test runs on both: the compacting saver's
shortcuts must read back exactly what the reference does.
"""

from __future__ import annotations

from typing import Any

import pytest

from pausepoint.checkpoint.base import empty_checkpoint
from pausepoint.checkpoint.compact import CompactingMemorySaver
from pausepoint.checkpoint.ids import new_stamp
from pausepoint.checkpoint.memory import InMemorySaver
from pausepoint.constants import INTERRUPT
from pausepoint.errors import SerializationError
from pausepoint.types import Interrupt

Saver = InMemorySaver | CompactingMemorySaver


@pytest.fixture(params=[InMemorySaver, CompactingMemorySaver], ids=["reference", "compact"])
def new_saver(request: pytest.FixtureRequest) -> type[Saver]:
    """Each in-memory saver's class."""
    return request.param


def _saved(saver: Saver, values: dict[str, Any]) -> Any:
    checkpoint = empty_checkpoint(*new_stamp())
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = dict.fromkeys(values, 1)
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    return saver.put(config, checkpoint, {"source": "loop", "step": 0, "parents": {}}, {})


def test_interrupts_read_back_as_new_objects(new_saver: type[Saver]) -> None:
    # Interrupts with immutable values are kept as data, not encoded; every read makes
    # new Interrupt objects, so changing one never changes what is stored.
    saver = new_saver()
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
def test_immutable_values_round_trip_with_their_type(value: Any, new_saver: type[Saver]) -> None:
    saver = new_saver()
    config = _saved(saver, {"x": value})
    saver.put_writes(config, [("x", value)], "task-1")
    got = saver.get_tuple(config)
    assert got is not None
    assert got.pending_writes
    for read in (got.checkpoint["channel_values"]["x"], got.pending_writes[0].value):
        assert type(read) is type(value)
        assert read == value or value != value  # nan aside


def test_mutable_values_are_copied_and_unknown_types_refused(new_saver: type[Saver]) -> None:
    saver = new_saver()
    items = [1, 2]
    config = _saved(saver, {"items": items})
    items.append(3)
    got = saver.get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"]["items"] == [1, 2]
    with pytest.raises(SerializationError, match="key 'x' as returned by task 'task-1'"):
        saver.put_writes(config, [("x", object())], "task-1")
    after = saver.get_tuple(config)
    assert after is not None
    assert after.pending_writes == []


@pytest.mark.parametrize("written", [["a", 1, 2.5, None, True], [], [{"nested": 1}]])
def test_written_lists_are_copied_both_ways(written: list[Any], new_saver: type[Saver]) -> None:
    # A list of immutable values is kept as a tuple, others encoded: either way the
    # caller's list and every list read back are new objects.
    saver = new_saver()
    config = _saved(saver, {"x": 1})
    given = list(written)
    saver.put_writes(config, [("out", given)], "task-1")
    given.append("changed by the caller")
    first = saver.get_tuple(config)
    assert first is not None
    value = first.pending_writes[0].value
    assert type(value) is list
    assert value == written
    value.append("changed by a reader")
    again = saver.get_tuple(config)
    assert again is not None
    assert again.pending_writes[0].value == written


def _put(
    saver: Saver,
    thread: str,
    versions: dict[str, Any],
    seen: dict[str, dict[str, Any]],
    *,
    parent: str | None = None,
    stamp: tuple[str, str] | None = None,
) -> Any:
    checkpoint = empty_checkpoint(*(stamp or new_stamp()))
    checkpoint["channel_values"] = dict.fromkeys(versions, "v")
    checkpoint["channel_versions"] = versions
    checkpoint["versions_seen"] = seen
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": parent}}
    return saver.put(config, checkpoint, {"source": "loop", "step": 0, "parents": {}}, {})


def _go_idle(saver: Saver) -> None:
    """Put to enough other threads that the earlier ones are compacted (shared parts)."""
    for n in range(40):
        _put(saver, f"other-{n}", {"x": 1}, {"node": {"x": 1}})


def test_equal_versions_of_other_types_stay_apart(new_saver: type[Saver]) -> None:
    # An idle thread's small version maps and versions_seen entries are shared with
    # other checkpoints and threads by content; 1, 1.0 and True are equal but must
    # read back as given.
    saver = new_saver()
    configs = {
        kind: _put(saver, f"t-{kind.__name__}", {"x": kind(1)}, {"node": {"x": kind(1)}})
        for kind in (int, float, bool)
    }
    _go_idle(saver)
    for kind, config in configs.items():
        got = saver.get_tuple(config)
        assert got is not None
        version = got.checkpoint["channel_versions"]["x"]
        seen = got.checkpoint["versions_seen"]["node"]["x"]
        assert (type(version), type(seen)) == (kind, kind)


def test_shared_entries_are_copied_for_readers(new_saver: type[Saver]) -> None:
    # Two threads store equal versions_seen entries (kept once); a reader that edits
    # what it got changes neither the store nor the other thread.
    saver = new_saver()
    first = _put(saver, "a", {"x": 2}, {"node": {"x": 1}})
    second = _put(saver, "b", {"x": 2}, {"node": {"x": 1}})
    _go_idle(saver)
    got = saver.get_tuple(first)
    assert got is not None
    got.checkpoint["versions_seen"]["node"]["x"] = 99
    got.checkpoint["channel_versions"]["x"] = 99
    for config in (first, second):
        again = saver.get_tuple(config)
        assert again is not None
        assert again.checkpoint["versions_seen"] == {"node": {"x": 1}}
        assert again.checkpoint["channel_versions"] == {"x": 2}


@pytest.mark.parametrize("idle", [False, True], ids=["busy", "idle"])
def test_metadata_reads_back_as_put_and_isolated(idle: bool, new_saver: type[Saver]) -> None:
    # Metadata of immutable values is kept as its items while the thread is busy and
    # encoded once it is idle; other metadata is encoded at once. Either way a read
    # gets a new dict equal to what was put, types included, which the caller may
    # change freely.
    saver = new_saver()
    plain = {"source": "loop", "step": 3, "parents": {}, "ratio": 1.0, "flag": True, "n": None}
    nested = {"source": "loop", "step": 4, "parents": {"": "abc"}, "tags": ["x"]}
    given = [plain, nested]
    configs = []
    for metadata in given:
        checkpoint = empty_checkpoint(*new_stamp())
        config = {"configurable": {"thread_id": "m", "checkpoint_ns": ""}}
        configs.append(saver.put(config, checkpoint, dict(metadata), {}))  # type: ignore[arg-type]
    if idle:
        _go_idle(saver)
    for config, metadata in zip(configs, given, strict=True):
        got = saver.get_tuple(config)
        assert got is not None
        assert got.metadata == metadata
        assert [type(v) for v in got.metadata.values()] == [type(v) for v in metadata.values()]
        got.metadata["parents"]["changed"] = "by the caller"  # type: ignore[index]
        again = saver.get_tuple(config)
        assert again is not None
        assert again.metadata == metadata
    found = list(saver.list({"configurable": {"thread_id": "m"}}, filter={"step": 3}))
    assert [t.metadata for t in found] == [plain]
    with pytest.raises(SerializationError, match="metadata"):
        saver.put(configs[0], empty_checkpoint(*new_stamp()), {"bad": object()}, {})  # type: ignore[typeddict-unknown-key]
    assert [t.metadata for t in saver.list({"configurable": {"thread_id": "m"}})] == [
        nested,
        plain,
    ]


def test_large_version_maps_round_trip(new_saver: type[Saver]) -> None:
    # Maps above the packing limit are kept as plain copies: same result for readers.
    saver = new_saver()
    versions = {f"c{i}": i + 1 for i in range(40)}
    seen = {f"n{i}": {f"c{i}": i + 1} for i in range(40)}
    config = _put(saver, "big", dict(versions), {k: dict(v) for k, v in seen.items()})
    _go_idle(saver)
    got = saver.get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_versions"] == versions
    assert got.checkpoint["versions_seen"] == seen


def test_timestamps_read_back_as_put(new_saver: type[Saver]) -> None:
    # The ts of a checkpoint stamped by new_stamp() is made again from its id; any
    # other ts (or id) is kept as given.
    saver = new_saver()
    stamped = new_stamp()
    other_ts = (new_stamp()[0], "2020-01-02T03:04:05.000006+00:00")
    foreign_id = ("checkpoint-from-elsewhere", "2021-05-06T07:08:09+00:00")
    configs = [
        _put(saver, f"ts-{n}", {"x": 1}, {}, stamp=stamp)
        for n, stamp in enumerate((stamped, other_ts, foreign_id))
    ]
    _go_idle(saver)
    for config, stamp in zip(configs, (stamped, other_ts, foreign_id), strict=True):
        got = saver.get_tuple(config)
        assert got is not None
        assert (got.checkpoint["id"], got.checkpoint["ts"]) == stamp


def test_timestamps_are_isoformat_whichever_seconds_alternate() -> None:
    # The date part is cached per second for several seconds (a resume reads an old
    # checkpoint's time and stamps a new one): every second, new or cached, alternating
    # or past the cache's bound, formats as datetime does.
    import datetime

    from pausepoint.checkpoint import ids

    start = 1_700_000_000_000_000
    times = [start + n * 999_983 + (n % 7) * 1_000 for n in range(200)]
    times += [start + 12, start + 86_400_000_000, start + 12, 0, start + 86_400_000_000]
    for unix_us in times:
        seconds, micros = divmod(unix_us, 1_000_000)
        want = datetime.datetime.fromtimestamp(seconds, datetime.UTC).replace(microsecond=micros)
        assert ids._format_ts(unix_us) == want.isoformat()  # pyright: ignore[reportPrivateUsage]
    assert len(ids._prefixes) <= ids._PREFIXES_MAX  # pyright: ignore[reportPrivateUsage]


def test_a_thread_keeps_its_history_and_forgets_its_values_once_idle(
    new_saver: type[Saver],
) -> None:
    # The saver remembers the last values put to recent threads only (to skip encoding
    # unchanged ones): a paused thread does not keep its state objects alive for ever.
    # Compacting an idle thread changes nothing a reader sees.
    saver = new_saver()
    parent = _put(saver, "h", {"x": 1}, {"a": {"x": 1}})
    child = _put(
        saver,
        "h",
        {"x": 2},
        {"a": {"x": 1}, "b": {"x": 2}},
        parent=parent["configurable"]["checkpoint_id"],
    )
    saver.put_writes(child, [("x", [1, 2]), (INTERRUPT, (Interrupt("ok?", "i" * 32),))], "task")
    before = [
        (t.checkpoint, t.metadata, t.parent_config, t.pending_writes) for t in saver.list(child)
    ]
    for n in range(200):
        config = _saved(saver, {"items": [n]}) if n % 2 else _put(saver, f"many-{n}", {"x": 1}, {})
        assert saver.get_tuple(config) is not None
    if isinstance(saver, CompactingMemorySaver):
        assert len(saver._recent) <= 32  # pyright: ignore[reportPrivateUsage]
    after = [
        (t.checkpoint, t.metadata, t.parent_config, t.pending_writes) for t in saver.list(child)
    ]
    assert after == before
    assert after[0][2] == parent


def test_a_value_changed_in_place_and_written_again_is_saved_anew(new_saver: type[Saver]) -> None:
    # A node that appends to its input list and returns the same list object: the
    # channel gets a new version, so the saver must encode the value again (an
    # encoding kept for the same object at the old version is stale).
    from typing import TypedDict

    from pausepoint import START, StateGraph

    class Items(TypedDict):
        items: list[int]

    def add(n: int) -> Any:
        def node(state: Items) -> dict[str, Any]:
            state["items"].append(n)
            return {"items": state["items"]}

        return node

    builder = StateGraph(Items)
    builder.add_node("a", add(1))
    builder.add_node("b", add(2))
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    graph = builder.compile(checkpointer=new_saver())
    cfg: Any = {"configurable": {"thread_id": "in-place"}}
    assert graph.invoke({"items": []}, cfg) == {"items": [1, 2]}
    assert graph.get_state(cfg).values == {"items": [1, 2]}
    steps = {h.metadata["step"]: h.values for h in graph.get_state_history(cfg)}
    assert steps[0] == {"items": []}
    assert steps[1] == {"items": [1]}
    assert steps[2] == {"items": [1, 2]}


def test_lists_saved_step_by_step_match_a_saver_that_encodes_everything(
    tmp_path: Any, new_saver: type[Saver]
) -> None:
    # CompactingMemorySaver encodes only the appended part of a list of immutable items
    # that extends the one it saved last (InMemorySaver encodes it whole, as the SQL
    # savers do); whatever nodes do to the list (append in place,
    # change an item in place, shrink it, add a dict, start over), every checkpoint
    # must hold what SqliteSaver (which encodes every value whole) holds.
    import sqlite3
    from typing import TypedDict

    from pausepoint import START, StateGraph
    from pausepoint.checkpoint.sqlite import SqliteSaver

    class Items(TypedDict):
        items: list[Any]

    def steps() -> list[Any]:
        def append_in_place(state: Items) -> dict[str, Any]:
            state["items"].extend(["x", 2**70, None])
            return {"items": state["items"]}

        def change_in_place(state: Items) -> dict[str, Any]:
            state["items"][0] = "changed"
            return {"items": state["items"]}

        return [
            lambda s: {"items": [*s["items"], 1, "a"]},
            append_in_place,
            lambda s: {"items": s["items"] + [True]},
            change_in_place,
            lambda s: {"items": s["items"][:2]},
            lambda s: {"items": [*s["items"], {"k": 1}]},
            lambda s: {"items": [7]},
            lambda s: {"items": [7, 8]},
            lambda s: {"items": []},
            lambda s: {"items": [9]},
        ]

    def history(saver: Any) -> list[Any]:
        builder = StateGraph(Items)
        previous = START
        for n, step in enumerate(steps()):
            builder.add_node(f"n{n}", step)
            builder.add_edge(previous, f"n{n}")
            previous = f"n{n}"
        graph = builder.compile(checkpointer=saver)
        cfg: Any = {"configurable": {"thread_id": "lists"}}
        graph.invoke({"items": [0]}, cfg)
        return [(h.metadata["step"], h.values) for h in graph.get_state_history(cfg)]

    conn = sqlite3.connect(tmp_path / "lists.db", check_same_thread=False)
    expected = history(SqliteSaver(conn))
    conn.close()
    got = history(new_saver())
    assert got == expected
    assert got[0] == (10, {"items": [9]})
    assert (4, {"items": ["changed", 1, "a", "x", 2**70, None, True]}) in got
