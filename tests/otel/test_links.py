"""A question asked in one process, answered in another: the answer's run links to the
span that asked (real SQLite and PostgreSQL, both drivers, separate interpreters)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = str(Path(__file__).with_name("ask_process.py"))
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "graph.db")
    pg_url: str = request.getfixturevalue("pg_url")
    schema: str = request.getfixturevalue("pg_schema")
    return "postgres", f"{pg_url}?options=-csearch_path%3D{schema}"


def run_phase(
    backend: tuple[str, str], phase: str, driver: str, spans: Path, *extra: str
) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    done = subprocess.run(
        [sys.executable, SCRIPT, *backend, phase, driver, str(spans), *extra],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def read_spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("asker", ["sync", "async"])
@pytest.mark.parametrize("answerer", ["sync", "async"])
def test_the_answering_run_links_to_the_asking_span_across_processes(
    backend: tuple[str, str], asker: str, answerer: str, tmp_path: Path
):
    asked_file, answered_file = tmp_path / "asked.jsonl", tmp_path / "answered.jsonl"
    assert run_phase(backend, "ask", asker, asked_file) == {"log": ["prepare"], "interrupts": 1}
    assert run_phase(backend, "answer", answerer, answered_file) == {
        "log": ["prepare", "ask:yes"],
        "interrupts": 0,
    }
    asked = read_spans(asked_file)
    (asking,) = [s for s in asked if s["name"] == "node ask"]
    (paused,) = [s for s in asked if s["name"] == "run LangGraph"]
    assert paused["status"] == "OK"
    assert paused["attributes"]["pausepoint.paused"] is True
    answered = read_spans(answered_file)
    (answering,) = [s for s in answered if s["name"] == "run LangGraph"]
    assert answering["trace_id"] != asking["trace_id"]  # a trace of its own, linked
    assert answering["links"] == [{"trace_id": asking["trace_id"], "span_id": asking["span_id"]}]
    assert answering["attributes"]["pausepoint.answers"] == 1


def test_answering_without_tracing_works_and_a_question_asked_untraced_has_no_link(
    backend: tuple[str, str], tmp_path: Path
):
    """The extra may be absent on either side: the answer still lands, with no link."""
    asked_file, answered_file = tmp_path / "asked.jsonl", tmp_path / "answered.jsonl"
    # Asked while traced, answered by a process that never imports pausepoint.otel.
    run_phase(backend, "ask", "sync", asked_file)
    done = run_phase(backend, "answer", "sync", answered_file, "--plain")
    assert done == {"log": ["prepare", "ask:yes"], "interrupts": 0}
    assert read_spans(answered_file) == []


def test_a_question_stored_without_its_span_is_answered_without_a_link(
    backend: tuple[str, str], tmp_path: Path
):
    """A question stored before this version (or while untraced) has no ``__asked_span__``."""
    asked_file, answered_file = tmp_path / "asked.jsonl", tmp_path / "answered.jsonl"
    run_phase(backend, "ask", "sync", asked_file, "--plain")
    done = run_phase(backend, "answer", "async", answered_file)
    assert done == {"log": ["prepare", "ask:yes"], "interrupts": 0}
    (answering,) = [s for s in read_spans(answered_file) if s["name"] == "run LangGraph"]
    assert answering["links"] == []
    assert "pausepoint.answers" not in answering["attributes"]
