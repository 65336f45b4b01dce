"""Instructions of ``get_state`` at the end of a long chat (issue 32): head, or an old one.

    valgrind --tool=callgrind --instr-atstart=no python benchmarks/storage_reads.py \\
        TURNS {head,old} CALLS

Builds ``storage.py``'s chat thread (``CompactingMemorySaver``) of TURNS turns without
counting, then switches callgrind's instrumentation on (``callgrind_control``) around
CALLS reads of the head or of the 50th-newest checkpoint; "Collected" in valgrind's
output is their instructions (with the switching's: run it with CALLS=0 to see that).
Wall time on the shared VM moves 1.5-2x between runs; the count does not.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import load_library
from storage import _config, _text, chat_graph  # pyright: ignore[reportPrivateUsage]


def main(argv: list[str]) -> int:
    turns, which, calls = int(argv[0]), argv[1], int(argv[2])
    lib = load_library("pausepoint")
    graph = chat_graph(lib, lib.memory_saver())
    config = _config("chat")
    graph.invoke({"messages": []}, config)
    for turn in range(turns):
        graph.invoke(lib.Command(resume=_text(f"user {turn}")), config)
    target = config
    if which == "old":
        target = [s.config for s in graph.get_state_history(config, limit=50)][-1]
    for _ in range(3):
        graph.get_state(target)
    switch = ["callgrind_control", "-i"]
    subprocess.run([*switch, "on", str(os.getpid())], check=True, capture_output=True)
    for _ in range(calls):
        graph.get_state(target)
    subprocess.run([*switch, "off", str(os.getpid())], check=True, capture_output=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
