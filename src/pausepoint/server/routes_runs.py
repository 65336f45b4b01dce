"""Runs of a thread: create (background), stream, wait, join, get, list, cancel, delete.

Every run is recorded ``pending`` and executed by a worker; a request never runs the
graph. ``stream`` and ``wait`` follow the run the request created: a client that
drops off cancels it unless it sent ``on_disconnect="continue"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, get_args

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from pausepoint.server.body import query_bool, query_int, read_json
from pausepoint.server.errors import InvalidRequestError
from pausepoint.server.records import CancelAction, RunRecord, RunStatus
from pausepoint.server.responses import json_response, service_of
from pausepoint.server.run_body import run_request
from pausepoint.server.sse import HEARTBEAT, frame, with_heartbeats
from pausepoint.server.unopenable import PartlyOpened
from pausepoint.server.wire import dumps, error_json, run_json

if TYPE_CHECKING:
    from pausepoint.server.service import RunService

__all__ = ["background", "routes", "stream_events", "wait_body"]

_STATUSES: tuple[str, ...] = get_args(RunStatus)
_ACTIONS: tuple[str, ...] = get_args(CancelAction)


def _run_path(run: RunRecord) -> str:
    return f"/threads/{run.thread_id}/runs/{run.run_id}"


async def _create(request: Request) -> RunRecord:
    body = await read_json(request)
    run = run_request(body)
    return await service_of(request).create_run(request.path_params["thread_id"], run)


async def create(request: Request) -> Response:
    """``POST /threads/{thread_id}/runs``: the run, ``pending``, for the workers."""
    run = await _create(request)
    return json_response(run_json(run), headers={"content-location": _run_path(run)})


async def stream(request: Request) -> Response:
    """``POST /threads/{thread_id}/runs/stream``: the new run's events, as SSE."""
    run = await _create(request)
    cancel = run.request.on_disconnect == "cancel"
    return stream_events(request, run, cancel_on_disconnect=cancel)


async def wait(request: Request) -> Response:
    """``POST /threads/{thread_id}/runs/wait``: the new run's final values (or ``__error__``)."""
    run = await _create(request)
    cancel = run.request.on_disconnect == "cancel"
    return await wait_body(request, run, cancel_on_disconnect=cancel)


async def join(request: Request) -> Response:
    """``GET /threads/{thread_id}/runs/{run_id}/join``: as ``wait``, for an existing run.

    A run whose record does not open is joined all the same: the claim ends it
    ``error``, and that is its body.
    """
    got = await _read_run(request)
    run = got.run if isinstance(got, PartlyOpened) else got
    return await wait_body(request, run, cancel_on_disconnect=False)


async def join_stream(request: Request) -> Response:
    """``GET /threads/{thread_id}/runs/{run_id}/stream``: rejoin a run's events.

    A run created with ``stream_resumable`` replays its events after
    ``Last-Event-ID`` (all of them without one); any other run streams only its
    events from now on (nothing once it has ended). ``stream_mode`` narrows the
    events, ``cancel_on_disconnect`` as the body's field. A run whose record does not
    open streams all its events: it never executes, and the claim ends it with an
    ``error`` event.
    """
    got = await _read_run(request)
    run, unopened = (got.run, True) if isinstance(got, PartlyOpened) else (got, False)
    # langgraph-sdk sends ``stream_mode=`` (empty) when none is given: all events.
    modes = [m for m in request.query_params.getlist("stream_mode") if m]
    resumable = run.request.stream_resumable
    return stream_events(
        request,
        run,
        cancel_on_disconnect=query_bool(request, "cancel_on_disconnect"),
        last_event_id=(request.headers.get("last-event-id") or None) if resumable else None,
        from_now=not (resumable or unopened),
        modes=modes or None,
    )


async def get(request: Request) -> Response:
    """``GET /threads/{thread_id}/runs/{run_id}``.

    A run whose record does not open all through (`pausepoint.server.unopenable`):
    its fields that do, each cell that does not as null, and ``error`` naming why.
    """
    return json_response(_run_body(await _read_run(request)))


