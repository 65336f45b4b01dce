"""Count the CPU instructions one run of a workload executes (callgrind), per library.

    python benchmarks/instructions.py chain-100/none chain-10/none
    python benchmarks/instructions.py interrupt-roundtrip --library langgraph

Wall time on a shared 2-core VM moves by 1.5-3x between processes; the number of
instructions does not, so it shows whether a change made a workload cheaper. For each
workload it runs ``valgrind --tool=callgrind`` twice over a fresh interpreter (after the
case is built and warmed up: once with no timed runs, once with ``--runs``) and prints
the difference divided by the runs: instructions per run, start-up excluded. Give
chain-100 and chain-10 to also get the per-superstep figure, (100 - 10) / 90. The
hash seed is fixed (``PYTHONHASHSEED=0`` unless set): with random seeds the count
moves by up to ~4 % between processes.

Needs valgrind (apt install valgrind). Slow: about 50x the workload's own time.
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


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workloads", nargs="+", choices=sorted(workloads.WORKLOADS))
    parser.add_argument("--library", default="pausepoint", choices=workloads.LIBRARIES)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--inner", nargs=2, metavar=("WORKLOAD", "RUNS"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def inner(library: str, workload: str, runs: int) -> None:
    """Inside callgrind: build, warm up, then do ``runs`` runs."""
    case = workloads.make_case(library, workload)
    for i in range(3):
        case.run(-1 - i)
        case.cleanup(-1 - i)
    for i in range(runs):
        case.run(i)
        case.cleanup(i)


def count(library: str, workload: str, runs: int) -> int:
    """Instructions of a whole interpreter that builds the case and does ``runs`` runs."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            os.path.abspath(__file__),
            workload,
            "--library",
            library,
            "--inner",
            workload,
            str(runs),
        ]
        # A fixed hash seed: with a random one, dict and set layouts (and so the count)
        # move by up to ~4 % between processes.
        env = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.inner:
        inner(args.library, args.inner[0], int(args.inner[1]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt install valgrind)", file=sys.stderr)
        return 1
    per_run: dict[str, float] = {}
    for workload in args.workloads:
        base = count(args.library, workload, 0)
        full = count(args.library, workload, args.runs)
        per_run[workload] = (full - base) / args.runs
        print(f"{workload} on {args.library}: {per_run[workload]:,.0f} instructions per run")
    for kind in ("none", "memory"):
        small, big = per_run.get(f"chain-10/{kind}"), per_run.get(f"chain-100/{kind}")
        if small is not None and big is not None:
            print(f"per superstep ({kind}): {(big - small) / 90:,.0f} instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
