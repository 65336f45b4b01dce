"""``list`` of the SQL savers: stored checkpoints, newest first, a page at a time.

A history used to be read whole (every row, every value decoded) before its first
checkpoint was yielded: reading the newest few entries of a long thread cost as much
as reading all of it, and held all of it at once (issue 32). `pages` gives one flow per
page instead: it reads up to `PAGE` rows older than the last row read (keyset order:
``checkpoint_id`` descending, then the thread and the namespace when the config leaves
them open, so rows with the same id in two threads are neither lost nor listed twice),
decodes their tuples and returns them; the saver yields them before it drives the next
page's flow, and holds no lock (SQLite: no transaction) in between.

A page's rows are one statement: on PostgreSQL they hold their pending writes (unless
a filter is checked in Python: then the writes of the rows it keeps are read after it);
SQLite reads the writes after them, in the page's transaction. Between pages other
writers go on: a checkpoint added meanwhile is newer than the ones listed and is not
listed; one deleted or pruned meanwhile is not listed if its page was not read yet. The
chain rows the codec holds (``_sql_values.Chains``) serve an older checkpoint of the
next page as they serve one of the same page.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pausepoint.checkpoint._dialect import Dialect, Flow, Row, Statement
from pausepoint.checkpoint._sql import SELECT_CHECKPOINTS, listed_tuple, metadata_of, with_writes
from pausepoint.checkpoint._sql_codec import SqlCodec
from pausepoint.checkpoint._sql_filters import filter_sql
from pausepoint.checkpoint.base import CheckpointTuple
from pausepoint.config import RunnableConfig

__all__ = ["GROWS_TO", "PAGE", "pages"]

PAGE = 32
"""Checkpoints read (and decoded) per statement: the most a history holds at once."""
GROWS_TO = 32
"""A listing across threads doubles its page after each one, up to this many times
`PAGE`: no index gives its order, so each page scans every row the config selects, and
pages of `PAGE` made listing 20,000 checkpoints 10x slower than one read (0.8 s). One
thread's listing (its namespaces open) scans that thread's rows only: its pages stay
small (a thread of 2,002 chat checkpoints lists as fast as its history)."""

_KEY_INDEX = {"thread_id": 0, "checkpoint_ns": 1, "checkpoint_id": 2}
"""Where each key column is in a row of ``SELECT_CHECKPOINTS``."""


class _Listing:
    """One ``list`` call: its statement's parts, and how far its pages have gone."""

    __slots__ = (
        "after", "conds", "done", "exact", "keys", "left", "outer", "params", "size", "tail",
    )  # fmt: skip

    def __init__(
        self,
        conds: list[str],
        params: list[Any],
        keys: tuple[str, ...],
        exact: bool,
        limit: int | None,
    ) -> None:
        self.conds, self.params, self.keys, self.exact = conds, params, keys, exact
        self.left = None if limit is None else int(limit)  # tuples still to list
        self.done = self.left is not None and self.left <= 0
        self.after: Row | None = None  # the key of the last row read
        self.size = PAGE  # rows the next page asks for (less when ``limit`` leaves less)
        self.tail = " ORDER BY " + ", ".join(f"{k} DESC" for k in keys)
        self.outer = " ORDER BY " + ", ".join(f"c.{k} DESC" for k in keys)  # `with_writes`

    def statement(self, dialect: Dialect) -> tuple[Statement, int]:
        """The next page's statement, and the rows it asks for."""
        conds, params = self.conds, self.params
        if self.after is not None:
            conds = [*conds, _older(self.keys)]
            params = [*params, *(v for v in self.after[:-1] for _ in (0, 1)), self.after[-1]]
        size = self.size
        if "thread_id" in self.keys:
            self.size = min(size * 2, PAGE * GROWS_TO)
        take = size if self.left is None or not self.exact else min(size, self.left)
        where = " WHERE " + " AND ".join(conds) if conds else ""
        sql = f"{SELECT_CHECKPOINTS}{where}{self.tail} LIMIT {take}"
        if dialect.name == "postgres" and self.exact:  # every row listed: its writes too
            sql = with_writes(sql) + self.outer
        return Statement(dialect.sql(sql), tuple(params), fetch=True), take


def _older(keys: tuple[str, ...]) -> str:
    """The condition of rows after a key in the listing's order (descending).

    ``a < ? OR (a = ? AND (b < ? OR (b = ? AND c < ?)))``: its parameters are each
    value but the last twice, then the last. With the thread and namespace given (a
    history) it is ``checkpoint_id < ?``: a range of the primary key's index.
    """
    text = f"{keys[-1]} < ?"
    for key in reversed(keys[:-1]):
        text = f"{key} < ? OR ({key} = ? AND ({text}))"
    return f"({text})"


def pages(
    dialect: Dialect,
    codec: SqlCodec,
    config: RunnableConfig | None,
    *,
    filter: Mapping[str, Any] | None,
    before: RunnableConfig | None,
    limit: int | None,
) -> Iterator[Flow[list[CheckpointTuple]]]:
    """The flows listing checkpoints, a page each (see the ``list`` contract in base.py).

    Drive each flow (it returns its page's tuples, in order) before taking the next: the
    next page starts after the last row the flow read.
    """
    conf = (config or {}).get("configurable") or {}
    conds: list[str] = []
    params: list[Any] = []
    for column in ("thread_id", "checkpoint_ns", "checkpoint_id"):
        if conf.get(column) is not None:
            conds.append(f"{column} = ?")
            params.append(str(conf[column]))
    before_id = ((before or {}).get("configurable") or {}).get("checkpoint_id")
    if before_id is not None:
        conds.append("checkpoint_id < ?")
        params.append(str(before_id))
    fconds, fparams, exact = filter_sql(dialect, filter or {}, codec.sealer is not None)
    # Ties on the id (a copied thread's rows) are ordered by the columns left open.
    open_ = (c for c in ("thread_id", "checkpoint_ns") if conf.get(c) is None)
    keys = ("checkpoint_id", *open_)
    listing = _Listing(conds + fconds, params + fparams, keys, exact, limit)
    while not listing.done:
        yield _page(dialect, codec, listing, filter)


def _page(
    dialect: Dialect, codec: SqlCodec, listing: _Listing, filter: Mapping[str, Any] | None
) -> Flow[list[CheckpointTuple]]:
    statement, take = listing.statement(dialect)
    rows = yield statement
    listing.done = len(rows) < take  # the last page
    if rows:
        last = rows[-1]
        listing.after = tuple(last[_KEY_INDEX[k]] for k in listing.keys)
    out: list[CheckpointTuple] = []
    for row in rows:
        metadata = metadata_of(row, codec)
        if filter and any(metadata.get(k) != v for k, v in filter.items()):
            continue
        read = yield from listed_tuple(dialect, codec, row, metadata)
        if read is None:  # deleted since the page was read: as if read after
            continue
        out.append(read)
        if listing.left is not None:
            listing.left -= 1
            if listing.left <= 0:
                listing.done = True
                break
    return out
