"""Reading a delta chain cold: older versions joined from the rows held (chain42).

A saver keeps the rows of the chains it read last (`_sql_values.Chains.rows`), so a
history read newest first reads each chain's rows once, not once per checkpoint; and
it compares a new encoding with the one it holds instead of taking digests of both
(the digest is taken only when the held bytes are let go). Both are checked against
the reference ``InMemorySaver`` on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.savers.test_blobs import _observed, _run  # pyright: ignore[reportPrivateUsage]
from xxhash import xxh3_128_intdigest

from pausepoint import InMemorySaver
from pausepoint.checkpoint import _sql_values
from pausepoint.checkpoint.sqlite import SqliteSaver

from .blob_rows import execute
from .test_packing import saver

__all__ = ["saver"]  # the fixture: a SQLite file's or PostgreSQL's saver per test


def _forget(saver: Any) -> None:
    """Drop what the saver holds, as a new process would start."""
    saver._codec.chains = _sql_values.Chains()  # pyright: ignore[reportPrivateUsage]


def test_a_cold_history_reads_each_chain_once(saver: Any) -> None:
    graph, config = _run(saver, "chat", 30)
    ref_graph, ref_config = _run(InMemorySaver(), "chat", 30)
    expected = _observed(ref_graph, ref_config)
    _forget(saver)
    statements: list[str] = []
    if isinstance(saver, SqliteSaver):
        saver.conn.set_trace_callback(statements.append)
    assert _observed(graph, config) == expected
    if isinstance(saver, SqliteSaver):
        saver.conn.set_trace_callback(None)
        fetches = [s for s in statements if "anchor = (SELECT" in s]
        full = execute(saver, "SELECT count(*) FROM pausepoint_blobs WHERE base IS NULL")
        assert 0 < len(fetches) <= full[0][0]  # one read per chain (per full value)
    _forget(saver)
    assert graph.get_state(config).values == ref_graph.get_state(ref_config).values


def test_a_fork_of_an_old_checkpoint_reads_back(saver: Any) -> None:
    graph, config = _run(saver, "chat", 12)
    ref_graph, ref_config = _run(InMemorySaver(), "chat", 12)
    for g, c in ((graph, config), (ref_graph, ref_config)):
        old = [s.config for s in g.get_state_history(c)][9]
        forked = {"messages": [{"role": "user", "content": "forked " * 100}]}
        g.update_state(old, forked, as_node="ask")
    _forget(saver)
    assert _observed(graph, config) == _observed(ref_graph, ref_config)


def test_rows_held_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sql_values, "ROWS_HELD", 10_000)
    chains = _sql_values.Chains()
    for n in range(5):
        row = ("c", f"{n}:x", "ppjson/1", bytes([65 + n]) * 3_000, None)
        chains.keep_rows(("t", "", f"c{n}"), {row[1]: row})
    chains.keep_rows(("t", "", "big"), {"b": ("big", "b", "ppjson/1", b"x" * 6_000, None)})
    held = {f"c{n}": f"{n}:x" for n in range(5)} | {"big": "b"}
    assert sorted(chains.rows(("t", ""), held)) == ["c2", "c3", "c4"]  # the newest 9,000
    assert chains.rows(("t", ""), {"c4": "other"}) == {}  # a version the rows do not hold


def test_deltas_go_on_after_the_held_encoding_is_let_go(
    saver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sql_values, "HELD", 0)  # every encoding let go once noted
    graph, config = _run(saver, "chat", 20)
    ref_graph, ref_config = _run(InMemorySaver(), "chat", 20)
    kinds = dict(execute(saver, "SELECT type, count(*) FROM pausepoint_blobs GROUP BY type"))
    assert kinds["delta"] > 25  # extended by the digest of the prefix, as before
    _forget(saver)
    assert _observed(graph, config) == _observed(ref_graph, ref_config)


def test_an_extension_is_checked_against_the_held_bytes_or_their_digest() -> None:
    old = b'["a","b"]'
    link = _sql_values._Link("v", len(old), None, b"]", 0, 0, len(old), old)  # pyright: ignore[reportPrivateUsage]
    extends = _sql_values._extends  # pyright: ignore[reportPrivateUsage]
    base = len(old) - 1
    assert extends(link, b'["a","b","c"]', base)
    assert not extends(link, b'["a","x","c"]', base)
    link.blob = None  # let go, and no digest taken: never a delta
    assert not extends(link, b'["a","b","c"]', base)
    link.head = xxh3_128_intdigest(old[:-1])
    assert extends(link, b'["a","b","c"]', base)
    assert not extends(link, b'["a","x","c"]', base)
