"""Run ``pausepoint rekey`` in a process of its own (the kill -9 test kills it)."""

from __future__ import annotations

import sys

from pausepoint.cli import main

if __name__ == "__main__":
    sys.exit(main(["rekey", "--db", sys.argv[1], "--batch-size", "1"]))
