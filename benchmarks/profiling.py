"""cProfile one workload on one library: where does the time go?

    python benchmarks/profiling.py chain-100/memory                 # pausepoint, top 10
    python benchmarks/profiling.py threads-1000 --top 20 --sort cumulative
    python benchmarks/profiling.py fan-interrupt-100/one-by-one --library langgraph

Builds the case as the runner does, runs it once unprofiled (warm-up, checked), then
profiles ``--iterations`` runs and prints the top functions. Profiling inflates small
functions' cost; read it for shares, not for absolute times.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys

import workloads


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workload", choices=sorted(workloads.WORKLOADS))
    parser.add_argument("--library", default="pausepoint", choices=workloads.LIBRARIES)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--sort", default="tottime", help="a pstats sort key")
    parser.add_argument("--dump", help="also write the raw profile to this file")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    case = workloads.make_case(args.library, args.workload)
    problem = case.check(case.run(-1))
    case.cleanup(-1)
    if problem:
        print(f"the warm-up run failed its check: {problem}", file=sys.stderr)
        return 1
    profiler = cProfile.Profile()
    for i in range(args.iterations):
        profiler.enable()
        case.run(i)
        profiler.disable()
        case.cleanup(i)
    if args.dump:
        profiler.dump_stats(args.dump)
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(args.sort)
    stats.print_stats(args.top)
    print(f"# {args.workload} on {args.library}, {args.iterations} profiled run(s)")
    print(out.getvalue().split("\n", 3)[-1].strip("\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
