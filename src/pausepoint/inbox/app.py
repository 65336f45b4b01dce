"""`create_app`: the inbox as an ASGI application (Starlette)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from pausepoint.inbox.api import Api
from pausepoint.inbox.context import Inbox, templates
from pausepoint.inbox.pages import Pages
from pausepoint.inbox.runs import Runs, RunsSource
from pausepoint.inbox.security import AuthHook, Guard, GuardMiddleware, new_token
from pausepoint.inbox.source import Questions
from pausepoint.questions import utc_now

if TYPE_CHECKING:
    from pausepoint.graph.compiled import CompiledStateGraph

__all__ = ["create_app"]

_QUESTION = "/threads/{thread_id:path}/questions/{question_id}"
_RUN = "/threads/{thread_id:path}/runs/{run_id}"


def create_app(
    graph: CompiledStateGraph | str,
    *,
    runs: RunsSource | None = None,
    token: str | None = None,
    auth: AuthHook | None = None,
    clock: Callable[[], datetime] | None = None,
    title: str = "pausepoint inbox",
    poll_seconds: float = 3.0,
    page_size: int = 50,
    history_limit: int = 10,
) -> Starlette:
    """The inbox of ``graph``'s waiting questions, as an ASGI application.

    Serve it with any ASGI server (``uvicorn.run(app, host="127.0.0.1")``), or mount
    it into an existing application (``Mount("/inbox", app=create_app(graph, ...))``):
    its links and cookies follow the mount path.

    Args:
        graph: A compiled graph with a checkpointer (a SQLite or PostgreSQL saver, or
            their async versions): the questions listed wait in its saver, and
            answers resume its threads. With ``runs``: the name the run service
            serves the graph under.
        runs: A `pausepoint.server.RunService` (or a function returning it once it
            is open): answers are then recorded as its runs, which its workers
            execute, and the answer page follows the run (docs/inbox.md, "Answering
            through the run queue"). Without it, an answer resumes the thread in
            the request.
        token: The secret that lets a request in (``?token=`` once, then a cookie; or
            ``Authorization: Bearer``). With neither ``token`` nor ``auth`` a random
            one is made: read it from ``app.state.token``.
        auth: A function of the Starlette ``Request`` returning (or awaiting to)
            True for a request allowed in; for an application with logins of its
            own. Requests with the token are let in too.
        clock: The time now, timezone-aware, for deadline countdowns (default:
            `pausepoint.questions.utc_now`, which follows ``use_clock``).
        title: The pages' title.
        poll_seconds: How often the list page refreshes itself.
        page_size: Questions per page (the API's ``limit`` may ask for up to 200).
        history_limit: How many of a thread's newest checkpoints a question's page shows.

    Returns:
        A Starlette application; ``app.state.token`` holds the token (None when only
        ``auth`` lets requests in).

    Raises:
        ValueError: ``graph`` has no checkpointer; or is a name without ``runs``, or
            a compiled graph with ``runs``.
    """
    if token is None and auth is None:
        token = new_token()
    guard = Guard(token, auth)
    queue, source = _sources(graph, runs)
    inbox = Inbox(
        source=source,
        runs=queue,
        guard=guard,
        env=templates(),
        clock=clock or utc_now,
        title=title,
        poll_seconds=poll_seconds,
        page_size=page_size,
        history_limit=history_limit,
    )
    pages, api = Pages(inbox), Api(inbox)
    routes = [
        Route("/", pages.index, methods=["GET"]),
        Route("/rows", pages.rows, methods=["GET"]),
        Route(_QUESTION, pages.question, methods=["GET"]),
        Route(_QUESTION, pages.answer, methods=["POST"]),
        Route("/api/questions", api.list, methods=["GET"]),
        Route(f"/api{_QUESTION}", api.get, methods=["GET"]),
        Route(f"/api{_QUESTION}/answer", api.answer, methods=["POST"]),
    ]
    if queue is not None:
        routes += [Route(_RUN, pages.run, methods=["GET"]), Route(f"/api{_RUN}", api.run)]
    app = Starlette(routes=routes, middleware=[Middleware(GuardMiddleware, guard=guard)])
    app.state.token = token
    return app


def _sources(
    graph: CompiledStateGraph | str, runs: RunsSource | None
) -> tuple[Runs | None, Callable[[], Questions]]:
    """How answers are sent, and the graph's `Questions` (made when first needed)."""
    if runs is None:
        if isinstance(graph, str):
            raise ValueError(f"graph {graph!r} is a name: pass runs= (the service serving it)")
        questions = Questions(graph)
        return None, lambda: questions
    if not isinstance(graph, str):
        raise ValueError("with runs=, pass the name the run service serves the graph under")
    queue = Runs(runs, graph)
    made: list[Questions] = []

    def source() -> Questions:
        if not made:
            made.append(Questions(queue.graph()))
        return made[0]

    return queue, source
