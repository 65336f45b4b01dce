"""Runs creating one new thread at once (``if_not_exists="create"``), from two
processes' services on one database (issue 41, item 2).

On PostgreSQL the thread's row lock cannot lock a row not there yet: each request
inserted the thread and all but one failed on its key (a driver error, a 500). Now
one creates the thread and every run is recorded under its multitask strategy, or
refused with the documented 409 (``reject``). Real racing transactions, repeated
until the race is met many times; SQLite (its write lock serialises them) alike.
"""

from __future__ import annotations

import asyncio

import pytest
from tests.server.run_graphs import GRAPHS
from tests.server.service_fixtures import db_url, pg_schema, pg_url

from pausepoint.server.errors import ConflictError
from pausepoint.server.records import MultitaskStrategy, RunRecord, RunRequest
from pausepoint.server.service import RunService

__all__ = ["db_url", "pg_schema", "pg_url"]

pytestmark = pytest.mark.asyncio

_ROUNDS = 25
_RACERS = 3

_STATUSES: dict[MultitaskStrategy, list[str]] = {
    "enqueue": ["pending"] * _RACERS,
    "interrupt": ["interrupted"] * (_RACERS - 1) + ["pending"],
    "rollback": ["pending"],  # a pending run rolled back is deleted
    "reject": ["pending"],
}


@pytest.mark.parametrize("strategy", list(_STATUSES))
async def test_runs_creating_one_thread_at_once_are_recorded_or_refused_with_409(
    db_url: str, strategy: MultitaskStrategy
) -> None:
    services = [await RunService.open(db_url, GRAPHS, workers=0) for _ in range(_RACERS)]
    try:
        for n in range(_ROUNDS):
            tid = f"race-{strategy}-{n}"
            request = RunRequest(
                "steps", input={}, if_not_exists="create", multitask_strategy=strategy
            )
            got = await asyncio.gather(
                *(s.create_run(tid, request) for s in services), return_exceptions=True
            )
            made = [r for r in got if isinstance(r, RunRecord)]
            refused = [r for r in got if not isinstance(r, RunRecord)]
            if strategy == "reject":
                assert len(made) == 1, got
                assert all(isinstance(e, ConflictError) for e in refused), refused
            else:
                assert not refused, refused
            runs = await services[0].list_runs(tid, limit=10)
            assert sorted(r.status for r in runs) == sorted(_STATUSES[strategy])
            assert {r.run_id for r in runs} <= {r.run_id for r in made}
            thread = await services[0].get_thread(tid)
            assert thread.status == "busy"
            assert thread.metadata["graph_id"] == "steps"
    finally:
        for s in services:
            await s.close()
