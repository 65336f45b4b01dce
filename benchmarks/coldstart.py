"""Child process of the ``cold-start`` workload: ``python benchmarks/coldstart.py LIB``.

Imports LIB (pausepoint or langgraph), builds a 3-node graph, invokes it once and
prints the final count. The parent times the whole process.
"""

from __future__ import annotations

import sys
from typing import TypedDict

from cases import load_library


class Count(TypedDict):
    count: int


def main(library: str) -> int:
    lib = load_library(library)
    builder = lib.StateGraph(Count)
    names = ["a", "b", "c"]
    for name in names:
        builder.add_node(name, lambda s: {"count": s["count"] + 1})
    for a, b in zip([lib.START, *names], [*names, lib.END], strict=True):
        builder.add_edge(a, b)
    out = builder.compile().invoke({"count": 0})
    print(out["count"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
