"""A history is read a page at a time (issue 32): ``list``/``alist`` of the SQL savers.

Each page (`pausepoint.checkpoint._sql_list.PAGE` checkpoints, newest first) is read
and decoded, then yielded, before the next is read: taking the first item of a long
thread's history costs a page, not the whole history. The tuples are the ones a single
read gives (the page size made larger than the thread: the listing before paging) and
the ones the reference ``InMemorySaver`` gives, for every ``filter``/``before``/``limit``
form, on SQLite and PostgreSQL, through the sync and the async methods.
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
import pytest_asyncio

from pausepoint import START, InMemorySaver, StateGraph
from pausepoint.checkpoint import _sql_list
from pausepoint.checkpoint.base import Checkpoint, CheckpointTuple, empty_checkpoint
from pausepoint.checkpoint.ids import new_checkpoint_id
from pausepoint.checkpoint.postgres import AsyncPostgresSaver, PostgresSaver
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.config import RunnableConfig
from pausepoint.crypto import KeyRing
from pausepoint.serde import Serializer

SMALL = 4
"""The page size most tests list with (monkeypatched): a few checkpoints make pages."""
N = 3 * SMALL + 2
"""Checkpoints of the main thread's root namespace: more than three pages."""


class Counting(Serializer):
    """pausepoint's serializer, counting the values it decodes."""

    def __init__(self) -> None:
        super().__init__()
        self.decoded = 0

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        self.decoded += 1
        return super().loads_typed(data)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["plain", "sealed"])
def sealed(request: pytest.FixtureRequest) -> bool:
    return request.param == "sealed"


@pytest.fixture
def serde() -> Counting:
    return Counting()


@pytest_asyncio.fixture
async def saver(
    request: pytest.FixtureRequest,
    kind: str,
    mode: str,
    sealed: bool,
    serde: Counting,
    tmp_path: Path,
) -> AsyncIterator[Any]:
    """The saver under test (an async PostgreSQL saver in async mode), on a fresh store."""
    enc = KeyRing({"k1": bytes(range(32))}) if sealed else None
    if kind == "sqlite":
        with SqliteSaver.from_conn_string(
            str(tmp_path / "c.db"), serde=serde, encryption=enc
        ) as opened:
            yield opened
        return
    import psycopg

    url, kwargs = request.getfixturevalue("pg_url"), request.getfixturevalue("pg_kwargs")
    if mode == "sync":
        with psycopg.connect(url, **kwargs) as conn:
            sync = PostgresSaver(conn, serde=serde, encryption=enc)
            sync.setup()
            yield sync
        return
    async with await psycopg.AsyncConnection.connect(url, **kwargs) as aconn:
        async_ = AsyncPostgresSaver(aconn, serde=serde, encryption=enc)
        await async_.setup()
        yield async_


def _conf(thread: str, ns: str | None = "", checkpoint_id: str | None = None) -> RunnableConfig:
    conf: dict[str, Any] = {"thread_id": thread}
    if ns is not None:
        conf["checkpoint_ns"] = ns
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def _checkpoint(n: int) -> Checkpoint:
    cp = empty_checkpoint(new_checkpoint_id(), "2026-12-07T00:00:00+00:00")
    # A list that grows: large from a few steps on, so stored as a chain of deltas.
    cp["channel_values"] = {"n": n, "messages": [f"message {i} " * 40 for i in range(n)]}
    cp["channel_versions"] = {"n": n + 1, "messages": n + 1}
    return cp


def _meta(n: int) -> Any:
    return {"step": n, "source": "input" if n % 3 == 0 else "loop", "even": n % 2 == 0}


async def _put(
    saver: Any, mode: str, config: RunnableConfig, n: int, cp: Checkpoint | None = None
) -> RunnableConfig:
    cp = _checkpoint(n) if cp is None else cp
    if mode == "sync":
        return saver.put(config, cp, _meta(n), {})
    return await saver.aput(config, cp, _meta(n), {})


async def _writes(saver: Any, mode: str, config: RunnableConfig, n: int) -> None:
    writes = [("messages", [f"write {n}"]), ("__interrupt__", [{"value": n}])]
    if mode == "sync":
        saver.put_writes(config, writes, f"task-{n}")
    else:
        await saver.aput_writes(config, writes, f"task-{n}")


