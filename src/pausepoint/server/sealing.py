"""The server's own tables under the savers' keys: each user-data cell sealed to its place.

When ``pausepoint serve`` (or ``pausepoint worker``) is given keys (``$PAUSEPOINT_KEYS``,
the `Sealer` its saver gets), the JSON of every user-data column of its tables is
sealed with them: assistants' ``config``, ``context``, ``metadata`` and
``description``; threads' ``metadata``; runs' ``metadata``, ``kwargs`` (the input,
the command with its answer, the config) and ``result``; events' ``data``. Each
ciphertext is bound (associated data) to its table, its row's key and its column
(`cell_binding`), so a cell moved to another row or column fails to open with a
`CheckpointDecodeError` naming the cell. Ids, statuses, times, leases, graph ids,
names and event names stay in clear: the server looks them up (docs/security.md).

A sealed cell is the text `PREFIX` followed by the base64 of the sealer's token
(the columns are ``TEXT``). A cell stored in clear (written before the keys were
configured) is refused unless the sealer allows plaintext; ``pausepoint rekey``
seals it (`pausepoint.server.resealing`).
"""

from __future__ import annotations

import base64
import json
import logging
from typing import TYPE_CHECKING, Any, cast

from pausepoint.checkpoint._sealing import binding
from pausepoint.config import looks_secret
from pausepoint.errors import CheckpointDecodeError

if TYPE_CHECKING:
    from pausepoint.checkpoint._sealing import Sealer

__all__ = [
    "ASSISTANTS",
    "EVENTS",
    "PREFIX",
    "RUNS",
    "THREADS",
    "cell_binding",
    "dump_cell",
    "load_cell",
    "open_text",
    "seal_text",
]

_log = logging.getLogger("pausepoint.server")

ASSISTANTS = "pausepoint_server_assistants"
THREADS = "pausepoint_server_threads"
RUNS = "pausepoint_server_runs"
EVENTS = "pausepoint_server_events"

PREFIX = "pausepoint-sealed:"
"""How a sealed cell's text starts (JSON text never does)."""

_NOUN = {ASSISTANTS: "assistant", THREADS: "thread", RUNS: "run", EVENTS: "event of run"}


def cell_binding(table: str, key: tuple[object, ...], column: str) -> bytes:
    """The associated data of one cell: its table, its row's key and its column."""
    return binding("server", table, column, *key)


def _what(table: str, key: tuple[object, ...], column: str) -> str:
    row = " #".join(str(k) for k in key)
    return f"the {column} of {_NOUN.get(table, table)} {row!r} ({table})"


def seal_text(
    sealer: Sealer | None, text: str, table: str, key: tuple[object, ...], column: str
) -> str:
    """``text`` as stored in the cell: sealed when there is a sealer."""
    if sealer is None:
        return text
    token = sealer.seal(text.encode("utf-8", "surrogatepass"), cell_binding(table, key, column))
    return PREFIX + base64.b64encode(token).decode("ascii")


def open_text(
    sealer: Sealer | None, stored: str, table: str, key: tuple[object, ...], column: str
) -> str:
    """The text a cell holds (``stored`` opened if it is sealed).

    Raises:
        CheckpointDecodeError: sealed with no sealer to open it, sealed for another
            cell or with no key the sealer has, or in clear while plaintext is refused.
    """
    if stored.startswith(PREFIX):
        if sealer is None:
            raise CheckpointDecodeError(
                f"{_what(table, key, column)} is encrypted and this server has no keys; "
                "set $PAUSEPOINT_KEYS (docs/security.md)"
            )
        try:
            token = base64.b64decode(stored[len(PREFIX) :], validate=True)
            opened = sealer.open(token, cell_binding(table, key, column))
        except Exception as exc:
            detail = f"{type(exc).__name__}{': ' + str(exc) if str(exc) else ''}"
            raise CheckpointDecodeError(
                f"{_what(table, key, column)} cannot be decrypted: none of the keys opens "
                "it, or it was moved from another row or column (each sealed cell is bound "
                f"to its table, row and column); the row is corrupt or tampered with ({detail})"
            ) from None
        return opened.decode("utf-8", "surrogatepass")
    if sealer is not None and not sealer.allow_plaintext:
        raise CheckpointDecodeError(
            f"{_what(table, key, column)} is stored unencrypted and this server refuses "
            "plaintext rows; set PAUSEPOINT_ALLOW_PLAINTEXT=1 while migrating the database, "
            "then run `pausepoint rekey --db URL` (docs/security.md)"
        )
    return stored


def dump_cell(
    sealer: Sealer | None, value: object, table: str, key: tuple[object, ...], column: str
) -> str:
    """A JSON cell's stored text: ``value`` as JSON, sealed when there is a sealer."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if sealer is None and column in _CONFIGS and _holds_secret(value, column):
        _warn_once(_what(table, key, column))
    return seal_text(sealer, text, table, key, column)


def load_cell(
    sealer: Sealer | None, stored: str | None, table: str, key: tuple[object, ...], column: str
) -> Any:
    """A JSON cell's value (None for NULL); see `open_text` for what it raises."""
    if stored is None:
        return None
    return json.loads(open_text(sealer, stored, table, key, column))


_CONFIGS = frozenset({"config", "kwargs"})
"""The columns holding a config: an assistant's, a run's request (``kwargs["config"]``)."""

_warned: list[bool] = []


def _holds_secret(value: object, column: str) -> bool:
    """Whether the config ``value`` holds (a run's: its request's) has a secret-looking key."""
    if isinstance(value, dict) and column == "kwargs":
        value = cast("dict[str, Any]", value).get("config")
    conf = cast("dict[str, Any]", value).get("configurable") if isinstance(value, dict) else None
    return isinstance(conf, dict) and any(
        isinstance(k, str) and looks_secret(k) for k in cast("dict[Any, Any]", conf)
    )


def _warn_once(what: str) -> None:
    if not _warned:
        _warned.append(True)
        _log.warning(
            "pausepoint serve: %s holds a configurable value whose key looks secret, "
            "stored in clear: give the server keys ($PAUSEPOINT_KEYS) to seal its tables "
            "(docs/security.md); said once per process",
            what,
        )
