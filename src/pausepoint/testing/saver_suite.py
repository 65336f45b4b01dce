"""``SaverConformance``: the contract tests every saver must pass.

Subclass it in a test module and provide a ``saver`` fixture; every test then runs
through the sync methods and through the async ones (drop a mode with ``modes``)::

    class TestMySaver(SaverConformance):
        @pytest.fixture
        def saver(self, tmp_path):
            with MySaver.from_conn_string(tmp_path / "db") as saver:
                yield saver

Needs pytest and pytest-asyncio. Thread ids are unique per test, so savers on a
shared database do not see each other's data.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any, ClassVar

import pytest

from pausepoint.checkpoint.base import (
    BaseCheckpointSaver,
    CheckpointPut,
    PendingWrite,
    StepCommit,
    TaskWrites,
)
from pausepoint.checkpoint.ids import new_checkpoint_id
from pausepoint.constants import ERROR, INTERRUPT, RESUME, SCHEDULED
from pausepoint.testing._records import chain as _chain
from pausepoint.testing._records import config_for as _config
from pausepoint.testing._records import id_of as _id
from pausepoint.testing._records import make_checkpoint, make_metadata
from pausepoint.testing.lease_suite import LeaseConformance
from pausepoint.testing.ops import AsyncOps, Job, SaverOps, SyncOps
from pausepoint.types import Interrupt, Send

__all__ = ["SaverConformance", "make_checkpoint", "make_metadata"]


RICH_VALUES: dict[str, object] = {
    "text": "héllo ✓",
    "tuple": (1, (2, 3)),
    "set": {1, 2},
    "bytes": b"\x00\xff",
    "int_keys": {1: "a", (2, 3): frozenset({4})},
    "when": datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.UTC),
    "id": uuid.UUID(int=7),
    "nan_free": [1.5, -0.0, None, True],
    "interrupt": Interrupt("approve?", "a" * 32),
    "send": Send("node", {"x": 1}),
}


class SaverConformance(LeaseConformance):
    """Contract tests for a saver; subclass it and define the ``saver`` fixture.

    The lease tests (`LeaseConformance`) come
    with it.
    """

    modes: ClassVar[tuple[str, ...]] = ("sync", "async")
    """Which method families to test: ``"sync"``, ``"async"`` or both."""

    atomic: ClassVar[bool] = True
    """Whether a commit of several parts is all or nothing: false for a saver that
    relies on ``BaseCheckpointSaver``'s ``commit``, made of ``put_writes`` and ``put``."""

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """Run each test once per mode in [`modes`][]."""
        if "mode" in metafunc.fixturenames:
            metafunc.parametrize("mode", self.modes)

    @pytest.fixture
    def saver(self) -> BaseCheckpointSaver:
        """The saver under test: override this fixture in the subclass."""
        raise NotImplementedError("define a 'saver' fixture in the SaverConformance subclass")

    @pytest.fixture
    def ops(self, saver: BaseCheckpointSaver, mode: str) -> SaverOps:
        """The saver seen through its sync or async methods."""
        return SyncOps(saver) if mode == "sync" else AsyncOps(saver)

    @pytest.fixture
    def thread(self) -> str:
        """A thread id no other test uses."""
        return f"t-{uuid.uuid4().hex}"

    @pytest.mark.asyncio
    async def test_empty_thread_has_nothing(self, ops: SaverOps, thread: str) -> None:
        """A thread never written has no checkpoint, tuple or history."""
        assert await ops.get_tuple(_config(thread)) is None
        assert await ops.get(_config(thread)) is None
        assert await ops.list(_config(thread)) == []

    @pytest.mark.asyncio
    async def test_put_returns_config_and_latest_wins(self, ops: SaverOps, thread: str) -> None:
        """``put`` returns the new config; ``get_tuple`` without an id gives the newest."""
        first, second = await _chain(ops, thread, 2)
        assert first.get("configurable", {})["thread_id"] == thread
        assert first.get("configurable", {})["checkpoint_ns"] == ""
        latest = await ops.get_tuple(_config(thread))
        assert latest is not None
        assert latest.config == second
        assert latest.checkpoint["channel_values"] == {"step": 1}
        assert latest.parent_config == first
        by_id = await ops.get_tuple(first)
        assert by_id is not None
        assert by_id.checkpoint["channel_values"] == {"step": 0}
        assert by_id.parent_config is None
        assert await ops.get_tuple(_config(thread, checkpoint_id=new_checkpoint_id())) is None

    @pytest.mark.asyncio
    async def test_values_and_metadata_round_trip(self, ops: SaverOps, thread: str) -> None:
        """Channel values (with their exact types) and metadata read back equal."""
        checkpoint = make_checkpoint(RICH_VALUES, a=3, b=1)
        metadata = make_metadata(4, "update", parents={"": "p"}, user="ann", tags=["x", 1])
        config = await ops.put(_config(thread), checkpoint, metadata)
        got = await ops.get_tuple(config)
        assert got is not None
        assert got.checkpoint == checkpoint
        for key, value in RICH_VALUES.items():
            assert type(got.checkpoint["channel_values"][key]) is type(value), key
        assert got.metadata == metadata
        assert await ops.get(config) == checkpoint

    @pytest.mark.asyncio
    async def test_put_same_id_replaces(self, ops: SaverOps, thread: str) -> None:
        """Putting a checkpoint id again replaces the stored one."""
        checkpoint = make_checkpoint({"v": 1})
        config = await ops.put(_config(thread), checkpoint, make_metadata(0))
        checkpoint["channel_values"] = {"v": 2}
        await ops.put(_config(thread), checkpoint, make_metadata(0))
        got = await ops.get_tuple(config)
        assert got is not None
        assert got.checkpoint["channel_values"] == {"v": 2}
        assert len(await ops.list(_config(thread))) == 1

    @pytest.mark.asyncio
    async def test_put_same_id_keeps_its_pending_writes(self, ops: SaverOps, thread: str) -> None:
        """The writes made against a checkpoint survive a put of the same id again.

        As LangGraph's savers keep them (writes are stored apart from checkpoints).
        """
        checkpoint = make_checkpoint({"v": 1})
        config = await ops.put(_config(thread), checkpoint, make_metadata(0))
        await ops.put_writes(config, [("a", 1)], "task-1")
        checkpoint["channel_values"] = {"v": 2}
        await ops.put(_config(thread), checkpoint, make_metadata(0))
        got = await ops.get_tuple(config)
        assert got is not None
        assert got.checkpoint["channel_values"] == {"v": 2}
        assert got.pending_writes == [PendingWrite("task-1", "a", 1)]

    @pytest.mark.asyncio
    async def test_list_newest_first_limit_before(self, ops: SaverOps, thread: str) -> None:
        """``list`` is newest first and honours ``limit``, ``before`` and a checkpoint id."""
        configs = await _chain(ops, thread, 5)
        newest_first = [_id(c) for c in reversed(configs)]
        assert [_id(t.config) for t in await ops.list(_config(thread))] == newest_first
        assert [_id(t.config) for t in await ops.list(_config(thread), limit=2)] == newest_first[:2]
        older = await ops.list(_config(thread), before=configs[3])
        assert [_id(t.config) for t in older] == newest_first[2:]
        older_limited = await ops.list(_config(thread), before=configs[3], limit=1)
        assert [_id(t.config) for t in older_limited] == [newest_first[2]]
        one = await ops.list(configs[1])
        assert [_id(t.config) for t in one] == [_id(configs[1])]

    @pytest.mark.asyncio
    async def test_list_filter(self, ops: SaverOps, thread: str) -> None:
        """Metadata filters match by key equality, a missing key equalling None."""
        parent = _config(thread)
        for step, source in enumerate(["input", "loop", "loop", "update"]):
            meta = make_metadata(step, source, user="ann" if step % 2 else "bob", flags=[step])
            parent = await ops.put(parent, make_checkpoint(), meta)
        conf = _config(thread)

        async def steps(**filter: object) -> list[int | None]:
            rows = await ops.list(conf, filter=filter)
            return [t.metadata.get("step") for t in rows]

        assert await steps(source="loop") == [2, 1]
        assert await steps(source="loop", step=1) == [1]
        assert await steps(user="ann") == [3, 1]
        assert await steps(flags=[2]) == [2]
        assert await steps(source="fork") == []
        assert await steps(missing=None) == [3, 2, 1, 0]
        assert len(await ops.list(conf, filter={"user": "bob"}, limit=1)) == 1
        assert len(await ops.list(conf, filter={"flags": [0]}, limit=1)) == 1

    @pytest.mark.asyncio
    async def test_list_spans_threads_without_config(self, ops: SaverOps, thread: str) -> None:
        """``list(None)`` covers every thread, newest first."""
        other = thread + "-other"
        mine = await _chain(ops, thread, 1)
        theirs = await _chain(ops, other, 1)
        ids = [_id(t.config) for t in await ops.list(None)]
        assert _id(mine[0]) in ids
        assert _id(theirs[0]) in ids
        assert ids.index(_id(theirs[0])) < ids.index(_id(mine[0]))
        await ops.delete_thread(other)

    @pytest.mark.asyncio
    async def test_namespaces_are_separate(self, ops: SaverOps, thread: str) -> None:
        """Each namespace has its own latest checkpoint; no ns in ``list`` means all."""
        root = await _chain(ops, thread, 2)
        sub = await _chain(ops, thread, 1, ns="child:abc")
        latest_root = await ops.get_tuple(_config(thread))
        latest_sub = await ops.get_tuple(_config(thread, "child:abc"))
        assert latest_root is not None
        assert latest_sub is not None
        assert latest_root.config == root[1]
        assert latest_sub.config == sub[0]
        assert len(await ops.list(_config(thread, "child:abc"))) == 1
        every_ns = await ops.list({"configurable": {"thread_id": thread}})
        assert len(every_ns) == 3

    @pytest.mark.asyncio
    async def test_ordinary_writes_are_inserted_once(self, ops: SaverOps, thread: str) -> None:
        """Ordinary writes are idempotent: a second copy is ignored."""
        (config,) = await _chain(ops, thread, 1)
        await ops.put_writes(config, [("a", 1), ("b", 2)], "task-1")
        await ops.put_writes(config, [("a", 10), ("b", 20)], "task-1")
        got = await ops.get_tuple(config)
        assert got is not None
        assert got.pending_writes == [
            PendingWrite("task-1", "a", 1),
            PendingWrite("task-1", "b", 2),
        ]
        task_id, channel, value = (got.pending_writes or [])[0]  # unpacks like a 3-tuple
        assert (task_id, channel, value) == ("task-1", "a", 1)

    @pytest.mark.asyncio
    async def test_special_writes_are_upserted(self, ops: SaverOps, thread: str) -> None:
        """Special writes (error, scheduled, interrupt, resume) keep the newest value."""
        (config,) = await _chain(ops, thread, 1)
        interrupt = Interrupt("q", "b" * 32)
        await ops.put_writes(config, [(INTERRUPT, (interrupt,)), (SCHEDULED, None)], "task-1")
        await ops.put_writes(config, [(ERROR, ValueError("boom"))], "task-1")
        await ops.put_writes(config, [(INTERRUPT, ()), (RESUME, ["yes"])], "task-1")
        got = await ops.get_tuple(config)
        assert got is not None
        writes = {(w.task_id, w.channel): w.value for w in got.pending_writes or []}
        assert writes[("task-1", INTERRUPT)] == ()
        assert writes[("task-1", RESUME)] == ["yes"]
        assert writes[("task-1", SCHEDULED)] is None
        assert "boom" in str(writes[("task-1", ERROR)])
        assert len(got.pending_writes or []) == 4

    @pytest.mark.asyncio
    async def test_writes_keep_insertion_order(self, ops: SaverOps, thread: str) -> None:
        """Pending writes come back in the order they were first saved."""
        (config,) = await _chain(ops, thread, 1)
        await ops.put_writes(config, [("x", "b0"), ("y", "b1")], "task-b")
        await ops.put_writes(config, [("x", "a0")], "task-a")
        await ops.put_writes(config, [(INTERRUPT, "i"), ("z", "b2")], "task-c")
        got = await ops.get_tuple(config)
        assert got is not None
        order = [(w.task_id, w.value) for w in got.pending_writes or []]
        expected = [("task-b", "b0"), ("task-b", "b1"), ("task-a", "a0")]
        assert order == [*expected, ("task-c", "i"), ("task-c", "b2")]

    @pytest.mark.asyncio
    async def test_many_writes_and_repeated_special_writes(
        self, ops: SaverOps, thread: str
    ) -> None:
        """Many writes in one call keep their order; a repeated special write keeps both.

        Both meaning: its first position and its last value.
        """
        (config,) = await _chain(ops, thread, 1)
        many = [(f"c{n}", n) for n in range(1234)]
        await ops.put_writes(config, [*many, (ERROR, "first"), (ERROR, "last")], "task-1")
        got = await ops.get_tuple(config)
        assert got is not None
        writes = got.pending_writes or []
        assert [(w.channel, w.value) for w in writes[:-1]] == many
        assert writes[-1].channel == ERROR
        assert "last" in str(writes[-1].value)

    @pytest.mark.asyncio
    async def test_put_after_writes_is_writes_then_put(self, ops: SaverOps, thread: str) -> None:
        """``put_after_writes`` stores what ``put_writes`` for each, then ``put`` would."""
        (config,) = await _chain(ops, thread, 1)
        await ops.put_writes(config, [("a", 1)], "task-1")
        child = make_checkpoint({"a": 2}, a=2)
        writes = [
            TaskWrites("task-1", [("a", 10), (INTERRUPT, ()), ("b", 2)]),
            TaskWrites("task-2", [("c", [3]), (ERROR, "first")], "path"),
            TaskWrites("task-2", [(ERROR, "last")]),
        ]
        got_config = await ops.put_after_writes(config, writes, child, make_metadata(1))
        assert got_config == _config(thread, "", child["id"])
        parent = await ops.get_tuple(config)
        assert parent is not None
        assert [(w.task_id, w.channel) for w in parent.pending_writes or []] == [
            ("task-1", "a"),
            ("task-1", INTERRUPT),
            ("task-1", "b"),
            ("task-2", "c"),
            ("task-2", ERROR),
        ]
        values = {(w.task_id, w.channel): w.value for w in parent.pending_writes or []}
        assert values[("task-1", "a")] == 1  # an ordinary write is kept once
        assert values[("task-2", "c")] == [3]
        assert "last" in str(values[("task-2", ERROR)])  # a special one is replaced
        latest = await ops.get_tuple(_config(thread))
        assert latest is not None
        assert latest.checkpoint["id"] == child["id"]
        assert latest.checkpoint["channel_values"] == {"a": 2}
        assert latest.parent_config == config
        assert latest.pending_writes == []

    @pytest.mark.asyncio
    async def test_put_after_writes_refuses_a_bad_value_and_changes_nothing(
        self, ops: SaverOps, thread: str
    ) -> None:
        """A write or a checkpoint value that cannot be stored leaves the thread as it was."""
        if not self.atomic:
            pytest.skip("the saver's commits are not all or nothing")
        (config,) = await _chain(ops, thread, 1)
        many = [(f"c{n}", n) for n in range(1234)]
        for writes, checkpoint in (
            ([TaskWrites("task-1", [*many, ("bad", object())])], make_checkpoint({"a": 1})),
            ([TaskWrites("task-1", many)], make_checkpoint({"bad": object()})),
        ):
            with pytest.raises(Exception, match="bad"):
                await ops.put_after_writes(config, writes, checkpoint, make_metadata(1))
            got = await ops.get_tuple(_config(thread))
            assert got is not None
            assert got.checkpoint["id"] == _id(config)
            assert got.pending_writes == []

    @pytest.mark.asyncio
    async def test_put_pair_is_put_then_writes_then_put(self, ops: SaverOps, thread: str) -> None:
        """``put_pair``: a checkpoint, then writes against it and a checkpoint after it."""
        (config,) = await _chain(ops, thread, 1)
        first = make_checkpoint({"a": 1}, a=1)
        second = make_checkpoint({"a": 2}, a=2)
        writes = [TaskWrites("task-1", [("a", 2), ("b", None)], "path")]
        got = await ops.put_pair(
            config,
            CheckpointPut(first, make_metadata(1, "input"), {}),
            writes,
            CheckpointPut(second, make_metadata(2), {}),
        )
        assert got == _config(thread, "", second["id"])
        middle = await ops.get_tuple(_config(thread, "", first["id"]))
        assert middle is not None
        assert middle.parent_config == config
        assert middle.metadata.get("source") == "input"
        assert middle.checkpoint["channel_values"] == {"a": 1}
        assert [(w.task_id, w.channel, w.value) for w in middle.pending_writes or []] == [
            ("task-1", "a", 2),
            ("task-1", "b", None),
        ]
        latest = await ops.get_tuple(_config(thread))
        assert latest is not None
        assert latest.checkpoint["id"] == second["id"]
        assert latest.parent_config == _config(thread, "", first["id"])
        assert latest.metadata.get("step") == 2
        assert latest.pending_writes == []

    @pytest.mark.asyncio
    async def test_put_pair_refuses_a_bad_value_and_changes_nothing(
        self, ops: SaverOps, thread: str
    ) -> None:
        """One value that cannot be stored stores neither checkpoint, nor the writes."""
        if not self.atomic:
            pytest.skip("the saver's commits are not all or nothing")
        (config,) = await _chain(ops, thread, 1)
        good = [TaskWrites("task-1", [("a", 1)])]
        for first, writes, second in (
            (make_checkpoint({"bad": object()}), good, make_checkpoint({"a": 1})),
            (make_checkpoint({"a": 1}), [TaskWrites("t", [("bad", object())])], make_checkpoint()),
            (make_checkpoint({"a": 1}), good, make_checkpoint({"bad": object()})),
        ):
            with pytest.raises(Exception, match="bad"):
                await ops.put_pair(
                    config,
                    CheckpointPut(first, make_metadata(1, "input"), {}),
                    writes,
                    CheckpointPut(second, make_metadata(2), {}),
                )
            assert [_id(t.config) for t in await ops.list(_config(thread))] == [_id(config)]
            assert await ops.get_tuple(_config(thread, "", first["id"])) is None

    @pytest.mark.asyncio
    async def test_commit_stores_its_parts_in_order(self, ops: SaverOps, thread: str) -> None:
        """``commit`` stores its parts in order and returns the last checkpoint's config.

        Writes alone (their own config back), a checkpoint alone, writes then a
        checkpoint with a checkpoint before them.
        """
        (config,) = await _chain(ops, thread, 1)
        alone = StepCommit(config, (TaskWrites("task-1", [("a", 1), (ERROR, "x")], "p"),))
        assert await ops.commit(alone) == config
        c1, c2, c3 = (make_checkpoint({"a": n}, a=n) for n in (1, 2, 3))
        one = await ops.commit(
            StepCommit(config, checkpoint=CheckpointPut(c1, make_metadata(1), {}))
        )
        assert one == _config(thread, "", c1["id"])
        both = StepCommit(
            one,
            (TaskWrites("task-2", [("b", 2)]),),
            CheckpointPut(c3, make_metadata(3), {}),
            CheckpointPut(c2, make_metadata(2, "input"), {}),
        )
        assert await ops.commit(both) == _config(thread, "", c3["id"])
        got = await ops.get_tuple(config)
        assert got is not None
        assert [(w.task_id, w.channel) for w in got.pending_writes or []] == [
            ("task-1", "a"),
            ("task-1", ERROR),
        ]
        middle = await ops.get_tuple(_config(thread, "", c2["id"]))
        assert middle is not None
        assert middle.parent_config == one
        assert middle.pending_writes == [PendingWrite("task-2", "b", 2)]
        latest = await ops.get_tuple(_config(thread))
        assert latest is not None
        assert latest.checkpoint["id"] == c3["id"]
        assert latest.parent_config == _config(thread, "", c2["id"])

    @pytest.mark.asyncio
    async def test_commit_refuses_a_bad_value_and_changes_nothing(
        self, ops: SaverOps, thread: str
    ) -> None:
        """A commit with a value that cannot be stored stores none of its parts."""
        if not self.atomic:
            pytest.skip("the saver's commits are not all or nothing")
        (config,) = await _chain(ops, thread, 1)
        step = StepCommit(
            config,
            (TaskWrites("task-1", [("a", 1)]), TaskWrites("task-2", [("bad", object())])),
            CheckpointPut(make_checkpoint({"a": 1}), make_metadata(1), {}),
        )
        with pytest.raises(Exception, match="bad"):
            await ops.commit(step)
        got = await ops.get_tuple(_config(thread))
        assert got is not None
        assert got.checkpoint["id"] == _id(config)
        assert got.pending_writes == []

    @pytest.mark.asyncio
    async def test_writes_belong_to_their_checkpoint(self, ops: SaverOps, thread: str) -> None:
        """Writes are kept per checkpoint, in ``get_tuple`` and ``list`` alike."""
        first, second = await _chain(ops, thread, 2)
        await ops.put_writes(first, [("a", 1)], "task-1")
        await ops.put_writes(second, [("a", 2)], "task-1")
        got_first = await ops.get_tuple(first)
        got_second = await ops.get_tuple(second)
        assert got_first is not None
        assert got_second is not None
        assert got_first.pending_writes == [PendingWrite("task-1", "a", 1)]
        assert got_second.pending_writes == [PendingWrite("task-1", "a", 2)]
        listed = await ops.list(_config(thread))
        assert [t.pending_writes for t in listed] == [
            [PendingWrite("task-1", "a", 2)],
            [PendingWrite("task-1", "a", 1)],
        ]

    @pytest.mark.asyncio
    async def test_delete_thread(self, ops: SaverOps, thread: str) -> None:
        """``delete_thread`` removes all namespaces and writes of one thread only."""
        other = thread + "-kept"
        (root,) = await _chain(ops, thread, 1)
        await _chain(ops, thread, 1, ns="child:1")
        await ops.put_writes(root, [("a", 1)], "task-1")
        (kept,) = await _chain(ops, other, 1)
        await ops.delete_thread(thread)
        assert await ops.get_tuple(_config(thread)) is None
        assert await ops.get_tuple(_config(thread, "child:1")) is None
        assert await ops.list({"configurable": {"thread_id": thread}}) == []
        # A new checkpoint with the deleted one's id sees none of its old writes.
        same_id = make_checkpoint()
        same_id["id"] = _id(root)
        await ops.put(_config(thread), same_id, make_metadata(0))
        revived = await ops.get_tuple(root)
        assert revived is not None
        assert revived.pending_writes == []
        assert await ops.get_tuple(kept) is not None
        await ops.delete_thread(other)

    @pytest.mark.asyncio
    async def test_concurrent_writers(self, ops: SaverOps, thread: str) -> None:
        """Writers on many threads (or tasks) at once lose nothing."""
        (shared,) = await _chain(ops, thread, 1)
        workers, steps = 6, 4

        def job(n: int) -> Job:
            async def run() -> None:
                await _chain(ops, f"{thread}-w{n}", steps)
                for step in range(steps):
                    await ops.put_writes(shared, [("out", (n, step))], f"task-{n}-{step}")

            return run

        await ops.concurrently([job(n) for n in range(workers)])
        for n in range(workers):
            history = await ops.list(_config(f"{thread}-w{n}"))
            assert [t.metadata.get("step") for t in history] == list(reversed(range(steps)))
            await ops.delete_thread(f"{thread}-w{n}")
        got = await ops.get_tuple(shared)
        assert got is not None
        values = sorted(w.value for w in got.pending_writes or [])
        assert values == sorted((n, s) for n in range(workers) for s in range(steps))

    @pytest.mark.asyncio
    async def test_stored_values_are_not_aliased(self, ops: SaverOps, thread: str) -> None:
        """Mutating put values or returned values never changes what is stored."""
        items: list[Any] = [1, {"k": [2]}]
        checkpoint = make_checkpoint({"items": items})
        config = await ops.put(_config(thread), checkpoint, make_metadata(0))
        write_value: dict[str, list[int]] = {"w": [1]}
        await ops.put_writes(config, [("c", write_value)], "task-1")
        items.append(3)
        items[1]["k"].append(4)
        write_value["w"].append(2)
        checkpoint["channel_values"]["other"] = 1
        got = await ops.get_tuple(config)
        assert got is not None
        assert got.checkpoint["channel_values"] == {"items": [1, {"k": [2]}]}
        assert got.pending_writes == [PendingWrite("task-1", "c", {"w": [1]})]
        got.checkpoint["channel_values"]["items"].append("mutated")
        got.metadata["step"] = 99
        again = await ops.get_tuple(config)
        assert again is not None
        assert again.checkpoint["channel_values"] == {"items": [1, {"k": [2]}]}
        assert again.metadata.get("step") == 0

    @pytest.mark.asyncio
    async def test_get_next_version(self, saver: BaseCheckpointSaver, mode: str) -> None:
        """Versions increase."""
        first = saver.get_next_version(None, "a")
        assert saver.get_next_version(first, "a") > first
