"""What the CLI's web servers (``pausepoint inbox``, ``pausepoint serve``) share.

The loopback addresses (where serving without a token is safe), the check that an
extra's modules are installed, the address as a URL writes it, how long an idle
connection is kept, and the filter that keeps a login token out of uvicorn's logs.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Iterable

__all__ = [
    "KEEP_ALIVE_SECONDS",
    "LOOPBACK",
    "RedactToken",
    "missing_module",
    "redact_server_logs",
    "url_host",
]

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
"""Addresses only this machine reaches."""

KEEP_ALIVE_SECONDS = 75
"""How long the servers keep an idle HTTP connection open (uvicorn's default is 5 s).

A client must stop reusing an idle connection before the server closes it: when both
give up at about the same moment (httpx, which langgraph-sdk uses, expires idle
connections after 5 s), a request sent as the server closes is reset unread and the
client cannot tell whether it was accepted. 75 s is longer than the clients' expiry
and than the common load balancers' idle timeouts (60 s), which must also be shorter.
"""


def missing_module(modules: Iterable[tuple[str, str]]) -> str | None:
    """The package name of the first ``(module, package)`` that cannot be imported."""
    for module, package in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            return package
    return None


def url_host(host: str) -> str:
    """``host`` as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


class RedactToken(logging.Filter):
    """Hides ``token=...`` in log records, so the token appears only in the start line."""

    _TOKEN = re.compile(r"(token=)[^&\s\"']+")

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record's message and arguments with each token replaced by ``***``."""
        # uvicorn's access formatter reads the arguments (client, method, path, ...),
        # so they are redacted one by one and keep their shape.
        if isinstance(record.msg, str):
            record.msg = self._redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(self._redact(a) for a in record.args)
        return True

    def _redact(self, value: object) -> object:
        if isinstance(value, str) and "token=" in value:
            return self._TOKEN.sub(r"\1***", value)
        return value


def redact_server_logs() -> None:
    """Put `RedactToken` on uvicorn's loggers.

    uvicorn configures its loggers when the server starts; filters on the logger
    itself survive that (handlers are replaced, loggers are not).
    """
    for name in ("uvicorn.access", "uvicorn.error"):
        logging.getLogger(name).addFilter(RedactToken())
