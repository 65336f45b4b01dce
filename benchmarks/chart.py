"""The PNG chart: pausepoint / LangGraph ratio per measure, against issue 6's targets."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from measures import Measure

MET, MISSED, NONE = "#2a9d5c", "#d1495b", "#999999"


def ratio_chart(rows: list[Measure], path: Path) -> None:
    """A horizontal log-scale bar per measure; skipped silently without matplotlib.

    A bar is green when its ratio meets its target, red when not, grey without a
    target; the dashed lines are the targets (0.1 and 0.5) and parity (1).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    rows = [m for m in reversed(rows) if m.ratio is not None]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.8))
    values = [m.ratio or 0.0 for m in rows]
    ax.barh(range(len(rows)), values, 0.7, color=[_colour(m) for m in rows])
    for k, value in enumerate(values):
        ax.text(value * 1.05, k, f"{value:.2f}", va="center", fontsize=7)
    for x, label in ((0.1, "target 0.1"), (0.5, "target 0.5"), (1.0, "parity")):
        ax.axvline(x, color="#333333" if x < 1 else "#bbbbbb", linestyle="--", linewidth=1)
        ax.text(x, len(rows) - 0.3, label, rotation=90, va="top", ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), [_label(m) for m in rows], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlim(min(0.03, min(values) / 1.5), max(1.5, max(values) * 1.5))
    ax.set_xlabel("pausepoint / LangGraph 1.1.6 (median time or memory; lower is better)")
    ax.set_title(
        f"pausepoint vs LangGraph 1.1.6 — Python {platform.python_version()}, "
        f"{os.cpu_count()} cores; green: target met, red: not met",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _colour(m: Measure) -> str:
    if m.target is None or m.ratio is None:
        return NONE
    return MET if m.ratio <= m.target.ratio else MISSED


def _label(m: Measure) -> str:
    return m.label if m.target is None else f"{m.label}  [{m.target.label()}]"