def _run_body(got: RunRecord | PartlyOpened) -> dict[str, Any]:
    """A run's JSON; one that opens in part: each cell that does not as null, and ``error``."""
    if not isinstance(got, PartlyOpened):
        return run_json(got)
    return {**run_json(got.run), **dict.fromkeys(got.unopened), "error": got.error}


async def list_runs(request: Request) -> Response:
    """``GET /threads/{thread_id}/runs?limit=&offset=&status=``: newest first.

    A run whose record does not open all through is listed as ``GET`` of it shows it.
    """
    status = request.query_params.get("status") or None
    if status is not None and status not in _STATUSES:
        raise InvalidRequestError(f"'status' must be one of {list(_STATUSES)}, got {status!r}")
    runs = await service_of(request).list_runs(
        request.path_params["thread_id"],
        limit=query_int(request, "limit", 10, low=1),
        offset=query_int(request, "offset", 0, high=10**9),
        status=status,  # pyright: ignore[reportArgumentType]  # checked against _STATUSES
    )
    return json_response([_run_body(r) for r in runs])


async def cancel(request: Request) -> Response:
    """``POST /threads/{thread_id}/runs/{run_id}/cancel?wait=&action=``."""
    action = request.query_params.get("action") or "interrupt"
    if action not in _ACTIONS:
        raise InvalidRequestError(f"'action' must be one of {list(_ACTIONS)}, got {action!r}")
    await service_of(request).cancel_run(
        request.path_params["thread_id"],
        request.path_params["run_id"],
        action=action,  # pyright: ignore[reportArgumentType]  # checked against _ACTIONS
        wait=query_bool(request, "wait"),
    )
    return Response(status_code=204)


async def delete(request: Request) -> Response:
    """``DELETE /threads/{thread_id}/runs/{run_id}``: a run that is not running."""
    params = request.path_params
    await service_of(request).delete_run(params["thread_id"], params["run_id"])
    return Response(status_code=204)


async def _read_run(request: Request) -> RunRecord | PartlyOpened:
    params = request.path_params
    return await service_of(request).read_run(params["thread_id"], params["run_id"])


# --- following a run ------------------------------------------------------------------------


def stream_events(
    request: Request,
    run: RunRecord,
    *,
    cancel_on_disconnect: bool,
    last_event_id: str | None = None,
    from_now: bool = False,
    modes: list[str] | None = None,
    after: Callable[[], Awaitable[None]] | None = None,
) -> Response:
    """The run's events as an SSE response: ``metadata`` first, heartbeats between.

    ``id:`` lines only for a run created with ``stream_resumable``. Headers name the
    run (``Content-Location``) and where to reconnect (``Location``). ``after`` runs
    in the background once the response is over (a stateless run's cleanup).
    """
    service = service_of(request)
    resumable = run.request.stream_resumable

    async def frames() -> AsyncIterator[bytes]:
        yield frame("metadata", {"run_id": run.run_id, "attempt": 1})
        events = service.stream_run(
            run.thread_id, run.run_id, last_event_id=last_event_id, from_now=from_now
        )
        try:
            async for event in events:
                if event.event == "metadata" or not _wanted(event.event, modes):
                    continue
                yield frame(event.event, event.data, event.id if resumable else None)
        except Exception as exc:  # the headers are sent: the failure becomes the last event
            yield frame("error", error_json(exc))

    body = _following(request, run, frames(), cancel_on_disconnect, HEARTBEAT, after)
    path = _run_path(run)
    headers = {
        "content-location": path,
        "location": f"{path}/stream",
        "cache-control": "no-store",
        "x-accel-buffering": "no",
    }
    return StreamingResponse(body, headers=headers, media_type="text/event-stream")


QUICK_SECONDS = 0.05
"""A wait whose run ends within this is answered as a plain response (see `wait_body`);
0: every wait streams."""


