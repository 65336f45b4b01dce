"""Run by test_func.py in a fresh interpreter: an entrypoint with a task, then a pause.

Usage: python func_crash_process.py DB LOG PHASE, PHASE in start | continue | resume.
"start" stalls after the task finished (the test kills the process there).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.func import entrypoint, task
from pausepoint.types import Command, interrupt


def main() -> None:
    db, log, phase = sys.argv[1], Path(sys.argv[2]), sys.argv[3]

    def note(word: str) -> None:
        with log.open("a") as f:
            f.write(word + "\n")

    @task
    def compute() -> int:
        note("task")
        return 42

    with SqliteSaver.from_conn_string(db) as saver:

        @entrypoint(checkpointer=saver)
        def flow(_: Any) -> str:
            value = compute().result()
            if phase == "start":
                note("after-task")
                while True:  # killed here, after the task's result was saved
                    time.sleep(0.05)
            return f"{value}:{interrupt(f'ship {value}?')}"

        config: Any = {"configurable": {"thread_id": "crash"}}
        inputs: Any = {"start": 0, "continue": None, "resume": Command(resume="yes")}[phase]
        out = flow.invoke(inputs, config)
        if isinstance(out, dict) and "__interrupt__" in out:
            print(json.dumps({"interrupt": out["__interrupt__"][0].value}))
        else:
            print(json.dumps({"result": out}))


if __name__ == "__main__":
    main()
