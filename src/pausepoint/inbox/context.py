"""What every inbox handler shares: the graph's questions, the guard, the templates."""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

from pausepoint.inbox.present import summary
from pausepoint.inbox.security import Guard
from pausepoint.inbox.source import Questions

if TYPE_CHECKING:
    from pausepoint.inbox.runs import Runs

__all__ = ["Inbox", "templates"]


def templates() -> jinja2.Environment:
    """The inbox's Jinja2 templates (shipped in the package), escaping every value."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pausepoint.inbox", "templates"),
        # Everything a page shows may come from a graph's state: escape all of it,
        # whatever the template's name.
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    shared = typing.cast("dict[str, object]", env.globals)
    shared["summary"] = summary
    shared["as_json"] = json.dumps
    return env


@dataclasses.dataclass(frozen=True, slots=True)
class Inbox:
    """The inbox app's settings and collaborators (built by `create_app`).

    ``source`` gives the graph's `Questions` (made on first use when the graph comes
    from a run service opened later); ``runs``, when set, is how answers are sent:
    as runs the service's workers execute (`pausepoint.inbox.runs`).
    """

    source: Callable[[], Questions]
    guard: Guard
    env: jinja2.Environment
    clock: Callable[[], datetime]
    title: str
    poll_seconds: float
    page_size: int
    history_limit: int
    runs: Runs | None = None

    @property
    def questions(self) -> Questions:
        """The graph's waiting questions, threads and answers."""
        return self.source()

    def root(self, request: Request) -> str:
        """The path the inbox is mounted at ("" at the top of a server)."""
        return str(request.scope.get("root_path") or "").rstrip("/")

    def render(
        self, request: Request, name: str, status_code: int = 200, **values: object
    ) -> HTMLResponse:
        """A page from template ``name``, with what every page needs added."""
        state: dict[str, object] = request.scope.get("state") or {}
        page = self.env.get_template(name).render(
            title=self.title,
            root=self.root(request),
            csrf=state.get("csrf", ""),
            nonce=state.get("nonce", ""),
            poll_ms=int(self.poll_seconds * 1000),
            **values,
        )
        return HTMLResponse(page, status_code=status_code)
