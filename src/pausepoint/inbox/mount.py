"""`with_inbox`: `pausepoint serve`'s application with the approval inbox mounted in it.

The inbox answers through the server's `RunService` (`pausepoint.inbox.runs`): the
same queue, workers and records as the HTTP API's runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount

from pausepoint.inbox.app import create_app
from pausepoint.server.service import RunService

__all__ = ["with_inbox"]


def with_inbox(
    server: Starlette, graph_id: str, *, path: str = "/inbox", **options: Any
) -> Starlette:
    """``server`` (`pausepoint.server.create_app`'s) with the inbox of ``graph_id`` at ``path``.

    Args:
        server: The server application; its lifespan (which opens and starts the run
            service, and closes it) becomes the returned application's.
        graph_id: The served graph whose questions the inbox lists and answers.
        path: Where the inbox is mounted.
        options: `pausepoint.inbox.create_app`'s keyword arguments (``token``,
            ``auth``, ``poll_seconds``...).

    Returns:
        A Starlette application serving the inbox under ``path`` and the server
        everywhere else; ``app.state.inbox`` is the inbox's application.
    """

    def service() -> RunService:
        opened: RunService = server.state.service
        return opened

    inbox = create_app(graph_id, runs=service, **options)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        async with server.router.lifespan_context(server):
            yield

    app = Starlette(routes=[Mount(path, app=inbox), Mount("", app=server)], lifespan=lifespan)
    app.state.inbox = inbox
    return app
