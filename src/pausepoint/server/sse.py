"""Server-sent events as the LangGraph clients parse them.

A frame is ``event: <name>``, ``data: <one line of JSON>``, ``id: <id>`` when the stream
is resumable, then a blank line. ``data`` is never empty (``None`` is ``data: null``):
the JS client's decoder throws on an empty one, and both clients join several
``data:`` lines without a newline, so the JSON must fit one line. Between events,
``: heartbeat`` comments arrive at a steady period: the JS client's idle watchdog
learns that cadence and reconnects when it stops.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from pausepoint.server.wire import dumps

__all__ = ["HEARTBEAT", "frame", "with_heartbeats"]

HEARTBEAT = b": heartbeat\n\n"
"""The keep-alive comment: both clients ignore lines that start with ``:``."""


def frame(event: str, data: object, event_id: str | None = None) -> bytes:
    """One SSE frame: ``data`` as one line of JSON, ``id:`` only when given.

    Raises:
        ValueError: ``event`` or ``event_id`` holds a line break (it would end the field).
    """
    for field in (event, event_id or ""):
        if "\n" in field or "\r" in field:
            raise ValueError(f"an SSE field cannot hold a line break: {field!r}")
    text = f"event: {event}\ndata: {dumps(data)}\n"
    if event_id is not None:
        text += f"id: {event_id}\n"
    return (text + "\n").encode()


async def with_heartbeats(
    frames: AsyncIterator[bytes], period: float, beat: bytes = HEARTBEAT
) -> AsyncIterator[bytes]:
    """``frames``, with ``beat`` whenever ``period`` seconds pass without one.

    ``beat`` is `HEARTBEAT` for an event stream, a newline for a JSON body still
    being waited for (JSON parsers skip leading whitespace).

    The source is read by one pending ``__anext__`` at a time, so a heartbeat never
    cancels (and never loses) the frame it was waiting for. Closing this generator
    closes the source.
    """
    pending: asyncio.Task[bytes] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(frames))
            done, _ = await asyncio.wait({pending}, timeout=period)
            if not done:
                yield beat
                continue
            task, pending = pending, None
            try:
                chunk = task.result()
            except StopAsyncIteration:
                return
            yield chunk
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pending
        aclose = getattr(frames, "aclose", None)
        if aclose is not None:
            await aclose()
