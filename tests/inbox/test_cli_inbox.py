"""``pausepoint inbox``: its errors, and a real server in a subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.inbox import graphs
from tests.inbox.server import free_port

from pausepoint.cli import main
from pausepoint.cli.inbox import _graph

ROOT = Path(__file__).resolve().parents[2]


def test_without_the_extra_it_names_the_pip_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], db_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "starlette", None)  # as if not installed
    assert main(["inbox", "--db", str(db_path), "--graph", "tests.inbox.graphs:approval"]) == 2
    assert "pip install 'pausepoint[inbox]'" in capsys.readouterr().err


def test_a_missing_file_or_graph_is_a_clear_error(
    graph: Any, db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graphs.start(graph, "t1")
    assert main(["inbox", "--db", str(db_path) + ".typo", "--graph", "x:y"]) == 2
    assert "does not exist" in capsys.readouterr().err
    for spec, words in [
        ("tests.inbox.graphs", "MODULE:ATTRIBUTE"),
        ("tests.inbox.nowhere:g", "cannot import module"),
        ("tests.inbox.graphs:nothing", "has no attribute 'nothing'"),
        ("tests.inbox.graphs:Review", "names a dict, not a StateGraph"),
        ("tests.inbox.graphs:start", "needs arguments"),
    ]:
        assert main(["inbox", "--db", str(db_path), "--graph", spec]) == 2
        assert words in capsys.readouterr().err, spec


def test_the_graph_may_be_a_builder_a_compiled_graph_or_a_factory(graph: Any) -> None:
    saver = graph.checkpointer
    for spec in ("tests.inbox.graphs:approval", "tests.inbox.graphs:build"):
        assert _graph(spec, saver).checkpointer is saver
    compiled = graphs.approval().compile()
    graphs.COMPILED = compiled  # type: ignore[attr-defined]
    try:
        loaded = _graph("tests.inbox.graphs:COMPILED", saver)
    finally:
        del graphs.COMPILED  # type: ignore[attr-defined]
    assert loaded.checkpointer is saver
    assert compiled.checkpointer is None  # compiled again, not changed


def test_the_server_prints_the_token_once_and_never_logs_it(graph: Any, db_path: Path) -> None:
    import httpx

    graphs.start(graph, "t1", rows=2)
    port, token = free_port(), "cli-token-9f8e7d6c5b4a"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    command = [sys.executable, "-m", "pausepoint.cli", "inbox", "--db", str(db_path)]
    command += ["--graph", "tests.inbox.graphs:approval", "--port", str(port), "--token", token]
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_until_up(base, proc)
        with httpx.Client(base_url=base, follow_redirects=True) as http:
            assert http.get("/api/questions").status_code == 401
            login = http.get(f"/?token={token}")  # follows the redirect, keeps the cookie
            assert login.status_code == 200
            assert "Delete 2 rows?" in login.text
            listed = http.get("/api/questions", headers={"Authorization": f"Bearer {token}"})
            assert [q["thread_id"] for q in listed.json()["items"]] == ["t1"]
    finally:
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=20)
    assert output.count(token) == 1, output
    (line,) = [x for x in output.splitlines() if token in x]
    assert line.strip() == f"open http://127.0.0.1:{port}/?token={token}"
    assert "token=***" in output  # the login request, in the access log


def _wait_until_up(base: str, proc: subprocess.Popen[str]) -> None:
    import httpx

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {proc.stdout.read() if proc.stdout else ''}")
        try:
            httpx.get(f"{base}/api/questions", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError("the server did not start in 30 s")


def test_the_demo_says_how_to_answer_it_from_the_inbox(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from starlette.testclient import TestClient

    from pausepoint.checkpoint.sqlite import SqliteSaver
    from pausepoint.inbox import create_app

    db = tmp_path / "demo.sqlite"
    assert main(["demo", "--db", str(db)]) == 0
    command = f"pausepoint inbox --db {db} --graph pausepoint.cli.demo_graph:build"
    assert command in capsys.readouterr().out
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = _graph("pausepoint.cli.demo_graph:build", saver)
        with TestClient(create_app(graph, token="t"), headers={"Authorization": "Bearer t"}) as c:
            (item,) = c.get("/api/questions").json()["items"]
            assert item["response_schema"]["properties"]["decision"]["enum"][0] == "approve"
            page = c.get(item["links"]["page"]).text
            assert 'class="decision approve"' in page
            done = c.post(item["links"]["answer"], json={"answer": {"decision": "approve"}})
            assert done.json()["result"]["decision"] == "approved"
