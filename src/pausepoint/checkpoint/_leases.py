"""Leases: what one is, the table kept in process memory, the checks of lease arguments.

`Lease` and `LeaseClaim` live here (``base`` re-exports them) so that ``base`` can
import this module without it importing ``base`` back.

`LocalLeases` is the lease table of ``InMemorySaver`` (sharing the saver's
lock, so a fenced write checks and writes in one step) and the default of
``BaseCheckpointSaver`` (its own lock: within one process only). Its rules are the
ones the SQL savers state in SQL (`pausepoint.checkpoint._sql_leases`); the
conformance suite holds both to them.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from pausepoint.errors import LeaseLostError, StaleCheckpointError

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import CheckpointTuple

__all__ = ["Lease", "LeaseClaim", "LocalLeases", "check_head", "check_lease_args", "check_release"]


@dataclasses.dataclass(frozen=True, slots=True)
class Lease:
    """Who may write to a thread, and until when.

    Attributes:
        thread_id: The thread the lease is on.
        owner: The token of the run holding it (any string the run chose).
        expires_at: When it runs out, in seconds since the epoch by the saver's clock
            (the database's, for PostgreSQL).
    """

    thread_id: str
    owner: str
    expires_at: float


@dataclasses.dataclass(frozen=True, slots=True)
class LeaseClaim:
    """What ``acquire_lease`` did.

    Attributes:
        acquired: Whether the caller holds the lease now (taken, or renewed).
        holder: The lease in force afterwards: the caller's when ``acquired``, else
            the live lease of the run that holds the thread.
        checkpoint: With ``read=config`` and ``acquired``: what ``get_tuple(config)``
            returns once the lease is held (None: no such checkpoint).
        read: Whether ``checkpoint`` holds that read (a saver that cannot fold the
            read into the claim leaves it False; so does a claim not acquired).
    """

    acquired: bool
    holder: Lease
    checkpoint: CheckpointTuple | None = None
    read: bool = False


Clock = Callable[[], float]


def check_lease_args(owner: object, ttl: object, *, ttl_optional: bool = False) -> None:
    """Raise a clear error for an owner token or a ttl that a lease cannot have."""
    if not isinstance(owner, str) or not owner:
        raise ValueError(
            f"a lease owner must be a non-empty string naming the run (a uuid4 hex, say); "
            f"got {owner!r}"
        )
    if ttl is None and ttl_optional:
        return
    if (
        isinstance(ttl, bool)
        or not isinstance(ttl, int | float)
        or not math.isfinite(ttl)
        or ttl <= 0
    ):
        raise ValueError(f"a lease's ttl must be a positive, finite number of seconds; got {ttl!r}")


def check_release(lease: str | None, release: bool) -> None:
    """Raise a clear error for a write asked to let go of a lease it names no owner of."""
    if release and lease is None:
        raise ValueError("a write with release=True needs lease=owner: whose lease to let go")


class _Held:
    """One thread's lease, as the table keeps it (changed in place under the lock)."""

    __slots__ = ("expires_at", "nudged", "owner", "ttl")

    def __init__(self, owner: str, expires_at: float, ttl: float, nudged: bool) -> None:
        self.owner = owner
        self.expires_at = expires_at
        self.ttl = ttl
        self.nudged = nudged


class LocalLeases:
    """A lease per thread id, in a dict guarded by ``lock``.

    The public methods take the lock and read the saver's ``clock`` under it;
    `fence` and `drop` expect the caller to hold it (a saver checks the
    lease and writes under one lock).
    """

    __slots__ = ("_rows", "lock")

    def __init__(self, lock: AbstractContextManager[Any] | None = None) -> None:
        self.lock: AbstractContextManager[Any] = lock if lock is not None else threading.Lock()
        self._rows: dict[str, _Held] = {}

    def acquire(
        self, thread_id: str, owner: str, ttl: float, nudge: bool, clock: Clock
    ) -> LeaseClaim:
        """See ``BaseCheckpointSaver.acquire_lease``."""
        check_lease_args(owner, ttl)
        thread = str(thread_id)
        with self.lock:
            now = clock()
            held = self._rows.get(thread)
            if held is None or held.owner == owner or held.expires_at <= now:
                # The owner's own lease keeps its nudge: it was made while it held it.
                nudged = held is not None and held.owner == owner and held.nudged
                self._rows[thread] = _Held(owner, now + ttl, float(ttl), nudged)
                return LeaseClaim(True, Lease(thread, owner, now + ttl))
            held.nudged = held.nudged or nudge
            return LeaseClaim(False, Lease(thread, held.owner, held.expires_at))

    def renew(self, thread_id: str, owner: str, ttl: float | None, clock: Clock) -> bool:
        """See ``BaseCheckpointSaver.renew_lease``."""
        check_lease_args(owner, ttl, ttl_optional=True)
        with self.lock:
            now = clock()
            held = self._rows.get(str(thread_id))
            if held is None or held.owner != owner:
                return False
            if ttl is not None:
                held.ttl = float(ttl)
            held.expires_at = now + held.ttl
            return True

    def release(self, thread_id: str, owner: str) -> bool:
        """See ``BaseCheckpointSaver.release_lease``."""
        check_lease_args(owner, None, ttl_optional=True)
        thread = str(thread_id)
        with self.lock:
            held = self._rows.get(thread)
            if held is None or held.owner != owner:
                return False
            del self._rows[thread]
            return held.nudged

    def get(self, thread_id: str, clock: Clock) -> Lease | None:
        """See ``BaseCheckpointSaver.get_lease``."""
        thread = str(thread_id)
        with self.lock:
            held = self._rows.get(thread)
            if held is None or held.expires_at <= clock():
                return None
            return Lease(thread, held.owner, held.expires_at)

    def fence(self, thread_id: str, owner: str, now: float) -> None:
        """Renew ``owner``'s lease by its ttl, or raise ``LeaseLostError`` (locked)."""
        check_lease_args(owner, None, ttl_optional=True)
        held = self._rows.get(thread_id)
        if held is None or held.owner != owner:
            holder = None if held is None else Lease(thread_id, held.owner, held.expires_at)
            raise LeaseLostError(thread_id, owner, holder, now)
        held.expires_at = now + held.ttl

    def held(self, thread_id: str, now: float) -> bool:
        """Whether a live lease is held on the thread (locked; ``prune``)."""
        held = self._rows.get(thread_id)
        return held is not None and held.expires_at > now

    def drop(self, thread_id: str) -> None:
        """Forget the thread's lease (locked; ``delete_thread``)."""
        self._rows.pop(thread_id, None)


def check_head(ids: Iterable[str] | None, thread_id: str, ns: str, checkpoint_id: str) -> None:
    """Raise ``StaleCheckpointError`` unless ``checkpoint_id`` is the newest of ``ids``."""
    head = max(ids, default=None) if ids is not None else None
    if head != checkpoint_id:
        raise StaleCheckpointError(thread_id, ns, checkpoint_id, head)
