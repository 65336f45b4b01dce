"""Turn collected timings into a Markdown report and, when matplotlib is there, a chart."""

from __future__ import annotations

import datetime
import hashlib
import importlib.util
import os
import platform
import shlex
import statistics
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import chart
import measures
import workloads
from measures import BASE, LG, PP, Measure, Rate, Table

__all__ = ["RunInfo", "Table", "markdown", "write"]


@dataclass(frozen=True)
class RunInfo:
    argv: list[str]
    plan: Any  # run.Plan
    wall: float  # seconds, the whole run
    source: str  # the pausepoint commit measured
    load_before: str  # /proc/loadavg at the start
    baseline: str | None = None  # what pausepoint@base measured, when it ran


# --------------------------------------------------------------------------- format


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds <= 0:
        return "≈ 0 (noise)"  # a difference of two medians can come out negative
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def size(n: float | None) -> str:
    if n is None:
        return "—"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "—"
    value = a / b
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3f}" if value < 1 else f"{value:.3g}"


def per_second(found: Rate | None) -> str:
    if found is None:
        return "—"
    return f"{found.median:,.0f}/s ({found.low:,.0f}–{found.high:,.0f})"


def times(a: Rate | None, b: Rate | None) -> str:
    return "—" if a is None or b is None or b.median == 0 else f"{a.median / b.median:.2f}×"


def cell(table: Table, library: str, name: str) -> str:
    found = table.series.get((library, name))
    if library == LG and not table.has_langgraph:
        return "not installed"
    if found is None or (not found.medians and not found.error):
        return "—"
    if found.error:
        return "**error** (see notes)"
    low, high = min(found.medians), max(found.medians)
    return f"{duration(statistics.median(found.medians))} ({duration(low)}–{duration(high)})"


def node_runs(table: Table, name: str) -> str:
    runs = [table.series.get((lib, name)) for lib in (PP, LG)]
    counts = [str(s.node_runs) if s and s.node_runs else "—" for s in runs]
    return " / ".join(counts) if any(c != "—" for c in counts) else ""


# --------------------------------------------------------------------------- sections


