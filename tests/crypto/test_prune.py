"""Pruning a sealed database keeps every value row a remaining checkpoint needs.

The collector finds the rows a checkpoint references inside its encoding: sealed, it
must open the checkpoint first (a sealed encoding shows no references to a scan).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.crypto import rows
from tests.crypto.graphs import CANARY, answer, build, config, first_input

from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.crypto import KeyRing


def test_prune_keeps_the_value_rows_in_use(tmp_path: Path, ring: KeyRing) -> None:
    path = tmp_path / "c.db"
    with SqliteSaver.from_conn_string(str(path), encryption=ring) as saver:
        graph = build(saver)
        for n in range(3):  # three pause/resume rounds: the message list grows each time
            conf: Any = config(f"t{n % 2}")
            graph.invoke(first_input(), conf)
            graph.invoke(answer(), conf)
        assert len(rows.keys(path, "pausepoint_blobs")) > 0
        report = saver.prune(None, keep_last=1, include_waiting=True)
        assert not report.errors
        assert report.checkpoints > 0
        for thread in ("t0", "t1"):
            state = graph.get_state(config(thread))
            assert state.values["text"].startswith(CANARY)
            assert len(state.values["messages"]) >= 1
    with SqliteSaver.from_conn_string(str(path), encryption=ring) as fresh:  # no cached values
        for thread in ("t0", "t1"):
            assert build(fresh).get_state(config(thread)).values["messages"]
