"""Questions in Agent Inbox's ``HumanInterrupt`` shape, and the answers it sends back.

A graph written for LangChain's Agent Inbox asks with ``interrupt(request)`` where
``request`` (or a list holding one) is::

    {"action_request": {"action": str, "args": dict},
     "config": {"allow_accept": bool, "allow_edit": bool,
                "allow_respond": bool, "allow_ignore": bool},
     "description": str | None}

and reads ``interrupt(request)[0]``: Agent Inbox always resumes with a LIST holding one
``HumanResponse`` ``{"type": "accept" | "edit" | "response" | "ignore", "args": ...}``
(accept: the action request; edit: the edited action request; response: the text;
ignore: null). The inbox offers only what ``config`` allows and sends the same list,
from its page (`read_human_form`) and through its JSON API (`human_problems` checks
what a client sends). See docs/inbox.md ("Agent Inbox questions").
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final, Literal, cast

from pausepoint.response_schema import AnswerProblem

if TYPE_CHECKING:
    from pausepoint.serde.plain import Json

__all__ = ["RESPONSE_TYPES", "HumanRequest", "human_problems", "human_request", "read_human_form"]

ResponseType = Literal["accept", "edit", "response", "ignore"]

RESPONSE_TYPES: Final[tuple[ResponseType, ...]] = ("accept", "edit", "response", "ignore")
"""The ``HumanResponse`` types, in the order the page offers them."""

_ALLOWED_BY: Final[dict[ResponseType, str]] = {
    "accept": "allow_accept",
    "edit": "allow_edit",
    "response": "allow_respond",
    "ignore": "allow_ignore",
}
LABELS: Final[dict[ResponseType, str]] = {
    "accept": "Accept",
    "edit": "Edit",
    "response": "Respond",
    "ignore": "Ignore",
}
"""Each type's button on the page."""


@dataclasses.dataclass(frozen=True, slots=True)
class HumanRequest:
    """A question in the ``HumanInterrupt`` shape, as the inbox offers it."""

    action: str
    args: dict[str, Json]
    description: str | None
    allowed: tuple[ResponseType, ...]
    """The response types ``config`` allows, in `RESPONSE_TYPES`' order."""

    @property
    def action_request(self) -> dict[str, Json]:
        """``{"action", "args"}``: what an accept sends back."""
        return {"action": self.action, "args": dict(self.args)}

    @property
    def args_text(self) -> str:
        """The args as indented JSON: where the edit form starts."""
        return json.dumps(self.args, indent=2, ensure_ascii=False)

    def label(self, kind: ResponseType) -> str:
        """The button that sends ``kind``."""
        return LABELS[kind]


def human_request(value: object) -> HumanRequest | None:
    """``value`` read as a ``HumanInterrupt`` (or a list of exactly one), else None.

    The shape must be whole: ``action_request`` with a string ``action`` and an object
    ``args``, and ``config`` an object whose ``allow_*`` flags are booleans (a missing
    flag means not allowed). Anything else is an ordinary question.
    """
    found = _single(value)
    if found is None:
        return None
    action_request, config = found.get("action_request"), found.get("config")
    description = found.get("description")
    if not (isinstance(action_request, Mapping) and isinstance(config, Mapping)):
        return None
    request = cast("Mapping[str, object]", action_request)
    flags = cast("Mapping[str, object]", config)
    action, args = request.get("action"), request.get("args")
    shaped = (
        isinstance(action, str)
        and isinstance(args, Mapping)
        and (description is None or isinstance(description, str))
        and all(isinstance(flags.get(f, False), bool) for f in _ALLOWED_BY.values())
    )
    if not shaped:
        return None
    allowed: tuple[ResponseType, ...] = tuple(
        t for t in RESPONSE_TYPES if flags.get(_ALLOWED_BY[t]) is True
    )
    plain = cast("dict[str, Json]", json.loads(json.dumps(args, default=repr)))
    return HumanRequest(cast("str", action), plain, cast("str | None", description), allowed)


def _single(value: object) -> Mapping[str, object] | None:
    """The one mapping ``value`` is or holds (a list of one), else None."""
    if isinstance(value, list):
        items = cast("list[object]", value)
        value = items[0] if len(items) == 1 else None
    return cast("Mapping[str, object]", value) if isinstance(value, Mapping) else None


def read_human_form(
    request: HumanRequest, data: Mapping[str, Sequence[str]]
) -> tuple[Json, list[AnswerProblem]]:
    """The ``[HumanResponse]`` the page's form sends, and what stops it being sent.

    The form's inputs: ``$.type`` (the button pressed), ``$.args`` (the edited args,
    a JSON object) and ``$.response`` (the text of a response).
    """
    kind = (data.get("$.type") or [""])[-1]
    if kind not in request.allowed:
        offered = ", ".join(request.allowed) or "nothing"
        return None, [AnswerProblem("$.type", f"one of {offered}", repr(kind[:40]))]
    args: Json
    if kind == "accept":
        args = request.action_request
    elif kind == "ignore":
        args = None
    elif kind == "response":
        args = (data.get("$.response") or [""])[-1]
        if not args.strip():
            return None, [AnswerProblem("$.response", "the text of a response", "nothing")]
    else:
        edited, problem = _edited_args((data.get("$.args") or [""])[-1])
        if problem is not None:
            return None, [problem]
        args = {"action": request.action, "args": edited}
    return [{"type": kind, "args": args}], []


def _edited_args(text: str) -> tuple[Json, AnswerProblem | None]:
    try:
        args: Json = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, AnswerProblem("$.args", "a JSON object", f"{exc.msg} ({text[:40]!r})")
    if not isinstance(args, dict):
        return None, AnswerProblem("$.args", "a JSON object", repr(text[:40]))
    return args, None


def human_problems(request: HumanRequest, answer: object) -> list[AnswerProblem]:
    """What is wrong with ``answer`` as Agent Inbox's reply to ``request`` (the API's check).

    The reply is a list of one ``{"type", "args"}`` whose type ``config`` allows, with
    the args that type carries. Empty when it fits.
    """
    listed = cast("list[object]", answer) if isinstance(answer, list) else None
    if listed is None or len(listed) != 1:
        return [AnswerProblem("$", 'a list of one {"type", "args"}', _got(cast("object", answer)))]
    item = listed[0]
    if not isinstance(item, Mapping):
        return [AnswerProblem("$[0]", 'an object {"type", "args"}', _got(item))]
    reply = cast("Mapping[str, object]", item)
    kind, args = reply.get("type"), reply.get("args")
    if kind not in request.allowed:
        offered = ", ".join(json.dumps(t) for t in request.allowed) or "nothing"
        return [AnswerProblem("$[0].type", f"one of {offered}", _got(kind))]
    if not _args_fit(kind, args):
        return [AnswerProblem("$[0].args", _ARGS_EXPECTED[kind], _got(args))]
    return []


_ARGS_EXPECTED: Final[dict[ResponseType, str]] = {
    "accept": 'an object {"action", "args": {...}}',
    "edit": 'an object {"action", "args": {...}}',
    "response": "a string",
    "ignore": "null",
}


def _args_fit(kind: ResponseType, args: object) -> bool:
    if kind == "ignore":
        return args is None
    if kind == "response":
        return isinstance(args, str)
    return isinstance(args, Mapping) and isinstance(
        cast("Mapping[str, object]", args).get("args"), Mapping
    )


def _got(value: object) -> str:
    return json.dumps(value, default=repr)[:60]
