"""Time-ordered checkpoint ids (UUID version 6) and timestamps.

Checkpoint ids sort in creation order as strings, which is what ``list`` and
``before`` rely on. Within one process the clock is forced to move forward, so
two checkpoints made in the same 100 ns tick still get increasing ids.
"""

from __future__ import annotations

import datetime
import random
import threading
import time

__all__ = ["new_checkpoint_id", "now_iso"]

_GREGORIAN_OFFSET = 0x01B21DD213814000  # 100-ns ticks from 1582-10-15 to 1970-01-01
_lock = threading.Lock()
_last = 0
_clock_seq = random.getrandbits(14)


def new_checkpoint_id() -> str:
    """A new UUIDv6 string, greater than every id this process made before."""
    global _last
    with _lock:
        ticks = time.time_ns() // 100 + _GREGORIAN_OFFSET
        if ticks <= _last:
            ticks = _last + 1
        _last = ticks
    time_high = (ticks >> 12) & 0xFFFFFFFFFFFF
    time_low = ticks & 0x0FFF
    node = random.getrandbits(48)
    value = (time_high << 80) | (0x6 << 76) | (time_low << 64)
    value |= (0x2 << 62) | (_clock_seq << 48) | node
    # Formatting the hex by hand is ~4x cheaper than uuid.UUID(int=...).__str__(),
    # and this runs once per superstep.
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def now_iso() -> str:
    """The current UTC time in ISO 8601, as stored in ``Checkpoint["ts"]``."""
    return datetime.datetime.now(datetime.UTC).isoformat()
