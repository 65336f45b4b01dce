"""Chat messages in state: the ``add_messages`` reducer and ``MessagesState``.

``add_messages`` appends messages, replaces a message sent again with the id of one
already in the list, and removes messages by id (``REMOVE_ALL_MESSAGES`` clears the
list). Messages take one of two forms, picked once per call:

* **LangChain message objects**, when ``langchain-core`` is installed (the
  ``pausepoint[messages]`` extra): exactly LangGraph's behaviour. Every message is
  converted to a LangChain message first — dicts, ``(role, content)`` tuples and
  strings included — chunks become whole messages, and ``RemoveMessage(id=...)``
  removes one.
* **Plain dicts** (``{"role": ..., "content": ..., "id": ...}``), when
  ``langchain-core`` is not installed, or always with ``add_messages(format="dict")``
  (pausepoint's own format, so a dict-based app never changes shape when some other
  package brings langchain-core in). Dicts are copied, never changed in place; a
  string is a user message, a ``(role, content)`` tuple a message of that role;
  ``{"role": "remove", "id": ...}`` removes one.

Either way a message without an id gets a new ``uuid4`` string id.
"""

from __future__ import annotations

import functools
import warnings
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeVar

from typing_extensions import TypedDict

from pausepoint.graph.state import StateGraph

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = ["REMOVE_ALL_MESSAGES", "MessageGraph", "MessagesState", "add_messages"]

REMOVE_ALL_MESSAGES = "__remove_all__"
"""The id of a removal that clears every message before it (``RemoveMessage(id=...)``)."""

Format = Literal["langchain-openai", "dict"] | None

_DictMessage = dict[str, object]
"""A plain dict message: ``{"role": ..., "content": ..., "id": ...}``."""

_M = TypeVar("_M")
"""One message representation: `_DictMessage` or LangChain's ``BaseMessage``."""

_ROLES = frozenset(
    {"human", "user", "ai", "assistant", "function", "tool", "system", "developer", "remove"}
)
_EXTRA_HINT = "install langchain-core (pip install 'pausepoint[messages]')"


def add_messages(left: object = None, right: object = None, *, format: Format = None) -> Any:
    """Merge ``right`` into ``left``: append new messages, replace or remove by id.

    Use it as a reducer, ``Annotated[list, add_messages]``, or call it with only
    ``format=`` to get a reducer with that format.

    Args:
        left: The messages so far (a list or one message).
        right: The messages written (a list or one message).
        format: ``None`` (LangChain objects when langchain-core is installed, else
            dicts); ``"langchain-openai"`` (LangChain objects with OpenAI-style
            content, as LangGraph's); ``"dict"`` (always plain dicts).

    Returns:
        The merged list (a new list), or a reducer when neither side is given.

    Raises:
        ValueError: Only one side is given; a removal names an id not in ``left``;
            a dict message lacks ``role`` or ``content`` or has an unknown role.
        ImportError: LangChain messages are needed and langchain-core is missing.
    """
    if left is not None and right is not None:
        return _merge(left, right, format)
    if left is not None or right is not None:
        raise ValueError(
            "Must specify non-null arguments for both 'left' and 'right'. Only "
            f"received: '{'left' if left is not None else 'right'}'."
        )
    return functools.partial(_merge, format=format)


class MessagesState(TypedDict):
    """A state with one key, ``messages``, merged with [`add_messages`][]."""

    messages: Annotated[list[Any], add_messages]


