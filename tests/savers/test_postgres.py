"""PostgreSQL specifics: migrations, corrupt rows, errors, concurrent setup."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from pausepoint.checkpoint.postgres import AsyncPostgresSaver, PostgresSaver
from pausepoint.errors import CheckpointDecodeError, SerializationError
from pausepoint.testing import make_checkpoint, make_metadata

pytestmark = pytest.mark.postgres
CONFIG: Any = {"configurable": {"thread_id": "t"}}


def test_from_conn_string_setup_is_idempotent_and_versioned(pg_url: str, pg_schema: str) -> None:
    url = f"{pg_url}?options=-csearch_path%3D{pg_schema}"
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        saver.setup()
        saver.put(CONFIG, make_checkpoint({"a": 1}), make_metadata(0), {})
        conn: Any = saver.conn
        assert conn.execute("SELECT v FROM pausepoint_migrations").fetchall() == [
            (1,),
            (2,),
            (3,),
            (4,),
        ]
    with PostgresSaver.from_conn_string(url) as saver:
        got = saver.get_tuple(CONFIG)
        assert got is not None
        assert got.checkpoint["channel_values"] == {"a": 1}


def test_concurrent_setup_runs_migrations_once(pg_url: str, pg_kwargs: dict[str, Any]) -> None:
    import psycopg

    errors: list[BaseException] = []

    def setup() -> None:
        try:
            with psycopg.connect(pg_url, **pg_kwargs) as conn:
                PostgresSaver(conn).setup()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=setup) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_corrupt_rows_raise_decode_error(pg_url: str, pg_kwargs: dict[str, Any]) -> None:
    import psycopg

    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        saver.put(CONFIG, make_checkpoint(), make_metadata(0), {})
        conn.execute("UPDATE pausepoint_checkpoints SET checkpoint = %s", (b"\xff\x00junk",))
        with pytest.raises(CheckpointDecodeError):
            saver.get_tuple(CONFIG)
        conn.execute("UPDATE pausepoint_checkpoints SET type = 'msgpack'")
        with pytest.raises(CheckpointDecodeError, match="msgpack"):
            list(saver.list(None))


def test_bad_values_fail_before_anything_is_written(pg_url: str, pg_kwargs: dict[str, Any]) -> None:
    import psycopg

    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        config = saver.put(CONFIG, make_checkpoint(), make_metadata(0), {})
        with pytest.raises(SerializationError, match="key 'b' as returned by task 'task-1'"):
            saver.put_writes(config, [("a", 1), ("b", object())], "task-1")
        with pytest.raises(SerializationError, match="NUL"):
            saver.put(CONFIG, make_checkpoint(), make_metadata(1, user="a\x00b"), {})
        got = saver.get_tuple(CONFIG)
        assert got is not None
        assert got.config == config
        assert got.pending_writes == []


def test_connections_without_autocommit_are_refused(pg_url: str) -> None:
    import psycopg

    with psycopg.connect(pg_url) as conn, pytest.raises(ValueError, match="autocommit=True"):
        PostgresSaver(conn)


@pytest.mark.asyncio
async def test_async_saver_refuses_sync_calls(pg_url: str, pg_schema: str) -> None:
    url = f"{pg_url}?options=-csearch_path%3D{pg_schema}"
    async with AsyncPostgresSaver.from_conn_string(url) as saver:
        await saver.setup()
        with pytest.raises(TypeError, match="aget_tuple"):
            saver.get_tuple(CONFIG)
        configs = await asyncio.gather(
            *(saver.aput(CONFIG, make_checkpoint(), make_metadata(i), {}) for i in range(5))
        )
        assert len({c["configurable"]["checkpoint_id"] for c in configs}) == 5


def test_a_pause_and_resume_take_six_statements(pg_url: str, pg_kwargs: dict[str, Any]) -> None:
    # Each write is one statement, atomic without BEGIN/COMMIT; a step's last task
    # writes go with the step's checkpoint in one (WITH ... INSERT), and a new run's
    # input checkpoint in the same INSERT, each checking and renewing the run's lease
    # in that statement. Each run takes its thread's lease (an INSERT on an unlogged
    # table, no WAL flush) and reads the thread's checkpoint with its writes in the
    # same statement, and lets the lease go with its last write (in the same
    # statement): 6 round trips (LangGraph's saver: 13).
    import psycopg

    from pausepoint import Command

    from .graphs import ask_graph

    sent: list[str] = []
    opened: list[bool] = []

    class Counting(psycopg.Cursor[Any]):
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            sent.append(str(query).split()[0])
            return super().execute(query, params, **kwargs)

        def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> None:
            sent.append("MANY")
            super().executemany(query, params_seq, **kwargs)

    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        conn.cursor_factory = Counting
        transaction = conn.transaction

        def counted_transaction(*args: Any, **kwargs: Any) -> Any:
            opened.append(True)
            return transaction(*args, **kwargs)

        conn.transaction = counted_transaction  # type: ignore[method-assign]
        graph = ask_graph(saver)
        cfg: Any = {"configurable": {"thread_id": "count"}}
        graph.invoke({"question": "ship it?", "answer": ""}, cfg)
        assert graph.invoke(Command(resume="yes"), cfg)["answer"] == "yes"
        claim_and_load, fenced_write = "WITH", "WITH"
        assert sent == [
            *(claim_and_load, fenced_write, fenced_write),  # runs to the pause
            *(claim_and_load, fenced_write, fenced_write),  # the answer, the end
        ]
        assert saver.get_lease("count") is None  # let go with each run's last write
        assert opened == []
        # What the folded statements stored: each task's writes on its step's checkpoint.
        conn.cursor_factory = psycopg.Cursor
        history = [(h.metadata["step"], h.tasks, h.config) for h in graph.get_state_history(cfg)]
        paused = saver.get_tuple(history[1][2])
    assert [step for step, _, _ in history] == [1, 0, -1]
    (start,) = history[2][1]
    assert (start.name, start.result) == ("__start__", {"question": "ship it?", "answer": ""})
    (asked,) = history[1][1]
    assert (asked.name, asked.result) == ("ask", {"answer": "yes"})
    assert paused is not None
    assert [w.channel for w in paused.pending_writes or []] == [
        "__interrupt__",
        "__asked__",
        "__resume__",
        "answer",
    ]


@pytest.mark.parametrize("threshold", [0, None])
def test_statements_are_prepared_as_the_connection_says(
    pg_url: str, pg_schema: str, threshold: int | None
) -> None:
    # from_conn_string prepares each statement on first use (as LangGraph's saver
    # does); None (for a pooler that cannot keep prepared statements) never prepares.
    from pausepoint import Command

    from .graphs import ask_graph

    url = f"{pg_url}?options=-csearch_path%3D{pg_schema}"
    with PostgresSaver.from_conn_string(url, prepare_threshold=threshold) as saver:
        saver.setup()
        graph = ask_graph(saver)
        cfg: Any = {"configurable": {"thread_id": "prepared"}}
        graph.invoke({"question": "ship it?", "answer": ""}, cfg)
        assert graph.invoke(Command(resume="yes"), cfg)["answer"] == "yes"
        conn: Any = saver.conn
        prepared = conn.execute("SELECT statement FROM pg_prepared_statements").fetchall()
    texts = " ".join(row[0] for row in prepared)
    if threshold is None:
        assert prepared == []
    else:
        assert "pausepoint_checkpoints" in texts
        assert "pausepoint_writes" in texts


@pytest.mark.parametrize("lease_row", ["released", "created"])
def test_a_claim_reads_what_the_holder_it_waited_for_wrote(
    pg_url: str, pg_kwargs: dict[str, Any], lease_row: str
) -> None:
    """The race a claim folded into a read must survive: it waits for a holder's commit.

    Its statement's snapshot predates that commit, while its claim sees it: the
    lease row's ``seq`` shows the read is stale, and the thread is read again.
    ``released``: the holder lets the lease go with its last write; ``created``: the
    lease row itself is new in the holder's transaction.
    """
    import psycopg

    with psycopg.connect(pg_url, **pg_kwargs) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        root = saver.put(CONFIG, make_checkpoint({"a": 1}), make_metadata(0), {})
        saver.put_writes(root, [("a", 2)], "task-1")
        if lease_row == "released":
            assert saver.acquire_lease("t", "A", 60).acquired
        with psycopg.connect(pg_url, **{**pg_kwargs, "autocommit": False}) as holder:
            holder.execute(
                "INSERT INTO pausepoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id,"
                " idx, channel, type, value, task_path) SELECT thread_id, checkpoint_ns,"
                " checkpoint_id, 'task-2', idx, channel, type, value, task_path"
                " FROM pausepoint_writes WHERE thread_id = 't'"
            )
            if lease_row == "released":
                holder.execute(
                    "UPDATE pausepoint_leases SET owner = '', expires_at = 0, seq = seq + 1"
                    " WHERE thread_id = 't'"
                )
            else:
                holder.execute(
                    "INSERT INTO pausepoint_leases (thread_id, owner, expires_at, ttl)"
                    " VALUES ('t', '', 0, 1)"
                )
            got: list[Any] = []
            claimer = threading.Thread(
                target=lambda: got.append(saver.acquire_lease("t", "B", 60, read=CONFIG))
            )
            claimer.start()
            _wait_until_blocked(pg_url, pg_kwargs)
            holder.commit()
            claimer.join(30)
        (claim,) = got
        assert (claim.acquired, claim.read) == (True, True)
        assert claim.checkpoint is not None
        assert [(w.task_id, w.value) for w in claim.checkpoint.pending_writes or []] == [
            ("task-1", 2),
            ("task-2", 2),
        ]
        assert claim.checkpoint == saver.get_tuple(CONFIG)


def _wait_until_blocked(pg_url: str, pg_kwargs: dict[str, Any]) -> None:
    """Until a backend waits for a lock (the claim, behind the holder's transaction)."""
    import time

    import psycopg

    with psycopg.connect(pg_url, **pg_kwargs) as watch:
        for _ in range(3000):
            row = watch.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            ).fetchone()
            if row is not None and row[0] > 0:
                return
            time.sleep(0.01)
    raise AssertionError("the claim never waited for the holder's transaction")
