"""Fresh-interpreter workloads: import time and a whole-process cold start.

Each iteration starts a new Python process (the same interpreter and environment as
the runner), so nothing is cached in memory. Bytecode caches on disk are warm after
the first, checked run, as they are for any user after the first import: children
write and read their ``.pyc`` files under one prefix in the temporary directory
(``PYTHONPYCACHEPREFIX``), with ``PYTHONDONTWRITEBYTECODE`` removed. Without this, a
checkout whose environment sets ``PYTHONDONTWRITEBYTECODE`` would compile
pausepoint's source on every import (~3x its import time) while LangGraph, installed
by pip with its ``.pyc`` files, would not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cases import Case, expect, family

HERE = Path(__file__).resolve().parent
MARK = "--- bench: imports start ---"

# The everyday names, imported the way each library's users write it.
IMPORTS = {
    "pausepoint": "from pausepoint import "
    "StateGraph, START, END, interrupt, Command, InMemorySaver",
    "langgraph": "from langgraph.graph import StateGraph, START, END\n"
    "from langgraph.types import interrupt, Command\n"
    "from langgraph.checkpoint.memory import InMemorySaver",
}


def child_env() -> dict[str, str]:
    """This environment, with bytecode caches written to and read from ``PYCACHE``."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(PYCACHE)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


PYCACHE = Path(tempfile.gettempdir()) / "pausepoint-bench-pycache"


def _child(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=child_env(),
    )


# --------------------------------------------------------------------------- import


def top_level_import_us(stderr: str) -> int:
    """Sum the cumulative µs of the top-level imports after ``MARK`` in -X importtime output.

    Lines read ``import time: <self> | <cumulative> | <indent><module>``; a top-level
    import (one the statement itself triggered) has an indent of one space. The
    interpreter's own start-up imports come before the mark and are left out.
    """
    total, started = 0, False
    for line in stderr.splitlines():
        if line == MARK:
            started = True
            continue
        if not started or not line.startswith("import time:") or line.count("|") != 2:
            continue
        _self, cumulative, name = line.split("|")
        if cumulative.strip().isdigit() and len(name) - len(name.lstrip()) == 1:
            total += int(cumulative)
    return total


def import_time(library: str) -> Case:
    code = f"import sys\nsys.stderr.write({MARK!r} + '\\n')\n{IMPORTS[family(library)]}\n"

    def run(i: int) -> tuple[int, str]:
        done = _child(["-X", "importtime", "-c", code])
        if done.returncode != 0:
            return -1, done.stderr.strip().splitlines()[-1]
        return top_level_import_us(done.stderr), ""

    def check(out: tuple[int, str]) -> str | None:
        microseconds, problem = out
        if microseconds < 0:
            return f"the import failed: {problem}"
        return None if microseconds > 0 else "no top-level import found in -X importtime"

    return Case(run=run, check=check, clock=lambda out: out[0] / 1e6)


# --------------------------------------------------------------------------- cold start


def _timed_child(args: list[str]) -> tuple[float, str, int]:
    start = time.perf_counter()
    done = _child(args)
    elapsed = time.perf_counter() - start
    return elapsed, (done.stdout or done.stderr).strip(), done.returncode


def cold_start(library: str) -> Case:
    """``coldstart.py LIB``: import, build a 3-node graph, invoke once, print the count."""
    args = [str(HERE / "coldstart.py"), library]

    def check(out: tuple[float, str, int]) -> str | None:
        _elapsed, text, code = out
        if code != 0:
            return f"the child exited {code}: {text.splitlines()[-1] if text else ''}"
        return expect("printed count", text, "3")

    return Case(run=lambda i: _timed_child(args), check=check, clock=lambda out: out[0])


def cold_start_floor() -> Case:
    """``python -c pass``: what starting the interpreter costs by itself."""
    return Case(
        run=lambda i: _timed_child(["-c", "pass"]),
        check=lambda out: expect("exit code", out[2], 0),
        clock=lambda out: out[0],
    )
