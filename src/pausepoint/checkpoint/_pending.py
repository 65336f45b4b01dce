"""``list_pending`` for any saver: a scan of every thread's head checkpoint.

[`BaseCheckpointSaver`][pausepoint.checkpoint.base.BaseCheckpointSaver] inherits it,
so a third-party saver lists waiting questions correctly with no code of its own; it
reads every thread's newest root checkpoint, so it is slow with many threads
(InMemorySaver, the reference, uses it as it is). CompactingMemorySaver overrides it
to read only the heads of threads it has indexed as holding a question, the SQL
savers to read an index table (``_sql_pending``).
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from pausepoint.checkpoint.questions import (
    PendingPage,
    PendingQuery,
    PendingQuestion,
    UnreadableQuestion,
    questions_of_head,
)

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import CheckpointTuple

__all__ = ["PendingListing", "page_of_heads"]


class PendingListing:
    """The ``list_pending``/``alist_pending`` methods of every saver (a mixin)."""

    def list_pending(
        self,
        *,
        graph: str | None = None,
        metadata: Mapping[str, object] | None = None,
        asked_before: datetime.datetime | None = None,
        due_by: datetime.datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> PendingPage:
        """The questions waiting for an answer across all threads, oldest first.

        One item per question, as ``graph.get_state(config).interrupts`` shows them
        for each thread. See docs/pending.md.

        Args:
            graph: Only threads whose checkpoint metadata's ``"graph_id"`` is this.
            metadata: Only threads whose head checkpoint's metadata holds all of
                these items.
            asked_before: Only questions asked before this time (timezone-aware).
            due_by: Only questions whose deadline is at or before this time.
            limit: At most this many items (>= 1).
            cursor: A previous page's ``next_cursor``: the questions after it.

        Returns:
            A page of questions and the cursor of the next one (None after the last).

        Raises:
            ValueError: An argument is malformed (nothing is read).
        """
        query = PendingQuery.of(
            graph=graph,
            metadata=metadata,
            asked_before=asked_before,
            due_by=due_by,
            limit=limit,
            cursor=cursor,
        )
        return self._pending_page(query)

    async def alist_pending(
        self,
        *,
        graph: str | None = None,
        metadata: Mapping[str, object] | None = None,
        asked_before: datetime.datetime | None = None,
        due_by: datetime.datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> PendingPage:
        """Async [`list_pending`][]."""
        query = PendingQuery.of(
            graph=graph,
            metadata=metadata,
            asked_before=asked_before,
            due_by=due_by,
            limit=limit,
            cursor=cursor,
        )
        return await self._apending_page(query)

    def _pending_page(self, query: PendingQuery) -> PendingPage:
        """The page ``query`` asks for (default: from `_pending_heads`)."""
        return page_of_heads(query, self._pending_heads())

    async def _apending_page(self, query: PendingQuery) -> PendingPage:
        """Async `_pending_page` (default: from `_apending_heads`)."""
        heads = [head async for head in self._apending_heads()]
        return page_of_heads(query, heads)

    def _pending_heads(self) -> Iterator[CheckpointTuple]:
        """Every thread's newest root checkpoint (default: from a scan of ``list``)."""
        return newest_roots(self.list(None))  # type: ignore[attr-defined]

    async def _apending_heads(self) -> AsyncIterator[CheckpointTuple]:
        """Async `_pending_heads` (default: from a scan of ``alist``)."""
        every: list[CheckpointTuple] = [tup async for tup in self.alist(None)]  # type: ignore[attr-defined]
        for head in newest_roots(every):
            yield head


def newest_roots(tuples: Iterable[CheckpointTuple]) -> Iterator[CheckpointTuple]:
    """The newest checkpoint of each thread's root namespace among ``tuples``."""
    heads: dict[str, CheckpointTuple] = {}
    for tup in tuples:
        conf = tup.config.get("configurable") or {}
        if conf.get("checkpoint_ns", "") != "":
            continue
        thread = str(conf.get("thread_id"))
        best = heads.get(thread)
        if best is None or _cid(tup) > _cid(best):
            heads[thread] = tup
    return iter(heads.values())


def _cid(tup: CheckpointTuple) -> str:
    return str((tup.config.get("configurable") or {}).get("checkpoint_id"))


def page_of_heads(query: PendingQuery, heads: Iterable[CheckpointTuple]) -> PendingPage:
    """The page ``query`` asks for, from the questions waiting at ``heads``."""
    found: list[PendingQuestion] = []
    errors: list[UnreadableQuestion] = []
    for head in heads:
        try:
            found.extend(questions_of_head(head))
        except UnreadableQuestion as exc:
            errors.append(exc)
    return query.page(found, errors)
