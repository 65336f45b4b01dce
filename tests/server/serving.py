"""``pausepoint serve`` as a real subprocess on a free loopback port, for the client tests."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = (
    "approval=tests.server.graphs_http:approval",
    "gated=tests.server.graphs_http:gated",
    "triage=tests.server.graphs_http:triage",
    "ticker=tests.server.graphs_http:ticker",
    "twice=tests.server.graphs_http:twice",
)
TOKEN = "server-test-token-0123456789"


@dataclasses.dataclass
class Served:
    """A running server: its URL, token, process, log file and database."""

    url: str
    token: str | None
    process: subprocess.Popen[bytes]
    log: Path
    db: str

    def output(self) -> str:
        """What the server printed so far."""
        return self.log.read_text(errors="replace")


def pg_database(schema_prefix: str) -> Iterator[str]:
    """A ``postgresql://`` URL confined to a fresh schema (dropped after); skips without
    ``PAUSEPOINT_PG_URL`` locally, fails under CI (as the saver tests do)."""
    import uuid

    import pytest

    base = os.environ.get("PAUSEPOINT_PG_URL")
    if not base:
        how = 'start a server with: eval "$(scripts/postgres.sh start)"'
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but PAUSEPOINT_PG_URL is not: {how}", pytrace=False)
        pytest.skip(f"PAUSEPOINT_PG_URL is not set; {how}")
    import psycopg

    name = f"{schema_prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")  # type: ignore[arg-type]
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options=-csearch_path%3D{name}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {name} CASCADE")  # type: ignore[arg-type]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env() -> dict[str, str]:
    """The environment of the server process: this checkout's sources first."""
    env = dict(os.environ)
    paths = [str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env.pop("PAUSEPOINT_SERVE_TOKEN", None)
    return env


@contextlib.contextmanager
def serve(
    db: str,
    log: Path,
    *,
    token: str | None = TOKEN,
    graphs: Sequence[str] = GRAPHS,
    extra: Sequence[str] = (),
) -> Iterator[Served]:
    """Start ``pausepoint serve`` on ``db``; yield once ``/ok`` answers; stop it after."""
    port = free_port()
    cmd = [sys.executable, "-m", "pausepoint.cli", "serve", "--db", db, "--port", str(port)]
    cmd += [f"--graph={g}" for g in graphs]
    if token is not None:
        cmd += ["--token", token]
    if db.startswith("postgresql://") and "--in-process-workers" not in extra:
        cmd.append("--in-process-workers")  # these tests run no `pausepoint worker`
    cmd += list(extra)
    with log.open("wb") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=server_env())
    served = Served(f"http://127.0.0.1:{port}", token, process, log, db)
    try:
        wait_ok(served)
        yield served
    finally:
        stop(process)


def wait_ok(served: Served, timeout: float = 60.0) -> None:
    """Poll ``/ok`` until it answers 200 (the process dying, or the time out, raise)."""
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        if served.process.poll() is not None:
            raise RuntimeError(f"pausepoint serve exited:\n{served.output()}")
        try:
            if httpx.get(f"{served.url}/ok", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"pausepoint serve did not answer /ok:\n{served.output()}")
        time.sleep(0.05)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server: SIGTERM (uvicorn shuts down cleanly), SIGKILL if it hangs."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
