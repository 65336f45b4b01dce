"""Stateless runs: ``POST /runs``, ``/runs/stream``, ``/runs/wait`` on a thread of their own.

Each makes a fresh thread (``if_not_exists="create"``) and, with ``on_completion``
``"delete"`` (the default), deletes it once the run has ended and its answer was
sent; ``"keep"`` leaves it to be read.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pausepoint.server.body import Fields, read_json
from pausepoint.server.records import RunRecord
from pausepoint.server.responses import json_response, service_of
from pausepoint.server.routes_runs import background, stream_events, wait_body
from pausepoint.server.run_body import run_request
from pausepoint.server.wire import run_json

__all__ = ["routes"]


async def _create(request: Request) -> tuple[RunRecord, Callable[[], Awaitable[None]] | None]:
    body = await read_json(request)
    f = Fields(body)
    delete = f.choice("on_completion", ("delete", "keep"), "delete") == "delete"
    run = run_request(body, if_not_exists="create")
    service = service_of(request)
    record = await service.create_run(str(uuid.uuid4()), run)

    async def cleanup() -> None:
        await service.join_run(record.thread_id, record.run_id)
        await service.delete_thread(record.thread_id)

    return record, cleanup if delete else None


async def create(request: Request) -> Response:
    """``POST /runs``: a background run on a new thread."""
    run, after = await _create(request)
    if after is not None:
        background(request, after)
    path = f"/threads/{run.thread_id}/runs/{run.run_id}"
    return json_response(run_json(run), headers={"content-location": path})


async def stream(request: Request) -> Response:
    """``POST /runs/stream``: the new run's events."""
    run, after = await _create(request)
    cancel = run.request.on_disconnect == "cancel"
    return stream_events(request, run, cancel_on_disconnect=cancel, after=after)


async def wait(request: Request) -> Response:
    """``POST /runs/wait``: the new run's final values."""
    run, after = await _create(request)
    cancel = run.request.on_disconnect == "cancel"
    return await wait_body(request, run, cancel_on_disconnect=cancel, after=after)


routes = [
    Route("/runs", create, methods=["POST"]),
    Route("/runs/stream", stream, methods=["POST"]),
    Route("/runs/wait", wait, methods=["POST"]),
]
