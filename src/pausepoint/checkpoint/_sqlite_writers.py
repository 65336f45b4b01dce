"""SQLite writers of one file take turns on a lock file: a queue instead of a poll.

SQLite lets one connection write at a time. A connection that finds the write lock
taken calls its busy handler, which sleeps 1, 2, 5, 10, 15, 20, 25, ... ms and tries
again, however soon the lock came free: with several worker processes committing a
resume's short transactions (~0.5 ms each) on one file, a writer that lost a race
sleeps several of them away, and the more workers, the longer the sleeps (issue 35:
resumes per second fell from 4 to 8 workers). So each `SqliteSaver` of a file takes
an exclusive ``flock`` on ``<file>-pausepoint-writers`` around its write
transactions (``BEGIN IMMEDIATE`` to ``COMMIT``): a waiting writer sleeps in the
kernel and is woken the moment the one before lets go.

SQLite's own lock is still what makes a write exclusive; the lock file only orders
pausepoint's writers before they ask for it. A writer that is not pausepoint's (or a
caller's own transaction the saver joins, which takes no turn) still meets SQLite's
busy handler and timeout. The kernel drops a ``flock`` when its process dies
(SIGKILL included), so a crashed writer never blocks the file. No lock file (an
in-memory database, a read-only saver, a directory the process cannot write, a
system without ``fcntl``): writers poll as before.
"""

from __future__ import annotations

import os
import weakref

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX (Windows): no queue
    fcntl = None

__all__ = ["WriterTurns", "lock_path"]

_NOT_OPENED = -2  # the lock file is opened on the first write of a process


def lock_path(database: str) -> str:
    """The lock file of the SQLite database file ``database``."""
    return f"{database}-pausepoint-writers"


class WriterTurns:
    """One saver's place in its file's queue of writers (see the module docstring).

    ``take`` before ``BEGIN IMMEDIATE``, ``give`` once the transaction is over
    (committed or rolled back). The lock file is opened on the first write of a
    process: a forked child closes the descriptor it inherited (whose lock is the
    parent's) and opens its own.
    """

    __slots__ = ("__weakref__", "_fd", "_path")

    def __init__(self, database: str) -> None:
        self._path = lock_path(database)
        self._fd = _NOT_OPENED if fcntl is not None else -1
        _ALL.add(self)

    def take(self) -> int:
        """Wait for the file's writer turn; the descriptor to ``give`` back (-1: none)."""
        fd = self._fd
        if fd == _NOT_OPENED:
            fd = self._open()
        if fd >= 0:
            fcntl.flock(fd, fcntl.LOCK_EX)  # pyright: ignore[reportOptionalMemberAccess]
        return fd

    def give(self, fd: int) -> None:
        """Let the turn ``take`` returned go: the next writer waiting wakes up."""
        if fd >= 0:
            fcntl.flock(fd, fcntl.LOCK_UN)  # pyright: ignore[reportOptionalMemberAccess]

    def _open(self) -> int:
        try:
            self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:  # a read-only directory, say: writers poll as before
            self._fd = -1
        return self._fd

    def close(self) -> None:
        """Close the lock file (the saver's connection is closed); opened again if used."""
        fd, self._fd = self._fd, _NOT_OPENED if fcntl is not None else -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        self.close()


_ALL: weakref.WeakSet[WriterTurns] = weakref.WeakSet()


def _forget_inherited() -> None:
    # A forked child: the inherited descriptors share the parent's locks. Closing
    # them releases nothing of the parent's; the child opens its own when it writes.
    for turns in list(_ALL):
        turns.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inherited)
