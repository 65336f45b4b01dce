"""Answers bound to questions: one answer answers exactly one question (DESIGN §4.1).

A question is one ``interrupt()`` call: the task that made it and the call's
position in the task (0 for the first). Interrupt ids are shared by every call of
one task, so the id alone does not name the question; the position is saved with
the question (the ``ASKED`` write) when the task pauses.

A task's answers are saved as one list, position by position. Binding an answer
never appends blindly: it goes to the position of the question the task is paused
on. So an answer sent twice (a client retry after a crash, a double submit) finds
its question already answered and changes nothing, and never becomes the answer
to the next question, which nobody has seen yet.

Pure functions: the loop (`pausepoint.loop.begin`) and the ``@task`` call
bookkeeping (`pausepoint.loop.calls`) both bind answers through them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pausepoint._asking import check_answer
from pausepoint.errors import AlreadyAnsweredError, ResumeError
from pausepoint.loop.pending import TaskRecord, is_own_interrupt
from pausepoint.types import Answer, Interrupt, Reanswer

__all__ = [
    "PAST",
    "bind_answer",
    "check_schemas",
    "drop_consumed",
    "plan_answers",
    "stored_answers",
]


PAST: list[object] = []
"""What `bind_answer` returns for a question the task has got past, answered
the same: a resend of a consumed answer, which changes nothing and runs nothing."""


def bind_answer(
    rec: TaskRecord, question: Interrupt, given: object, asked: int | None = None
) -> list[object] | None:
    """The task's answer list with ``given`` bound to its question, or None if unchanged.

    - The question waits: the answer is added at its position.
    - It has the same answer already (a resend): None, nothing to store; the task
      continues with the stored answer.
    - It has another answer: `AlreadyAnsweredError`, unless ``given`` is a
      `Reanswer`, which replaces it.

    ``asked``: the position the answer names (sent by question id). An earlier one
    than the task waits on is a question it has got past: the same answer again is
    `PAST` (nothing happens), another one `AlreadyAnsweredError`.
    """
    replace = isinstance(given, Reanswer)
    value = given.value if replace else given
    answers = rec.resume or []
    at = rec.position
    if asked is not None and asked != at:
        return _bind_elsewhere(rec, question, value, asked)
    if len(answers) > at:
        if replace:
            return (
                None
                if _same(answers[at], value) and len(answers) == at + 1
                else [
                    *answers[:at],
                    value,
                ]
            )
        if _same(answers[at], value):
            return None
        raise AlreadyAnsweredError(question, at, answers[at], value)
    if len(answers) < at:
        raise ResumeError(
            f"interrupt {question.id!r} was asked as question #{at + 1} of its task, but "
            f"only {len(answers)} earlier answer(s) are stored: the checkpoint's writes "
            "are inconsistent (written by another program?). Nothing was written."
        )
    return [*answers, value]


def _bind_elsewhere(
    rec: TaskRecord, question: Interrupt, value: object, asked: int
) -> list[object]:
    """An answer to a question other than the one the task waits on (by question id)."""
    answers = rec.resume or []
    if asked > rec.position or asked >= len(answers):
        raise ResumeError(
            f"question {question.id}:{asked} has not been asked yet: interrupt "
            f"{question.id!r} waits on question #{rec.position + 1} of its task "
            f"({question.value!r}, question id {question.id}:{rec.position}). Nothing was "
            "written."
        )
    if _same(answers[asked], value):
        return PAST
    raise AlreadyAnsweredError(
        Interrupt(f"(question #{asked + 1}, already past)", question.id, position=asked),
        asked,
        answers[asked],
        value,
    )


def plan_answers(
    tasks: Iterable[Any],
    records: Mapping[str, TaskRecord],
    values: Mapping[str, object],
    owners: Mapping[str, list[str]],
    positions: Mapping[str, int] | None = None,
) -> dict[str, list[object] | None]:
    """Bind a resume map to the tasks it answers, before anything is written.

    Returns task id → its new answer list (None: a resend, nothing to store) for
    every task an answer goes to (those re-run; a task's ``@task`` calls bind their
    own answers as they are called). Raises `AlreadyAnsweredError` for a
    conflicting answer, so that a refused resume writes nothing at all.
    """
    targets = {t for k in values if k in owners for t in owners[k]}
    planned: dict[str, list[object] | None] = {}
    if not targets:
        return planned
    for task in tasks:
        if task.id not in targets:
            continue
        rec = records[task.id]
        bound: list[object] | None = None
        for intr in rec.interrupts:
            if intr.id in values and is_own_interrupt(intr, task.ns):
                bound = bind_answer(rec, intr, values[intr.id], (positions or {}).get(intr.id))
                break
        if bound is not PAST:  # a resend of a consumed answer: the task stays paused
            planned[task.id] = bound
    for task_id in targets.difference(planned):
        # A paused ``@task`` call: it binds its answer when its caller calls it
        # again, but a conflict must be refused now, before anything is written.
        rec = records[task_id]
        question = next(i for i in rec.interrupts if i.id in values)
        bind_answer(rec, question, values[question.id], (positions or {}).get(question.id))
    return planned


def check_schemas(
    values: Mapping[str, object],
    positions: Mapping[str, int],
    records: Mapping[str, TaskRecord],
    *,
    forking: bool = False,
) -> None:
    """Refuse answers that their questions' response schemas refuse, before any write.

    Every waiting question an answer goes to is checked, a subgraph's too (its
    parent's record holds it): an answer naming another position (by question id)
    is not for this question, and `bind_answer` decides about it. ``forking``: the
    answers fork an old checkpoint, where questions answered since count too.

    Raises:
        InvalidAnswerError: The first refused answer, with all its problems.
    """
    for rec in records.values():
        if rec.done and not forking:
            continue
        for question in rec.interrupts:
            if question.response_schema is None or question.id not in values:
                continue
            at = positions.get(question.id)
            if at is None or question.position is None or at == question.position:
                check_answer(question, values[question.id])


def drop_consumed(
    resume: Mapping[str, object], records: Mapping[str, TaskRecord]
) -> dict[str, object]:
    """A resume map without the answers its finished tasks already used.

    A task that finished at this checkpoint after its question was answered has no
    pending interrupt; an answer sent to it again (a racing or retried request) is
    dropped when it is the answer the task used, and refused with
    `AlreadyAnsweredError` otherwise, rather than reported as an unknown id.
    """
    used: dict[str, tuple[Interrupt, int, Any]] = {}
    for rec in records.values():
        if rec.done and rec.interrupts and rec.resume:
            at = rec.asked if rec.asked is not None else len(rec.resume) - 1
            if 0 <= at < len(rec.resume):
                used.setdefault(rec.interrupts[0].id, (rec.interrupts[0], at, rec.resume[at]))
    kept: dict[str, object] = {}
    for key, given in resume.items():
        iid = key.partition(":")[0]
        if iid not in used:
            kept[key] = given
            continue
        question, at, stored = used[iid]
        value = unwrap(given)
        if not _same(stored, value):
            raise AlreadyAnsweredError(question, at, stored, value)
    return kept


def stored_answers(rec: TaskRecord) -> tuple[Answer, ...]:
    """The stored answer of the question ``rec`` is paused on, if it has one."""
    if not rec.answered or rec.resume is None:
        return ()
    at = rec.position
    return tuple(Answer(i, at, rec.resume[at]) for i in rec.interrupts[:1])


def unwrap(given: object) -> object:
    """The answer inside a `Reanswer`, or ``given`` itself."""
    return given.value if isinstance(given, Reanswer) else given


def _same(stored: object, given: object) -> bool:
    """Whether a resent answer is the stored one (a value whose ``==`` fails is not)."""
    try:
        return bool(stored == given)
    except Exception:  # e.g. arrays whose == is element-wise and ambiguous as a bool
        return False
