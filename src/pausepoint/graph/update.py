"""``update_state``: write values into a thread as if a node had returned them.

The new checkpoint (source ``update``) is a child of the one the config names
(or of the newest); history is never rewritten, so updating an old checkpoint
forks the thread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import Any

from pausepoint.channels import MISSING
from pausepoint.checkpoint.base import CheckpointMetadata, copy_checkpoint
from pausepoint.checkpoint.ids import new_checkpoint_id, now_iso
from pausepoint.config import RunnableConfig
from pausepoint.constants import END, NULL_TASK_ID, START
from pausepoint.errors import InvalidUpdateError
from pausepoint.loop.effects import LoadCheckpoint, SaveCheckpoint
from pausepoint.loop.node import node_body
from pausepoint.loop.pending import read_records
from pausepoint.loop.spec import GraphSpec
from pausepoint.loop.tasks import Task, prepare_tasks, task_id, task_ns
from pausepoint.loop.writes import InputWrites, apply_writes

__all__ = ["update_effects"]


def update_effects(
    spec: GraphSpec, saver: Any, config: RunnableConfig, values: Any, as_node: str | None
) -> Generator[Any, Any, RunnableConfig]:
    """The effects of one ``update_state`` call; returns the new checkpoint's config."""
    conf = dict(config.get("configurable") or {})
    conf.setdefault("checkpoint_ns", "")
    saved = yield LoadCheckpoint({"configurable": conf})
    if saved is None:
        from pausepoint.checkpoint.base import empty_checkpoint

        checkpoint = empty_checkpoint(new_checkpoint_id(), now_iso())
        step, records, null_writes, parent = -1, {}, [], {"configurable": conf}
    else:
        checkpoint = copy_checkpoint(saved.checkpoint)
        step = int(saved.metadata.get("step", -1)) + 1
        records, null_writes = read_records(saved.pending_writes or [])
        parent = saved.config
    channels = spec.fresh_channels(checkpoint["channel_values"])
    if null_writes:
        apply_writes(checkpoint, channels, [InputWrites(NULL_TASK_ID, null_writes)])
    node = _pick_node(spec, checkpoint, as_node)
    if saved is not None:
        tasks = prepare_tasks(spec, checkpoint, channels, step, conf["checkpoint_ns"])
        done = [t for t in tasks if t.id in records and records[t.id].done]
        for t in done:
            t.writes = list(records[t.id].writes)
        if done:
            apply_writes(checkpoint, channels, done)
    writes = _node_writes(spec, node, values, channels, checkpoint["id"], step, conf)
    fake = Task(
        id=task_id(checkpoint["id"], conf["checkpoint_ns"], step, node, "__update__", node),
        name=node,
        path=("__update__", node),
        input=None,
        triggers=(),
        node=spec.nodes[node],
        ns="",
        writes=writes,
    )
    if node != START:
        fake.triggers = ()
    apply_writes(checkpoint, channels, [fake])
    checkpoint["id"] = new_checkpoint_id()
    checkpoint["ts"] = now_iso()
    checkpoint["channel_values"] = {
        k: v for k, c in channels.items() if (v := c.checkpoint()) is not MISSING
    }
    metadata: CheckpointMetadata = {"source": "update", "step": step, "parents": {}}
    parent_config: RunnableConfig = parent  # pyright: ignore[reportAssignmentType]
    return (yield SaveCheckpoint(parent_config, checkpoint, metadata, {}))


def _pick_node(spec: GraphSpec, checkpoint: Any, as_node: str | None) -> str:
    if as_node is not None:
        if as_node == END:
            raise InvalidUpdateError("update_state(as_node=END) is not supported yet")
        if as_node not in spec.nodes:
            raise InvalidUpdateError(f"Node {as_node} does not exist")
        return as_node
    user_nodes = [n for n in spec.nodes if n != START]
    if len(user_nodes) == 1:
        return user_nodes[0]
    seen = checkpoint["versions_seen"]
    ranked = sorted(
        ((max(v.values(), default=0), n) for n, v in seen.items() if n in spec.nodes and v),
        reverse=True,
    )
    if not ranked:
        return START if not checkpoint["channel_versions"] else _ambiguous()
    if len(ranked) > 1 and ranked[0][0] == ranked[1][0]:
        return _ambiguous()
    return ranked[0][1]


def _ambiguous() -> str:
    raise InvalidUpdateError("Ambiguous update, specify as_node")


def _node_writes(
    spec: GraphSpec,
    node: str,
    values: Any,
    channels: Any,
    checkpoint_id: str,
    step: int,
    conf: dict[str, Any],
) -> list[tuple[str, Any]]:
    proc = spec.nodes[node]
    if node == START:
        proc = dataclasses.replace(proc, fn=None)
        task = Task("", START, ("", START), values, (), proc, "")
    else:
        fake_fn = _Const(values)
        proc = dataclasses.replace(
            proc, fn=fake_fn, is_async=False, accepts_config=False, subgraph=None
        )
        tid = task_id(checkpoint_id, conf["checkpoint_ns"], step, node, "__update__", node)
        task = Task(
            tid, node, ("", node), None, (), proc, task_ns(conf["checkpoint_ns"], node, tid)
        )
    config: RunnableConfig = {"configurable": conf}
    body = node_body(spec, task, config, channels)
    try:
        call = next(body)
        while True:
            call = body.send(call.sync(*call.args))
    except StopIteration as stop:
        return stop.value


class _Const:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self, *_: Any) -> Any:
        return self.value
