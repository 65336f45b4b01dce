"""benchmarks/walk.py, which docs/concepts.md's walk figures come from, still runs.

It asserts no figure (they move with every change and are reported, not pinned):
only that both walks reach their end and report what they passed through.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_walk_probe_reaches_the_end_of_both_walks():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "walk.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    resume = next(line for line in lines if line.startswith("resume: "))
    save = next(line for line in lines if line.startswith("save: "))
    assert resume.endswith("> interrupt)"), resume
    assert save.endswith("> SqliteSaver._execute)"), save
