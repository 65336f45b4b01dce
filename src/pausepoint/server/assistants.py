"""The assistants of a `RunService` (`AssistantBook`, its base): one per graph by default.

An assistant is a served graph with its config, context and metadata. Each graph
has a default assistant whose id is derived from the graph's name
(`default_assistant_id`), and a graph's name works wherever an assistant id does.
An assistant never changes once made (there is no update or delete), so one read is
kept in memory.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pausepoint.server.errors import NotFoundError
from pausepoint.server.records import Assistant, JsonObject

if TYPE_CHECKING:
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.server.store import Store

__all__ = [
    "DEFAULT_ASSISTANT_NAMESPACE",
    "AssistantBook",
    "SortOrder",
    "default_assistant_id",
    "matches",
    "page",
]

SortOrder = Literal["asc", "desc"]

DEFAULT_ASSISTANT_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
"""The namespace of default assistants' ids (LangGraph's servers use the same)."""


def default_assistant_id(graph_id: str) -> str:
    """The id of a graph's default assistant: uuid5 of the graph's name."""
    return str(uuid.uuid5(DEFAULT_ASSISTANT_NAMESPACE, graph_id))


def matches(have: Mapping[str, Any], want: Mapping[str, Any] | None) -> bool:
    """Every key of ``want`` has the same value in ``have`` (nested dicts: the same)."""
    return not want or all(k in have and have[k] == v for k, v in want.items())


def page(items: list[Any], key: str, order: SortOrder, limit: int, offset: int) -> list[Any]:
    """``items`` sorted by ``key`` (missing last), in ``order``: the page asked for."""
    items.sort(key=lambda x: (getattr(x, key, None) is None, getattr(x, key, "")))
    if order == "desc":
        items.reverse()
    return items[offset : offset + limit]


class AssistantBook:
    """A `RunService`'s assistants: stored in its database, kept once read."""

    graphs: Mapping[str, CompiledStateGraph]
    store: Store
    _assistants: dict[str, Assistant]
    """By id or graph name: an assistant never changes once made."""

    async def create_assistant(
        self,
        graph_id: str,
        *,
        assistant_id: str | None = None,
        config: JsonObject | None = None,
        context: JsonObject | None = None,
        metadata: JsonObject | None = None,
        name: str | None = None,
        description: str | None = None,
        if_exists: Literal["raise", "do_nothing"] = "raise",
    ) -> Assistant:
        """Store an assistant of graph ``graph_id``; ``if_exists`` decides about an existing id.

        Raises:
            NotFoundError: No graph ``graph_id`` is served.
            ConflictError: ``assistant_id`` exists and ``if_exists="raise"``.
        """
        if graph_id not in self.graphs:
            raise NotFoundError(f"no graph {graph_id!r} is served")
        now = datetime.datetime.now(datetime.UTC)
        assistant = Assistant(
            assistant_id=assistant_id or str(uuid.uuid4()), graph_id=graph_id,
            config=config or {}, context=context or {}, metadata=metadata or {},
            name=name or "Untitled", description=description, version=1,
            created_at=now, updated_at=now,
        )  # fmt: skip
        got = await self.store.put_assistant(assistant, if_exists=if_exists)
        self._assistants.pop(got.assistant_id, None)  # a graph's name read as this id
        return got

    async def get_assistant(self, assistant_id_or_graph_id: str) -> Assistant:
        """The assistant with this id, or the default assistant of the graph of this name."""
        key = assistant_id_or_graph_id
        got = self._assistants.get(key)
        if got is not None:
            return got
        got = await self.store.get_assistant(key)
        if got is None and key in self.graphs:
            got = await self.store.get_assistant(default_assistant_id(key))
        if got is None:
            raise NotFoundError(f"assistant {key!r} not found")
        self._assistants[key] = self._assistants[got.assistant_id] = got
        return got

    async def search_assistants(
        self,
        *,
        graph_id: str | None = None,
        metadata: JsonObject | None = None,
        name: str | None = None,
        limit: int = 10,
        offset: int = 0,
        sort_by: str = "created_at",
        sort_order: SortOrder = "desc",
    ) -> tuple[list[Assistant], int]:
        """A page of assistants matching every filter given, and how many match in all.

        ``name`` matches a part of the name, case-insensitively.
        """
        found = [
            a
            for a in await self.store.assistants(graph_id)
            if matches(a.metadata, metadata) and (not name or name.lower() in a.name.lower())
        ]
        return page(found, sort_by, sort_order, limit, offset), len(found)

    def graph_for(self, assistant: Assistant) -> CompiledStateGraph:
        """The compiled graph an assistant runs."""
        graph = self.graphs.get(assistant.graph_id)
        if graph is None:
            raise NotFoundError(f"no graph {assistant.graph_id!r} is served")
        return graph