def main_table(table: Table) -> list[str]:
    lines = [
        "| workload | pausepoint median (min–max) | LangGraph median (min–max) "
        "| pp / LG | target | pp / floor | LG / floor | floor | node runs pp / LG |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in measures.per_workload(table):
        name = m.label
        lines.append(
            f"| {name} | {cell(table, PP, name)} | {cell(table, LG, name)} "
            f"| {ratio(m.pp, m.lg)} | {m.verdict()} | {ratio(m.pp, m.floor)} "
            f"| {ratio(m.lg, m.floor)} | {duration(m.floor)} | {node_runs(table, name)} |"
        )
    return lines


def _derived(title: str, rows: list[Measure], fmt: Any = duration) -> list[str]:
    if not rows:
        return []
    lines = ["", title, "", "| measure | pausepoint | LangGraph | pp / LG | target | floor |"]
    lines.append("|---|---|---|---|---|---|")
    for m in rows:
        lines.append(
            f"| {m.label} | {fmt(m.pp)} | {fmt(m.lg)} | {ratio(m.pp, m.lg)} "
            f"| {m.verdict()} | {fmt(m.floor)} |"
        )
    return lines


def per_superstep(table: Table) -> list[str]:
    title = "Per-superstep cost, (chain-100 − chain-10) / 90 (start-up excluded):"
    return _derived(title, measures.superstep(table))


def checkpoints(table: Table) -> list[str]:
    title = (
        "Checkpoint cost per step vs state size, (…/memory − …/none) / 100 steps; "
        "the growing list holds 5,050 items on average over its 100 checkpoints:"
    )
    return _derived(title, measures.checkpoint_per_step(table))


def memory(table: Table) -> list[str]:
    title = (
        "Memory of the threads workloads (measured inside each worker after its first run): "
        "`peak` = tracemalloc peak over pausing then resuming every thread; `retained` = "
        "traced bytes held once all are paused (after gc); `maxrss` = growth of the "
        "process's peak RSS over the first, untraced run (coarse: pages and allocator "
        "slack; 0 in `--quick`, where one process runs every workload):"
    )
    return _derived(title, measures.memory(table), size)


def growth(table: Table) -> list[str]:
    """How resuming K interrupts one at a time grows from K=10 to K=100 (linear ≈ 10×)."""
    small, large = "fan-interrupt-10/one-by-one", "fan-interrupt-100/one-by-one"
    if small not in table.names or large not in table.names:
        return []
    rows = []
    factors = measures.growth(table)
    for lib in (PP, LG):
        a, b, factor = table.median(lib, small), table.median(lib, large), factors[lib]
        shape = (
            "—"
            if factor is None
            else ("linear" if factor <= measures.LINEAR else "**superlinear**")
        )
        rows.append(
            f"| {lib} | {duration(a)} | {duration(b)} | {ratio(b, a)} | {shape} "
            f"| {node_runs_of(table, lib, small)} → {node_runs_of(table, lib, large)} |"
        )
    return [
        "",
        "Resuming K parallel interrupts one at a time, K = 10 → 100 "
        f"(linear ≈ 10×, quadratic ≈ 100×; counted linear up to {measures.LINEAR:g}×):",
        "",
        "| library | K = 10 | K = 100 | growth | shape | node runs |",
        "|---|---|---|---|---|---|",
        *rows,
    ]


def throughput(table: Table) -> list[str]:
    """Resumes per second of the throughput workloads, as multiples of LangGraph's."""
    names = measures.rated(table)
    if not names:
        return []
    base = measures.has_base(table)
    lines = [
        "",
        "Resume throughput, resumes per second: median (slowest–fastest process); the time "
        "runs from the workers' common start to the last one's finish (issue 35: pausepoint "
        "at least 3× LangGraph's" + (", with the baseline's beside it):" if base else "):"),
        "",
        "| workload | pausepoint | LangGraph | pp / LG |"
        + (" pausepoint@base | pp / base |" if base else ""),
        "|---|---|---|---|" + ("---|---|" if base else ""),
    ]
    for name in names:
        pp, lg = measures.rate(table, PP, name), measures.rate(table, LG, name)
        row = f"| {name} | {per_second(pp)} | {per_second(lg)} | {times(pp, lg)} |"
        if base:
            old = measures.rate(table, BASE, name)
            row += f" {per_second(old)} | {times(pp, old)} |"
        lines.append(row)
    return lines


def against_base(table: Table) -> list[str]:
    """Every workload's median time, this checkout against the baseline."""
    if not measures.has_base(table):
        return []
    lines = [
        "",
        "Against the baseline (pausepoint@base), median time per workload (< 1: faster):",
        "",
        "| workload | pausepoint | pausepoint@base | pp / base |",
        "|---|---|---|---|",
    ]
    for name in table.names:
        pp, old = table.median(PP, name), table.median(BASE, name)
        lines.append(
            f"| {name} | {cell(table, PP, name)} | {cell(table, BASE, name)} | {ratio(pp, old)} |"
        )
    return lines


def summary(table: Table) -> list[str]:
    rows = measures.summary(table)
    if not rows:
        return []
    lines = ["", "Issue 6 targets (pausepoint / LangGraph, this run):", ""]
    lines += ["| target | measured by | pp / LG | verdict |", "|---|---|---|---|"]
    for m in rows:
        what = m.target.source if m.target else ""
        lines.append(f"| {what} | {m.label} | {ratio(m.pp, m.lg)} | {m.verdict()} |")
    return lines


def node_runs_of(table: Table, library: str, name: str) -> str:
    found = table.series.get((library, name))
    return str(found.node_runs) if found and found.node_runs else "—"


def notes(table: Table) -> list[str]:
    lines: list[str] = []
    errors = [
        f"- `{name}` on {lib}: {found.error}"
        for (lib, name), found in table.series.items()
        if found.error
    ]
    if errors:
        lines += ["", "Errors (that side is left out of the table):", "", *errors]
    single = [
        f"{name} ({lib})"
        for (lib, name), found in table.series.items()
        # A throughput run is one run per process by design.
        if found.iters and max(found.iters) == 1 and workloads.WORKLOADS[name].per_run is None
    ]
    if single:
        lines += ["", "Timed from one run per process (slower than twice the budget): "]
        lines[-1] += ", ".join(single) + "."
    return lines


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def environment(run: RunInfo) -> list[str]:
    plan, wall = run.plan, run.wall
    began = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=wall)
    versions = ", ".join(f"{p} {_version(p)}" for p in (PP, LG))
    return [
        f"- date: {began:%Y-%m-%d %H:%M} UTC (start of the run)",
        f"- pausepoint source: {run.source}",
        *([f"- pausepoint@base source: {run.baseline}"] if run.baseline else []),
        f"- machine: {os.cpu_count()} cores, {_cpu_model()}, {platform.system()} "
        f"{platform.release()}; load average (1, 5, 15 min) at start {run.load_before}, "
        f"at end {load_average()}",
        f"- Python {platform.python_version()} ({platform.python_implementation()}); {versions}",
        f"- command: `{shlex.join(['python', 'benchmarks/run.py', *run.argv])}`",
        f"- {plan.rounds} round(s) alternating {' → '.join(plan.libraries)}{_capped(plan)}; "
        f"a cell is the median (min–max) of the per-process medians; "
        f"each process warms up, then times ≥ {plan.min_iters} iterations and "
        f"≥ {plan.budget:g} s (one run if a run takes ≥ {2 * plan.budget:g} s); "
        f"whole run {wall:.0f} s",
    ]


