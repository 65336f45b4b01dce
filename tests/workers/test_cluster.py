"""Two front ends and three workers as separate processes, on one PostgreSQL.

Runs created through either front end (langgraph-sdk) are executed once, by
whichever worker takes their job, and their results read through the other front end.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client
from tests.workers.cluster import TOKEN, Cluster, lines
from tests.workers.graphs import CHAIN

pytestmark = pytest.mark.asyncio


async def test_runs_from_either_front_end_execute_once(deployment: Cluster, tmp_path: Path) -> None:
    c = deployment
    a, b = c.fronts
    async with (
        get_client(url=a.url, api_key=TOKEN) as ca,
        get_client(url=b.url, api_key=TOKEN) as cb,
    ):
        n = 8

        async def one(i: int) -> tuple[str, Any, Any]:
            first, second = (ca, cb) if i % 2 else (cb, ca)
            log = str(tmp_path / f"thread-{i}.log")
            thread = await first.threads.create()
            tid = thread["thread_id"]
            paused = await second.runs.wait(tid, "chain", input={"log": log}, durability="sync")
            done = await first.runs.wait(
                tid, "chain", command={"resume": f"answer-{i}"}, durability="sync"
            )
            return tid, paused, done

        results = await asyncio.gather(*(one(i) for i in range(n)))
        for i, (tid, paused, done) in enumerate(results):
            assert paused["__interrupt__"][0]["value"]["question"] == "go on?", c.logs()
            assert done["answer"] == f"answer-{i}"
            assert done["items"] == list(CHAIN)
            got = lines(tmp_path / f"thread-{i}.log")
            # one execution of each node; ``ask`` ran once to ask, once to resume
            assert got == [
                "start one", "start two", "start ask", "start ask",
                f"answer answer-{i}", "start three", "start four",
            ]  # fmt: skip
            runs = await cb.runs.list(tid)
            assert sorted(r["status"] for r in runs) == ["success", "success"]
            assert (await ca.threads.get(tid))["status"] == "idle"
