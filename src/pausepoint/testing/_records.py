"""Checkpoints, metadata and configs as the conformance suites make them."""

from __future__ import annotations

from collections.abc import Mapping

from pausepoint.checkpoint.base import Checkpoint, CheckpointMetadata, empty_checkpoint
from pausepoint.checkpoint.ids import new_checkpoint_id, now_iso
from pausepoint.config import RunnableConfig
from pausepoint.testing.ops import SaverOps

__all__ = ["chain", "config_for", "id_of", "make_checkpoint", "make_metadata"]


def make_checkpoint(values: Mapping[str, object] | None = None, **versions: int) -> Checkpoint:
    """A new checkpoint with a fresh, time-ordered id."""
    checkpoint = empty_checkpoint(new_checkpoint_id(), now_iso())
    checkpoint["channel_values"] = dict(values or {})
    checkpoint["channel_versions"] = dict(versions)
    checkpoint["versions_seen"] = {"node": dict(versions)}
    return checkpoint


def make_metadata(step: int, source: str = "loop", **extra: object) -> CheckpointMetadata:
    """Metadata as the engine writes it, plus ``extra`` keys."""
    metadata: dict[str, object] = {"source": source, "step": step, "parents": {}, **extra}
    return metadata  # type: ignore[return-value]


def config_for(thread: str, ns: str = "", checkpoint_id: str | None = None) -> RunnableConfig:
    """The config of a thread (and namespace, and checkpoint)."""
    conf: dict[str, str] = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def id_of(config: RunnableConfig | None) -> str:
    """The checkpoint id a config names."""
    assert config is not None
    return str(config.get("configurable", {})["checkpoint_id"])


async def chain(
    ops: SaverOps, thread: str, n: int, ns: str = "", *, lease: str | None = None
) -> list[RunnableConfig]:
    """Put ``n`` checkpoints, each the child of the previous; return their configs."""
    configs: list[RunnableConfig] = []
    parent = config_for(thread, ns)
    for step in range(n):
        checkpoint = make_checkpoint({"step": step})
        parent = await ops.put(parent, checkpoint, make_metadata(step), lease=lease)
        configs.append(parent)
    return configs