async def _fill(savers: list[tuple[Any, str]]) -> dict[str, list[RunnableConfig]]:
    """The same checkpoints (same ids) in each saver: thread ``t`` (``N`` in its root
    namespace, 5 in a subgraph's), thread ``u`` (3); writes on every third."""
    made: dict[str, list[RunnableConfig]] = {}
    for thread, ns, count in (("t", "", N), ("t", "sub:1", 5), ("u", "", 3)):
        heads = [_conf(thread, ns) for _ in savers]
        for n in range(count):
            cp_id = new_checkpoint_id()
            for i, (saver, mode) in enumerate(savers):
                cp = _checkpoint(n)
                cp["id"] = cp_id
                heads[i] = await _put(saver, mode, heads[i], n, cp)
                if n % 3 == 1:
                    await _writes(saver, mode, heads[i], n)
            made.setdefault(f"{thread}/{ns}", []).append(heads[0])
    return made


async def _list(saver: Any, mode: str, config: RunnableConfig | None, **kw: Any) -> list[Any]:
    if mode == "sync":
        return [_view(t) for t in saver.list(config, **kw)]
    return [_view(t) async for t in saver.alist(config, **kw)]


def _id(config: Any) -> str:
    return str(config["configurable"]["checkpoint_id"])


def _view(t: CheckpointTuple) -> Any:
    return (t.config, t.checkpoint, t.metadata, t.parent_config, t.pending_writes)


FORMS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("all of a namespace", {}, {}),
    ("every namespace of a thread", {"ns": None}, {}),
    ("every thread", {"thread": None}, {}),
    ("a subgraph's namespace", {"ns": "sub:1"}, {}),
    ("a filter SQL checks", {}, {"filter": {"source": "loop"}}),
    ("a filter checked in Python", {}, {"filter": {"even": True}}),
    ("both kinds of filter", {}, {"filter": {"source": "loop", "even": True}}),
    ("a limit below a page", {}, {"limit": SMALL - 1}),
    ("a limit of a page", {}, {"limit": SMALL}),
    ("a limit over two pages", {}, {"limit": 2 * SMALL + 1}),
    ("a limit over the thread", {}, {"limit": 10 * N}),
    ("a limit of none", {}, {"limit": 0}),
    ("a Python filter with a limit", {}, {"filter": {"even": True}, "limit": SMALL + 1}),
    ("a SQL filter with a limit", {}, {"filter": {"source": "loop"}, "limit": SMALL + 1}),
    ("a filter nothing matches", {}, {"filter": {"even": "no"}}),
    ("every thread, a Python filter", {"thread": None}, {"filter": {"even": False}}),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("form", "where", "kwargs"), FORMS, ids=[f[0] for f in FORMS])
async def test_pages_list_what_one_read_lists(
    saver: Any,
    mode: str,
    monkeypatch: pytest.MonkeyPatch,
    form: str,
    where: dict[str, Any],
    kwargs: dict[str, Any],
) -> None:
    reference = InMemorySaver()
    made = await _fill([(saver, mode), (reference, "sync")])
    thread = where.get("thread", "t")
    config = None if thread is None else _conf(thread, where.get("ns", ""))
    expected = await _list(reference, "sync", config, **kwargs)
    assert expected or form == "a filter nothing matches" or kwargs.get("limit") == 0
    monkeypatch.setattr(_sql_list, "PAGE", 10_000)  # one page: the listing before paging
    assert await _list(saver, mode, config, **kwargs) == expected
    monkeypatch.setattr(_sql_list, "PAGE", SMALL)
    assert await _list(saver, mode, config, **kwargs) == expected
    # ``before`` a checkpoint in the middle of the third page, with the same arguments.
    middle = made["t/"][N - 2 * SMALL - 2]
    older = await _list(reference, "sync", config, before=middle, **kwargs)
    assert await _list(saver, mode, config, before=middle, **kwargs) == older


