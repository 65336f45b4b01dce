"""A thread's state: get (head, or at a checkpoint), update (``as_node``), history."""

from __future__ import annotations

from typing import Any, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pausepoint.server.body import Fields, query_bool, query_int, read_json
from pausepoint.server.errors import InvalidRequestError
from pausepoint.server.responses import json_response, service_of
from pausepoint.server.states import checkpoint_config, graph_of, require_graph, thread_config
from pausepoint.server.wire import checkpoint_json, empty_state_json, state_json

__all__ = ["routes"]


async def _state_at(
    request: Request, checkpoint: dict[str, Any] | None, subgraphs: bool
) -> Response:
    service = service_of(request)
    thread = await service.get_thread(request.path_params["thread_id"])
    graph = graph_of(service, thread)
    if graph is None:
        return json_response(empty_state_json(thread.thread_id))
    config = thread_config(thread.thread_id, checkpoint)
    return json_response(state_json(await graph.aget_state(config, subgraphs=subgraphs)))


async def get_state(request: Request) -> Response:
    """``GET /threads/{thread_id}/state?subgraphs=``: the head's ``ThreadState``."""
    return await _state_at(request, None, query_bool(request, "subgraphs"))


async def get_state_at(request: Request) -> Response:
    """``GET /threads/{thread_id}/state/{checkpoint_id}``."""
    checkpoint = {"checkpoint_id": request.path_params["checkpoint_id"]}
    return await _state_at(request, checkpoint, query_bool(request, "subgraphs"))


async def post_state_at(request: Request) -> Response:
    """``POST /threads/{thread_id}/state/checkpoint`` ``{"checkpoint", "subgraphs"}``."""
    f = Fields(await read_json(request))
    checkpoint = f.dict("checkpoint", {})
    subgraphs = f.bool("subgraphs", False)
    f.check()
    return await _state_at(request, checkpoint, subgraphs)


async def update_state(request: Request) -> Response:
    """``POST /threads/{thread_id}/state``: ``values`` written as ``as_node`` would.

    ``{"values": null, "as_node": "__end__"}`` (Agent Inbox's "mark resolved") ends
    the waiting step without answering. Answers ``{"checkpoint": Checkpoint}``.
    """
    f = Fields(await read_json(request))
    values = f.any("values")
    as_node = f.str("as_node")
    task_id = f.str("task_id")
    checkpoint, checkpoint_id = f.any("checkpoint"), f.any("checkpoint_id")
    f.check()
    service = service_of(request)
    thread = await service.get_thread(request.path_params["thread_id"])
    graph = require_graph(service, thread)
    config = checkpoint_config(thread.thread_id, checkpoint, checkpoint_id)
    new = await graph.aupdate_state(config, values, as_node=as_node, task_id=task_id)
    await service.settle_thread(thread.thread_id)  # "interrupted" may no longer hold
    return json_response({"checkpoint": checkpoint_json(new)})


async def history(request: Request) -> Response:
    """``POST /threads/{thread_id}/history``: ``ThreadState``s, newest first."""
    f = Fields(await read_json(request, required=False))
    limit = f.int("limit", 10, low=1, high=1000)
    before, checkpoint = f.any("before"), f.any("checkpoint")
    metadata = f.dict("metadata")
    f.check()
    return await _history(request, limit, before, checkpoint, metadata)


async def history_get(request: Request) -> Response:
    """``GET /threads/{thread_id}/history?limit=&before=``."""
    limit = query_int(request, "limit", 10, low=1)
    return await _history(request, limit, request.query_params.get("before"), None, None)


async def _history(
    request: Request,
    limit: int,
    before: object,
    checkpoint: object,
    metadata: dict[str, Any] | None,
) -> Response:
    service = service_of(request)
    thread = await service.get_thread(request.path_params["thread_id"])
    graph = graph_of(service, thread)
    if graph is None:
        return json_response([])
    config = checkpoint_config(thread.thread_id, checkpoint)
    before_config = None
    if isinstance(before, str):
        before_config = thread_config(thread.thread_id, {"checkpoint_id": before})
    elif isinstance(before, dict):
        before_config = checkpoint_config(thread.thread_id, cast("object", before))
    elif before is not None:
        raise InvalidRequestError("'before' must be a checkpoint id or a Checkpoint object")
    states = graph.aget_state_history(config, filter=metadata, before=before_config, limit=limit)
    return json_response([state_json(s) async for s in states])


routes = [
    Route("/threads/{thread_id}/state", get_state, methods=["GET"]),
    Route("/threads/{thread_id}/state", update_state, methods=["POST"]),
    Route("/threads/{thread_id}/state/checkpoint", post_state_at, methods=["POST"]),
    Route("/threads/{thread_id}/state/{checkpoint_id}", get_state_at, methods=["GET"]),
    Route("/threads/{thread_id}/history", history, methods=["POST"]),
    Route("/threads/{thread_id}/history", history_get, methods=["GET"]),
]
