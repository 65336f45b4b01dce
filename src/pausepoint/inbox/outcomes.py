"""Which errors of an answer mean "someone else was first", and what to tell the person.

The JSON API answers them with 409 and the page with a conflict message, never an
error page: a stale form is an everyday event in a shared inbox.
"""

from __future__ import annotations

from pausepoint.errors import AlreadyAnsweredError, ResumeError, ThreadBusyError

__all__ = ["CONFLICTS", "conflict_message", "run_failed_message"]

CONFLICTS: tuple[type[Exception], ...] = (ResumeError, ThreadBusyError)
"""The errors of an answer to a question that no longer waits, or waits busy.

``ResumeError`` covers an id that is no longer pending (answered and moved on),
nothing pending at all, and `AlreadyAnsweredError` (another answer was stored first).
``InvalidAnswerError`` is caught before these: it is the answer's fault, a 422.
"""


def conflict_message(error: Exception) -> str:
    """What a person who sent a stale form should read."""
    if isinstance(error, ThreadBusyError):
        return (
            "Someone else's answer is being processed for this thread right now, so yours "
            "was not sent. Reload in a moment to see whether the question still waits."
        )
    if isinstance(error, AlreadyAnsweredError):
        return "Someone answered this question first, differently. Your answer was not sent."
    return (
        "This question no longer waits: someone answered it first, or its thread moved on. "
        "Your answer was not sent."
    )


def run_failed_message(error: Exception) -> str:
    """What to say when the answer was taken but the resumed run raised in a node.

    The answer is stored against its question before the node runs again, so it is
    not lost: the thread shows the failure (``pausepoint threads show``) and can be
    retried.
    """
    return (
        f"The answer was saved, but the resumed run failed: {type(error).__name__}: {error}. "
        "The thread keeps the answer and the error; retry it with `pausepoint threads "
        "retry`, or replace the answer with `pausepoint threads resume --replace`."
    )
