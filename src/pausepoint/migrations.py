"""Declared migrations: how a thread an older graph wrote follows a deploy.

Pass them to ``StateGraph.compile(..., migrations=[...])`` or
``@entrypoint(..., migrations=[...])``. When a thread whose newest checkpoint another
graph wrote is loaded, they are applied in order and the thread moves on a new
checkpoint of its own (``source="migrate"``); see docs/deploys.md. For example:

    graph = builder.compile(
        checkpointer=saver,
        migrations=[rename_node("ask", "approve"), drop_channel("legacy")],
    )
"""

from __future__ import annotations

from pausepoint.loop.migration_ops import (
    Migration,
    StoredTask,
    StoredThread,
    convert_channel,
    drop_channel,
    migration,
    rename_channel,
    rename_node,
    reroute,
)

__all__ = [
    "Migration",
    "StoredTask",
    "StoredThread",
    "convert_channel",
    "drop_channel",
    "migration",
    "rename_channel",
    "rename_node",
    "reroute",
]
