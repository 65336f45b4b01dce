"""The API's ``messages`` stream mode: a chat's messages as partial and complete events.

``messages-tuple`` passes the engine's ``(message, metadata)`` pairs through as they
come. ``messages``, the older mode that chat front ends built on, folds them instead:

- ``messages/metadata``, ``{message_id: {"metadata": ...}}``, once per message id,
  before its first partial;
- ``messages/partial``, ``[message so far]``: each chat-model token (a message chunk)
  added to the chunks of its id before it, so the client redraws one growing message;
- ``messages/complete``, ``[messages]``: the messages that appeared in the state's
  ``messages`` key (a ``values`` chunk) with an id not completed before — the input's
  messages, a model's whole answer, a tool's result — each once per run.

Events are named without a namespace even with ``stream_subgraphs`` (a subgraph's
tokens are the chat's tokens too), and only the root graph's state completes
messages unless subgraphs are streamed. Tokens without a message id are dropped (they
cannot be folded); so are messages a node returns outside the state (the engine's
non-chunk ``messages`` pairs): the state's copy completes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from pausepoint.server.wire import jsonable

__all__ = ["MessageEvents"]


def _message_id(message: object) -> str | None:
    found = (
        cast("Mapping[str, object]", message).get("id")
        if isinstance(message, Mapping)
        else getattr(message, "id", None)
    )
    return found if isinstance(found, str) and found else None


def _is_chunk(message: object) -> bool:
    """A chat model's token: LangChain's ``*MessageChunk`` classes, which add up with ``+``."""
    return type(message).__name__.endswith("MessageChunk") and hasattr(message, "__add__")


class MessageEvents:
    """Folds one run's ``messages`` and ``values`` chunks into the mode's events."""

    __slots__ = ("_completed", "_emit", "_subgraphs", "_tokens")

    def __init__(self, emit: Callable[[str, Any], None], *, subgraphs: bool) -> None:
        self._emit = emit
        self._subgraphs = subgraphs
        self._tokens: dict[str, Any] = {}
        self._completed: set[str] = set()

    def take(self, mode: str, ns: tuple[str, ...], data: Any) -> None:
        """Take one engine chunk (``messages`` or ``values``); emit what it makes."""
        if mode == "messages":
            self._token(data)
        elif mode == "values" and (not ns or self._subgraphs):
            self._state(data)

    def _token(self, data: Any) -> None:
        if not isinstance(data, tuple) or len(cast("tuple[Any, ...]", data)) != 2:
            return
        message, metadata = cast("tuple[Any, Any]", data)
        if not _is_chunk(message):
            return
        mid = _message_id(message)
        if mid is None:
            return
        so_far = self._tokens.get(mid)
        if so_far is None:
            self._emit("messages/metadata", {mid: {"metadata": jsonable(metadata)}})
            so_far = message
        else:
            so_far = so_far + message
        self._tokens[mid] = so_far
        self._emit("messages/partial", [jsonable(so_far)])

    def _state(self, values: Any) -> None:
        if not isinstance(values, Mapping):
            return
        messages = cast("Mapping[str, Any]", values).get("messages")
        if not isinstance(messages, list | tuple):
            return
        new: list[Any] = []
        for message in cast("list[Any]", messages):
            mid = _message_id(message)
            if mid is None or mid in self._completed:
                continue
            self._completed.add(mid)
            new.append(jsonable(message))
        if new:
            self._emit("messages/complete", new)
