"""What tracing costs a run: instructions per run, untraced vs. instrumented (callgrind).

    python benchmarks/otel_overhead.py interrupt-roundtrip roundtrip/sqlite chain-100/none

For each workload, one interpreter per mode, counted as
``benchmarks/instructions.py`` counts (callgrind, fixed hash seed, start-up and
warm-up excluded, instructions per run):

- ``plain``: pausepoint.otel never imported (the extra may as well be absent);
- ``imported``: pausepoint.otel (and so opentelemetry's API) imported, ``instrument()``
  not called: what the imported modules alone cost a run;
- ``no-tracer``: the extra installed and ``pausepoint.otel.instrument()`` called, but
  no tracer provider configured (OpenTelemetry's default, which records nothing);
- ``traced``: instrumented with an SDK ``TracerProvider`` and no exporter: the cost
  of making the spans themselves (for information; there is no target for it).

The target (issue 36) is ``no-tracer`` / ``plain`` <= 1.02. Needs valgrind.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import workloads

MODES = ("plain", "imported", "no-tracer", "traced")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workloads", nargs="+", choices=sorted(workloads.WORKLOADS))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--inner", nargs=3, metavar=("WORKLOAD", "MODE", "RUNS"))
    return parser.parse_args(argv)


def set_up(mode: str) -> None:
    """Instrument this interpreter as ``mode`` says (before the case is built)."""
    if mode == "plain":
        return
    import pausepoint.otel

    if mode == "imported":
        return
    if mode == "no-tracer":
        pausepoint.otel.instrument()
        return
    from opentelemetry.sdk.trace import TracerProvider

    pausepoint.otel.instrument(TracerProvider())


def inner(workload: str, mode: str, runs: int) -> None:
    """Inside callgrind: instrument, build, warm up, then do ``runs`` runs."""
    set_up(mode)
    case = workloads.make_case("pausepoint", workload)
    for i in range(3):
        case.run(-1 - i)
        case.cleanup(-1 - i)
    for i in range(runs):
        case.run(i)
        case.cleanup(i)


def count(workload: str, mode: str, runs: int) -> int:
    """Instructions of a whole interpreter that sets up, builds and does ``runs`` runs."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            os.path.abspath(__file__),
            workload,
            "--inner",
            workload,
            mode,
            str(runs),
        ]
        env = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
        done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{workload} ({mode}) failed:\n{done.stderr[-3000:]}")
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.inner:
        inner(args.inner[0], args.inner[1], int(args.inner[2]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt install valgrind)", file=sys.stderr)
        return 1
    for workload in args.workloads:
        per_run: dict[str, float] = {}
        for mode in args.modes:
            base = count(workload, mode, 0)
            full = count(workload, mode, args.runs)
            per_run[mode] = (full - base) / args.runs
        plain = per_run.get("plain")
        for mode, n in per_run.items():
            ratio = f"  {n / plain:.4f}x plain" if plain else ""
            print(f"{workload} {mode}: {n:,.0f} instructions per run{ratio}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
