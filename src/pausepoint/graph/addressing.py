"""Which (sub)graph's checkpoints a config's ``checkpoint_ns`` names.

``get_state``, ``get_state_history`` and ``update_state`` take the config of a
subgraph task (``"outer:<id>|inner:<id>"``) and read or write that subgraph's
checkpoints with its graph. Each namespace part names a node; the graph under it
is the node's subgraph, or one its function runs. A function may run several (each
run in a namespace of its own: ``node:<id>``, then ``node:<id>|1``, ...), so a
namespace can name several candidates: `Addressed` lists them all, and the reader
picks the one whose fingerprint the checkpoint carries
(`pausepoint.loop.compat_check.written_by`). LangGraph
reads every run with the first graph the function names (docs/differences.md).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pausepoint.config import RunnableConfig
from pausepoint.loop.namespaces import stateful_ns

if TYPE_CHECKING:
    from pausepoint.graph.compiled import CompiledStateGraph
    from pausepoint.loop.spec import GraphSpec

__all__ = ["Addressed", "address"]


@dataclasses.dataclass(frozen=True, slots=True)
class Addressed:
    """The graphs a config's namespace may hold checkpoints of, and how to find them."""

    graph: CompiledStateGraph
    """The graph read with when no checkpoint tells (LangGraph's pick)."""
    others: tuple[GraphSpec, ...]
    """The specs of the other candidates, one of which may have written it."""
    config: RunnableConfig
    """The config its checkpoints are found by."""


def address(
    root: CompiledStateGraph, config: RunnableConfig, *, keep_runs: bool = False
) -> Addressed:
    """The (sub)graphs ``config`` names, and the config their checkpoints are found by.

    A stateful subgraph's (``checkpointer=True``) are under its namespace without
    task ids (see `pausepoint.loop.namespaces`; ``keep_runs``: see ``stateful_ns``);
    only candidates that keep theirs the same way are kept.
    """
    conf = dict(config.get("configurable") or {})
    ns = str(conf.get("checkpoint_ns") or "")
    graph, *rest = _graphs_for_ns(root, ns)
    stateful = graph is not root and graph.checkpointer is True
    others = tuple(g.spec for g in rest if (g.checkpointer is True) == stateful)
    if stateful:
        conf["checkpoint_ns"] = stateful_ns(ns, keep_runs=keep_runs)
        config = {**config, "configurable": conf}
    return Addressed(graph, others, config)


def _graphs_for_ns(root: CompiledStateGraph, ns: str) -> list[CompiledStateGraph]:
    """The graphs that may have written namespace ``ns``'s checkpoints, LangGraph's first.

    At each level, the graphs under the named node of each graph found so far: a
    later run of a node's function may run a graph the first did not (which holds
    the next level's node).
    """
    found = [root]
    for part in ns.split("|") if ns else ():
        if part.isdigit():  # a task's second (third, ...) graph run: not a level
            continue
        name = part.split(":", 1)[0]
        under: list[CompiledStateGraph] = []
        for graph in found:
            node = graph.spec.nodes.get(name)
            for sub in () if node is None else node.graphs:
                if all(sub is not g for g in under):
                    under.append(sub)
        if not under:
            raise ValueError(
                f"checkpoint_ns {ns!r} names {name!r}, which is not a subgraph node of "
                f"graph {found[0].name!r}"
            )
        found = under
    return found
