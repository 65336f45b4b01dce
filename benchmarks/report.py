"""Turn collected timings into a Markdown report and, when matplotlib is there, a chart."""

from __future__ import annotations

import datetime
import hashlib
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

import workloads

PP, LG, FLOOR = "pausepoint", "langgraph", workloads.FLOOR


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


# --------------------------------------------------------------------------- format


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "—"
    value = a / b
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3f}" if value < 1 else f"{value:.3g}"


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
        "| pp / LG | pp / floor | LG / floor | floor | node runs pp / LG |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in table.names:
        pp, lg, fl = (table.median(lib, name) for lib in (PP, LG, FLOOR))
        lines.append(
            f"| {name} | {cell(table, PP, name)} | {cell(table, LG, name)} "
            f"| {ratio(pp, lg)} | {ratio(pp, fl)} | {ratio(lg, fl)} | {duration(fl)} "
            f"| {node_runs(table, name)} |"
        )
    return lines


def per_superstep(table: Table) -> list[str]:
    """(chain-100 − chain-10) / 90: the cost of one more superstep, start-up excluded."""
    lines: list[str] = []
    for tag in ("none", "memory"):
        short, long = f"chain-10/{tag}", f"chain-100/{tag}"
        if short not in table.names or long not in table.names:
            continue
        costs = {}
        for lib in (PP, LG, FLOOR):
            a, b = table.median(lib, short), table.median(lib, long)
            costs[lib] = None if a is None or b is None else (b - a) / 90
        lines.append(
            f"| {tag} | {duration(costs[PP])} | {duration(costs[LG])} "
            f"| {ratio(costs[PP], costs[LG])} | {duration(costs[FLOOR])} |"
        )
    if not lines:
        return []
    head = [
        "",
        "Per-superstep cost, (chain-100 − chain-10) / 90 (start-up excluded):",
        "",
        "| checkpointer | pausepoint | LangGraph | pp / LG | floor |",
        "|---|---|---|---|---|",
    ]
    return head + lines


def growth(table: Table) -> list[str]:
    """How resuming K interrupts one at a time grows from K=10 to K=100 (linear ≈ 10×)."""
    small, large = "fan-interrupt-10/one-by-one", "fan-interrupt-100/one-by-one"
    if small not in table.names or large not in table.names:
        return []
    rows = []
    for lib in (PP, LG):
        a, b = table.median(lib, small), table.median(lib, large)
        rows.append(
            f"| {lib} | {duration(a)} | {duration(b)} | {ratio(b, a)} "
            f"| {node_runs_of(table, lib, small)} → {node_runs_of(table, lib, large)} |"
        )
    return [
        "",
        "Resuming K parallel interrupts one at a time, K = 10 → 100 "
        "(linear ≈ 10×, quadratic ≈ 100×):",
        "",
        "| library | K = 10 | K = 100 | growth | node runs |",
        "|---|---|---|---|---|",
        *rows,
    ]


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
        if found.iters and max(found.iters) == 1
    ]
    if single:
        lines += ["", "Timed from one run per process (slower than twice the budget): "]
        lines[-1] += ", ".join(single) + "."
    return lines


def environment(argv: list[str], plan: Any, wall: float, source: str) -> list[str]:
    began = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=wall)
    versions = ", ".join(f"{p} {_version(p)}" for p in (PP, LG))
    return [
        f"- date: {began:%Y-%m-%d %H:%M} UTC (start of the run)",
        f"- pausepoint source: {source}",
        f"- machine: {os.cpu_count()} cores, {_cpu_model()}, {platform.system()} "
        f"{platform.release()}",
        f"- Python {platform.python_version()} ({platform.python_implementation()}); {versions}",
        f"- command: `{shlex.join(['python', 'benchmarks/run.py', *argv])}`",
        f"- {plan.rounds} round(s) alternating {' → '.join(plan.libraries)}; "
        f"a cell is the median (min–max) of the per-process medians; "
        f"each process warms up, then times ≥ {plan.min_iters} iterations and "
        f"≥ {plan.budget:g} s (one run if a run takes ≥ {2 * plan.budget:g} s); "
        f"whole run {wall:.0f} s",
    ]


def markdown(table: Table, argv: list[str], plan: Any, wall: float, source: str) -> str:
    head = environment(argv, plan, wall, source)
    lines = ["# pausepoint vs LangGraph 1.1.6", "", *head, ""]
    lines += main_table(table) + per_superstep(table) + growth(table) + notes(table)
    return "\n".join(lines) + "\n"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def source_state() -> str:
    """The checked-out commit, plus a digest of uncommitted changes under src/ if any."""
    root = Path(__file__).resolve().parent.parent
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
    chart(table, out.with_suffix(".png"))


def chart(table: Table, path: Path) -> None:
    """A log-scale bar chart of the medians; skipped silently without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    names = list(reversed(table.names))
    height = 0.27
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(names) + 1.5))
    for offset, lib, colour in (
        (height, PP, "#2a7ab9"),
        (0, LG, "#e08a2c"),
        (-height, FLOOR, "#999999"),
    ):
        values = [table.median(lib, n) or 0 for n in names]
        ax.barh([k + offset for k in range(len(names))], values, height, label=lib, color=colour)
    ax.set_yticks(range(len(names)), names)
    ax.set_xscale("log")
    ax.set_xlabel("seconds per iteration (median, log scale)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, frameon=False)
    ax.set_title(
        f"pausepoint vs LangGraph 1.1.6 — Python {platform.python_version()}, "
        f"{os.cpu_count()} cores"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":  # pragma: no cover - a helper module, run through run.py
    sys.exit("run benchmarks/run.py")
