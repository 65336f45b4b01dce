"""An idle HTTP connection outlives the clients' own expiry (httpx: 5 s).

With uvicorn's default (5 s) the server and httpx gave up on an idle connection at the
same moment; a request sent on it as the server closed was reset unread, and the
client could not tell whether its answer had been accepted (seen as `ReadError` in
benchmarks/workers_load.py under load). The servers keep idle connections for
`KEEP_ALIVE_SECONDS`, so the client always closes first.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

from tests.server.serving import serve

from pausepoint.cli.web import KEEP_ALIVE_SECONDS

IDLE = 6.0  # past httpx's 5 s expiry and uvicorn's default keep-alive


def _get_ok(conn: socket.socket, host: str) -> bytes:
    conn.sendall(f"GET /ok HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    got = b""
    while b"\r\n\r\n" not in got or not got.endswith(b"}"):
        chunk = conn.recv(4096)
        if not chunk:
            return got  # the server closed the connection
        got += chunk
    return got


def test_an_idle_connection_still_serves_a_request_after_six_seconds(tmp_path: Path):
    assert KEEP_ALIVE_SECONDS > 60  # longer than clients' expiry and load balancers' 60 s
    with serve(str(tmp_path / "s.db"), tmp_path / "serve.log", token=None) as served:
        host = served.url.removeprefix("http://")
        address, port = host.rsplit(":", 1)
        with socket.create_connection((address, int(port)), timeout=10) as conn:
            first = _get_ok(conn, host)
            assert first.startswith(b"HTTP/1.1 200"), first
            time.sleep(IDLE)
            again = _get_ok(conn, host)
            assert again.startswith(b"HTTP/1.1 200"), (again, served.output())
