"""A read that races a deletion: the checkpoint is there, or it is gone, never "damaged".

A checkpoint whose large values live in ``pausepoint_blobs`` is read in several
statements: its row (with its writes), then its value rows. On PostgreSQL those are
separate statements outside a transaction, so a ``delete_thread`` or a ``prune`` that
commits between them deleted the value rows the reader is about to fetch. The read
must end as if it came after the deletion (``get_tuple`` is ``None``, ``list`` leaves
the checkpoint out), not raise ``CheckpointDecodeError`` about a damaged row; a row
that is still there with a value row missing is damage, and still an error. SQLite
reads in one transaction: it sees the checkpoint whole. The race is made exact by a
saver that runs the deletion right after the first statement of each read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pausepoint.checkpoint import _sql
from pausepoint.checkpoint.postgres import PostgresSaver
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import CheckpointDecodeError

from .blob_rows import execute
from .test_blobs import _run  # pyright: ignore[reportPrivateUsage]


def _after_first(flow: _sql.Flow[Any], hook: Callable[[], None]) -> _sql.Flow[Any]:
    """``flow``, with ``hook`` run once its first statement's rows have come back."""
    try:
        stmt = next(flow)
    except StopIteration as stop:
        return stop.value
    rows = yield stmt
    hook()
    while True:
        try:
            stmt = flow.send(rows)
        except StopIteration as stop:
            return stop.value
        rows = yield stmt


class Racing:
    """A saver mixin: the next read runs ``race`` after its first statement."""

    race: Callable[[], None] | None = None

    def _run(self, flow: _sql.Flow[Any], **kwargs: Any) -> Any:
        race, self.race = self.race, None
        if race is not None:
            flow = _after_first(flow, race)
        return super()._run(flow, **kwargs)  # type: ignore[misc]


class RacingSqlite(Racing, SqliteSaver):
    pass


class RacingPostgres(Racing, PostgresSaver):
    pass


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def savers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """A writer's saver and a racing reader's, on one database (each its own connection)."""
    if request.param == "sqlite":
        path = tmp_path / "r.db"
        writer = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
        reader = RacingSqlite(sqlite3.connect(path, check_same_thread=False))
        yield writer, reader
        writer.conn.close()
        reader.conn.close()
        return
    import psycopg

    url, kwargs = request.getfixturevalue("pg_url"), request.getfixturevalue("pg_kwargs")
    with psycopg.connect(url, **kwargs) as one, psycopg.connect(url, **kwargs) as two:
        writer = PostgresSaver(one)
        writer.setup()
        yield writer, RacingPostgres(two)


def _old(writer: Any) -> tuple[Any, Any]:
    """A thread of six turns, and the config of a checkpoint of it with value rows."""
    _graph, config = _run(writer, "raced", 6)
    history = list(writer.list(config))
    old = history[len(history) // 2].config
    refs = execute(writer, "SELECT count(*) FROM pausepoint_blobs WHERE thread_id = 'raced'")
    assert refs[0][0] > 0, "the thread's large values are value rows"
    return config, old


def _deleting(writer: Any, deletion: str) -> Callable[[], None]:
    """The race: the thread deleted whole, or pruned to its head."""

    def delete() -> None:
        if deletion == "delete_thread":
            writer.delete_thread("raced")
        else:
            writer.prune(keep_last=1, include_waiting=True)

    return delete


@pytest.mark.parametrize("deletion", ["delete_thread", "prune"])
def test_get_tuple_racing_a_deletion_is_whole_or_none(
    savers: tuple[Any, Any], deletion: str
) -> None:
    writer, reader = savers
    _config, old = _old(writer)
    whole = writer.get_tuple(old)
    assert whole is not None

    reader.race = _deleting(writer, deletion)
    got = reader.get_tuple(old)
    assert got is None or got.checkpoint == whole.checkpoint
    assert writer.get_tuple(old) is None  # the deletion did happen
    if isinstance(reader, PostgresSaver) and deletion == "delete_thread":
        assert got is None  # its value rows were gone when it read them


@pytest.mark.parametrize("deletion", ["delete_thread", "prune"])
def test_list_racing_a_deletion_leaves_out_what_is_gone(
    savers: tuple[Any, Any], deletion: str
) -> None:
    writer, reader = savers
    config, _old_config = _old(writer)
    before = {t.config["configurable"]["checkpoint_id"]: t for t in writer.list(config)}

    reader.race = _deleting(writer, deletion)
    listed = list(reader.list(config))
    for item in listed:
        cid = item.config["configurable"]["checkpoint_id"]
        assert item.checkpoint == before[cid].checkpoint
        assert item.pending_writes == before[cid].pending_writes
    assert len(list(writer.list(config))) < len(before)
    if isinstance(reader, PostgresSaver) and deletion == "delete_thread":
        # What was read before the deletion and needed no value row is listed; the
        # first page's checkpoints with value rows are not (their rows were gone).
        assert len(listed) < len(before)
    else:
        # SQLite reads a page in one snapshot; the prune kept every value row (the
        # head's chains hold them), so what the page read is whole.
        assert len(listed) == len(before)


def test_a_value_row_missing_under_a_checkpoint_that_is_there_is_still_damage(
    savers: tuple[Any, Any],
) -> None:
    writer, reader = savers
    _config, old = _old(writer)
    reader.race = lambda: execute(writer, "DELETE FROM pausepoint_blobs WHERE thread_id = 'raced'")
    if isinstance(reader, PostgresSaver):
        with pytest.raises(CheckpointDecodeError, match="thread 'raced'"):
            reader.get_tuple(old)
    else:  # its snapshot still holds the rows
        assert reader.get_tuple(old) is not None
    # Read again by a reader that holds nothing of what it read before.
    reader._codec.chains = type(reader._codec.chains)()  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(CheckpointDecodeError, match="thread 'raced'"):
        reader.get_tuple(old)
