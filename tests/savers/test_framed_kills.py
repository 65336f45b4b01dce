"""Framed value rows under SIGKILL (schema 12): a killed writer leaves nothing torn.

A reply that returns a file's bytes (70 KB: framed) stores them in a value row of their
own; the checkpoint after the step and the step's pending write refer to it
(``ppref/1``). The chat process (``chat_process.py ... framed``) writes such a row every
turn; it is killed with SIGKILL at three moments. Each time, on SQLite and PostgreSQL,
through a saver that holds nothing of what the writer encoded: every checkpoint of the
history reads whole, with an attachment that is its own bytes (its number, then the
bytes that number makes), every framed row is referenced, and the thread answers its
next question where it stopped.
"""

from __future__ import annotations

from typing import Any

from pausepoint import Command
from pausepoint.serde import FRAMED

from . import chat_process
from .blob_rows import execute
from .test_blobs import backend

__all__ = ["backend"]  # the fixture: a SQLite file or a PostgreSQL schema per test


def _whole(graph: Any, config: Any) -> int:
    """Check every snapshot of the thread; the number of attachments seen."""
    seen = 0
    for snapshot in graph.get_state_history(config):
        assert all(isinstance(m, str) for m in snapshot.values.get("messages", []))
        data = snapshot.values.get("attachment")
        if data is not None:
            assert isinstance(data, bytes)
            assert data == chat_process.attachment(int.from_bytes(data[:4], "big"))
            seen += 1
    return seen


def test_sigkill_while_writing_framed_rows_tears_nothing(backend: tuple[str, str]) -> None:
    config = chat_process.config("framed")
    for delay in (0.4, 0.25, 0.55):
        watcher = chat_process.open_saver(*backend)
        try:
            chat_process.kill_midway(watcher, backend, "framed", delay, "framed")
        finally:
            getattr(watcher, "conn").close()  # noqa: B009
        # A new saver: nothing of the killed writer's encodings is held in memory.
        saver = chat_process.open_saver(*backend)
        try:
            graph = chat_process.chat(saver, framed=True)
            assert _whole(graph, config) > 0
            rows = execute(saver, "SELECT count(*) FROM pausepoint_blobs WHERE type = ?", (FRAMED,))
            assert rows[0][0] > 0
            chat_process.to_question(graph, config)
            count = len(graph.get_state(config).values["messages"])
            graph.invoke(Command(resume="after the kill"), config)
            after = graph.get_state(config).values
            assert after["messages"][count] == "user: after the kill"
            assert after["attachment"] == chat_process.attachment(count + 1)
            _whole(graph, config)
        finally:
            getattr(saver, "conn").close()  # noqa: B009
