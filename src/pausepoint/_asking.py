"""What a question says about its answer: its schema, deadline and timeout policy.

``interrupt(value, response_schema=..., deadline=..., on_timeout=...)`` hands them
over as given; `ask` checks and resolves them only when the question is asked (a
call that returns a stored answer pays nothing). The loop keeps a re-asked
question's first deadline (`keep_first_deadlines`) and checks each answer against
its question's schema before anything is written (`check_answer`).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Literal

from pausepoint._clock import as_utc, utc_now
from pausepoint.errors import DeadlineExpiredError, InvalidAnswerError
from pausepoint.response_schema import JsonSchema, answer_problems, json_schema_of
from pausepoint.types import Interrupt, Reanswer, TimedOut, TimeoutAnswer

__all__ = ["ask", "check_answer", "keep_first_deadlines", "timed_out"]


def ask(question: Interrupt, schema: object, deadline: object, on_timeout: object) -> Interrupt:
    """``question`` with the terms ``interrupt()`` was given, checked and resolved.

    A ``timedelta`` deadline is resolved against the clock (`utc_now`) now.

    Raises:
        TypeError: A schema with no JSON form, or a deadline of another type.
        ValueError: A malformed schema, a naive deadline, an ``on_timeout`` without a
            deadline or not ``"fail"``/`TimeoutAnswer`, or a default answer the
            schema refuses.
    """
    json_schema = None if schema is None else json_schema_of(schema)
    when = _deadline(deadline)
    policy = _on_timeout(on_timeout, when, json_schema)
    return question.with_terms(json_schema, when, policy)


def _deadline(given: object) -> datetime.datetime | None:
    if given is None:
        return None
    if isinstance(given, datetime.datetime):
        return as_utc(given, "interrupt(deadline=...)")
    if isinstance(given, datetime.timedelta):
        return utc_now() + given
    raise TypeError(
        f"interrupt(deadline=...) takes a timedelta or an aware datetime, got "
        f"{type(given).__name__} {given!r}"
    )


def _on_timeout(
    on_timeout: object, deadline: datetime.datetime | None, schema: JsonSchema | None
) -> Literal["fail"] | TimeoutAnswer | None:
    """``on_timeout`` checked: None, ``"fail"`` or a `TimeoutAnswer` the schema accepts."""
    if on_timeout is None:
        return None
    if on_timeout != "fail" and not isinstance(on_timeout, TimeoutAnswer):
        raise ValueError(
            f"interrupt(on_timeout={on_timeout!r}) is neither 'fail' nor a "
            "TimeoutAnswer(value): give on_timeout='fail' to make interrupt() raise "
            "DeadlineExpiredError once the deadline passed, or "
            "on_timeout=TimeoutAnswer(value) to answer value"
        )
    if deadline is None:
        raise ValueError(
            f"interrupt(on_timeout={on_timeout!r}) was given no deadline, so it would never "
            "apply: add deadline=timedelta(...) or an aware datetime"
        )
    if isinstance(on_timeout, TimeoutAnswer) and schema is not None:
        problems = answer_problems(on_timeout.value, schema)
        if problems:
            listed = "; ".join(str(p) for p in problems)
            raise ValueError(
                f"interrupt(on_timeout=TimeoutAnswer({on_timeout.value!r})): the default "
                f"answer does not match the question's response_schema ({listed}); give "
                "a default the question accepts"
            )
    return on_timeout if isinstance(on_timeout, TimeoutAnswer) else "fail"


def keep_first_deadlines(
    before: Sequence[Interrupt], found: tuple[Interrupt, ...]
) -> tuple[Interrupt, ...]:
    """``found`` with each question asked again keeping the deadline it was first given.

    ``before`` is what the task's record held: a question asked again (a subgraph
    that saves nothing re-runs its nodes each time its parent does) has the same id,
    the same value and, where both are known, the same position; a ``timedelta``
    deadline would otherwise move later each time.
    """
    if not before or all(i.deadline is None for i in found):
        return found
    return tuple(_kept(i, before) for i in found)


def _kept(question: Interrupt, before: Sequence[Interrupt]) -> Interrupt:
    if question.deadline is None:
        return question
    for old in before:
        if old.deadline is not None and _same_question(old, question):
            if old.deadline == question.deadline:
                return question
            return question.with_terms(question.response_schema, old.deadline, question.on_timeout)
    return question


def _same_question(old: Interrupt, new: Interrupt) -> bool:
    if old.id != new.id:
        return False
    if old.position is not None and new.position is not None and old.position != new.position:
        return False
    try:
        return bool(old.value == new.value)
    except Exception:  # a value whose == is ambiguous (arrays): not known to be the same
        return False


def check_answer(question: Interrupt, given: object) -> None:
    """Refuse an answer that does not match its question's schema.

    A `Reanswer` is checked by its value, a sweeper's `TimedOut` by the default it
    answers (``"fail"`` answers nothing).

    Raises:
        InvalidAnswerError: Listing every problem (path, expected, got).
    """
    schema = question.response_schema
    value = given.value if isinstance(given, Reanswer) else given
    if isinstance(value, TimedOut):
        if not isinstance(value.on_timeout, TimeoutAnswer):
            return
        value = value.on_timeout.value
    if schema is None:
        return
    problems = answer_problems(value, schema)
    if problems:
        raise InvalidAnswerError(question, value, problems)


def timed_out(answer: TimedOut) -> object:
    """What ``interrupt()`` returns for the sweeper's answer: the default it gave.

    Raises:
        DeadlineExpiredError: The question's ``on_timeout`` was ``"fail"``.
    """
    if isinstance(answer.on_timeout, TimeoutAnswer):
        return answer.on_timeout.value
    raise DeadlineExpiredError(answer.deadline, answer.swept_at)
