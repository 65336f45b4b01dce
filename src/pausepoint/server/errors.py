"""The server's errors: each carries the HTTP status the API answers with."""

from __future__ import annotations

from typing import ClassVar

from pausepoint.errors import PausepointError

__all__ = ["ConflictError", "InvalidRequestError", "NotFoundError", "ServerError"]


class ServerError(PausepointError):
    """A request the server refuses; ``status`` is the HTTP status to answer with."""

    status: ClassVar[int] = 400


class NotFoundError(ServerError):
    """An assistant, thread or run that does not exist (404)."""

    status: ClassVar[int] = 404


class ConflictError(ServerError):
    """A request that conflicts with what is stored (409).

    A new run on a busy thread under ``multitask_strategy="reject"``, or a record that
    exists already under ``if_exists="raise"``.
    """

    status: ClassVar[int] = 409


class InvalidRequestError(ServerError):
    """A request the graph or the stored state cannot take (422).

    An unknown stream mode or node name, a resume with nothing to resume...
    """

    status: ClassVar[int] = 422