class MessageGraph(StateGraph):
    """Deprecated (as in LangGraph 1.0): a graph whose whole state is a message list.

    Use ``StateGraph(MessagesState)`` instead.
    """

    def __init__(self) -> None:
        warnings.warn(
            "MessageGraph is deprecated, as in LangGraph 1.0: use StateGraph(MessagesState) "
            "and a 'messages' key instead",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(Annotated[list[Any], add_messages])


def __getattr__(name: str) -> Any:
    # LangGraph's module exposes langchain-core's RemoveMessage; so does this one, when
    # langchain-core is installed (it is never imported before it is asked for).
    if name == "RemoveMessage":
        if not _has_langchain():
            raise ImportError(
                f"RemoveMessage comes from langchain-core: {_EXTRA_HINT}. With plain dict "
                "messages, remove one with {'role': 'remove', 'id': message_id}"
            )
        from langchain_core.messages import RemoveMessage

        return RemoveMessage
    if name == "push_message":
        raise ImportError(
            "push_message is not supported: pausepoint has no 'messages' stream handler "
            "for it to write to; return the message from the node instead"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- merging ----------------------------------------------------------------------------


def _merge(
    left: object, right: object, format: Format = None
) -> list[_DictMessage] | list[BaseMessage]:
    if format not in (None, "langchain-openai", "dict"):
        raise ValueError(
            f"Unrecognized format={format!r}. Expected one of 'langchain-openai', 'dict', None."
        )
    form = _DICTS if format == "dict" or (format is None and not _has_langchain()) else _langchain()
    return form.merge(left, right, openai=format == "langchain-openai")


def _as_list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else [value]  # pyright: ignore[reportUnknownArgumentType]


def _removes_all(form: _Form[_M], message: _M) -> bool:
    return form.is_removal(message) and form.id_of(message) == REMOVE_ALL_MESSAGES


def _by_id(form: _Form[_M], old: list[_M], new: list[_M]) -> list[_M]:
    """``old`` with ``new`` applied: same id replaces (in place), removal drops, else appends."""
    merged = list(old)
    index = {form.id_of(m): i for i, m in enumerate(merged)}
    removed: set[object] = set()
    for m in new:
        mid = form.id_of(m)
        at = index.get(mid)
        if at is None and form.is_removal(m):
            raise ValueError(
                f"Attempting to delete a message with an ID that doesn't exist ('{mid}')"
            )
        if at is None:
            index[mid] = len(merged)
            merged.append(m)
        elif form.is_removal(m):
            removed.add(mid)
        else:  # a message sent again replaces the one with its id (and undoes a removal)
            removed.discard(mid)
            merged[at] = m
    return [m for m in merged if form.id_of(m) not in removed]


class _Form(Generic[_M]):
    """One message representation: coercion, ids and removals."""

    def merge(self, left: object, right: object, *, openai: bool) -> list[_M]:
        """``right`` merged into ``left`` (see `add_messages`), both coerced to this form."""
        old = self.coerce(_as_list(left))
        new = self.coerce(_as_list(right))
        import uuid  # here, not at the top: ``import pausepoint`` stays quick

        for m in (*old, *new):
            if self.id_of(m) is None:
                self.set_id(m, str(uuid.uuid4()))
        cut = max((i for i, m in enumerate(new) if _removes_all(self, m)), default=None)
        merged = new[cut + 1 :] if cut is not None else _by_id(self, old, new)
        return self.openai(merged) if openai else merged

    def coerce(self, values: list[object]) -> list[_M]:
        raise NotImplementedError

    def openai(self, values: list[_M]) -> list[_M]:
        raise NotImplementedError

    def id_of(self, message: _M) -> object:
        raise NotImplementedError

    def set_id(self, message: _M, mid: str) -> None:
        raise NotImplementedError

    def is_removal(self, message: _M) -> bool:
        raise NotImplementedError


class _Dicts(_Form[_DictMessage]):
    def coerce(self, values: list[object]) -> list[_DictMessage]:
        return [_dict_message(v) for v in values]

    def id_of(self, message: _DictMessage) -> object:
        return message.get("id")

    def set_id(self, message: _DictMessage, mid: str) -> None:
        message["id"] = mid

    def is_removal(self, message: _DictMessage) -> bool:
        return message.get("role", message.get("type")) == "remove"


class _LangChain(_Form["BaseMessage"]):
    def __init__(self, messages: Any) -> None:
        self._m = messages  # langchain_core.messages, imported on first use

    def coerce(self, values: list[object]) -> list[BaseMessage]:
        m = self._m
        return [m.message_chunk_to_message(x) for x in m.convert_to_messages(values)]

    def openai(self, values: list[BaseMessage]) -> list[BaseMessage]:
        return self._m.convert_to_messages(self._m.convert_to_openai_messages(values))

    def id_of(self, message: BaseMessage) -> str | None:
        return message.id

    def set_id(self, message: BaseMessage, mid: str) -> None:
        message.id = mid  # in place, as LangGraph does

    def is_removal(self, message: BaseMessage) -> bool:
        return isinstance(message, self._m.RemoveMessage)


_DICTS = _Dicts()


def _dict_message(value: object) -> _DictMessage:
    """A copy of ``value`` as a dict message (a string is a user message)."""
    if isinstance(value, str):
        return {"role": "user", "content": value}
    if isinstance(value, tuple) and len(value) == 2:  # pyright: ignore[reportUnknownArgumentType]
        role, content = value  # pyright: ignore[reportUnknownVariableType]
        message: _DictMessage = {"role": role, "content": content}
    elif isinstance(value, dict):
        message = dict(value)  # pyright: ignore[reportUnknownArgumentType]
    else:
        kind: type[object] = type(value)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        raise TypeError(
            f"cannot use {kind.__name__} {value!r} as a message: with plain dict "
            "messages use a dict ({'role': ..., 'content': ...}), a (role, content) tuple "
            f"or a string; for message objects {_EXTRA_HINT}"
        )
    _check_dict(message)
    return message


def _check_dict(message: _DictMessage) -> None:
    role = message.get("role", message.get("type"))
    if role is None or ("content" not in message and role != "remove"):
        raise ValueError(f"Message dict must contain 'role' and 'content' keys, got {message!r}")
    if role not in _ROLES:
        raise ValueError(
            f"Unexpected message role: {role!r}. Use one of {', '.join(map(repr, sorted(_ROLES)))}."
        )


@functools.cache
def _has_langchain() -> bool:
    import importlib.util

    return importlib.util.find_spec("langchain_core") is not None


@functools.cache
def _langchain() -> _LangChain:
    try:
        import langchain_core.messages
    except ImportError as exc:  # missing, or installed but broken: the cause says which
        raise ImportError(f"LangChain messages need langchain-core: {_EXTRA_HINT}") from exc
    return _LangChain(langchain_core.messages)
