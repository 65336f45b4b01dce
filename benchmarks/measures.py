"""The collected figures, and the pausepoint / LangGraph ratios set against issue 6.

``Table`` holds every per-process result; ``Measure`` is one figure on both sides
with its target. The derived measures (per-superstep cost, checkpoint cost per step,
memory) are computed here once, for both the Markdown report and the chart.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import workloads
from cases import DATABASE, FAN_OUT, IMPORT, MEMORY, OVERHEAD, Target

PP, LG, FLOOR, BASE = "pausepoint", "langgraph", workloads.FLOOR, workloads.BASE
LINEAR = 15.0  # K = 10 → 100 growth counted as linear (10x ideal; quadratic is 100x)


@dataclass(frozen=True)
class Table:
    names: list[str]
    series: dict[tuple[str, str], Any]  # (library, workload) -> run.Series
    has_langgraph: bool

    def median(self, library: str, name: str) -> float | None:
        found = self.series.get((library, name))
        if found is None or found.error or not found.medians:
            return None
        return statistics.median(found.medians)

    def extra(self, library: str, name: str, key: str) -> float | None:
        found = self.series.get((library, name))
        if found is None or found.error or not found.extras.get(key):
            return None
        return statistics.median(found.extras[key])


@dataclass(frozen=True)
class Measure:
    label: str
    pp: float | None
    lg: float | None
    target: Target | None
    floor: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.pp is None or self.lg is None or self.lg == 0:
            return None
        return self.pp / self.lg

    def verdict(self) -> str:
        if self.target is None or self.ratio is None:
            return "—"
        met = "met" if self.ratio <= self.target.ratio else "**not met**"
        return f"{self.target.label()}: {met}"


@dataclass(frozen=True)
class Rate:
    """Operations per second of one library on one workload, over its processes."""

    median: float
    low: float
    high: float


def rate(table: Table, library: str, name: str) -> Rate | None:
    """``per_run`` operations over the median time (and over the slowest, fastest)."""
    per_run = workloads.WORKLOADS[name].per_run
    found = table.series.get((library, name))
    if per_run is None or found is None or found.error or not found.medians:
        return None
    times = found.medians
    return Rate(per_run / statistics.median(times), per_run / max(times), per_run / min(times))


def rated(table: Table) -> list[str]:
    """The workloads of this run that are also reported as a rate (throughput)."""
    return [name for name in table.names if workloads.WORKLOADS[name].per_run is not None]


def has_base(table: Table) -> bool:
    return any(lib == BASE for lib, _name in table.series)


def _diff(a: float | None, b: float | None, steps: int) -> float | None:
    return None if a is None or b is None else (b - a) / steps


def superstep(table: Table) -> list[Measure]:
    """(chain-100 − chain-10) / 90 per checkpointer: one more superstep, start-up excluded."""
    found = []
    for tag in ("none", "memory"):
        short, long = f"chain-10/{tag}", f"chain-100/{tag}"
        if short in table.names and long in table.names:
            pp, lg, fl = (
                _diff(table.median(x, short), table.median(x, long), 90) for x in (PP, LG, FLOOR)
            )
            found.append(Measure(f"per-superstep cost, checkpointer {tag}", pp, lg, OVERHEAD, fl))
    return found


def checkpoint_per_step(table: Table) -> list[Measure]:
    """(…/memory − …/none) / steps: what saving one checkpoint costs, small vs big state."""
    found = []
    for label, stem, steps in (
        ("1 int", "chain-100", 100),
        ("list ≤ 10,000 items", "list-10000", 100),
    ):
        none, memory = f"{stem}/none", f"{stem}/memory"
        if none in table.names and memory in table.names:
            pp, lg, fl = (
                _diff(table.median(x, none), table.median(x, memory), steps)
                for x in (PP, LG, FLOOR)
            )
            found.append(Measure(f"checkpoint per step, state: {label}", pp, lg, None, fl))
    return found


def memory(table: Table) -> list[Measure]:
    """The memory figures of the threads-N workloads (bytes), ``peak`` against the target."""
    found = []
    for name in table.names:
        if not name.startswith("threads-"):
            continue
        for key, target in (("peak", MEMORY), ("retained", None), ("maxrss", None)):
            pp, lg, fl = (table.extra(x, name, key) for x in (PP, LG, FLOOR))
            found.append(Measure(f"{name} {key}", pp, lg, target, fl))
    return found


def growth(table: Table) -> dict[str, float | None]:
    small, large = "fan-interrupt-10/one-by-one", "fan-interrupt-100/one-by-one"
    found: dict[str, float | None] = {}
    for lib in (PP, LG):
        a, b = table.median(lib, small), table.median(lib, large)
        found[lib] = None if a is None or b is None or a == 0 else b / a
    return found


def per_workload(table: Table) -> list[Measure]:
    return [
        Measure(
            name,
            table.median(PP, name),
            table.median(LG, name),
            workloads.WORKLOADS[name].target,
            table.median(FLOOR, name),
        )
        for name in table.names
    ]


def summary(table: Table) -> list[Measure]:
    """Issue 6's explicit targets, one line each, in the order the issue lists them."""
    by_name = {m.label: m for m in per_workload(table)}
    picked = [*superstep(table)]
    for name, target in (
        ("interrupt-roundtrip", OVERHEAD),
        ("interrupt-sequence-10", OVERHEAD),
        ("fan-interrupt-100/one-by-one", FAN_OUT),
        ("import", IMPORT),
        ("roundtrip/sqlite", DATABASE),
        ("sequence-10/sqlite", DATABASE),
        ("roundtrip/postgres", DATABASE),
        ("sequence-10/postgres", DATABASE),
    ):
        if name in by_name:
            found = by_name[name]
            picked.append(Measure(name, found.pp, found.lg, target, found.floor))
    picked += [m for m in memory(table) if m.target is not None and "1000" in m.label]
    return picked


def chart_measures(table: Table) -> list[Measure]:
    """Everything with a ratio to plot: each workload, then the derived figures."""
    return per_workload(table) + superstep(table) + [m for m in memory(table) if m.target]
