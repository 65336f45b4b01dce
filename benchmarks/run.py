"""Side-by-side benchmarks: pausepoint vs LangGraph 1.1.6 vs a plain-Python floor.

    python benchmarks/run.py            # full run: real numbers, a few minutes
    python benchmarks/run.py --quick    # a few seconds: checks that the suite runs
    python benchmarks/run.py --only chain --rounds 3
    python benchmarks/run.py --only throughput --baseline-src DIR  # DIR: an older src tree

Each measurement runs in a fresh process (``run.py --worker LIB WORKLOAD...``) that
builds the graph, warms up, times iterations with ``time.perf_counter`` for a time
budget, and prints one JSON object. The parent alternates libraries (pausepoint,
LangGraph, floor, pausepoint, LangGraph, floor, ...) over several rounds and reports
the median and min-max of the per-process medians. Nothing here is an assertion:
timings are reported, never checked.

``--baseline-src DIR`` adds a third library, ``pausepoint@base``: pausepoint imported
from DIR (a source tree, e.g. ``git archive BASE src`` extracted; DIR or DIR/src holds
the ``pausepoint`` package), whose worker processes start with DIR first on their
``PYTHONPATH``. The report then sets every workload against that base as well.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import report
import scale
import workloads
from cases import family

HERE = Path(__file__).resolve().parent
LONG = 5  # a slow workload may exceed its time budget this many times over


@dataclass(frozen=True)
class Plan:
    workloads: list[str]
    libraries: list[str]
    rounds: int
    budget: float  # seconds of timed iterations per worker process
    min_iters: int
    batch: bool  # one process per library and round for all workloads (quick mode)
    timeout: float
    baseline: Path | None = None  # the directory holding the baseline's pausepoint package


@dataclass
class Series:
    """The per-process results of one (library, workload) pair."""

    medians: list[float] = field(default_factory=list)
    iters: list[int] = field(default_factory=list)
    node_runs: int | None = None
    error: str | None = None
    extras: dict[str, list[float]] = field(default_factory=dict)  # memory figures, bytes


# --------------------------------------------------------------------------- worker


def measure(
    library: str, workload: str, budget: float, min_iters: int, settle: bool = True
) -> dict[str, Any]:
    """Build one case, check it, warm up, then time iterations for ``budget`` seconds.

    ``settle``: a slow child-process workload is run a second time before its single
    timed run (off in ``--quick``, which only checks that the suite runs).
    """
    try:
        case = workloads.make_case(library, workload)
        runs_before, rss_before = case.node_runs[0], scale.max_rss()
        start = time.perf_counter()
        first = case.run(-1)
        elapsed = time.perf_counter() - start
        rss_grown = scale.max_rss() - rss_before
        case.cleanup(-1)
        problem = case.check(first)
        if problem:
            return {"error": problem}
        found: dict[str, Any] = {"node_runs": case.node_runs[0] - runs_before}
        if case.probe is not None:
            # Peak RSS only grows in a fresh process whose first run is the biggest yet,
            # hence measured around that run (0 in --quick, where workloads share one).
            found["extras"] = {**case.probe(), "maxrss": rss_grown}
        if elapsed >= 2 * budget:
            # Seconds per iteration: warm-up effects are lost in the noise, and a
            # second run would double the cost of the whole suite for this one cell.
            # Except for a child process's own figure: its first run may have written
            # the bytecode caches, which no later start pays for.
            if settle and case.clock is not None and case.rerun_first:
                first = case.run(-2)
                case.cleanup(-2)
            return {**found, "median": _clock(case, first, elapsed), "iters": 1}
        _warm_up(case, start + budget / 5)
        times, last = _timed(case, budget, min_iters)
        problem = case.check(last)
        if problem:
            return {"error": f"after {len(times)} timed iterations: {problem}"}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {**found, "median": statistics.median(times), "iters": len(times)}


def _clock(case: workloads.Case, result: Any, elapsed: float) -> float:
    # A workload that times a child process reports its own figure.
    return elapsed if case.clock is None else case.clock(result)


def _warm_up(case: workloads.Case, until: float) -> None:
    # The checked first run is a warm-up too; a slow workload gets no more.
    i = 1_000_000
    while time.perf_counter() < until:
        i += 1
        case.run(i)
        case.cleanup(i)


def _timed(case: workloads.Case, budget: float, min_iters: int) -> tuple[list[float], Any]:
    """Time iterations until ``budget`` is spent and ``min_iters`` ran.

    A workload slower than the budget stops after ``LONG * budget`` seconds (but
    after one iteration at least), so one heavy case cannot eat the whole run.
    """
    gc.collect()
    times: list[float] = []
    spent, result = 0.0, None
    while spent < budget or (len(times) < min_iters and spent < LONG * budget):
        i = len(times)
        start = time.perf_counter()
        result = case.run(i)
        elapsed = time.perf_counter() - start
        case.cleanup(i)
        times.append(_clock(case, result, elapsed))
        spent += elapsed
    return times, result


def worker(args: argparse.Namespace) -> int:
    library, names = args.worker[0], args.worker[1:]
    wrong = _wrong_source(library)
    if wrong:
        print(json.dumps({"library": library, "results": {n: {"error": wrong} for n in names}}))
        return 0
    budget = 0.3 if args.budget is None else args.budget
    min_iters = args.min_iters or 5
    settle = not args.quick
    results = {name: measure(library, name, budget, min_iters, settle) for name in names}
    print(json.dumps({"library": library, "results": results}))
    return 0


def _wrong_source(library: str) -> str | None:
    """Why pausepoint would not come from the tree ``library`` must measure, if so.

    A typo in the baseline's path would otherwise measure this checkout twice.
    """
    if family(library) != "pausepoint":
        return None
    base, is_base = os.environ.get(BASE_ENV), library == workloads.BASE
    if is_base and base is None:
        return f"{BASE_ENV} is not set: measure the baseline through --baseline-src"
    spec = importlib.util.find_spec("pausepoint")  # finds it without importing it
    origin = Path(spec.origin).resolve() if spec and spec.origin else None
    inside = origin is not None and base is not None and origin.is_relative_to(base)
    if is_base != inside:
        return f"{library} would import pausepoint from {origin} (baseline: {base})"
    return None


# --------------------------------------------------------------------------- parent


BASE_ENV = "PAUSEPOINT_BENCH_BASE"  # the baseline's directory, in its workers


def baseline_dir(given: Path) -> Path:
    """The directory holding the ``pausepoint`` package: ``given`` or ``given/src``."""
    for folder in (given, given / "src"):
        if (folder / "pausepoint" / "__init__.py").is_file():
            return folder.resolve()
    raise SystemExit(f"--baseline-src: no pausepoint package in {given} or {given / 'src'}")


def _env(plan: Plan, library: str) -> dict[str, str] | None:
    # The baseline's workers (and the processes they start) find the baseline
    # first; every other worker inherits this environment as it is.
    if library != workloads.BASE or plan.baseline is None:
        return None
    env = {k: v for k, v in os.environ.items() if k != BASE_ENV}
    paths = [str(plan.baseline), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    return {**env, "PYTHONPATH": os.pathsep.join(paths), BASE_ENV: str(plan.baseline)}


def spawn(plan: Plan, library: str, names: list[str]) -> dict[str, Any]:
    """Run one worker process; a crash or timeout becomes an error per workload."""
    command = [sys.executable, str(HERE / "run.py"), "--worker", library, *names]
    # The floor is microseconds per iteration: a quarter of the budget is plenty.
    budget = plan.budget / 4 if library == workloads.FLOOR else plan.budget
    command += ["--budget", str(budget), "--min-iters", str(plan.min_iters)]
    if plan.batch:
        command.append("--quick")
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=plan.timeout,
            check=False,
            env=_env(plan, library),
        )
    except subprocess.TimeoutExpired:
        return {name: {"error": f"worker timed out after {plan.timeout:.0f}s"} for name in names}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {name: {"error": f"worker exited {done.returncode}: {tail}"} for name in names}
    return json.loads(done.stdout.strip().splitlines()[-1])["results"]


def collect(plan: Plan) -> dict[tuple[str, str], Series]:
    """Alternate libraries over rounds; gather every per-process median."""
    series = {(lib, name): Series() for lib in plan.libraries for name in plan.workloads}
    groups = [plan.workloads] if plan.batch else [[name] for name in plan.workloads]
    for round_no in range(plan.rounds):
        for names in groups:
            for library in plan.libraries:
                wanted = [n for n in names if _has_side(library, n, round_no)]
                if not wanted:
                    continue
                _progress(round_no, plan.rounds, library, wanted)
                for name, result in spawn(plan, library, wanted).items():
                    _record(series[library, name], result)
    print(file=sys.stderr)
    return series


def _has_side(library: str, name: str, round_no: int) -> bool:
    spec = workloads.WORKLOADS[name]
    if spec.rounds is not None and round_no >= spec.rounds:
        return False
    if library == "langgraph" and spec.pausepoint_only:
        return False
    return library != workloads.FLOOR or spec.floor is not None


def _record(into: Series, result: dict[str, Any]) -> None:
    if "error" in result:
        into.error = into.error or result["error"]
        return
    into.medians.append(result["median"])
    into.iters.append(result["iters"])
    into.node_runs = result["node_runs"]
    for key, value in result.get("extras", {}).items():
        into.extras.setdefault(key, []).append(value)


def _progress(round_no: int, rounds: int, library: str, names: list[str]) -> None:
    label = names[0] if len(names) == 1 else f"{len(names)} workloads"
    line = f"\r[round {round_no + 1}/{rounds}] {library:<10} {label:<32}"
    print(line, end="", file=sys.stderr, flush=True)


def langgraph_available() -> bool:
    # find_spec, not import: importing LangGraph here would cost seconds.
    return importlib.util.find_spec("langgraph") is not None


# --------------------------------------------------------------------------- cli


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds; for CI")
    parser.add_argument("--rounds", type=int, help="alternating rounds (default 5; quick 1)")
    parser.add_argument("--budget", type=float, help="timed seconds per worker process")
    parser.add_argument("--min-iters", type=int, help="timed iterations per process, at least")
    parser.add_argument("--only", action="append", help="workloads whose name contains this")
    parser.add_argument("--out", type=Path, help="Markdown output (full default: results/)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--list", action="store_true", help="list workloads and exit")
    parser.add_argument(
        "--baseline-src",
        type=Path,
        metavar="DIR",
        help="also measure pausepoint from this source tree, as pausepoint@base",
    )
    parser.add_argument("--worker", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def make_plan(args: argparse.Namespace, has_langgraph: bool) -> Plan:
    names = workloads.QUICK if args.quick else workloads.FULL
    if args.only:  # with --quick, among the quick sizes (throughput-2/..., threads-20)
        names = [n for n in names if any(part in n for part in args.only)]
    libraries = ["pausepoint", "langgraph", workloads.FLOOR]
    if not has_langgraph:
        libraries.remove("langgraph")
    baseline = baseline_dir(args.baseline_src) if args.baseline_src else None
    if baseline is not None:
        libraries.insert(1, workloads.BASE)  # next to pausepoint: an A/B pair per round
    return Plan(
        workloads=names,
        libraries=libraries,
        rounds=args.rounds or (1 if args.quick else 5),
        budget=args.budget if args.budget is not None else (0.02 if args.quick else 0.3),
        min_iters=args.min_iters or (3 if args.quick else 5),
        batch=args.quick,
        timeout=120 if args.quick else 600,
        baseline=baseline,
    )


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.worker:
        return worker(args)
    if args.list:
        for spec in workloads.WORKLOADS.values():
            print(f"{spec.name:<28} {spec.summary}")
        return 0
    started = time.perf_counter()
    load_before = report.load_average()
    source_before = report.source_state()
    has_langgraph = langgraph_available()
    plan = make_plan(args, has_langgraph)
    series = collect(plan)
    table = report.Table(plan.workloads, series, has_langgraph)
    source = report.describe_source(source_before, report.source_state())
    baseline = report.describe_baseline(plan.baseline) if plan.baseline else None
    wall = time.perf_counter() - started
    run = report.RunInfo(argv, plan, wall, source, load_before, baseline)
    text = report.markdown(table, run)
    print(text)
    out = args.out or (None if args.quick else HERE / "results" / "latest.md")
    if out is not None and not args.no_write:
        report.write(text, table, out)
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
