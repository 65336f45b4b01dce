"""Time-ordered checkpoint ids (UUID version 6) and timestamps.

Checkpoint ids sort in creation order as strings, which is what ``list`` and
``before`` rely on. Within one process the clock is forced to move forward, so
two checkpoints made in the same 100 ns tick still get increasing ids.

Every superstep makes one id and one timestamp, so both are built by hand from
one clock reading: ``uuid.UUID(...)`` plus ``datetime.now(UTC).isoformat()``
cost four times as much (benchmarks/README.md, "Figures behind the comments").
"""

from __future__ import annotations

import os
import random
import threading
import time

__all__ = ["is_stamp", "new_checkpoint_id", "new_stamp", "now_iso", "stamp_time"]

_GREGORIAN_OFFSET = 0x01B21DD213814000  # 100-ns ticks from 1582-10-15 to 1970-01-01
_lock = threading.Lock()
_last = 0
_suffix = ""
_prefixes: dict[int, str] = {}
"""The date part of a timestamp by unix second, for the seconds seen lately."""
_PREFIXES_MAX = 64
_last_stamp: tuple[str, str] = ("", "")


def _new_suffix() -> None:
    """The id's last 16 hex digits: variant, clock sequence and node, random per process.

    A forked child draws its own, so parent and child never make the same id in
    the same tick.
    """
    global _suffix
    low = (0x2 << 62) | (random.getrandbits(14) << 48) | random.getrandbits(48)
    h = f"{low:016x}"
    _suffix = f"-{h[:4]}-{h[4:]}"


_new_suffix()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_suffix)


def _format_ts(unix_us: int) -> str:
    """``datetime.fromtimestamp(t, UTC).isoformat()``, with the date part cached per second.

    Several seconds are kept: a resume reads its checkpoint's time (made again from
    the id, see `stamp_time`), often from a pause long ago, then stamps a new
    checkpoint now; with one second cached each call missed, at four times the cost.
    """
    sec, micros = divmod(unix_us, 1_000_000)
    prefix = _prefixes.get(sec)
    if prefix is None:
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
        if len(_prefixes) >= _PREFIXES_MAX:
            _prefixes.clear()  # bounded; it fills again from the seconds in use
        _prefixes[sec] = prefix
    # isoformat() leaves the fraction out when it is zero; so does this. The six
    # digits are cut from 1_000_000 + micros: ~2.5x faster than a ":06d" format spec.
    return f"{prefix}.{str(1_000_000 + micros)[1:]}+00:00" if micros else f"{prefix}+00:00"


def new_checkpoint_id() -> str:
    """A new UUIDv6 string, greater than every id this process made before."""
    return new_stamp()[0]


def new_stamp() -> tuple[str, str]:
    """A new checkpoint id and its creation time (``Checkpoint["ts"]``), from one clock read.

    Within one process the clock is forced forward: two stamps made in the same
    100 ns tick still get increasing ids.
    """
    global _last, _last_stamp
    with _lock:
        ticks = time.time_ns() // 100 + _GREGORIAN_OFFSET
        if ticks <= _last:
            ticks = _last + 1
        _last = ticks
    # 60 bits of ticks: the first 12 hex digits are time_high, the last 3 time_low.
    # hex() is ~2x faster than a "%015x" format; it has 15 digits after "0x" from
    # 1582 + 2**56 ticks (the year 1810) until 5236.
    h = hex(ticks)
    if len(h) != 17:
        h = "0x%015x" % ticks  # noqa: UP031
    checkpoint_id = f"{h[2:10]}-{h[10:14]}-6{h[14:]}{_suffix}"
    stamp = _last_stamp = (checkpoint_id, _format_ts((ticks - _GREGORIAN_OFFSET) // 10))
    return stamp


def stamp_time(checkpoint_id: str) -> str | None:
    """The ``ts`` that `new_stamp` made with ``checkpoint_id``; None if not one of its ids.

    A saver can keep only the id of a checkpoint stamped by ``new_stamp`` and make
    its ``ts`` again on reads (CompactingMemorySaver: 81 bytes less per checkpoint).
    """
    if len(checkpoint_id) != 36 or checkpoint_id[14] != "6":
        return None
    try:
        ticks = int(checkpoint_id[:8] + checkpoint_id[9:13] + checkpoint_id[15:18], 16)
    except ValueError:
        return None
    return _format_ts((ticks - _GREGORIAN_OFFSET) // 10)


def is_stamp(checkpoint_id: str, ts: str) -> bool:
    """Whether ``ts`` is what `stamp_time` makes again from ``checkpoint_id``."""
    last_id, last_ts = _last_stamp
    if checkpoint_id is last_id and ts is last_ts:  # the usual case: the newest stamp
        return True
    return ts == stamp_time(checkpoint_id)


def now_iso() -> str:
    """The current UTC time in ISO 8601, as stored in ``Checkpoint["ts"]``."""
    return _format_ts(time.time_ns() // 1000)
