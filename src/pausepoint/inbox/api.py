"""The inbox's JSON API under ``/api/``: list, get and answer questions.

Status codes: 200, 202 (an answer recorded as a run, with ``runs=``), 400 (a malformed
query or body), 401 (no token), 403 (a cookie request without its CSRF header), 404
(no such waiting question or run), 409 (the question no longer waits, or its thread is
busy), 422 (the answer does not fit the schema, with every problem). Examples are in docs/inbox.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse

from pausepoint.checkpoint import PendingQuestion
from pausepoint.errors import InvalidAnswerError
from pausepoint.inbox.agent_inbox import human_problems, human_request
from pausepoint.inbox.context import Inbox
from pausepoint.inbox.outcomes import CONFLICTS, conflict_message, run_failed_message
from pausepoint.inbox.present import BadQuery, jsonable, listing_from, question_json
from pausepoint.inbox.runs import Runs, run_path
from pausepoint.response_schema import AnswerProblem
from pausepoint.server.errors import NotFoundError

if TYPE_CHECKING:
    from pausepoint.serde.plain import Json

__all__ = ["Api"]


class Api:
    """The JSON handlers of one inbox."""

    def __init__(self, inbox: Inbox) -> None:
        self.inbox = inbox

    async def list(self, request: Request) -> JSONResponse:
        """``GET /api/questions``: a page of waiting questions and the next cursor."""
        try:
            listing = listing_from(request.query_params, self.inbox.page_size)
        except BadQuery as exc:
            return _error(400, "bad_query", str(exc))
        page = await self.inbox.questions.page(listing)
        root = self.inbox.root(request)
        versions = await self.inbox.questions.graph_versions(page.items)
        items = [question_json(q, root) for q in page.items]
        for q, item in zip(page.items, items, strict=True):
            item["graph_version"] = versions.get(q.thread_id)
        return JSONResponse({"items": items, "next_cursor": page.next_cursor})

    async def get(self, request: Request) -> JSONResponse:
        """``GET /api/threads/{thread}/questions/{question}``: one waiting question."""
        q = await self.inbox.questions.get(*_ids(request))
        if q is None:
            return _not_waiting(404)
        found = question_json(q, self.inbox.root(request))
        found["graph_version"] = await self.inbox.questions.graph_version(q.thread_id)
        return JSONResponse(found)

    async def answer(self, request: Request) -> JSONResponse:
        """``POST .../answer`` with ``{"answer": value}``: resume the question's thread."""
        body = await self._body(request)
        if isinstance(body, JSONResponse):
            return body
        q = await self.inbox.questions.get(*_ids(request))
        if q is None:
            return _not_waiting(409)
        human = human_request(q.value)
        wrong = human_problems(human, body) if human is not None else []
        if wrong:
            why = "the answer is not the [HumanResponse] this question's config allows"
            return _invalid(why, wrong)
        if self.inbox.runs is not None:
            return await self._enqueue(self.inbox.runs, q, body, self.inbox.root(request))
        return await self._resume(q, body)

    async def run(self, request: Request) -> JSONResponse:
        """``GET /api/threads/{thread}/runs/{run}``: a run's status and outcome."""
        runs = self.inbox.runs
        assert runs is not None  # the route exists only with runs
        thread_id = str(request.path_params["thread_id"])
        run_id = str(request.path_params["run_id"])
        root = self.inbox.root(request)
        try:
            report = await runs.report(thread_id, run_id, self.inbox.questions, root)
        except NotFoundError:
            return _error(404, "not_found", f"no run {run_id!r} of thread {thread_id!r}")
        return JSONResponse(report)

    async def _resume(self, q: PendingQuestion, body: object) -> JSONResponse:
        try:
            result = await self.inbox.questions.answer(q, body)
        except InvalidAnswerError as exc:
            return _invalid(str(exc), exc.problems)
        except CONFLICTS as exc:
            return _error(409, "conflict", conflict_message(exc))
        except Exception as exc:  # a node raised after the answer was stored
            return _error(500, "run_failed", run_failed_message(exc))
        return JSONResponse(
            {
                "answered": q.question_id,
                "thread_id": q.thread_id,
                "result": jsonable(result),
            }
        )

    async def _enqueue(
        self, runs: Runs, q: PendingQuestion, body: object, root: str
    ) -> JSONResponse:
        """Record the run answering ``q``; 202 with its id and where to follow it."""
        try:
            run = await runs.send(q, body)
        except InvalidAnswerError as exc:
            return _invalid(str(exc), exc.problems)
        except CONFLICTS as exc:
            return _error(409, "conflict", conflict_message(exc))
        page = run_path(root, q.thread_id, run.run_id)
        return JSONResponse(
            {
                "answered": q.question_id,
                "thread_id": q.thread_id,
                "run_id": run.run_id,
                "status": run.status,
                "run": f"{root}/api{page[len(root) :]}",
                "page": page,
            },
            status_code=202,
        )

    async def _body(self, request: Request) -> object:
        """The answer a POST sends, or the error response saying why it cannot be read."""
        if not self.inbox.guard.csrf_ok(request, request.headers.get("x-csrf-token")):
            why = "send 'Authorization: Bearer <token>' (or, from the inbox page, X-CSRF-Token)"
            return _error(403, "csrf", why)
        try:
            body: Json = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(400, "bad_body", f"the body is not JSON: {exc}")
        if not isinstance(body, dict) or "answer" not in body:
            return _error(400, "bad_body", 'send a JSON object {"answer": <value>}')
        return body["answer"]


def _invalid(message: str, problems: Sequence[AnswerProblem]) -> JSONResponse:
    listed = [{"path": p.path, "expected": p.expected, "got": p.got} for p in problems]
    return JSONResponse(
        {"error": "invalid_answer", "message": message, "problems": listed}, status_code=422
    )


def _ids(request: Request) -> tuple[str, str]:
    return str(request.path_params["thread_id"]), str(request.path_params["question_id"])


def _not_waiting(status: int) -> JSONResponse:
    return _error(
        status,
        "not_waiting" if status == 404 else "conflict",
        "this question does not wait (any more): it was answered, or never asked",
    )


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": code, "message": message}, status_code=status)
