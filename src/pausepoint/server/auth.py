"""Who may call the server, and which browser pages may.

A token, as the inbox's programs send it: ``Authorization: Bearer <token>`` or
``x-api-key: <token>`` (what ``langgraph_sdk.get_client(api_key=...)``, Agent Inbox
and agent-chat-ui send). ``/ok`` and ``/info`` answer without it: clients probe them
before they have a key, and they reveal nothing of the threads. Without a token the
server is open, which `pausepoint serve` allows only on a loopback address.

CORS: the origins given may call from a browser; the headers the clients read
(``Content-Location``, ``Location``, the pagination counts) are exposed to them.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["EXPOSED_HEADERS", "OPEN_PATHS", "TokenMiddleware", "cors", "presented_token"]

OPEN_PATHS = frozenset({"/ok", "/info"})
"""Paths answered without the token."""

EXPOSED_HEADERS = ("content-location", "location", "x-pagination-total", "x-pagination-next")
"""Response headers a browser page may read (the run id, reconnects, paging)."""

_ALLOWED_HEADERS = (
    "authorization",
    "content-type",
    "x-api-key",
    "last-event-id",
    "cache-control",
    "accept",
    "x-auth-scheme",
)


def presented_token(request: Request) -> str | None:
    """The token a request carries: its ``Bearer`` header, else its ``x-api-key``."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.headers.get("x-api-key") or None


class TokenMiddleware:
    """ASGI middleware: refuses (401, JSON) a request without the token.

    Args:
        app: The application behind it.
        token: The token; None lets every request in.
    """

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass an allowed request on; answer 401 to the others."""
        if scope["type"] != "http" or self.token is None or self._open(scope):
            await self.app(scope, receive, send)
            return
        given = presented_token(Request(scope))
        if given is not None and hmac.compare_digest(given.encode(), self.token.encode()):
            await self.app(scope, receive, send)
            return
        body = {
            "error": "Unauthorized",
            "message": "this server needs its token: send 'x-api-key: <token>' "
            "or 'Authorization: Bearer <token>'",
        }
        body["detail"] = body["message"]
        await JSONResponse(body, status_code=401)(scope, receive, send)

    @staticmethod
    def _open(scope: Scope) -> bool:
        path = str(scope.get("path", ""))[len(str(scope.get("root_path") or "")) :]
        return scope.get("method") == "OPTIONS" or path in OPEN_PATHS


def cors(origins: Sequence[str]) -> Middleware:
    """The CORS middleware for browser pages from ``origins`` (``"*"``: any)."""
    return Middleware(
        CORSMiddleware,
        allow_origins=list(origins),
        allow_methods=["GET", "POST", "PATCH", "PUT", "DELETE", "OPTIONS"],
        allow_headers=list(_ALLOWED_HEADERS),
        expose_headers=list(EXPOSED_HEADERS),
        max_age=600,
    )