@pytest.mark.asyncio
async def test_the_default_page_lists_more_than_two_pages(saver: Any, mode: str) -> None:
    reference = InMemorySaver()
    config = _conf("long")
    head, ref_head = config, config
    for n in range(2 * _sql_list.PAGE + 5):
        cp = _checkpoint(n)
        head = await _put(saver, mode, head, n, cp)
        ref_head = await _put(reference, "sync", ref_head, n, cp)
    listed = await _list(saver, mode, config)
    assert len(listed) == 2 * _sql_list.PAGE + 5
    assert listed == await _list(reference, "sync", config)


@pytest.mark.asyncio
async def test_the_first_item_decodes_one_page(
    saver: Any, mode: str, serde: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sql_list, "PAGE", SMALL)
    head = _conf("flat")
    for n in range(8 * SMALL):  # alike: one value decoded each (the checkpoint)
        cp = empty_checkpoint(new_checkpoint_id(), "2026-12-07T00:00:00+00:00")
        cp["channel_values"] = {"n": n}
        head = await _put(saver, mode, head, n, cp)
    serde.decoded = 0
    everything = await _list(saver, mode, _conf("flat"))
    assert serde.decoded == len(everything) == 8 * SMALL
    serde.decoded = 0
    iterator: Any = (saver.list if mode == "sync" else saver.alist)(_conf("flat"))
    first = next(iterator) if mode == "sync" else await anext(iterator)
    assert _view(first) == everything[0]
    assert serde.decoded == SMALL  # one page of the eight
    # Left part-way: the saver goes on working (SQLite: its lock is not held).
    await _abandon_then_use(saver, mode, iterator)


async def _abandon_then_use(saver: Any, mode: str, iterator: Any) -> None:
    if isinstance(saver, SqliteSaver):
        assert saver._lock.acquire(blocking=False)  # pyright: ignore[reportPrivateUsage]
        saver._lock.release()  # pyright: ignore[reportPrivateUsage]
        assert not saver.conn.in_transaction
    head = await _put(saver, mode, _conf("flat"), 99)
    got = saver.get_tuple(head) if mode == "sync" else await saver.aget_tuple(head)
    assert got is not None
    assert got.checkpoint["channel_values"]["n"] == 99
    if mode == "sync":
        iterator.close()
    else:
        await iterator.aclose()
    latest = await _list(saver, mode, _conf("flat"), limit=1)
    assert latest[0][0] == head


