"""Runs whose record cannot be opened: ended ``error`` by the claim, never retried.

Under keys (`pausepoint.server.sealing`) a run's ``kwargs`` or ``metadata`` cell may
fail to open: tampered with, moved from another row, stored in clear while plaintext
is refused. A claim that raised on it would leave the run ``pending``, to be picked
again by every claim after it, and the runs behind it would wait forever. Instead
`pausepoint.server.store.Store.claim` ends it in its own transaction (`end_flow`)
and takes the next runnable run.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pausepoint.errors import CheckpointDecodeError
from pausepoint.server import event_rows
from pausepoint.server.records import JsonObject
from pausepoint.server.sealing import RUNS, dump_cell
from pausepoint.server.store_sql import Flow

if TYPE_CHECKING:
    from pausepoint.checkpoint._sealing import Sealer

__all__ = ["OPEN_ERRORS", "Unopenable", "end_flow", "log_ended"]

_log = logging.getLogger("pausepoint.server")

OPEN_ERRORS = (CheckpointDecodeError, json.JSONDecodeError)
"""What opening a run's cells raises when the record cannot be read."""


@dataclasses.dataclass(frozen=True, slots=True)
class Unopenable:
    """A run the claim found it cannot open, and ended ``error``."""

    run_id: str
    thread_id: str
    error: JsonObject
    """``{"error": type name, "message": str}``: the join body's ``__error__``."""


def end_flow(
    sealer: Sealer | None,
    run_id: str,
    thread_id: str,
    exc: Exception,
    now: float,
    *,
    postgres: bool,
) -> Flow:
    """End the run ``error`` in the claim's transaction; its `Unopenable`.

    Its result is a failed run's join body (``__error__``: the error's name and
    message, which name the cell, never its content); an ``error`` event and the end
    event let a ``join``, ``wait`` or stream of it end. Its checkpoints are not
    touched; the caller settles its thread.
    """
    error: JsonObject = {"error": type(exc).__name__, "message": str(exc)}
    body = dump_cell(sealer, {"__error__": error}, RUNS, (run_id,), "result")
    yield (
        "UPDATE pausepoint_server_runs SET status = 'error', result = ?, "
        "lease_owner = NULL, lease_until = NULL, updated_at = ? WHERE run_id = ?",
        (body, now, run_id),
    )
    yield from event_rows.failed(sealer, run_id, error, now, postgres=postgres)
    return Unopenable(run_id, thread_id, error)


def log_ended(ended: Sequence[Unopenable]) -> None:
    """Log each run the claim ended (after its transaction committed)."""
    for gone in ended:
        _log.error(
            "pausepoint serve: run %s of thread %s cannot be opened, ended with status "
            "error: %s: %s",
            gone.run_id, gone.thread_id, gone.error["error"], gone.error["message"],
        )  # fmt: skip
