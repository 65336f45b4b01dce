"""The least a Pregel superstep costs in CPython: chain-100 with nothing but the model.

    python benchmarks/min_step.py

Issue 35 asks for a superstep of chain-100 (``workloads.chain``: a 100-node linear
``StateGraph`` without a checkpointer) at most 20x the plain-Python floor
(``workloads.chain_floor``: the node function and a dict merge per step). This script
measures, in the same process and on the same node function, both the floor and a
stripped Pregel loop that does only what the model itself needs per step:

- channels with versions; each node subscribes to its trigger channel;
- the step's tasks found from the channels the last step updated, each run only if
  its trigger's version is newer than the one it has seen (``versions_seen``);
- the node called with its input read from the channels, its writes (and the edge to
  the next node) applied, versions bumped, the updated channels collected;
- a step counter with a limit.

Nothing else: no task ids, no task context (so no ``interrupt()``), no streaming, no
reducers or write validation, no ``Command``/``Send``, no retries, no error handling,
no checkpoints. It is an estimate of the floor of any engine with LangGraph's model
in pure Python, not an engine. Prints microseconds per run and per step, and the
ratio to the floor.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from workloads import _step  # pyright: ignore[reportPrivateUsage]  # the workloads' node

N = 100
ROUNDS = 2000


def _build(n: int) -> tuple[list[str], dict[str, str], dict[str, str | None]]:
    names = [f"n{k}" for k in range(n)]
    triggers = {name: f"branch:to:{name}" for name in names}
    edges: dict[str, str | None] = dict(zip(names, [*names[1:], None], strict=True))
    return names, triggers, edges


def pregel(n: int, node: Callable[[Any], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    """A run of the stripped loop over a chain of ``n`` nodes calling ``node``."""
    names, triggers, edges = _build(n)
    by_channel = {t: name for name, t in triggers.items()}

    def run() -> dict[str, Any]:
        values: dict[str, Any] = {"count": 0}
        versions = {"count": 1, triggers[names[0]]: 1}
        seen: dict[str, dict[str, int]] = {}
        updated = [triggers[names[0]]]
        step = 0
        while updated:
            step += 1
            if step > n + 10:
                raise RuntimeError("recursion limit")
            tasks: list[str] = []
            for channel in updated:
                name = by_channel.get(channel)
                if name is None:
                    continue
                its = seen.setdefault(name, {})
                if versions[channel] > its.get(channel, 0):
                    tasks.append(name)
            updated = []
            for name in tasks:
                trigger = triggers[name]
                seen[name][trigger] = versions[trigger]
                writes = list(node({"count": values["count"]}).items())
                following = edges[name]
                if following is not None:
                    writes.append((triggers[following], None))
                for channel, value in writes:
                    values[channel] = value
                    versions[channel] = versions.get(channel, 0) + 1
                    updated.append(channel)
        return values

    return run


def floor(n: int, node: Callable[[Any], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    """``workloads.chain_floor``'s run without a saver: a dict merge per step."""

    def run() -> dict[str, Any]:
        state: dict[str, Any] = {"count": 0}
        for _ in range(n):
            state = {**state, **node(state)}
        return state

    return run


def _per_run(run: Callable[[], dict[str, Any]]) -> float:
    for _ in range(100):
        assert run()["count"] == N
    best = float("inf")
    for _ in range(5):  # the best of five batches: the least disturbed
        start = time.perf_counter()
        for _ in range(ROUNDS):
            run()
        best = min(best, (time.perf_counter() - start) / ROUNDS)
    return best


def main() -> None:
    base = _per_run(floor(N, _step))
    least = _per_run(pregel(N, _step))
    print(f"floor (chain-{N}): {base * 1e6:.1f} us a run, {base / N * 1e9:.0f} ns a step")
    print(
        f"stripped Pregel loop: {least * 1e6:.1f} us a run, {least / N * 1e6:.2f} us a step,"
        f" {least / base:.1f}x the floor"
    )
    print(f"issue 35's bound (20x the floor): {20 * base / N * 1e6:.2f} us a step")


if __name__ == "__main__":
    main()
