"""Assistants: create, search, count, get. A graph's name works as its assistant id."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pausepoint.server.body import Fields, read_json
from pausepoint.server.responses import json_response, service_of
from pausepoint.server.wire import assistant_json

__all__ = ["SORT_ORDERS", "page_headers", "routes"]

SORT_ORDERS = ("asc", "desc")
_SORT_BY = ("assistant_id", "graph_id", "name", "created_at", "updated_at")


async def create(request: Request) -> Response:
    """``POST /assistants``."""
    f = Fields(await read_json(request))
    graph_id = f.str("graph_id", required=True)
    kwargs = {
        "assistant_id": f.str("assistant_id"),
        "config": f.dict("config"),
        "context": f.dict("context"),
        "metadata": f.dict("metadata"),
        "name": f.str("name"),
        "description": f.str("description"),
        "if_exists": f.choice("if_exists", ("raise", "do_nothing"), "raise"),
    }
    f.check()
    assistant = await service_of(request).create_assistant(graph_id, **kwargs)
    return json_response(assistant_json(assistant))


async def search(request: Request) -> Response:
    """``POST /assistants/search``: a page, ``X-Pagination-Total``/``-Next`` headers."""
    f = Fields(await read_json(request, required=False))
    limit = f.int("limit", 10, low=1, high=1000)
    offset = f.int("offset", 0)
    kwargs = {
        "graph_id": f.str("graph_id"),
        "metadata": f.dict("metadata"),
        "name": f.str("name"),
        "sort_by": f.choice("sort_by", _SORT_BY, "created_at"),
        "sort_order": f.choice("sort_order", SORT_ORDERS, "desc"),
    }
    f.check()
    found, total = await service_of(request).search_assistants(limit=limit, offset=offset, **kwargs)
    body = [assistant_json(a) for a in found]
    return json_response(body, headers=page_headers(offset, len(found), total))


async def count(request: Request) -> Response:
    """``POST /assistants/count``."""
    f = Fields(await read_json(request, required=False))
    graph_id, metadata, name = f.str("graph_id"), f.dict("metadata"), f.str("name")
    f.check()
    _, total = await service_of(request).search_assistants(
        graph_id=graph_id, metadata=metadata, name=name, limit=1
    )
    return json_response(total)


async def get(request: Request) -> Response:
    """``GET /assistants/{assistant_id}`` (an id, or a graph's name)."""
    assistant = await service_of(request).get_assistant(request.path_params["assistant_id"])
    return json_response(assistant_json(assistant))


def page_headers(offset: int, shown: int, total: int) -> dict[str, str]:
    """``X-Pagination-Total``, and ``X-Pagination-Next`` when more follow."""
    headers = {"x-pagination-total": str(total)}
    if offset + shown < total:
        headers["x-pagination-next"] = str(offset + shown)
    return headers


routes = [
    Route("/assistants", create, methods=["POST"]),
    Route("/assistants/search", search, methods=["POST"]),
    Route("/assistants/count", count, methods=["POST"]),
    Route("/assistants/{assistant_id}", get, methods=["GET"]),
]
