"""Runs whose record cannot be opened: ended ``error`` by the claim, never retried.

Under keys (`pausepoint.server.sealing`) a run's ``kwargs`` or ``metadata`` cell may
fail to open: tampered with, moved from another row, stored in clear while plaintext
is refused. A claim that raised on it would leave the run ``pending``, to be picked
again by every claim after it, and the runs behind it would wait forever. Instead
`pausepoint.server.store.Store.claim` ends it in its own transaction (`end_flow`)
and takes the next runnable run. A request reading such a run (``GET`` it, ``join``,
``stream``) gets what opens of it and the error of what does not (`open_cells`,
`PartlyOpened`): its ``error`` outcome once the claim has ended it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pausepoint.errors import CheckpointDecodeError
from pausepoint.server import event_rows
from pausepoint.server.records import JsonObject, RunRecord
from pausepoint.server.sealing import RUNS, dump_cell, load_cell
from pausepoint.server.store_sql import Flow

if TYPE_CHECKING:
    from pausepoint.checkpoint._sealing import Sealer

__all__ = ["OPEN_ERRORS", "PartlyOpened", "Unopenable", "end_flow", "log_ended", "open_cells"]

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


@dataclasses.dataclass(frozen=True, slots=True)
class PartlyOpened:
    """A run whose record opens only in part: what does, and the error of what does not."""

    run: RunRecord
    """The record; a cell that does not open is empty (``kwargs``: only the assistant)."""
    unopened: tuple[str, ...]
    """The cells that do not open (``metadata``, ``kwargs``)."""
    error: JsonObject
    """``{"error": type name, "message": str}`` of the first that does not."""


def open_cells(
    sealer: Sealer | None, run_id: str, assistant_id: str, cells: Sequence[str | None]
) -> tuple[tuple[Any, Any], tuple[str, ...], JsonObject | None]:
    """A run's ``metadata`` and ``kwargs`` cells opened as far as they open.

    Returns the two values (one that does not open: empty, ``kwargs`` naming only the
    assistant, so that the request reads as the defaults), the cells that did not
    open, and the first one's error.
    """
    opened: list[Any] = []
    unopened: list[str] = []
    error: JsonObject | None = None
    for column, stored, empty in zip(
        ("metadata", "kwargs"), cells, ({}, {"assistant_id": assistant_id}), strict=True
    ):
        try:
            opened.append(load_cell(sealer, stored, RUNS, (run_id,), column))
        except OPEN_ERRORS as exc:
            opened.append(empty)
            unopened.append(column)
            error = error or {"error": type(exc).__name__, "message": str(exc)}
    return (opened[0], opened[1]), tuple(unopened), error


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