def _capped(plan: Any) -> str:
    capped = [
        f"{name}: {spec.rounds}"
        for name in plan.workloads
        if (spec := workloads.WORKLOADS[name]).rounds is not None and spec.rounds < plan.rounds
    ]
    return f" (rounds capped for {', '.join(capped)})" if capped else ""


def markdown(table: Table, run: RunInfo) -> str:
    lines = ["# pausepoint vs LangGraph 1.1.6", "", *environment(run), ""]
    lines += main_table(table) + summary(table) + per_superstep(table) + growth(table)
    lines += checkpoints(table) + memory(table) + throughput(table) + against_base(table)
    lines += notes(table)
    return "\n".join(lines) + "\n"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def source_state() -> str:
    """The checked-out commit, plus a digest of uncommitted changes under src/ if any.

    When pausepoint is imported from outside this checkout (``PYTHONPATH`` pointing at
    an exported snapshot, to measure one commit while src/ keeps changing), says so,
    quoting the snapshot's ``.bench-source`` file if it has one.
    """
    root = Path(__file__).resolve().parent.parent
    elsewhere = _outside_checkout(root)
    if elsewhere is not None:
        return elsewhere
    try:
        head = _git(root, "rev-parse", "--short", "HEAD")
        diff = _git(root, "diff", "HEAD", "--", "src")
        untracked = _git(root, "ls-files", "--others", "--exclude-standard", "--", "src")
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return "commit unknown"
    if not diff and not untracked:
        return f"commit {head}"
    digest = hashlib.sha1((diff + untracked).encode()).hexdigest()[:8]
    return f"commit {head} + uncommitted changes under src/ (diff {digest})"


def _outside_checkout(root: Path) -> str | None:
    spec = importlib.util.find_spec("pausepoint")  # finds it without importing it
    if spec is None or spec.origin is None:
        return "pausepoint not found"
    package = Path(spec.origin).resolve().parent
    if package.is_relative_to(root):
        return None
    snapshot = package.parent.parent
    note = snapshot / ".bench-source"
    label = note.read_text().strip() if note.exists() else "no .bench-source note"
    return f"{label} (pausepoint imported from {package}, not this checkout)"


def describe_baseline(folder: Path) -> str:
    """The baseline tree's ``.bench-source`` note (in it or its parent), and where it is."""
    for place in (folder, folder.parent):
        note = place / ".bench-source"
        if note.is_file():
            return f"{note.read_text().strip()} (imported from {folder})"
    return f"{folder} (no .bench-source note)"


def describe_source(before: str, after: str) -> str:
    if before == after:
        return before
    return f"src/ changed during the run — at start: {before}; at end: {after}"


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=10
    )
    return done.stdout.strip()


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# --------------------------------------------------------------------------- output


def write(text: str, table: Table, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    chart.ratio_chart(measures.chart_measures(table), out.with_suffix(".png"))


if __name__ == "__main__":  # pragma: no cover - a helper module, run through run.py
    sys.exit("run benchmarks/run.py")
