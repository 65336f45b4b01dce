"""``LeaseConformance``: the contract tests of leases and guarded writes.

Part of `SaverConformance` (which provides the ``saver``,
``ops`` and ``thread`` fixtures). Lease time is the saver's ``lease_clock``, which
the suite replaces with a clock it moves by hand, so nothing sleeps; a saver timed
by its database's clock sets ``clock_source = "database"`` in its test class, and
the few tests that let a lease expire then wait for it (ttl 0.2 s).

The guarded-write tests run only for a saver whose ``supports_leases`` is true.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar, Literal, TypedDict

import pytest

from pausepoint.checkpoint.base import (
    BaseCheckpointSaver,
    CheckpointPut,
    CheckpointRef,
    LeaseClaim,
    PendingWrite,
    TaskWrites,
)
from pausepoint.config import RunnableConfig
from pausepoint.drivers.owners import claim_kwargs
from pausepoint.errors import LeaseLostError, StaleCheckpointError
from pausepoint.testing._records import chain, config_for, id_of, make_checkpoint, make_metadata
from pausepoint.testing.ops import Job, SaverOps

__all__ = ["LeaseConformance", "LeaseTime"]

LONG = 60.0
"""A ttl no test outlives."""


class _Releasing(TypedDict):
    """The guard keywords of a write that releases the lease it holds."""

    lease: str
    release: bool


MANY = [(f"c{n}", n) for n in range(1234)]
"""More writes than one statement of the PostgreSQL saver takes."""


class LeaseTime:
    """The time leases are judged by, as a test moves it.

    Args:
        saver: The saver under test.
        source: ``"saver"``: the saver's ``lease_clock`` is replaced by a clock that
            moves only when the test says; ``"database"``: real time passes.
    """

    def __init__(self, saver: BaseCheckpointSaver, source: Literal["saver", "database"]) -> None:
        self.manual = source == "saver"
        self.now = time.time()
        self.short = 5.0 if self.manual else 0.2
        """A ttl that `expire` outlives."""
        if self.manual:
            saver.lease_clock = self._read

    def _read(self) -> float:
        return self.now

    async def tick(self) -> None:
        """Let a little time pass (a second by hand; 10 ms of real time)."""
        if self.manual:
            self.now += 1.0
        else:
            await asyncio.sleep(0.01)

    async def expire(self) -> None:
        """Let every lease taken with ttl `short` run out."""
        if self.manual:
            self.now += self.short * 1.5
        else:
            await asyncio.sleep(self.short * 1.5)

    def check(self, expires_at: float, ttl: float) -> None:
        """By hand: the expiry is exactly now + ttl (a database's clock is not ours)."""
        if self.manual:
            assert expires_at == self.now + ttl


async def _stored(ops: SaverOps, thread: str) -> list[tuple[str, list[PendingWrite]]]:
    """Every checkpoint id of the thread (all namespaces) with its pending writes."""
    rows = await ops.list({"configurable": {"thread_id": thread}})
    return [(t.checkpoint["id"], list(t.pending_writes or [])) for t in rows]


class LeaseConformance:
    """Lease and guarded-write tests (mixed into ``SaverConformance``)."""

    clock_source: ClassVar[Literal["saver", "database"]] = "saver"
    """Whose clock times leases: the saver's ``lease_clock`` or the database's."""

    @pytest.fixture
    def lease_time(self, saver: BaseCheckpointSaver) -> LeaseTime:
        """Lease time for the test (see `LeaseTime`)."""
        return LeaseTime(saver, self.clock_source)

    @pytest.fixture
    def fencing(self, saver: BaseCheckpointSaver) -> None:
        """Skip the test unless the saver fences writes."""
        if not saver.supports_leases:
            pytest.skip("supports_leases is false: the saver's writes take no guards")

    @pytest.fixture
    def reading(self, saver: BaseCheckpointSaver, ops: SaverOps) -> None:
        """Skip the test unless the saver's ``acquire_lease`` takes ``read=``."""
        if not claim_kwargs(saver, CheckpointRef("any"), ops.lease_method):
            pytest.skip("acquire_lease takes no read=: the engine reads with get_tuple")

    @pytest.mark.asyncio
    async def test_lease_is_taken_once_and_renewed_by_its_owner(
        self, ops: SaverOps, thread: str, lease_time: LeaseTime
    ) -> None:
        """One owner takes a free lease; another cannot; the owner's acquire renews it."""
        assert await ops.get_lease(thread) is None
        claim = await ops.acquire_lease(thread, "A", LONG)
        assert claim.acquired
        assert (claim.holder.thread_id, claim.holder.owner) == (thread, "A")
        lease_time.check(claim.holder.expires_at, LONG)
        other = await ops.acquire_lease(thread, "B", LONG)
        assert not other.acquired
        assert other.holder == claim.holder
        await lease_time.tick()
        again = await ops.acquire_lease(thread, "A", LONG)
        assert again.acquired
        assert again.holder.expires_at > claim.holder.expires_at
        lease_time.check(again.holder.expires_at, LONG)
        assert await ops.get_lease(thread) == again.holder

    @pytest.mark.asyncio
    async def test_renew_lease(self, ops: SaverOps, thread: str, lease_time: LeaseTime) -> None:
        """Only the owner renews, by the lease's ttl or a new one, expired or not.

        An expired lease that nobody took over is still its owner's: renewing it (as
        each fenced write does) makes it live again.
        """
        claim = await ops.acquire_lease(thread, "A", LONG)
        await lease_time.tick()
        assert await ops.renew_lease(thread, "A")
        renewed = await ops.get_lease(thread)
        assert renewed is not None
        assert renewed.expires_at > claim.holder.expires_at
        lease_time.check(renewed.expires_at, LONG)
        assert not await ops.renew_lease(thread, "B")
        assert await ops.get_lease(thread) == renewed
        assert await ops.renew_lease(thread, "A", lease_time.short)
        shortened = await ops.get_lease(thread)
        assert shortened is not None
        lease_time.check(shortened.expires_at, lease_time.short)
        await lease_time.expire()
        assert await ops.get_lease(thread) is None  # expired: anyone may take it now
        assert await ops.renew_lease(thread, "A")
        assert await ops.get_lease(thread) is not None
        assert not await ops.renew_lease(thread + "-never", "A")

    @pytest.mark.asyncio
    async def test_release_lease(self, ops: SaverOps, thread: str) -> None:
        """Only the owner releases; a release of a lease not held does nothing."""
        await ops.acquire_lease(thread, "A", LONG)
        assert not await ops.release_lease(thread, "B")
        held = await ops.get_lease(thread)
        assert held is not None
        assert held.owner == "A"
        assert not await ops.release_lease(thread, "A")  # held, never nudged
        assert await ops.get_lease(thread) is None
        assert not await ops.release_lease(thread, "A")
        assert (await ops.acquire_lease(thread, "B", LONG)).acquired

    @pytest.mark.asyncio
    async def test_nudge_marks_the_holder_and_is_told_on_release(
        self, ops: SaverOps, thread: str
    ) -> None:
        """A refused ``nudge=True`` marks the live lease; its release returns true."""
        await ops.acquire_lease(thread, "A", LONG)
        assert not (await ops.acquire_lease(thread, "C", LONG)).acquired  # no nudge
        nudged = await ops.acquire_lease(thread, "B", LONG, nudge=True)
        assert not nudged.acquired
        assert nudged.holder.owner == "A"
        assert await ops.renew_lease(thread, "A")
        assert (await ops.acquire_lease(thread, "A", LONG)).acquired  # keeps the nudge
        assert await ops.release_lease(thread, "A")
        assert (await ops.acquire_lease(thread, "B", LONG)).acquired  # starts un-nudged
        assert not await ops.release_lease(thread, "B")

    @pytest.mark.asyncio
    async def test_an_expired_lease_is_taken_over(
        self, ops: SaverOps, thread: str, lease_time: LeaseTime
    ) -> None:
        """After expiry anyone takes the lease, un-nudged; the old owner has lost it."""
        await ops.acquire_lease(thread, "A", lease_time.short)
        if lease_time.manual:  # a real 0.2 s lease might run out before the nudge
            assert not (await ops.acquire_lease(thread, "C", LONG, nudge=True)).acquired
        await lease_time.expire()
        assert await ops.get_lease(thread) is None
        claim = await ops.acquire_lease(thread, "B", LONG)
        assert claim.acquired
        assert claim.holder.owner == "B"
        assert not await ops.renew_lease(thread, "A")
        assert not await ops.release_lease(thread, "A")
        assert await ops.get_lease(thread) == claim.holder
        assert not await ops.release_lease(thread, "B")
        await ops.acquire_lease(thread, "A", lease_time.short)
        await lease_time.expire()
        assert (await ops.acquire_lease(thread, "A", LONG)).acquired  # its own, again

    @pytest.mark.asyncio
    async def test_lease_arguments_are_checked(self, ops: SaverOps, thread: str) -> None:
        """A ttl or owner a lease cannot have is a ValueError, and changes nothing."""
        bad_ttls: list[Any] = [0, -1.0, float("nan"), float("inf"), "5", True, None]
        for ttl in bad_ttls:
            with pytest.raises(ValueError, match="ttl"):
                await ops.acquire_lease(thread, "A", ttl)
        bad_owners: list[Any] = ["", None, 5]
        for owner in bad_owners:
            with pytest.raises(ValueError, match="owner"):
                await ops.acquire_lease(thread, owner, LONG)
        await ops.acquire_lease(thread, "A", LONG)
        with pytest.raises(ValueError, match="ttl"):
            await ops.renew_lease(thread, "A", 0)
        held = await ops.get_lease(thread)
        assert held is not None
        assert held.owner == "A"

    @pytest.mark.asyncio
    async def test_concurrent_acquires_have_one_winner(self, ops: SaverOps, thread: str) -> None:
        """Eight callers at once: exactly one gets the lease, all see the same holder."""
        claims: list[LeaseClaim] = []

        def job(n: int) -> Job:
            async def run() -> None:
                claims.append(await ops.acquire_lease(thread, f"w{n}", LONG))

            return run

        await ops.concurrently([job(n) for n in range(8)])
        winners = [c for c in claims if c.acquired]
        assert len(winners) == 1
        assert {c.holder for c in claims} == {winners[0].holder}

    @pytest.mark.asyncio
    @pytest.mark.usefixtures("fencing")
    async def test_fenced_writes_store_and_renew(
        self, ops: SaverOps, thread: str, lease_time: LeaseTime
    ) -> None:
        """Every write method stores under the owner's lease and renews it."""
        claim = await ops.acquire_lease(thread, "A", LONG)
        await lease_time.tick()
        (root,) = await chain(ops, thread, 1, lease="A")
        renewed = await ops.get_lease(thread)
        assert renewed is not None
        assert renewed.expires_at > claim.holder.expires_at
        lease_time.check(renewed.expires_at, LONG)
        await ops.put_writes(root, [("a", 1)], "task-1", lease="A")
        await ops.put_writes(root, MANY, "task-2", lease="A")
        step = [TaskWrites("task-3", [("b", 2)])]
        child = await ops.put_after_writes(
            root, step, make_checkpoint({"n": 1}), make_metadata(1), lease="A"
        )
        first = CheckpointPut(make_checkpoint({"n": 2}), make_metadata(2, "input"), {})
        second = CheckpointPut(make_checkpoint({"n": 3}), make_metadata(3), {})
        last = await ops.put_pair(child, first, [TaskWrites("task-4", MANY)], second, lease="A")
        stored = await _stored(ops, thread)
        assert [cid for cid, _ in stored] == [
            id_of(last),
            first.checkpoint["id"],
            id_of(child),
            id_of(root),
        ]
        assert len(stored[1][1]) == len(MANY)
        assert len(stored[3][1]) == 2 + len(MANY)

    @pytest.mark.asyncio
    @pytest.mark.usefixtures("fencing")
    async def test_fenced_writes_after_a_takeover_write_nothing(
        self, ops: SaverOps, thread: str, lease_time: LeaseTime
    ) -> None:
        """A run whose lease was taken over cannot write, by any method; nothing changes."""
        (root,) = await chain(ops, thread, 1)
        await ops.put_writes(root, [("a", 1)], "task-1")
        await ops.acquire_lease(thread, "A", lease_time.short)
        await lease_time.expire()
        claim = await ops.acquire_lease(thread, "B", LONG)
        before = await _stored(ops, thread)
        for attempt in _every_write(ops, root, "A"):
            with pytest.raises(LeaseLostError) as info:
                await attempt()
            assert info.value.holder == claim.holder
            for part in (repr(thread), "'A'", "held by 'B'", "nothing was written"):
                assert part in str(info.value)
            assert await _stored(ops, thread) == before
        assert await ops.get_lease(thread) == claim.holder

    @pytest.mark.asyncio
    @pytest.mark.usefixtures("fencing")
    async def test_fenced_writes_without_a_lease_write_nothing(
        self, ops: SaverOps, thread: str, lease_time: LeaseTime
    ) -> None:
        """No lease at all fences writes out; an expired one nobody took over does not.

        Its owner is still the only writer: the write goes through and renews it.
        """
        (root,) = await chain(ops, thread, 1)
        await ops.acquire_lease(thread, "A", lease_time.short)
        await lease_time.expire()
        await ops.put_writes(root, [("a", 1)], "task-1", lease="A")
        assert await ops.get_lease(thread) is not None  # renewed by the write
        before = await _stored(ops, thread)
        await ops.release_lease(thread, "A")
        for attempt in _every_write(ops, root, "A"):
            with pytest.raises(LeaseLostError, match="no run holds its lease") as info:
                await attempt()
            assert info.value.holder is None
        assert await _stored(ops, thread) == before
        assert await ops.get_lease(thread) is None

    @pytest.mark.asyncio
    @pytest.mark.usefixtures("fencing")
    async def test_a_releasing_write_stores_and_lets_the_lease_go(
        self, ops: SaverOps, thread: str
    ) -> None:
        """``release=True``: the write is stored and the lease is gone, by each method."""
        (root,) = await chain(ops, thread, 1)
        step = [TaskWrites("task-9", [("c", 3)])]
        kw: _Releasing = {"lease": "A", "release": True}
        new, after = make_checkpoint({"n": 1}), make_checkpoint({"n": 2})
        writes: list[Callable[[], Awaitable[object]]] = [
            lambda: ops.put(root, new, make_metadata(1), **kw),
            lambda: ops.put_writes(root, [("b", 2)], "task-2", **kw),
            lambda: ops.put_writes(root, MANY, "task-3", **kw),
            lambda: ops.put_after_writes(root, step, after, make_metadata(1), **kw),
        ]
        for write in writes:
            assert (await ops.acquire_lease(thread, "A", LONG)).acquired
            before = await _stored(ops, thread)
            await write()
            assert await _stored(ops, thread) != before
            assert await ops.get_lease(thread) is None
            # Gone, not expired: another owner takes the thread at once.
            assert (await ops.acquire_lease(thread, "B", LONG)).acquired
            await ops.release_lease(thread, "B")

    @pytest.mark.asyncio
    @pytest.mark.usefixtures("fencing")
    async def test_a_releasing_write_without_the_lease_writes_and_releases_nothing(
        self, ops: SaverOps, thread: str
    ) -> None:
        """A releasing write by a run that lost its lease: nothing written, the lease stays."""
        (root,) = await chain(ops, thread, 1)
        claim = await ops.acquire_lease(thread, "B", LONG)
        before = await _stored(ops, thread)
        attempts = [
            lambda: ops.put(
                root, make_checkpoint({"n": 1}), make_metadata(1), lease="A", release=True
            ),
            lambda: ops.put_writes(root, [("b", 2)], "t", lease="A", release=True),
            lambda: ops.put_writes(root, MANY, "t", lease="A", release=True),
        ]
        for attempt in attempts:
            with pytest.raises(LeaseLostError):
                await attempt()
            assert await _stored(ops, thread) == before
            assert await ops.get_lease(thread) == claim.holder
        with pytest.raises(ValueError, match="needs lease=owner"):
            await ops.put_writes(root, [("b", 2)], "t", release=True)
        assert await _stored(ops, thread) == before

    @pytest.mark.asyncio
    @pytest.mark.usefixtures("fencing")
    async def test_if_head_writes_only_to_the_newest_checkpoint(
        self, ops: SaverOps, thread: str
    ) -> None:
        """``if_head`` writes to the head of its namespace, else raises and writes nothing."""
        first, second = await chain(ops, thread, 2)
        await ops.put_writes(first, [("a", 1)], "task-1")
        before = await _stored(ops, thread)
        for writes in ([("answer", "yes")], MANY):
            with pytest.raises(StaleCheckpointError) as info:
                await ops.put_writes(first, writes, "task-2", if_head=True)
            assert info.value.head == id_of(second)
            assert id_of(second) in str(info.value)
            assert "nothing was written" in str(info.value)
            assert await _stored(ops, thread) == before
        await ops.put_writes(second, [("answer", "yes")], "task-2", if_head=True)
        await ops.put_writes(second, MANY, "task-3", if_head=True)
        await chain(ops, thread, 1, ns="child:1")  # another namespace's head is its own
        await ops.put_writes(second, [("more", 1)], "task-4", if_head=True)
        got = await ops.get_tuple(second)
        assert got is not None
        assert len(got.pending_writes or []) == 2 + len(MANY)

    @pytest.mark.asyncio
    @pytest.mark.usefixtures("fencing")
    async def test_if_head_with_a_lease_checks_both(self, ops: SaverOps, thread: str) -> None:
        """Both guards at once: a lost lease or a stale checkpoint refuses the write."""
        first, second = await chain(ops, thread, 2)
        await ops.acquire_lease(thread, "A", LONG)
        await ops.put_writes(second, [("answer", 1)], "task-1", lease="A", if_head=True)
        with pytest.raises(StaleCheckpointError):
            await ops.put_writes(first, [("answer", 2)], "task-2", lease="A", if_head=True)
        with pytest.raises(LeaseLostError):
            await ops.put_writes(second, [("answer", 3)], "task-3", lease="B", if_head=True)
        got = await ops.get_tuple(config_for(thread))
        assert got is not None
        assert [w.value for w in got.pending_writes or []] == [1]
        await ops.delete_thread(thread)
        with pytest.raises(StaleCheckpointError, match="no checkpoint at all") as info:
            await ops.put_writes(second, [("answer", 4)], "task-4", if_head=True)
        assert info.value.head is None

    @pytest.mark.asyncio
    @pytest.mark.usefixtures("fencing")
    async def test_leases_are_per_thread_and_deleted_with_it(
        self, ops: SaverOps, thread: str
    ) -> None:
        """Each thread has its own lease; ``delete_thread`` removes the thread's."""
        other = thread + "-other"
        assert (await ops.acquire_lease(thread, "A", LONG)).acquired
        assert (await ops.acquire_lease(other, "B", LONG)).acquired
        await chain(ops, thread, 1, lease="A")
        await ops.delete_thread(thread)
        assert await ops.get_lease(thread) is None
        held = await ops.get_lease(other)
        assert held is not None
        assert held.owner == "B"
        await ops.delete_thread(other)

    @pytest.mark.asyncio
    @pytest.mark.usefixtures("reading")
    async def test_a_claim_reads_what_get_tuple_reads(self, ops: SaverOps, thread: str) -> None:
        """``read=``: the newest or a named checkpoint, with its writes; only if acquired."""
        empty = await ops.acquire_lease(thread, "A", LONG, read=config_for(thread))
        assert (empty.acquired, empty.read, empty.checkpoint) == (True, True, None)
        first, second = await chain(ops, thread, 2, lease="A")
        await ops.put_writes(second, [("a", 1), ("b", 2)], "task-1", lease="A")
        await ops.release_lease(thread, "A")
        for config in (config_for(thread), first, second):
            # As a config dict (a caller's) and as a CheckpointRef (the engine's).
            for read in (config, CheckpointRef.of(config)):
                claim = await ops.acquire_lease(thread, "B", LONG, read=read)
                assert (claim.acquired, claim.read) == (True, True)
                assert claim.checkpoint == await ops.get_tuple(config)
        busy = await ops.acquire_lease(thread, "C", LONG, read=config_for(thread))
        assert (busy.acquired, busy.read, busy.checkpoint) == (False, False, None)
        with pytest.raises(ValueError, match="must read the thread it takes"):
            await ops.acquire_lease(thread, "B", LONG, read=config_for(thread + "-other"))

    @pytest.mark.asyncio
    @pytest.mark.usefixtures("reading")
    async def test_a_claim_reads_every_write_of_the_runs_before_it(
        self, ops: SaverOps, thread: str
    ) -> None:
        """Runs one after another: each claim's read shows the last run's last write."""
        (head,) = await chain(ops, thread, 1)
        for n, owner in enumerate(["A", "B", "A", "C"]):
            claim = await ops.acquire_lease(thread, owner, LONG, read=config_for(thread))
            assert claim.checkpoint is not None
            assert claim.checkpoint.config == head
            assert [w.value for w in claim.checkpoint.pending_writes or []] == [n - 1] * (n > 0)
            step = [TaskWrites("task-1", [("n", n)])]
            after = await ops.put_after_writes(
                head, step, make_checkpoint({"n": n}), make_metadata(n), lease=owner
            )
            await ops.put_writes(after, [("n", n)], "task-2", lease=owner, release=True)
            head = after
            assert await ops.get_lease(thread) is None


def _every_write(
    ops: SaverOps, root: RunnableConfig, owner: str
) -> list[Callable[[], Awaitable[object]]]:
    """Each write method called with ``lease=owner`` on ``root``, as thunks."""

    def put_pair() -> Awaitable[RunnableConfig]:
        first = CheckpointPut(make_checkpoint({"n": 1}), make_metadata(1, "input"), {})
        second = CheckpointPut(make_checkpoint({"n": 2}), make_metadata(2), {})
        return ops.put_pair(root, first, [TaskWrites("t", [("d", 4)])], second, lease=owner)

    def after(writes: Sequence[tuple[str, object]]) -> Callable[[], Awaitable[RunnableConfig]]:
        step = [TaskWrites("task-9", writes)]
        return lambda: ops.put_after_writes(
            root, step, make_checkpoint({"n": 1}), make_metadata(1), lease=owner
        )

    return [
        lambda: ops.put(root, make_checkpoint({"n": 1}), make_metadata(1), lease=owner),
        lambda: ops.put_writes(root, [("b", 2)], "task-2", lease=owner),
        lambda: ops.put_writes(root, MANY, "task-3", lease=owner),
        after([("c", 3)]),
        after(MANY),
        put_pair,
    ]
