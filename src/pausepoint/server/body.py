"""Reading a request: its JSON body (size-limited) and its fields, checked by type.

Every problem of a body is collected and reported at once, in a 422 whose message
names each field, what it got and what it takes; a body larger than the limit is
refused (413) before it is parsed. Nothing is written for a request refused here:
the routes read and check everything before they call the service.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

from starlette.requests import Request

from pausepoint.server.errors import InvalidRequestError, ServerError

__all__ = [
    "DEFAULT_MAX_BODY",
    "BodyTooLargeError",
    "Fields",
    "query_bool",
    "query_int",
    "read_json",
]

DEFAULT_MAX_BODY = 10 * 1024 * 1024
"""The largest request body accepted by default (10 MiB)."""

_MISSING = object()


class BodyTooLargeError(ServerError):
    """A request body over the server's limit (413)."""

    status: ClassVar[int] = 413


async def read_json(request: Request, *, required: bool = True) -> Any:
    """The request's body parsed as JSON (None when empty and not ``required``).

    Raises:
        BodyTooLargeError: The body is longer than ``app.state.max_body`` bytes.
        InvalidRequestError: The body is not JSON (or is missing).
    """
    limit: int = getattr(request.app.state, "max_body", DEFAULT_MAX_BODY)
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLargeError(_too_large(int(declared), limit))
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            raise BodyTooLargeError(_too_large(len(data), limit))
    if not data.strip():
        if required:
            raise InvalidRequestError("the request needs a JSON body")
        return None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequestError(f"the body is not valid JSON: {exc}") from None


def _too_large(size: int, limit: int) -> str:
    return f"the request body has {size} bytes or more; this server takes at most {limit}"


class Fields:
    """The fields of a JSON object body, read by type; problems collected for `check`.

    Each getter returns the field's value, or its default when it is absent or null
    (the SDK leaves out None-valued keys; the JS client sends null). A wrong value is
    recorded and the default returned, so that one 422 lists every problem.
    """

    def __init__(self, body: object, what: str = "the body") -> None:
        self.problems: list[str] = []
        if body is None:
            body = {}
        if not isinstance(body, dict):
            self.problems.append(f"{what} must be a JSON object, got {_kind(body)}")
            body = {}
        self.body = cast("dict[str, Any]", body)

    def check(self) -> None:
        """Raise one `InvalidRequestError` listing every problem found, if any."""
        if self.problems:
            raise InvalidRequestError("invalid request: " + "; ".join(self.problems))

    def has(self, name: str) -> bool:
        """Whether the body has ``name`` with a non-null value."""
        return self.body.get(name) is not None

    def any(self, name: str, default: Any = None) -> Any:
        """The field's JSON value, whatever its type."""
        value = self.body.get(name)
        return default if value is None else value

    def str(self, name: str, default: str | None = None, *, required: bool = False) -> Any:
        """A string field."""
        return self._typed(name, (str,), "a string", default, required)

    def bool(self, name: str, default: bool) -> bool:
        """A boolean field."""
        return self._typed(name, (bool,), "true or false", default, False)

    def dict(self, name: str, default: Any = None) -> Any:
        """A JSON object field."""
        return self._typed(name, (dict,), "a JSON object", default, False)

    def int(self, name: str, default: int, *, low: int = 0, high: int | None = None) -> int:
        """An integer field within ``low..high``."""
        value = self._typed(name, (int,), "an integer", default, False)
        if isinstance(value, bool) or value < low or (high is not None and value > high):
            upper = f"..{high}" if high is not None else " or more"
            self.problems.append(f"{name!r} must be an integer {low}{upper}, got {value!r}")
            return default
        return value

    def number(self, name: str) -> float | None:
        """A number field (None when absent)."""
        value = self._typed(name, (int, float), "a number", None, False)
        return None if value is None or isinstance(value, bool) else float(value)

    def choice(self, name: str, allowed: Sequence[str], default: Any) -> Any:
        """A string field that must be one of ``allowed``."""
        value = self.body.get(name)
        if value is None:
            return default
        if value not in allowed:
            self.problems.append(f"{name!r} must be one of {list(allowed)}, got {value!r}")
            return default
        return value

    def str_list(self, name: str, *, star: bool = False, one: bool = False) -> Any:
        """A list of strings; ``star`` also takes ``"*"``, ``one`` a single string."""
        value = self.body.get(name)
        if value is None or (star and value == "*"):
            return value
        if one and isinstance(value, str):
            return [value]
        items = cast("list[object]", value) if isinstance(value, list) else None
        if items is None or not all(isinstance(v, str) for v in items):
            takes = "a list of strings" + (' or "*"' if star else "")
            self.problems.append(f"{name!r} must be {takes}, got {_show(cast('object', value))}")
            return None
        return items

    def _typed(
        self, name: str, kinds: tuple[type, ...], takes: str, default: Any, required: bool
    ) -> Any:
        value = self.body.get(name, _MISSING)
        if value is _MISSING or value is None:
            if required:
                self.problems.append(f"{name!r} is required ({takes})")
            return default
        if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
            self.problems.append(f"{name!r} must be {takes}, got {_show(value)}")
            return default
        return value


def query_bool(request: Request, name: str, default: bool = False) -> bool:
    """A query parameter read as a boolean (``1/0``, ``true/false``; the SDK sends both)."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.lower()
    if lowered in {"1", "true", "yes"}:
        return True
    if lowered in {"0", "false", "no"}:
        return False
    raise InvalidRequestError(f"query parameter {name!r} must be true or false, got {raw!r}")


def query_int(request: Request, name: str, default: int, *, low: int = 0, high: int = 1000) -> int:
    """A query parameter read as an integer within ``low..high``."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise InvalidRequestError(f"query parameter {name!r} must be an integer {low}..{high}")
    return value


def _kind(value: object) -> str:
    names: Mapping[type, str] = {list: "an array", str: "a string", bool: "a boolean"}
    return names.get(type(value), type(value).__name__)


def _show(value: object) -> str:
    text = json.dumps(value, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."
