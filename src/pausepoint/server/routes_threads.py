"""Threads: create, search, count, get, patch, delete, copy, prune (with values, interrupts)."""

from __future__ import annotations

from typing import get_args

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pausepoint.server.body import Fields, read_json
from pausepoint.server.records import ThreadRecord, ThreadStatus
from pausepoint.server.responses import json_response, service_of
from pausepoint.server.routes_assistants import SORT_ORDERS, page_headers
from pausepoint.server.states import head_of
from pausepoint.server.thread_copies import copy_thread, prune_threads
from pausepoint.server.wire import thread_json

__all__ = ["routes", "thread_body"]

_SORT_BY = ("thread_id", "status", "created_at", "updated_at")
_STATUSES: tuple[str, ...] = get_args(ThreadStatus)


async def thread_body(request: Request, thread: ThreadRecord) -> dict[str, object]:
    """The ``Thread`` JSON of a record, with its head's values and interrupts."""
    return thread_json(thread, await head_of(service_of(request), thread))


async def create(request: Request) -> Response:
    """``POST /threads``."""
    f = Fields(await read_json(request, required=False))
    thread_id, metadata = f.str("thread_id"), f.dict("metadata")
    if_exists = f.choice("if_exists", ("raise", "do_nothing"), "raise")
    f.check()
    thread = await service_of(request).create_thread(
        thread_id=thread_id, metadata=metadata, if_exists=if_exists
    )
    if thread_id is None:  # a fresh id: no checkpoint to read its values from
        return json_response(thread_json(thread, None))
    return json_response(await thread_body(request, thread))


async def search(request: Request) -> Response:
    """``POST /threads/search``: newest first by default; ``status="interrupted"`` is the inbox."""
    f = Fields(await read_json(request, required=False))
    limit = f.int("limit", 10, low=1, high=1000)
    offset = f.int("offset", 0)
    kwargs = {
        "ids": f.str_list("ids"),
        "metadata": f.dict("metadata"),
        "values": f.dict("values"),
        "status": f.choice("status", _STATUSES, None),
        "sort_by": f.choice("sort_by", _SORT_BY, "created_at"),
        "sort_order": f.choice("sort_order", SORT_ORDERS, "desc"),
    }
    f.check()
    found, total = await service_of(request).search_threads(limit=limit, offset=offset, **kwargs)
    body = [await thread_body(request, t) for t in found]
    return json_response(body, headers=page_headers(offset, len(found), total))


async def count(request: Request) -> Response:
    """``POST /threads/count``."""
    f = Fields(await read_json(request, required=False))
    metadata, values = f.dict("metadata"), f.dict("values")
    status = f.choice("status", _STATUSES, None)
    f.check()
    total = await service_of(request).count_threads(metadata=metadata, values=values, status=status)
    return json_response(total)


async def get(request: Request) -> Response:
    """``GET /threads/{thread_id}``."""
    thread = await service_of(request).get_thread(request.path_params["thread_id"])
    return json_response(await thread_body(request, thread))


async def patch(request: Request) -> Response:
    """``PATCH /threads/{thread_id}``: ``metadata`` merged into the thread's."""
    f = Fields(await read_json(request))
    metadata = f.dict("metadata", {})
    f.check()
    service = service_of(request)
    thread = await service.patch_thread(request.path_params["thread_id"], metadata=metadata)
    return json_response(await thread_body(request, thread))


async def delete(request: Request) -> Response:
    """``DELETE /threads/{thread_id}``: its runs cancelled, its checkpoints deleted."""
    await service_of(request).delete_thread(request.path_params["thread_id"])
    return Response(status_code=204)


async def copy(request: Request) -> Response:
    """``POST /threads/{thread_id}/copy``: a new thread with the source's history."""
    thread = await copy_thread(service_of(request), request.path_params["thread_id"])
    return json_response(await thread_body(request, thread))


async def prune(request: Request) -> Response:
    """``POST /threads/prune``: ``{"pruned_count": n}``."""
    f = Fields(await read_json(request))
    if not f.has("thread_ids"):
        f.problems.append("'thread_ids' is required (a list of strings)")
    thread_ids = f.str_list("thread_ids")
    strategy = f.choice("strategy", ("delete", "keep_latest"), "delete")
    f.check()
    pruned = await prune_threads(service_of(request), thread_ids, strategy)
    return json_response({"pruned_count": pruned})


routes = [
    Route("/threads", create, methods=["POST"]),
    Route("/threads/search", search, methods=["POST"]),
    Route("/threads/count", count, methods=["POST"]),
    Route("/threads/prune", prune, methods=["POST"]),
    Route("/threads/{thread_id}/copy", copy, methods=["POST"]),
    Route("/threads/{thread_id}", get, methods=["GET"]),
    Route("/threads/{thread_id}", patch, methods=["PATCH"]),
    Route("/threads/{thread_id}", delete, methods=["DELETE"]),
]
