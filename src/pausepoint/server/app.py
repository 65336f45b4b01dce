"""`create_app`: the LangGraph Server API over a `RunService`, as an ASGI application."""

from __future__ import annotations

try:
    import starlette as _starlette
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError(
        f"pausepoint.server.app needs the 'server' extra ({exc.name} is missing): "
        "pip install 'pausepoint[server]'"
    ) from exc

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware

from pausepoint.errors import EmptyInputError, InvalidUpdateError, PausepointError
from pausepoint.server import (
    routes_assistants,
    routes_meta,
    routes_runs,
    routes_state,
    routes_stateless,
    routes_threads,
)
from pausepoint.server.auth import TokenMiddleware, cors
from pausepoint.server.body import DEFAULT_MAX_BODY
from pausepoint.server.responses import error_response
from pausepoint.server.service import RunService

del _starlette  # imported only to name the missing extra

__all__ = ["create_app"]

ServiceSource = RunService | Callable[[], Awaitable[RunService]]
"""An open `RunService`, or an async function opening one (in the server's event loop)."""


def create_app(
    service: ServiceSource,
    *,
    token: str | None = None,
    cors_origins: Sequence[str] = (),
    max_body: int = DEFAULT_MAX_BODY,
    heartbeat_seconds: float = 5.0,
) -> Starlette:
    """The server as a Starlette application; its lifespan starts and closes ``service``.

    Args:
        service: The `RunService` the routes call, or an async function returning one
            (for a server whose database must be opened in its own event loop).
        token: The token requests must carry (``Authorization: Bearer`` or
            ``x-api-key``); None lets every request in.
        cors_origins: Origins browser pages may call from (``"*"`` for any); none by
            default.
        max_body: The largest request body accepted, in bytes (413 above).
        heartbeat_seconds: The period of SSE heartbeats (and of the newlines that keep
            a ``wait`` request alive).

    Returns:
        A Starlette application; ``app.state.service`` is the service once started.
    """
    middleware = [cors(cors_origins)] if cors_origins else []
    middleware.append(Middleware(TokenMiddleware, token=token))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        opened = service if isinstance(service, RunService) else await service()
        app.state.service = opened
        await opened.start()
        try:
            yield
        finally:
            background: set[asyncio.Task[None]] = app.state.background
            if background:
                await asyncio.wait(background, timeout=5)
            await opened.close()

    app = Starlette(
        routes=[
            *routes_meta.routes,
            *routes_assistants.routes,
            *routes_threads.routes,
            *routes_state.routes,
            *routes_runs.routes,
            *routes_stateless.routes,
        ],
        middleware=middleware,
        exception_handlers={
            HTTPException: error_response,
            PausepointError: error_response,
            InvalidUpdateError: error_response,
            EmptyInputError: error_response,
            Exception: error_response,
        },
        lifespan=lifespan,
    )
    if isinstance(service, RunService):
        app.state.service = service
    app.state.max_body = max_body
    app.state.heartbeat_seconds = heartbeat_seconds
    app.state.background = set()
    return app
