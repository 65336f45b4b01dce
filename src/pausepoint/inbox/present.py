"""How questions are shown: as JSON for the API, as short texts for the pages.

Shared by the HTML pages and the JSON API so both say the same thing about a question.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Mapping
from datetime import date, datetime
from typing import TYPE_CHECKING, cast
from urllib.parse import quote

from starlette.datastructures import QueryParams

from pausepoint.checkpoint import PendingQuestion
from pausepoint.inbox.agent_inbox import human_request
from pausepoint.inbox.source import Listing

if TYPE_CHECKING:
    from pausepoint.serde.plain import Json

__all__ = [
    "BadQuery",
    "jsonable",
    "listing_from",
    "pretty",
    "question_json",
    "question_path",
    "remaining",
    "summary",
]

_MAX_LIMIT = 200


class BadQuery(ValueError):
    """A list query the inbox cannot read (a malformed ``metadata`` or ``limit``)."""


def jsonable(value: object) -> Json:
    """``value`` as plain JSON data; anything without a JSON form as its ``repr``."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        items = cast("Mapping[object, object]", value).items()
        return {str(k): jsonable(v) for k, v in items}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in cast("list[object]", value)]
    return _jsonable_object(value)


def _jsonable_object(value: object) -> Json:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    question_id = getattr(value, "question_id", None)
    if isinstance(question_id, str):  # an Interrupt: what a resumed run asks next
        return {"question_id": question_id, "value": jsonable(getattr(value, "value", None))}
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return jsonable(dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return repr(cast("object", value))


def pretty(value: object) -> str:
    """``value`` as indented JSON, for a ``<pre>``."""
    return json.dumps(jsonable(value), indent=2, ensure_ascii=False)


def summary(value: object, limit: int = 140) -> str:
    """One line about a question: its ``question`` text if it has one, else its JSON.

    An Agent Inbox request is summed up by its ``description``, else its action.
    """
    if isinstance(value, str):
        return _cut(value, limit)
    text = _question_text(value)
    if isinstance(text, str):
        return _cut(text, limit)
    return _cut(json.dumps(jsonable(value), ensure_ascii=False), limit)


def _question_text(value: object) -> object:
    human = human_request(value)
    if human is not None:  # Agent Inbox's request: its description, else its action
        return human.description or f"{human.action} {json.dumps(human.args)}"
    if isinstance(value, Mapping):
        return cast("Mapping[str, object]", value).get("question")
    return None


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def remaining(deadline: datetime | None, now: datetime) -> str:
    """The time left until ``deadline`` in words (``in 4m 05s``, ``overdue by 12s``)."""
    if deadline is None:
        return ""
    seconds = int((deadline - now).total_seconds())
    words = _duration(abs(seconds))
    return f"in {words}" if seconds > 0 else f"overdue by {words}"


def _duration(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def question_path(root: str, q: PendingQuestion) -> str:
    """The question's page, under the inbox's root path."""
    return (
        f"{root}/threads/{quote(q.thread_id, safe='')}/questions/{quote(q.question_id, safe=':')}"
    )


def question_json(q: PendingQuestion, root: str) -> dict[str, Json]:
    """A question as the JSON API shows it (docs/inbox.md lists the fields)."""
    page = question_path(root, q)
    return {
        "question_id": q.question_id,
        "thread_id": q.thread_id,
        "graph": q.graph,
        "value": jsonable(q.value),
        "response_schema": q.response_schema,
        "asked_at": q.asked_at.isoformat(),
        "deadline": q.deadline.isoformat() if q.deadline else None,
        "on_timeout": _on_timeout(q.on_timeout),
        "metadata": jsonable(q.metadata),
        "task_id": q.task_id,
        "task_name": q.task_name,
        "interrupt_id": q.interrupt_id,
        "position": q.position,
        "checkpoint_id": q.checkpoint_id,
        "agent_inbox": _agent_inbox(q.value),
        "links": {
            "page": page,
            "self": f"{root}/api{page[len(root) :]}",
            "answer": f"{root}/api{page[len(root) :]}/answer",
        },
    }


def _agent_inbox(value: object) -> Json:
    """What an Agent Inbox question offers (`pausepoint.inbox.agent_inbox`), else None."""
    human = human_request(value)
    if human is None:
        return None
    return {
        "action_request": human.action_request,
        "description": human.description,
        "allowed": list(human.allowed),
    }


def _on_timeout(policy: object) -> Json:
    if policy is None or isinstance(policy, str):
        return policy
    return {"answer": jsonable(getattr(policy, "value", policy))}


def listing_from(query: QueryParams, page_size: int) -> Listing:
    """The listing a query asks for: ``graph``, ``metadata``, ``cursor``, ``limit``.

    ``metadata`` is a JSON object, or ``key=value`` pairs separated by spaces or
    commas (a value that reads as JSON is taken as JSON: ``priority=1`` is a number).

    Raises:
        BadQuery: A malformed ``metadata`` or ``limit``, saying what was expected.
    """
    limit = query.get("limit") or str(page_size)
    if not limit.isdigit() or not 1 <= int(limit) <= _MAX_LIMIT:
        raise BadQuery(f"limit must be a whole number from 1 to {_MAX_LIMIT}; got {limit!r}")
    return Listing(
        graph=query.get("graph") or None,
        metadata=_metadata(query.get("metadata") or ""),
        cursor=query.get("cursor") or None,
        limit=int(limit),
    )


def _metadata(text: str) -> dict[str, Json]:
    text = text.strip()
    if text.startswith("{"):
        try:
            parsed: Json = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadQuery(f"metadata is not a JSON object: {exc.msg}") from None
        if not isinstance(parsed, dict):
            raise BadQuery("metadata must be a JSON object")
        return cast("dict[str, Json]", parsed)
    found: dict[str, Json] = {}
    for pair in text.replace(",", " ").split():
        key, eq, raw = pair.partition("=")
        if not eq or not key:
            raise BadQuery(f"metadata takes key=value pairs; {pair!r} has no '='")
        found[key] = _json_or_text(raw)
    return found


def _json_or_text(raw: str) -> Json:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw
