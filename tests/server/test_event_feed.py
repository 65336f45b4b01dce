"""A run's events reach every front end: two real processes on one database.

Front end A is ``pausepoint serve --workers 0`` (it records runs and executes none);
B is a ``pausepoint serve`` with workers, on the same SQLite file or PostgreSQL
schema. A run created on A with ``runs.stream`` is executed by B, and A streams the
same events a single process streams for the same scenario (interrupts included);
``join_stream`` on A resumes after ``Last-Event-ID`` mid-run; a reader after the end
gets the whole log of a ``stream_resumable`` run and nothing of another; a killed
executing process ends A's stream with an ``error`` event, and the run's next
attempt (another process) is followed by joining again. SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph_sdk")
pytest.importorskip("uvicorn")

from langgraph_sdk import get_client
from tests.server.service_fixtures import eventually
from tests.server.serving import ROOT, TOKEN, Served, pg_database, serve, server_env

pytestmark = pytest.mark.asyncio

_IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}")


@contextlib.contextmanager
def _database(kind: str, where: Path, prefix: str) -> Iterator[str]:
    if kind == "sqlite":
        yield str(where / "feed.sqlite")
        return
    yield from pg_database(prefix)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def pair(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Served, Served]]:
    """(A, B): A executes no run, B executes them; one database."""
    where: Path = tmp_path_factory.mktemp("feed")
    with (
        _database(request.param, where, "feed") as db,
        serve(db, where / "b.log") as b,
        serve(db, where / "a.log", extra=["--workers", "0"]) as a,
    ):
        yield a, b


def _client(served: Served) -> Any:
    return get_client(url=served.url, api_key=TOKEN)


def _normal(parts: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The parts with run, thread, task and question ids replaced (they differ per run)."""
    return [(event, json.loads(_IDS.sub("<id>", json.dumps(data)))) for event, data in parts]


async def _scenario(create: Served, request: str) -> list[tuple[str, Any]]:
    """Ask, then answer, streaming both runs from ``create``; every part but metadata."""
    async with _client(create) as client:
        tid = (await client.threads.create())["thread_id"]
        modes = ["values", "updates", "events"]
        parts: list[tuple[str, Any]] = []
        for kwargs in ({"input": {"request": request}}, {"command": {"resume": "ok"}}):
            stream = client.runs.stream(tid, "approval", stream_mode=modes, **kwargs)
            parts += [(p.event, p.data) async for p in stream if p.event != "metadata"]
        state = await client.threads.get_state(tid)
    assert state["values"]["result"] == f"{request}: ok"
    return parts


async def test_a_front_end_streams_the_run_another_process_executes(
    pair: tuple[Served, Served],
) -> None:
    a, b = pair
    across = await _scenario(a, "deploy")
    alone = await _scenario(b, "deploy")
    assert _normal(across) == _normal(alone)
    values = [data for event, data in across if event == "values"]
    assert any(v.get("__interrupt__") for v in values)
    assert [v["value"] for v in values[1]["__interrupt__"]] == [{"question": "Approve deploy?"}]
    assert ("updates", {"finish": {"result": "deploy: ok"}}) in across


@pytest.mark.stress
async def test_many_concurrent_streams_across_processes(pair: tuple[Served, Served]) -> None:
    a, b = pair
    alone = _normal(await _scenario(b, "deploy"))
    for _ in range(5):
        across = await asyncio.gather(*(_scenario(a, "deploy") for _ in range(20)))
        assert all(_normal(parts) == alone for parts in across)


async def _ticking(client: Any, gate: Path, *, resumable: bool) -> tuple[str, str]:
    tid = (await client.threads.create())["thread_id"]
    run = await client.runs.create(
        tid,
        "ticker",
        input={"stop": 5000, "gate": str(gate)},
        stream_mode=["values"],
        stream_resumable=resumable,
    )
    return tid, run["run_id"]


async def _take(parts: AsyncIterator[Any], n: int) -> list[Any]:
    """The first ``n`` parts that are not metadata; the stream is closed after."""
    got: list[Any] = []
    async with contextlib.aclosing(parts) as stream:
        async for part in stream:
            if part.event != "metadata":
                got.append(part)
            if len(got) == n:
                break
    return got


async def _rest(parts: AsyncIterator[Any]) -> list[Any]:
    return [p async for p in parts if p.event != "metadata"]


