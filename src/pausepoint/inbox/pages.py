"""The inbox's HTML pages: the list, a question with its form, and answering it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from xxhash import xxh3_64_hexdigest

from pausepoint.checkpoint import PendingQuestion
from pausepoint.errors import InvalidAnswerError
from pausepoint.inbox.agent_inbox import human_request, read_human_form
from pausepoint.inbox.context import Inbox
from pausepoint.inbox.forms import Form, form_for, prefilled, problems_by_field, read_form
from pausepoint.inbox.outcomes import CONFLICTS, conflict_message, run_failed_message
from pausepoint.inbox.present import (
    BadQuery,
    jsonable,
    listing_from,
    pretty,
    question_path,
    remaining,
)
from pausepoint.inbox.runs import run_path
from pausepoint.response_schema import AnswerProblem
from pausepoint.server.errors import NotFoundError

if TYPE_CHECKING:
    from pausepoint.types import StateSnapshot

__all__ = ["Pages"]


class Pages:
    """The HTML handlers of one inbox."""

    def __init__(self, inbox: Inbox) -> None:
        self.inbox = inbox

    async def index(self, request: Request) -> Response:
        """The list of waiting questions, which refreshes itself."""
        return await self._list(request, "list.html")

    async def rows(self, request: Request) -> Response:
        """Only the list's table and pager: what the list page polls for."""
        return await self._list(request, "rows.html")

    async def _list(self, request: Request, template: str) -> Response:
        inbox = self.inbox
        try:
            listing = listing_from(request.query_params, inbox.page_size)
        except BadQuery as exc:
            return inbox.render(request, "message.html", 400, heading="Bad filter", text=str(exc))
        page = await inbox.questions.page(listing)
        now = inbox.clock()
        root = inbox.root(request)
        versions = await inbox.questions.graph_versions(page.items)
        rows = [
            {
                "q": q,
                "href": question_path(root, q),
                "left": remaining(q.deadline, now),
                "version": versions.get(q.thread_id),
            }
            for q in page.items
        ]
        base = {k: v for k, v in request.query_params.items() if k not in ("cursor",)}
        more = f"?{_query({**base, 'cursor': page.next_cursor})}" if page.next_cursor else None
        unreadable = [str(e) for e in page.errors]
        # What the polling page compares before it replaces the table: the questions
        # listed, not the clock (replacing the table under a reader's click loses it).
        shown = [q.question_id + "\0" + q.thread_id for q in page.items]
        version = xxh3_64_hexdigest("\n".join([*shown, *unreadable, more or ""]).encode())
        return inbox.render(
            request,
            template,
            rows=rows,
            unreadable=unreadable,
            version=version,
            more=more,
            first=f"?{_query(base)}" if listing.cursor else None,
            graph=listing.graph or "",
            metadata=request.query_params.get("metadata", ""),
            query=_query(dict(request.query_params)),
            now=now.isoformat(),
            answered=request.query_params.get("answered"),
        )

    async def question(self, request: Request) -> Response:
        """One question: its value, its thread's recent history, the answer form."""
        q = await self._find(request)
        if q is None:
            return self._gone(request, 404)
        return await self._question_page(request, q, _form_of(q), {})

    async def answer(self, request: Request) -> Response:
        """Submit the form: resume the thread, or show what is wrong on the same page."""
        data = await request.form()
        submitted = {k: [str(v) for v in data.getlist(k)] for k in data}
        if not self.inbox.guard.csrf_ok(request, (submitted.get("csrf") or [""])[0]):
            text = "The form's security check failed. Reload the page and send it again."
            return self.inbox.render(request, "message.html", 403, heading="Not sent", text=text)
        q = await self._find(request)
        if q is None:
            return self._gone(request, 409)
        return await self._send(request, q, submitted)

    async def _send(
        self, request: Request, q: PendingQuestion, submitted: dict[str, list[str]]
    ) -> Response:
        """Read the form and answer ``q`` with it; the page that says how it went."""
        form = _form_of(q)
        human = human_request(q.value)
        if human is not None:
            value, unreadable = read_human_form(human, submitted)
        else:
            value, unreadable = read_form(form, submitted)
        if unreadable:
            return await self._question_page(request, q, form, submitted, unreadable)
        runs = self.inbox.runs
        try:
            if runs is not None:
                run = await runs.send(q, value)
                page = run_path(self.inbox.root(request), q.thread_id, run.run_id)
                return RedirectResponse(page, status_code=303)
            await self.inbox.questions.answer(q, value)
        except InvalidAnswerError as exc:
            problems: list[AnswerProblem] = list(exc.problems)
            return await self._question_page(request, q, form, submitted, problems)
        except CONFLICTS as exc:
            return self._gone(request, 409, conflict_message(exc))
        except Exception as exc:  # a node raised after the answer was stored
            text = run_failed_message(exc)
            return self.inbox.render(request, "message.html", 500, heading="Run failed", text=text)
        root = self.inbox.root(request)
        return RedirectResponse(f"{root}/?answered={quote(q.thread_id)}", status_code=303)

    async def run(self, request: Request) -> Response:
        """The run an answer recorded: its status, then how it ended (it polls till then)."""
        runs = self.inbox.runs
        assert runs is not None  # the route exists only with runs
        thread_id = str(request.path_params["thread_id"])
        run_id = str(request.path_params["run_id"])
        root = self.inbox.root(request)
        try:
            report = await runs.report(thread_id, run_id, self.inbox.questions, root)
        except NotFoundError:
            text = "No such run of this thread (a rolled-back run is deleted)."
            return self.inbox.render(request, "message.html", 404, heading="No such run", text=text)
        return self.inbox.render(request, "run.html", report=report, pretty=pretty)

    async def _find(self, request: Request) -> PendingQuestion | None:
        thread_id = str(request.path_params["thread_id"])
        question_id = str(request.path_params["question_id"])
        return await self.inbox.questions.get(thread_id, question_id)

    def _gone(self, request: Request, status: int, why: str = "") -> Response:
        text = why or (
            "This question no longer waits: someone answered it first, or its thread moved "
            "on. Nothing was sent."
        )
        return self.inbox.render(
            request, "message.html", status, heading="Already answered", text=text, conflict=True
        )

    async def _question_page(
        self,
        request: Request,
        q: PendingQuestion,
        form: Form,
        submitted: dict[str, list[str]],
        problems: Sequence[AnswerProblem] = (),
    ) -> Response:
        inbox = self.inbox
        history = await inbox.questions.history(q.thread_id, inbox.history_limit)
        version = await inbox.questions.graph_version(q.thread_id)
        human = human_request(q.value)
        if human is None:
            errors, general = problems_by_field(form, problems)
        else:  # its few inputs are not the schema's fields: every problem above them
            errors, general = {}, [_said(p) for p in problems]
        now = inbox.clock()
        return inbox.render(
            request,
            "question.html",
            422 if problems else 200,
            q=q,
            value=pretty(q.value),
            metadata=pretty(q.metadata),
            graph_version=version,
            left=remaining(q.deadline, now),
            now=now.isoformat(),
            on_timeout=_on_timeout_text(q.on_timeout),
            history=[_step(s) for s in history],
            form=form,
            human=human,
            submitted=submitted,
            errors=errors,
            general=general,
            action=question_path(inbox.root(request), q),
        )


def _said(problem: AnswerProblem) -> str:
    where = "" if problem.path == "$" else f"{problem.path}: "
    return f"{where}expected {problem.expected}, got {problem.got}"


def _form_of(q: PendingQuestion) -> Form:
    """The question's form, its details starting from what the question proposes."""
    return prefilled(form_for(q.response_schema), q.value)


def _step(snapshot: StateSnapshot) -> dict[str, object]:
    meta: dict[str, object] = dict(snapshot.metadata or {})
    return {
        "step": meta.get("step", ""),
        "source": meta.get("source", ""),
        "created_at": snapshot.created_at or "",
        "next": ", ".join(snapshot.next),
        "waiting": len(snapshot.interrupts),
        "writes": pretty(meta.get("writes")) if meta.get("writes") else "",
    }


def _query(params: Mapping[str, object]) -> str:
    return urlencode({k: v for k, v in params.items() if v not in (None, "")})


def _on_timeout_text(policy: object) -> str:
    if policy is None:
        return ""
    if policy == "fail":
        return "the question fails (the node gets DeadlineExpiredError)"
    given = jsonable(getattr(policy, "value", policy))
    return f"answered with {json.dumps(given, ensure_ascii=False)}"
