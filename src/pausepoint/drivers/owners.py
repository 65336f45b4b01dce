"""Lease owner tokens, and whether the process holding a lease is still alive.

A run's lease owner is ``"<host>/<pid>/<random>"``. A lease expires after its ttl
when its worker died, which can be minutes; but when the holder ran on *this* host
and its process is gone (it was killed, or crashed), waiting is pointless: the
driver lets the dead process's lease go and claims the thread at once. Leases of
other hosts, and of live processes, are only ever taken over once they expire.
"""

from __future__ import annotations

import functools
import inspect
import os
import socket
import uuid
from typing import Any

__all__ = ["fences_writes", "holder_is_gone", "new_owner"]


@functools.cache
def _host() -> str:
    return socket.gethostname().replace("/", "_")


def new_owner() -> str:
    """A fresh lease owner token for one run of this process."""
    return f"{_host()}/{os.getpid()}/{uuid.uuid4().hex}"


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


_WRITES = ("put", "put_writes", "put_after_writes", "put_pair")


@functools.cache
def _takes_lease(saver_type: type[Any]) -> bool:
    for name in _WRITES + tuple("a" + n for n in _WRITES):
        method = getattr(saver_type, name, None)
        if method is None:
            continue
        params = inspect.signature(method).parameters.values()
        if not any(p.name == "lease" or p.kind is p.VAR_KEYWORD for p in params):
            return False
    return True


def fences_writes(saver: Any) -> bool:
    """Whether the driver may pass ``lease=`` to the saver's writes.

    The saver says it honours leases (``supports_leases``), and each of its write
    methods takes the keyword: a subclass that overrides one without it (a
    counting wrapper in a test, say) gets unfenced writes, not a ``TypeError``.
    """
    kind: type[Any] = type(saver)  # pyright: ignore[reportUnknownVariableType]
    return bool(getattr(saver, "supports_leases", False)) and _takes_lease(kind)
