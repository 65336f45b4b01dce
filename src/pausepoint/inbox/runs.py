"""Answering through the run queue: an answer records a run, and the run's page follows it.

With ``create_app(graph_id, runs=...)`` the inbox does not resume a thread inside the
HTTP request: it records a run of the server's `RunService` (`pausepoint serve`'s
workers execute it) and answers at once. The run's page, and its JSON under
``/api/threads/{thread}/runs/{run}``, then say how it went: ``pending`` or
``running``; then finished (the values), waiting on the next question (linked), or
failed (the error).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast
from urllib.parse import quote

from pausepoint.errors import ThreadBusyError
from pausepoint.inbox.present import jsonable, question_json
from pausepoint.server.errors import ConflictError
from pausepoint.server.records import RunRecord, RunRequest
from pausepoint.server.service import RunService

if TYPE_CHECKING:
    from pausepoint.checkpoint import PendingQuestion
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.inbox.source import Questions
    from pausepoint.serde.plain import Json

__all__ = ["Runs", "RunsSource", "run_path"]

RunsSource = RunService | Callable[[], RunService]
"""A `RunService`, or a function returning it once it is open (a server's lifespan
opens it: ``lambda: server.state.service``)."""

ENDED_BADLY = {
    "interrupted": "The run was cancelled before it finished.",
    "timeout": "The run timed out.",
}


def run_path(root: str, thread_id: str, run_id: str) -> str:
    """The run's page, under the inbox's root path (``/api`` + it: its JSON)."""
    return f"{root}/threads/{quote(thread_id, safe='')}/runs/{quote(run_id, safe='')}"


class Runs:
    """The inbox's way to answer: a run of graph ``graph_id`` recorded in ``service``.

    Args:
        service: The run service (or the function returning it once it is open).
        graph_id: The name ``service`` serves the inbox's graph under.
    """

    def __init__(self, service: RunsSource, graph_id: str) -> None:
        self._source = service
        self.graph_id = graph_id

    @property
    def service(self) -> RunService:
        """The run service (read from the source each time: it may be opened later)."""
        source = self._source
        return source if isinstance(source, RunService) else source()

    def graph(self) -> CompiledStateGraph:
        """The compiled graph the service runs for ``graph_id``.

        Raises:
            ValueError: The service serves no graph of that name.
        """
        graphs = self.service.graphs
        if self.graph_id not in graphs:
            served = ", ".join(sorted(graphs)) or "none"
            why = f"the run service serves no graph {self.graph_id!r} (it serves {served})"
            raise ValueError(why)
        return graphs[self.graph_id]

    async def send(self, q: PendingQuestion, value: object) -> RunRecord:
        """Record the run that answers ``q`` (and only ``q``) with ``value``; at once.

        The run resumes with ``{"resume": {q.question_id: value}}``, as
        `pausepoint.questions.answer` does. The service checks it first and writes
        nothing when the engine would refuse it.

        Raises:
            InvalidAnswerError: ``value`` does not fit the question's schema.
            ResumeError: The question no longer waits (``AlreadyAnsweredError``...).
            ThreadBusyError: A run of the thread is pending or running.
        """
        service = self.service
        stamp: dict[str, Json] = {"graph_id": self.graph_id}
        await service.create_thread(thread_id=q.thread_id, metadata=stamp, if_exists="do_nothing")
        request = RunRequest(
            assistant_id=self.graph_id,
            command={"resume": {q.question_id: jsonable(value)}},
            multitask_strategy="reject",
        )
        try:
            return await service.create_run(q.thread_id, request)
        except ConflictError:  # "reject": a run of the thread is in flight
            raise ThreadBusyError(q.thread_id, 0.0) from None

    async def report(self, thread_id: str, run_id: str, questions: Questions, root: str) -> Json:
        """The run's status and, once it ended, its outcome (docs/inbox.md, "Runs").

        Raises:
            NotFoundError: No such run of the thread (or it was rolled back).
        """
        service = self.service
        run = await service.get_run(thread_id, run_id)
        ended = run.status not in ("pending", "running")
        found: dict[str, Json] = {
            "run_id": run.run_id,
            "thread_id": run.thread_id,
            "status": run.status,
            "ended": ended,
            "page": run_path(root, thread_id, run_id),
            "outcome": None,
        }
        if ended:
            body = await service.join_run(thread_id, run_id)
            found["outcome"] = await _outcome(run, body, thread_id, questions, root)
        return found


async def _outcome(
    run: RunRecord, body: dict[str, Json], thread_id: str, questions: Questions, root: str
) -> Json:
    error: object = body.get("__error__")
    if run.status == "error" or isinstance(error, dict):
        said = cast("dict[str, Json]", error) if isinstance(error, dict) else {}
        return {
            "kind": "failed",
            "error": said.get("error", "error"),
            "message": said.get("message", ""),
        }
    if run.status in ENDED_BADLY:
        return {"kind": "failed", "error": run.status, "message": ENDED_BADLY[run.status]}
    values = {k: v for k, v in body.items() if k != "__interrupt__"}
    if "__interrupt__" in body:
        waiting = await questions.waiting(thread_id)
        return {
            "kind": "waiting",
            "values": values,
            "questions": [question_json(q, root) for q in waiting],
        }
    return {"kind": "finished", "values": values}
