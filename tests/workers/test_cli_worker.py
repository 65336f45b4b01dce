"""``pausepoint worker`` and ``pausepoint workers``: refusals, and the queue's status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.workers.cluster import Cluster

from pausepoint.cli import main


def test_worker_refuses_sqlite_and_bad_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    db = str(tmp_path / "app.sqlite")
    graph = "--graph=chain=tests.workers.graphs:chain"
    assert main(["worker", "--db", db, graph]) == 2
    assert "needs a postgresql:// URL" in capsys.readouterr().err
    pg = "postgresql://nobody@127.0.0.1:1/none"
    assert main(["worker", "--db", pg, graph, "--concurrency", "0"]) == 2
    assert "--concurrency must be 1 or more" in capsys.readouterr().err
    assert main(["worker", "--db", pg, graph, "--repair-seconds", "60"]) == 2
    assert "--repair-seconds must be 1 to 59" in capsys.readouterr().err
    assert main(["worker", "--db", pg, "--graph=nope=no.such.module:g"]) == 2
    assert "no.such.module" in capsys.readouterr().err
    assert main(["workers", "--db", db]) == 2
    assert "needs a postgresql:// URL" in capsys.readouterr().err
    assert not (tmp_path / "app.sqlite").exists()  # nothing was created


def test_workers_on_a_database_without_a_queue(capsys: pytest.CaptureFixture[str]):
    from tests.server.serving import pg_database

    for db in pg_database("workers_none"):
        assert main(["workers", "--db", db]) == 2
        assert "no queue on this database yet" in capsys.readouterr().err


def test_workers_shows_the_queue(deployment: Cluster, capsys: pytest.CaptureFixture[str]):
    assert main(["workers", "--db", deployment.db, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert set(status) == {
        "jobs_waiting", "jobs_running", "runs_pending", "runs_running",
        "workers_alive", "workers_stalled", "oldest_pending_seconds",
    }  # fmt: skip
    assert status["workers_alive"] >= 3
    assert main(["workers", "--db", deployment.db]) == 0
    assert "workers_alive" in capsys.readouterr().out
