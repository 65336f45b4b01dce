"""A deployment as real processes: ``pausepoint serve`` front ends and ``pausepoint worker``s.

Front ends listen on distinct loopback addresses (127.0.0.2, 127.0.0.3, ...), as if on
different machines; workers are separate processes on the same PostgreSQL schema.
Every process is stopped (SIGKILL if it hangs) when the cluster closes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from tests.server.serving import Served, free_port, server_env, stop, wait_ok
from tests.workers.graphs import GRAPHS

TOKEN = "workers-test-token-0123456789"

FAST = (
    "--lease-seconds=3",
    "--repair-seconds=1",
    "--stalled-seconds=3",
    "--shutdown-seconds=0",
    "--sweep-cron=* * * * * */1",
)
"""Worker options that take a dead worker's run over within seconds."""


@dataclasses.dataclass
class Worker:
    """A ``pausepoint worker`` process and its log."""

    process: subprocess.Popen[bytes]
    log: Path
    name: str
    """Its connections' ``application_name``."""

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@dataclasses.dataclass
class Cluster:
    """Front ends and workers on one database; ``tmp`` holds their logs."""

    db: str
    tmp: Path
    fronts: list[Served] = dataclasses.field(default_factory=list[Served])
    workers: list[Worker] = dataclasses.field(default_factory=list[Worker])

    def env(self) -> dict[str, str]:
        return server_env()

    def front(self, host: str, *extra: str, wait: bool = True) -> Served:
        """Start a front end on ``host``; once ``/ok`` answers (``wait``)."""
        port = free_port()
        log = self.tmp / f"front-{len(self.fronts)}.log"
        cmd = [sys.executable, "-m", "pausepoint.cli", "serve", "--db", self.db]
        cmd += ["--host", host, "--port", str(port), "--token", TOKEN, *extra]
        cmd += [f"--graph={g}" for g in GRAPHS]
        with log.open("wb") as out:
            process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env())
        served = Served(f"http://{host}:{port}", TOKEN, process, log, self.db)
        self.fronts.append(served)
        if wait:
            wait_ok(served)
        return served

    def worker(self, *extra: str, concurrency: int = 2) -> Worker:
        """Start a worker (not waiting for it: jobs wait in the queue meanwhile).

        Its connections carry ``application_name`` ``pausepoint-worker-<n>``.
        """
        n = len(self.workers)
        log = self.tmp / f"worker-{n}.log"
        sep = "&" if "?" in self.db else "?"
        db = f"{self.db}{sep}application_name=pausepoint-worker-{n}"
        cmd = [sys.executable, "-m", "pausepoint.cli", "worker", "--db", db]
        cmd += [f"--concurrency={concurrency}", *FAST, *extra]
        cmd += [f"--graph={g}" for g in GRAPHS]
        with log.open("wb") as out:
            process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env())
        worker = Worker(process, log, f"pausepoint-worker-{n}")
        self.workers.append(worker)
        return worker

    def wait_started(self, worker: Worker, timeout: float = 60.0) -> None:
        """Until the worker printed that it takes jobs (its exit or the time out raise)."""
        deadline = time.monotonic() + timeout
        while "pausepoint worker: graphs" not in worker.output():
            if worker.process.poll() is not None:
                raise RuntimeError(f"pausepoint worker exited:\n{worker.output()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"pausepoint worker did not start:\n{worker.output()}")
            time.sleep(0.05)

    def terminate_connections(self, worker: Worker) -> int:
        """``pg_terminate_backend`` every connection of ``worker``; how many."""
        import psycopg

        with psycopg.connect(self.db, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (worker.name,),
            ).fetchall()
        return len(rows)

    def kill(self, worker: Worker) -> None:
        """SIGKILL ``worker`` and reap it."""
        if worker.process.poll() is None:
            worker.process.send_signal(signal.SIGKILL)
        worker.process.wait()

    def logs(self) -> str:
        """Every process's output, for a failure's message."""
        parts = [f"--- {s.log.name}\n{s.output()}" for s in self.fronts]
        parts += [f"--- {w.log.name}\n{w.output()}" for w in self.workers]
        return "\n".join(parts)

    def close(self) -> None:
        for worker in self.workers:
            stop(worker.process)
        for served in self.fronts:
            stop(served.process)


@contextlib.contextmanager
def cluster(
    db: str, tmp: Path, *, fronts: Sequence[str] = (), workers: int = 0
) -> Iterator[Cluster]:
    """Front ends on the ``fronts`` addresses and ``workers`` workers, all started."""
    c = Cluster(db, tmp)
    try:
        for host in fronts:  # started together: each takes seconds to import
            c.front(host, wait=False)
        for _ in range(workers):
            c.worker()
        for served in c.fronts:
            wait_ok(served)
        for w in c.workers:
            c.wait_started(w)
        yield c
    finally:
        c.close()


def lines(path: Path) -> list[str]:
    """The lines of a thread's log (empty if none was written)."""
    return path.read_text().splitlines() if path.exists() else []
