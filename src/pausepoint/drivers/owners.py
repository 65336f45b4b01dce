"""Lease owners: one per process, and which run of the process holds each thread.

A lease in the saver is held by a *process*, ``"<host>/<pid>/<random>"``; which of
the process's runs advances a thread is kept here, in memory (`LOCAL`). So a
run that lost its database connection before it could let its lease go does not
lock its own process out: the next run of the process on that thread renews the
same lease. Other processes wait for it to be let go, or to expire after its ttl
— unless its holder ran on *this* host and is gone (killed, crashed): then the
driver lets the dead process's lease go and claims the thread at once.
"""

from __future__ import annotations

import functools
import itertools
import os
import socket
import threading
import time
import uuid

from pausepoint.checkpoint._keys import lease_scope_of, method_takes
from pausepoint.checkpoint.base import CheckpointRef, Lease, LeaseClaim
from pausepoint.config import RunnableConfig

__all__ = [
    "LOCAL",
    "LocalRuns",
    "holder_is_gone",
    "process_owner",
    "run_token",
]


@functools.cache
def _host() -> str:
    return socket.gethostname().replace("/", "_")


_OWNER: dict[int, str] = {}


def process_owner() -> str:
    """The lease owner token of the calling process (a forked child gets its own)."""
    pid = os.getpid()
    owner = _OWNER.get(pid)
    if owner is None:
        owner = _OWNER[pid] = f"{_host()}/{pid}/{uuid.uuid4().hex}"
    return owner


_RUNS = itertools.count(1)


def run_token() -> str:
    """A token unique to one run of this process: how `LOCAL` tells its runs apart.

    Compared only within the process (a forked child goes on counting from its
    parent's count, so an entry it inherited is never taken for one of its own
    runs), so a counter is enough: a ``uuid4`` cost an ``os.urandom`` call and a
    ``UUID`` object on every invoke with a saver.
    """
    return str(next(_RUNS))


class LocalRuns:
    """Which run of this process advances each thread: single-writer within it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[tuple[str, str], str] = {}

    def take(
        self, saver: object, thread_id: str, run: str, owner: str, ttl: float
    ) -> LeaseClaim | None:
        """None if ``run`` may go on to the saver's lease, else a refusal to send back."""
        key = (lease_scope_of(saver), thread_id)
        with self._lock:
            holder = self._runs.setdefault(key, run)
        if holder == run:
            return None
        # Another run of this process has it: not expired while this process lives.
        return LeaseClaim(False, Lease(thread_id, owner, time.time() + ttl))

    def drop(self, saver: object, thread_id: str, run: str) -> None:
        """Forget that ``run`` holds the thread (if it does)."""
        key = (lease_scope_of(saver), thread_id)
        with self._lock:
            if self._runs.get(key) == run:
                del self._runs[key]


LOCAL = LocalRuns()
"""The runs of this process that hold a thread (shared by both drivers)."""


def holder_is_gone(owner: str) -> bool:
    """Whether ``owner`` names a process of this host that no longer runs."""
    host, _, rest = owner.partition("/")
    pid_text, _, _ = rest.partition("/")
    if host != _host() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False  # another run of this process: it is alive
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by another user
        return False
    return False


def claim_kwargs(
    saver: object, read: CheckpointRef | RunnableConfig | None, method: str = "acquire_lease"
) -> dict[str, CheckpointRef | RunnableConfig]:
    """The keywords of a ``method`` call for a claim that wants ``read`` read too.

    ``read=`` (a `CheckpointRef`: the keyword is pausepoint's own, so no config dict
    is built for it) goes only to a saver whose ``method`` (``acquire_lease`` or
    ``aacquire_lease``) takes it; any other reads with a ``get_tuple`` of its own.
    """
    if read is None or not method_takes(type(saver), method, "read"):
        return {}
    return {"read": read}
