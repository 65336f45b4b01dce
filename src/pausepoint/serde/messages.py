"""LangChain's message classes: known to every serializer, by a fixed allowlist.

Chat states hold ``langchain_core`` messages (``AIMessage``, ``ToolMessage``, ...).
They are Pydantic models, so they are stored like any registered model, under a
stable name ``langchain_core.messages.<Class>``. No one has to register them: a
serializer recognises them by the table below, comparing the class itself with
the one ``langchain_core.messages`` exports. The stored name only selects an entry
of this table; nothing named by stored data is ever imported. Reading such a value
imports ``langchain_core.messages`` itself (a fixed module), and fails with
`CheckpointDecodeError` when langchain-core is not installed.

The nested parts of a message (tool calls, usage metadata, content blocks) are
TypedDicts, so plain dicts: they need no entry.
"""

from __future__ import annotations

import sys
from typing import Final

from pausepoint.errors import CheckpointDecodeError

__all__ = ["MESSAGE_CLASSES", "PREFIX", "known_name", "message_class"]

PREFIX: Final = "langchain_core.messages."
"""The stable names' prefix: LangChain's public import path. Part of the stored format."""

MESSAGE_CLASSES: Final = frozenset(
    {
        "AIMessage",
        "AIMessageChunk",
        "HumanMessage",
        "HumanMessageChunk",
        "SystemMessage",
        "SystemMessageChunk",
        "ToolMessage",
        "ToolMessageChunk",
        "FunctionMessage",
        "FunctionMessageChunk",
        "ChatMessage",
        "ChatMessageChunk",
        "RemoveMessage",
    }
)
"""The ``langchain_core.messages`` classes a serializer stores without registration."""

_MODULE = "langchain_core.messages"


def known_name(cls: type[object]) -> str | None:
    """The stable name of ``cls`` if it is one of the allowed LangChain classes."""
    if not cls.__module__.startswith(_MODULE):
        return None
    module = sys.modules.get(_MODULE)  # loaded already: cls comes from it
    name = cls.__name__
    if module is None or name not in MESSAGE_CLASSES or getattr(module, name, None) is not cls:
        return None
    return PREFIX + name


def message_class(name: str) -> type[object] | None:
    """The allowed LangChain class stored as ``name``, or ``None`` if it is not one.

    Raises:
        CheckpointDecodeError: ``name`` is one, but langchain-core is not installed.
    """
    short = name.removeprefix(PREFIX)
    if short == name or short not in MESSAGE_CLASSES:
        return None
    try:
        import langchain_core.messages as module
    except ImportError:
        raise CheckpointDecodeError(
            f"the stored value holds a LangChain message ({name!r}), and langchain-core "
            "is not installed: install it (pip install 'pausepoint[messages]') to read it"
        ) from None
    cls: type[object] = getattr(module, short)
    return cls
