"""The LangGraph JS SDK (``@langchain/langgraph-sdk``, the client browser UIs such as
agent-chat-ui are built on) against ``pausepoint serve``: its own SSE decoder reads our
framing. tests/js/flow.mjs streams a run to its question, reads the question back,
streams the answer, and rejoins a resumable run; this test checks what it saw.

Needs Node.js and ``npm ci --prefix tests/js`` (``.ci/run`` does both); skipped
locally without them, a failure under CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")

from tests.server.serving import TOKEN, serve

JS = Path(__file__).resolve().parents[1] / "js"
QUESTION = {"question": "Approve deploy?"}


def _node() -> str:
    node = shutil.which("node")
    ready = (JS / "node_modules" / "@langchain" / "langgraph-sdk").is_dir()
    if node is None or not ready:
        how = "install Node.js and run: npm ci --prefix tests/js"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but the JS SDK cannot run: {how}", pytrace=False)
        pytest.skip(f"no Node.js or no tests/js/node_modules; {how}")
    return node


def test_the_js_client_streams_a_pause_and_a_resume(tmp_path: Path) -> None:
    node = _node()
    with serve(str(tmp_path / "serve.sqlite"), tmp_path / "serve.log") as served:
        done = subprocess.run(
            [node, str(JS / "flow.mjs"), served.url, TOKEN],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=JS,
        )
        assert done.returncode == 0, done.stderr + served.output()
    seen: dict[str, Any] = json.loads(done.stdout)

    paused = seen["paused"]
    assert paused[0]["event"] == "metadata"
    assert set(paused[0]["data"]) >= {"run_id"}
    values = [p["data"] for p in paused if p["event"] == "values"]
    updates = [p["data"] for p in paused if p["event"] == "updates"]
    assert values[0] == {"request": "deploy"}
    [asked] = values[-1]["__interrupt__"]
    assert asked["value"] == QUESTION
    assert updates[-1]["__interrupt__"] == [asked]

    [task] = seen["state"]["tasks"]
    assert seen["state"]["next"] == ["ask"]
    assert task["name"] == "ask"
    assert task["interrupts"] == [asked]
    assert seen["waiting"] is True

    resumed = seen["resumed"]
    assert resumed[0]["event"] == "metadata"
    final = [p["data"] for p in resumed if p["event"] == "values"][-1]
    assert final == {"request": "deploy", "answer": "yes", "result": "deploy: yes"}
    assert seen["after"] == {"status": "idle", "values": final}

    joined = [p for p in seen["joined"] if p["event"] == "values"]
    assert joined, seen["joined"]
    assert joined[-1]["data"]["__interrupt__"][0]["value"] == {"question": "Approve ship?"}
    assert seen["wait"]["__interrupt__"][0]["value"] == {"question": "Approve ship?"}
