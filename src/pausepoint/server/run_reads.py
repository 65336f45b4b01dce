"""Reading the runs' records: a run, its status and result, a thread's runs.

`RunReads` is the read side of `pausepoint.server.store.Store` (its base): each method
is one read transaction. A run's ``metadata`` and ``kwargs`` cells are opened
(`pausepoint.server.sealing`) when it is read; `read_run` reads a run whose cells do
not all open as far as they do (`pausepoint.server.unopenable.PartlyOpened`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pausepoint.server.records import RunRecord, RunStatus
from pausepoint.server.sealing import RUNS, load_cell
from pausepoint.server.store_records import RecordStore, time_of
from pausepoint.server.store_sql import Flow, Row
from pausepoint.server.unopenable import PartlyOpened, open_cells

if TYPE_CHECKING:
    from pausepoint.checkpoint._sealing import Sealer

__all__ = ["RUN_COLUMNS", "RunReads", "run_of_row"]

RUN_COLUMNS = (
    "run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, "
    "created_at, updated_at"
)
"""A run record's columns, in `run_of_row`'s order."""


def run_of_row(row: Row, sealer: Sealer | None) -> RunRecord:
    """The record of a row of `RUN_COLUMNS` (its cells opened, or their error raised)."""
    key = (row[0],)
    metadata = load_cell(sealer, row[4], RUNS, key, "metadata")
    return _record(row, metadata, load_cell(sealer, row[5], RUNS, key, "kwargs"))


def _record(row: Row, metadata: Any, kwargs: Any) -> RunRecord:
    return RunRecord(
        run_id=row[0], thread_id=row[1], assistant_id=row[2], status=row[3],
        metadata=metadata, kwargs=kwargs, multitask_strategy=row[6],
        created_at=time_of(row[7]), updated_at=time_of(row[8]),
    )  # fmt: skip


def _partly(row: Row, sealer: Sealer | None) -> RunRecord | PartlyOpened:
    """The run as far as its record opens."""
    cells, unopened, error = open_cells(sealer, row[0], row[2], row[4:6])
    run = _record(row, *cells)
    return run if error is None else PartlyOpened(run, unopened, error)


class RunReads(RecordStore):
    """The runs' records, read."""

    def _run_row(self, thread_id: str, run_id: str) -> Flow:
        rows = yield (
            f"SELECT {RUN_COLUMNS} FROM pausepoint_server_runs WHERE run_id = ? AND thread_id = ?",
            (run_id, thread_id),
        )
        return rows[0] if rows else None

    async def get_run(self, thread_id: str, run_id: str) -> RunRecord | None:
        """The run of this thread, or None."""

        def flow() -> Flow:
            row = yield from self._run_row(thread_id, run_id)
            return None if row is None else run_of_row(row, self.sealer)

        result: RunRecord | None = await self.db.run(flow())
        return result

    async def read_run(self, thread_id: str, run_id: str) -> RunRecord | PartlyOpened | None:
        """The run of this thread as far as its record opens, or None.

        A record whose cells do not all open is a `PartlyOpened`: what opens, and the
        error of what does not (nothing raised).
        """

        def flow() -> Flow:
            row = yield from self._run_row(thread_id, run_id)
            return None if row is None else _partly(row, self.sealer)

        result: RunRecord | PartlyOpened | None = await self.db.run(flow())
        return result

    async def run_status(self, thread_id: str, run_id: str) -> str | None:
        """The run's status, None if it is not a run of this thread (no cell is opened)."""

        def flow() -> Flow:
            rows = yield (
                "SELECT status FROM pausepoint_server_runs WHERE run_id = ? AND thread_id = ?",
                (run_id, thread_id),
            )
            return str(rows[0][0]) if rows else None

        result: str | None = await self.db.run(flow())
        return result

    async def run_result(self, run_id: str) -> tuple[str, Any] | None:
        """The run's status and its stored join body (None while it has none)."""

        def flow() -> Flow:
            rows = yield (
                "SELECT status, result FROM pausepoint_server_runs WHERE run_id = ?",
                (run_id,),
            )
            if not rows:
                return None
            return str(rows[0][0]), load_cell(self.sealer, rows[0][1], RUNS, (run_id,), "result")

        result: tuple[str, Any] | None = await self.db.run(flow())
        return result

    async def runs(
        self, thread_id: str, *, limit: int, offset: int, status: RunStatus | None
    ) -> list[RunRecord | PartlyOpened]:
        """The thread's runs, newest first; one whose cells do not all open, as `read_run`."""

        def flow() -> Flow:
            extra, params = ("AND status = ? ", (status,)) if status else ("", ())
            rows = yield (
                f"SELECT {RUN_COLUMNS} FROM pausepoint_server_runs WHERE thread_id = ? "
                f"{extra}ORDER BY seq DESC LIMIT ? OFFSET ?",
                (thread_id, *params, limit, offset),
            )
            return [_partly(r, self.sealer) for r in rows]

        result: list[RunRecord | PartlyOpened] = await self.db.run(flow())
        return result

    async def last_ended_status(self, thread_id: str) -> str | None:
        """The status of the thread's newest run that ended."""

        def flow() -> Flow:
            rows = yield (
                "SELECT status FROM pausepoint_server_runs WHERE thread_id = ? "
                "AND status NOT IN ('pending', 'running') ORDER BY seq DESC LIMIT 1",
                (thread_id,),
            )
            return str(rows[0][0]) if rows else None

        result: str | None = await self.db.run(flow())
        return result

    async def running_owners(self) -> list[str]:
        """The lease owners of the running runs."""

        def flow() -> Flow:
            rows = yield (
                "SELECT DISTINCT lease_owner FROM pausepoint_server_runs "
                "WHERE status = 'running' AND lease_owner IS NOT NULL",
                (),
            )
            return [str(r[0]) for r in rows]

        result: list[str] = await self.db.run(flow())
        return result
