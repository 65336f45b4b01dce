"""Workers killed (SIGKILL) and cut off (``pg_terminate_backend``) during runs, restarted.

Every accepted run finishes, once: for each thread, every node's executions come
before the first execution of the node after it (a step saved is never run again:
a node's re-executions all come from a kill during it), the state has each node
once, in order, and the answer the thread was given is the one its node received
(``answer <answer>`` lines, all of them that answer, none after the next node).
``-m stress`` repeats it with more threads and more faults.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from tests.workers.cluster import TOKEN, Cluster, lines
from tests.workers.graphs import CHAIN

pytestmark = pytest.mark.asyncio


def check_thread(log: list[str], answer: str) -> None:
    """The invariants of one thread's log (see the module's docstring)."""
    nodes = ["ask" if line.startswith("answer ") else line.removeprefix("start ") for line in log]
    assert set(nodes) == set(CHAIN), log
    for before, after in itertools.pairwise(CHAIN):
        last = max(i for i, k in enumerate(nodes) if k == before)
        first = min(i for i, k in enumerate(nodes) if k == after)
        assert last < first, f"{before!r} ran again after {after!r} began: {log}"
    assert {line for line in log if line.startswith("answer ")} == {f"answer {answer}"}, log


async def _chaos(c: Cluster, rounds: int, rng: random.Random, done: asyncio.Event) -> list[str]:
    """Kill or cut off a random worker now and then; start a new one for each killed."""
    did: list[str] = []
    for _ in range(rounds):
        await asyncio.sleep(rng.uniform(0.3, 1.2))
        if done.is_set():
            break
        alive = [w for w in c.workers if w.process.poll() is None]
        victim = rng.choice(alive)
        if rng.random() < 0.6:
            c.kill(victim)
            c.worker()
            did.append(f"SIGKILL {victim.name}")
        else:
            n = await asyncio.to_thread(c.terminate_connections, victim)
            did.append(f"terminated {n} connections of {victim.name}")
    return did


async def _join(client: LangGraphClient, tid: str, run_id: str) -> Any:
    """``runs.join``, asked again when the connection drops before an answer.

    Seen under ``-m stress`` on a loaded machine (a pooled keep-alive connection the
    front end closed as the request went out, or reset): a join only reads, so asking
    again is safe.
    """
    for _ in range(5):
        try:
            return await client.runs.join(tid, run_id)
        except (httpx.RemoteProtocolError, httpx.ReadError):
            continue
    return await client.runs.join(tid, run_id)


async def run_under_faults(c: Cluster, tmp: Path, threads: int, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    a, b = c.fronts
    done = asyncio.Event()
    async with (
        get_client(url=a.url, api_key=TOKEN) as ca,
        get_client(url=b.url, api_key=TOKEN) as cb,
    ):

        async def one(i: int) -> tuple[str, Any]:
            first, second = (ca, cb) if i % 2 else (cb, ca)
            log = str(tmp / f"fault-{i}.log")
            tid = (await first.threads.create())["thread_id"]
            inp = {"log": log, "pause": 0.15}
            run = await first.runs.create(tid, "chain", input=inp, durability="sync")
            paused: Any = await _join(second, tid, run["run_id"])
            assert paused["__interrupt__"], paused
            run = await second.runs.create(
                tid, "chain", command={"resume": f"a{i}"}, durability="sync"
            )
            return tid, await _join(first, tid, run["run_id"])

        chaos = asyncio.create_task(_chaos(c, rounds, rng, done))
        try:
            results = await asyncio.wait_for(
                asyncio.gather(*(one(i) for i in range(threads))), 240
            )  # a safeguard against a hang, not a timing
        finally:
            done.set()
            did = await chaos
        for i, (tid, final) in enumerate(results):
            context = f"faults: {did}\nthread {tid}\n"
            assert final.get("items") == list(CHAIN), context + str(final)
            assert final.get("answer") == f"a{i}", context + str(final)
            check_thread(lines(tmp / f"fault-{i}.log"), f"a{i}")
            runs = await ca.runs.list(tid)
            assert [r["status"] for r in runs] == ["success", "success"], context
    for _ in range(sum(w.process.poll() is None for w in c.workers), 3):
        c.worker()  # leave three running for the next tests


async def test_killed_and_cut_off_workers_lose_no_run_and_repeat_no_saved_step(
    deployment: Cluster, tmp_path: Path
) -> None:
    await run_under_faults(deployment, tmp_path, threads=8, rounds=4, seed=34)


@pytest.mark.stress
@pytest.mark.parametrize("seed", range(5))
async def test_faults_repeated(deployment: Cluster, tmp_path: Path, seed: int) -> None:
    await run_under_faults(deployment, tmp_path, threads=30, rounds=12, seed=seed)