async def test_join_stream_after_last_event_id_mid_run_and_after_the_end(
    pair: tuple[Served, Served], tmp_path: Path
) -> None:
    a, _ = pair
    async with _client(a) as client:
        await _join_mid_run(client, tmp_path / "gate")


async def _join_mid_run(client: Any, gate: Path) -> None:
    tid, run_id = await _ticking(client, gate, resumable=True)

    first = await _take(client.runs.join_stream(tid, run_id), 3)
    assert [int(p.id) for p in first] == [1, 2, 3]
    more = await _take(client.runs.join_stream(tid, run_id, last_event_id=first[-1].id), 2)
    assert [int(p.id) for p in more] == [4, 5]
    assert [p.data.get("n", 0) for p in first + more] == [0, 1, 2, 3, 4]

    rest = client.runs.join_stream(tid, run_id, last_event_id=more[-1].id)
    gate.touch()
    tail = await _rest(rest)  # ends when the run ends
    assert [int(p.id) for p in tail] == list(range(6, 6 + len(tail)))
    assert (await client.runs.get(tid, run_id))["status"] == "success"

    # After the end: the whole log of a resumable run, in order, from any front end.
    whole = await _rest(client.runs.join_stream(tid, run_id))
    assert [p.id for p in whole] == [p.id for p in first + more + tail]
    assert [p.data for p in whole] == [p.data for p in first + more + tail]


async def test_a_reader_after_the_end_of_a_run_not_resumable_gets_nothing(
    pair: tuple[Served, Served], tmp_path: Path
) -> None:
    a, _ = pair
    gate = tmp_path / "gate"
    gate.touch()
    async with _client(a) as client:
        tid, run_id = await _ticking(client, gate, resumable=False)
        await client.runs.join(tid, run_id)
        assert await _rest(client.runs.join_stream(tid, run_id)) == []
        with_id = client.runs.join_stream(tid, run_id, last_event_id="1")
        assert await _rest(with_id) == []


@contextlib.contextmanager
def _executor(db: str, ready: Path, lease: float) -> Iterator[subprocess.Popen[bytes]]:
    ready.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "tests.server.feed_executor", db, str(ready), str(lease)]
    process = subprocess.Popen(cmd, cwd=ROOT, env=server_env())
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


async def _up(process: subprocess.Popen[bytes], ready: Path) -> None:
    async def up() -> bool:
        assert process.poll() is None, "the executing process exited"
        return ready.exists()

    await eventually(up)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_killed_executing_process_ends_the_stream_with_an_error(
    kind: str, tmp_path: Path
) -> None:
    gate, ready = tmp_path / "gate", tmp_path / "ready"
    with (
        _database(kind, tmp_path, "feed_kill") as db,
        _executor(db, ready, lease=1.0) as executing,
    ):
        await _up(executing, ready)
        with serve(db, tmp_path / "a.log", extra=["--workers", "0"]) as a:
            await _killed(_client(a), db, gate, ready, executing)


async def _killed(
    opened: Any, db: str, gate: Path, ready: Path, executing: subprocess.Popen[bytes]
) -> None:
    async with opened as client:
        tid, run_id = await _ticking(client, gate, resumable=True)
        parts = client.runs.join_stream(tid, run_id)
        seen = await _take(_until_killed(parts, executing), 10**9)
        assert seen[-1].event == "error"
        assert seen[-1].data["error"] == "RunLost"
        values = [p for p in seen if p.event == "values"]
        assert len(values) >= 2
        last_id = values[-1].id

        with _executor(db, ready, lease=1.0) as again:  # requeues the run at start
            await _up(again, ready)
            follow = client.runs.join_stream(tid, run_id, last_event_id=last_id)
            head = await _take(follow, 1)
            assert int(head[0].id) > int(last_id)
            gate.touch()
            tail = client.runs.join_stream(tid, run_id, last_event_id=head[0].id)
            assert all(p.event == "values" for p in await _rest(tail))
            run = await client.runs.get(tid, run_id)
            assert run["status"] == "success"


async def _until_killed(parts: AsyncIterator[Any], executing: subprocess.Popen[bytes]) -> Any:
    """The parts; the executing process is killed after the second ``values``."""
    values = 0
    async for part in parts:
        yield part
        values += part.event == "values"
        if values == 2 and executing.poll() is None:
            executing.kill()
            executing.wait()
