"""A resume checked against the thread before its run is recorded (409/422, nothing written).

pausepoint refuses answers LangGraph would hand to the graph: a different answer to a
question already answered (`AlreadyAnsweredError`, 409), an id the thread does not
wait on (`UnknownInterruptIdError`), a resume with nothing waiting
(`NothingToResumeError`), a plain value for several questions
(`AmbiguousResumeError`), an answer its question's schema refuses
(`InvalidAnswerError`) — 422. The engine checks again when the run starts (the
thread may have moved on meanwhile): then the run ends ``error`` with the same typed
error. Checked here only while the thread is not busy: a queued run answers the
state its turn finds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from pausepoint.constants import RESUME
from pausepoint.errors import AlreadyAnsweredError, InvalidAnswerError, ResumeError
from pausepoint.loop.pending import parse_resume
from pausepoint.response_schema import answer_problems
from pausepoint.server.states import thread_config

if TYPE_CHECKING:
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.types import Interrupt

__all__ = ["check_resume"]


async def check_resume(graph: CompiledStateGraph, thread_id: str, resume: object) -> None:
    """Raise the error the engine would raise for ``resume`` on the thread's head.

    Raises:
        ResumeError: A subclass naming what is wrong (module docstring).
        InvalidAnswerError: The question's response schema refuses the answer.
    """
    config = thread_config(thread_id)
    head = await graph.aget_state(config)
    pending = list(head.interrupts)
    parsed = parse_resume(resume, pending)
    stored = await _stored_answers(graph, thread_id)
    task_of = {i.id: t.id for t in head.tasks for i in t.interrupts}
    by_id = {i.id: i for i in pending}
    for iid, value in parsed.values.items():
        question = by_id.get(iid)
        if question is None:
            continue
        answers = stored.get(task_of.get(iid, ""), [])
        _check_one(question, parsed.positions.get(iid), answers, value)


def _check_one(question: Interrupt, asked: int | None, answers: list[Any], value: object) -> None:
    waiting = question.position if question.position is not None else len(answers)
    at = waiting if asked is None else asked
    if at < len(answers):
        if answers[at] != value:
            raise AlreadyAnsweredError(question, at, answers[at], value)
        return
    if at > waiting:
        raise ResumeError(
            f"question {question.id}:{at} has not been asked yet: interrupt {question.id!r} "
            f"waits on question #{waiting + 1} of its task. Nothing was written."
        )
    if question.response_schema is not None:
        problems = answer_problems(value, question.response_schema)
        if problems:
            raise InvalidAnswerError(question, value, problems)


async def _stored_answers(graph: CompiledStateGraph, thread_id: str) -> dict[str, list[Any]]:
    """Task id -> the answers its task holds at the head (its ``__resume__`` write)."""
    saver = graph.checkpointer
    aget_tuple = getattr(saver, "aget_tuple", None)
    if aget_tuple is None:
        return {}
    saved = await aget_tuple(thread_config(thread_id))
    if saved is None:
        return {}
    found: dict[str, list[Any]] = {}
    for write in saved.pending_writes or ():
        task_id, channel, value = write[0], write[1], write[2]
        if channel == RESUME and isinstance(value, list):
            found[task_id] = list(cast("list[Any]", value))
    return found