async def wait_body(
    request: Request,
    run: RunRecord,
    *,
    cancel_on_disconnect: bool,
    after: Callable[[], Awaitable[None]] | None = None,
) -> Response:
    """The run's final values as JSON once it ends; newlines keep the connection alive.

    A run that ends within `QUICK_SECONDS` (most short runs) is answered as a plain
    response, the same JSON: no stream to keep alive, no disconnect to listen for
    (~0.4 ms of the server's CPU a wait). A longer one streams as before, and a client
    that leaves it cancels the run unless it asked to continue.
    """
    joined = asyncio.ensure_future(_joined(service_of(request), run))
    quick = min(QUICK_SECONDS, request.app.state.heartbeat_seconds)
    try:
        if quick > 0:
            await asyncio.wait((joined,), timeout=quick)
    except BaseException:  # the request itself was cancelled: so is the wait
        joined.cancel()
        raise
    path = _run_path(run)
    headers = {"content-location": path, "location": f"{path}/join"}
    if quick > 0 and joined.done():
        if after is not None:  # the body is in hand: what follows the run may start
            background(request, after)
        return Response(joined.result(), 200, headers, "application/json")

    async def result() -> AsyncIterator[bytes]:
        yield await joined

    body = _following(request, run, result(), cancel_on_disconnect, b"\n", after)
    return StreamingResponse(body, headers=headers, media_type="application/json")


async def _joined(service: RunService, run: RunRecord) -> bytes:
    try:
        body = await service.join_run(run.thread_id, run.run_id, run=run)
    except Exception as exc:  # the status is 200 either way: the failure goes in the body
        body = {"__error__": error_json(exc)}
    return dumps(body).encode()


async def _following(
    request: Request,
    run: RunRecord,
    source: AsyncIterator[bytes],
    cancel_on_disconnect: bool,
    beat: bytes,
    after: Callable[[], Awaitable[None]] | None,
) -> AsyncIterator[bytes]:
    """``source`` with keep-alives; cancels the run if the client leaves before its end."""
    period: float = request.app.state.heartbeat_seconds
    beats = with_heartbeats(source, period, beat)
    ended = False
    try:
        async for chunk in beats:
            yield chunk
        ended = True
    finally:
        if not ended and cancel_on_disconnect:
            service = service_of(request)
            background(request, lambda: service.cancel_run(run.thread_id, run.run_id))
        if after is not None:
            background(request, after)


def background(request: Request, work: Callable[[], Awaitable[None]]) -> None:
    """Run ``work`` as a task the app keeps until it is done (not cancelled with the request)."""
    tasks: set[asyncio.Task[None]] = request.app.state.background

    async def guarded() -> None:
        try:
            await work()
        except Exception:  # the run may have ended meanwhile: nothing left to cancel
            return

    task = asyncio.ensure_future(guarded())
    tasks.add(task)
    task.add_done_callback(tasks.discard)


def _wanted(event: str, modes: list[str] | None) -> bool:
    if modes is None or event in ("error", "end"):
        return True
    mode = event.split("|", 1)[0]
    if mode == "messages":
        return "messages" in modes or "messages-tuple" in modes
    return mode in modes or mode.split("/", 1)[0] in modes


routes = [
    Route("/threads/{thread_id}/runs", create, methods=["POST"]),
    Route("/threads/{thread_id}/runs", list_runs, methods=["GET"]),
    Route("/threads/{thread_id}/runs/stream", stream, methods=["POST"]),
    Route("/threads/{thread_id}/runs/wait", wait, methods=["POST"]),
    Route("/threads/{thread_id}/runs/{run_id}", get, methods=["GET"]),
    Route("/threads/{thread_id}/runs/{run_id}", delete, methods=["DELETE"]),
    Route("/threads/{thread_id}/runs/{run_id}/join", join, methods=["GET"]),
    Route("/threads/{thread_id}/runs/{run_id}/stream", join_stream, methods=["GET"]),
    Route("/threads/{thread_id}/runs/{run_id}/cancel", cancel, methods=["POST"]),
]
