"""JSON responses, and the errors of a request turned into 4xx/5xx JSON bodies.

An error body is ``{"error": type name, "message": text, "detail": text}``: the
Python SDK takes its message from ``message`` or ``detail``, the JS SDK from
``message``; ``error`` names the typed error (``AlreadyAnsweredError``...) so a client
can tell pausepoint's stricter answer checks apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from pausepoint.errors import (
    AlreadyAnsweredError,
    EmptyInputError,
    InvalidUpdateError,
    PausepointError,
    ThreadBusyError,
)
from pausepoint.server.errors import ServerError
from pausepoint.server.wire import dumps

if TYPE_CHECKING:
    from pausepoint.server.service import RunService

__all__ = ["error_response", "json_response", "service_of", "status_of"]

_CONFLICTS: tuple[type[BaseException], ...] = (AlreadyAnsweredError, ThreadBusyError)
_CALLER_FAULTS: tuple[type[BaseException], ...] = (
    PausepointError,
    InvalidUpdateError,
    EmptyInputError,
)


def json_response(
    data: object, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """``data`` as one line of JSON (`pausepoint.server.wire.dumps`)."""
    return Response(dumps(data), status, headers, media_type="application/json")


def service_of(request: Request) -> RunService:
    """The `RunService` the application serves (``app.state.service``)."""
    service: RunService = request.app.state.service
    return service


def status_of(exc: BaseException) -> int:
    """The HTTP status for an error: its own for a `ServerError`, else by its type.

    A conflict with what is stored (an answer to a question already answered, a thread
    another run advances) is 409; any other pausepoint error a request caused is 422;
    anything else is the server's fault, 500.
    """
    if isinstance(exc, ServerError):
        return exc.status
    if isinstance(exc, HTTPException):
        return exc.status_code
    if isinstance(exc, _CONFLICTS):
        return 409
    if isinstance(exc, _CALLER_FAULTS):
        return 422
    return 500


async def error_response(request: Request, exc: Exception) -> Response:
    """The JSON error response for ``exc`` (an exception handler of the app)."""
    del request
    status = status_of(exc)
    if isinstance(exc, HTTPException):
        name, message = _http_name(exc.status_code), str(exc.detail)
    else:
        name, message = type(exc).__name__, str(exc)
    body = {"error": name, "message": message, "detail": message}
    return json_response(body, status)


def _http_name(status: int) -> str:
    names = {404: "NotFound", 405: "MethodNotAllowed", 400: "BadRequest"}
    return names.get(status, f"HTTP{status}")