@pytest.mark.asyncio
async def test_a_sqlite_reader_elsewhere_is_not_blocked_between_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between pages no transaction is open: another connection's writer commits."""
    monkeypatch.setattr(_sql_list, "PAGE", SMALL)
    with SqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        await _fill([(saver, "sync")])
        it = saver.list(_conf("t"))
        next(it)
        assert not saver.conn.in_transaction
        other = sqlite3.connect(tmp_path / "c.db", timeout=0, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")  # fails at once if a read transaction were open
        other.execute("COMMIT")
        other.close()
        assert len(list(it)) == N - 1


@pytest.mark.asyncio
async def test_checkpoints_deleted_between_pages_are_not_listed(
    saver: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sql_list, "PAGE", SMALL)
    await _fill([(saver, mode)])
    # Across threads: ``u`` deleted after the first page (its ids are the newest).
    if mode == "sync":
        it = saver.list(None)
        first = [next(it) for _ in range(SMALL)]
        saver.delete_thread("u")
        rest = list(it)
    else:
        ait = saver.alist(None)
        first = [await anext(ait) for _ in range(SMALL)]
        await saver.adelete_thread("u")
        rest = [t async for t in ait]
    seen = [t.config["configurable"]["thread_id"] for t in first + rest]
    assert seen.count("t") == N + 5
    assert len({_id(t.config) for t in first + rest}) == len(seen)
    # This thread deleted (as a prune drops its old checkpoints) part-way: the rest is empty.
    if mode == "sync":
        it = saver.list(_conf("t"))
        next(it)
        saver.delete_thread("t")
        assert len(list(it)) < SMALL
    else:
        ait = saver.alist(_conf("t"))
        await anext(ait)
        await saver.adelete_thread("t")
        assert len([t async for t in ait]) < SMALL


@pytest.mark.asyncio
async def test_a_new_checkpoint_between_pages_is_not_listed(
    saver: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sql_list, "PAGE", SMALL)
    made = await _fill([(saver, mode)])
    newest = made["t/"][-1]
    if mode == "sync":
        it = saver.list(_conf("t"))
        first = next(it)
        await _put(saver, mode, newest, 100)
        rest = list(it)
    else:
        ait = saver.alist(_conf("t"))
        first = await anext(ait)
        await _put(saver, mode, newest, 100)
        rest = [t async for t in ait]
    assert [first.config, *(t.config for t in rest)] == list(reversed(made["t/"]))


@pytest.mark.asyncio
async def test_a_prune_between_pages_leaves_the_rest_unlisted(
    saver: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sql_list, "PAGE", SMALL)
    made = await _fill([(saver, mode)])
    kept = {_id(c) for c in made["t/"][-2:]}
    prune: Any = {"keep_last": 2, "include_waiting": True}
    if mode == "sync":
        it = saver.list(_conf("t"))
        first = [next(it) for _ in range(SMALL + 1)]  # into the second page
        assert saver.prune(["t"], **prune).checkpoints > 0
        rest = list(it)
    else:
        ait = saver.alist(_conf("t"))
        first = [await anext(ait) for _ in range(SMALL + 1)]
        assert (await saver.aprune(["t"], **prune)).checkpoints > 0
        rest = [t async for t in ait]
    newest_first = [_id(c) for c in reversed(made["t/"])]
    assert [_id(t.config) for t in first] == newest_first[: SMALL + 1]
    assert len(rest) == SMALL - 1  # the rest of the page read before the prune
    assert kept <= {_id(t.config) for t in first}
    assert len(await _list(saver, mode, _conf("t"))) == 2


@pytest.mark.asyncio
async def test_a_graph_history_is_read_as_it_is_consumed(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``get_state_history`` builds no list: its first snapshot costs the saver a page."""
    monkeypatch.setattr(_sql_list, "PAGE", SMALL)
    serde = Counting()
    with SqliteSaver.from_conn_string(str(tmp_path / "g.db"), serde=serde) as saver:
        graph = _counter(saver)
        config: Any = {"configurable": {"thread_id": "g"}}
        for _ in range(4 * SMALL):
            graph.invoke({"n": 1}, config)
        serde.decoded = 0
        if mode == "sync":
            count = sum(1 for _ in graph.get_state_history(config))
        else:
            count = len([s async for s in graph.aget_state_history(config)])
        everything, serde.decoded = serde.decoded, 0
        assert count >= 8 * SMALL
        if mode == "sync":
            snapshots = iter(graph.get_state_history(config))
            first = next(snapshots)
        else:
            asnapshots = graph.aget_state_history(config)
            first = await anext(asnapshots)
            await asnapshots.aclose()
        assert first.values == {"n": 8 * SMALL}
        assert 0 < serde.decoded <= everything * 2 * SMALL // count


class Count(TypedDict):
    n: Annotated[int, operator.add]


def _inc(state: Count) -> Count:
    return {"n": 1}


def _counter(saver: Any) -> Any:
    builder = StateGraph(Count)
    builder.add_node("inc", _inc)
    builder.add_edge(START, "inc")
    return builder.compile(checkpointer=saver)


@pytest.mark.asyncio
async def test_pages_grow_where_no_index_gives_the_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Across threads each page scans every row, so pages double (to `GROWS_TO` pages'
    worth); a thread's listing (its namespaces or one) keeps `PAGE`."""
    monkeypatch.setattr(_sql_list, "PAGE", SMALL)
    monkeypatch.setattr(_sql_list, "GROWS_TO", 2)
    with SqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        await _fill([(saver, "sync")])
        for config, total, limits in (
            (None, N + 8, [4, 8, 8, 8]),
            (_conf("t", None), N + 5, [4, 4, 4, 4, 4]),
            (_conf("t"), N, [4, 4, 4, 4]),
        ):
            sent: list[str] = []
            saver.conn.set_trace_callback(sent.append)
            assert len(list(saver.list(config))) == total
            saver.conn.set_trace_callback(None)
            pages = [s.rsplit("LIMIT ", 1)[1] for s in sent if "FROM pausepoint_checkpoints" in s]
            assert pages == [str(n) for n in limits]
