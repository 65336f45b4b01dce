"""Who may use the inbox, and proof that a form was sent from the inbox's own page.

Authentication, by default a token, as Jupyter does it: the server prints a link
with ``?token=...`` once; opening it stores the token in a cookie (``HttpOnly``,
``SameSite=Strict``) and redirects to the same page without it, so the token stays
out of the address bar, the history and later request logs. Programs send
``Authorization: Bearer <token>`` instead. An application that mounts the inbox
may pass its own ``auth`` hook (a function of the request) in place of, or beside,
the token.

CSRF: every browser gets a random cookie; a form (or a script's ``X-CSRF-Token``
header) must carry an HMAC of it under a per-app secret. A page from another site can
neither read the cookie nor forge the HMAC. Requests authenticated by a bearer token
need none: a browser never adds that header by itself.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["AuthHook", "Guard", "GuardMiddleware", "new_token"]

AuthHook = Callable[[Request], "bool | Awaitable[bool]"]
"""Decides whether a request may use the inbox: True to let it in."""

_CSP = (
    "default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'nonce-{nonce}'; connect-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)


def new_token() -> str:
    """A fresh random token: 48 hex characters (192 bits)."""
    return secrets.token_hex(24)


class Guard:
    """The inbox's checks: who is let in, and which forms are genuine.

    Args:
        token: The token that lets a request in (query once, cookie, bearer header).
        auth: A hook deciding for requests without the token.
    """

    def __init__(self, token: str | None, auth: AuthHook | None) -> None:
        if token is None and auth is None:
            raise ValueError("the inbox needs a token or an auth hook")
        self.token = token
        self.auth = auth
        self._secret = secrets.token_bytes(32)
        # Cookies are shared by every port of a host: names of their own keep two
        # inboxes on one machine from logging each other out.
        tag = hashlib.sha256(self._secret).hexdigest()[:8]
        self.token_cookie = f"pausepoint_inbox_{tag}"
        self.csrf_cookie = f"pausepoint_inbox_csrf_{tag}"

    def token_matches(self, given: str | None) -> bool:
        """Whether ``given`` is the token (compared in constant time)."""
        if self.token is None or not given:
            return False
        return hmac.compare_digest(given.encode(), self.token.encode())

    def bearer(self, request: Request) -> str | None:
        """The request's ``Authorization: Bearer`` token, if it has one."""
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        return value.strip() if scheme.lower() == "bearer" else None

    async def allows(self, request: Request) -> bool:
        """Whether the request may use the inbox."""
        if self.token_matches(self.bearer(request)):
            return True
        if self.token_matches(request.cookies.get(self.token_cookie)):
            return True
        if self.auth is None:
            return False
        verdict = self.auth(request)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        return bool(verdict)

    def csrf_for(self, nonce: str) -> str:
        """The CSRF token forms carry for a browser whose cookie holds ``nonce``."""
        return hmac.new(self._secret, nonce.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, request: Request, sent: str | None) -> bool:
        """Whether a state-changing request is genuine (module docstring)."""
        if self.token_matches(self.bearer(request)):
            return True
        nonce = request.cookies.get(self.csrf_cookie)
        if not nonce or not sent:
            return False
        return hmac.compare_digest(sent.encode(), self.csrf_for(nonce).encode())


class GuardMiddleware:
    """ASGI middleware: lets in who `Guard` allows and adds the security headers.

    For each request it puts in ``scope["state"]``: ``csrf`` (the token forms carry)
    and ``nonce`` (the page's script nonce, for the Content-Security-Policy).
    """

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI call: refuse, log in, or pass on with the headers added."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if self.guard.token is not None and "token" in request.query_params:
            await self._login(request)(scope, receive, send)
            return
        if not await self.guard.allows(request):
            await _refused(request)(scope, receive, send)
            return
        nonce = secrets.token_urlsafe(16)
        cookie_nonce = request.cookies.get(self.guard.csrf_cookie)
        fresh = cookie_nonce is None
        if cookie_nonce is None:
            cookie_nonce = secrets.token_urlsafe(24)
        state: dict[str, object] = scope.setdefault("state", {})
        state["csrf"] = self.guard.csrf_for(cookie_nonce)
        state["nonce"] = nonce
        cookie = _cookie(self.guard.csrf_cookie, cookie_nonce, scope) if fresh else None

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                _secure_headers(headers, nonce)
                if cookie:
                    headers.append("set-cookie", cookie)
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _login(self, request: Request) -> Response:
        """Trade ``?token=`` for a cookie, and send the browser to the URL without it."""
        if not self.guard.token_matches(request.query_params.get("token")):
            return _refused(request)
        rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
        # One leading slash: "//host/..." would send the browser to another site.
        target = "/" + request.url.path.lstrip("/") + (f"?{urlencode(rest)}" if rest else "")
        response = RedirectResponse(target, status_code=303)
        token = self.guard.token or ""
        response.headers.append(
            "set-cookie", _cookie(self.guard.token_cookie, token, request.scope)
        )
        response.headers["referrer-policy"] = "no-referrer"
        return response


def _cookie(name: str, value: str, scope: Scope) -> str:
    path = str(scope.get("root_path") or "") or "/"
    secure = "; Secure" if scope.get("scheme") == "https" else ""
    return f"{name}={value}; Path={path}; HttpOnly; SameSite=Strict{secure}"


def _secure_headers(headers: MutableHeaders, nonce: str) -> None:
    headers.setdefault("content-security-policy", _CSP.format(nonce=nonce))
    headers.setdefault("x-content-type-options", "nosniff")
    headers.setdefault("x-frame-options", "DENY")
    headers.setdefault("referrer-policy", "no-referrer")
    headers.setdefault("cache-control", "no-store")


def _refused(request: Request) -> Response:
    path = request.url.path[len(str(request.scope.get("root_path") or "")) :]
    if path.startswith("/api/"):
        body = {
            "error": "unauthorized",
            "message": "send the token printed when the inbox started: "
            "'Authorization: Bearer <token>'",
        }
        return JSONResponse(body, status_code=401)
    text = (
        "401: this inbox needs its token.\n\n"
        "Open the link `pausepoint inbox` printed when it started (it ends in ?token=...); "
        "the browser then keeps the token in a cookie.\n"
    )
    return PlainTextResponse(text, status_code=401)
