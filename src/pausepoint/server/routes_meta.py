"""``/ok`` and ``/info``: what clients probe before anything else."""

from __future__ import annotations

from importlib import metadata

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pausepoint.server.responses import json_response

__all__ = ["routes"]


async def ok(request: Request) -> Response:
    """``GET /ok``: the server is up."""
    del request
    return json_response({"ok": True})


async def info(request: Request) -> Response:
    """``GET /info``: the version and which optional features exist (agent-chat-ui checks it)."""
    graphs = sorted(request.app.state.service.graphs)
    return json_response(
        {
            "version": _version(),
            "server": "pausepoint",
            "graphs": graphs,
            "flags": {"assistants": True, "crons": False, "langsmith": False},
            "metadata": {},
        }
    )


def _version() -> str:
    try:
        return metadata.version("pausepoint")
    except metadata.PackageNotFoundError:
        return "unknown"


routes = [Route("/ok", ok, methods=["GET"]), Route("/info", info, methods=["GET"])]
