"""Each thread's newest root checkpoint, read without decoding its values (issue 31).

What the pre-deploy check (`pausepoint.deploys`, ``pausepoint check``) sorts threads
by, for thousands of threads at a time: whether work is left at the head (a question
waits or was answered, a static breakpoint, pending tasks or ``Send`` packets), the
stamp of the graph that wrote it (``checkpoint["graph"]``) and its metadata. The SQL
savers read heads in batches (``saver.thread_heads``); a checkpoint in pausepoint's
own format is *peeked*: its JSON is parsed, its values are not decoded (no classes
are made, no allowlist is consulted). Any other saver is read checkpoint by
checkpoint (`head_of`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from pausepoint.constants import BRANCH_TO, JOIN, START, TASKS
from pausepoint.errors import CheckpointDecodeError
from pausepoint.serde import FORMAT, FRAMED
from pausepoint.serde.frames import unframe

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import CheckpointTuple

__all__ = ["Head", "head_of", "peek", "trigger_target", "unreadable_head", "work_left"]

_STAMP = "graph"
"""The checkpoint field holding the stamp of the graph that wrote it (docs/format.md)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Head:
    """A thread's newest root checkpoint, as the pre-deploy check needs it.

    Attributes:
        thread_id: The thread.
        checkpoint_id: Its newest checkpoint in the root namespace.
        metadata: That checkpoint's metadata (``graph_id`` names the thread's graph).
        stamp: ``checkpoint["graph"]`` (``fingerprint``, ``reducers``, ``version``), or
            None for a checkpoint written before fingerprints existed.
        work_left: Whether the next step has tasks: a question waits or was answered
            and its run is pending, a static breakpoint, pending tasks or ``Send``
            packets. False for a finished thread.
        error: Why the checkpoint cannot be read; the other fields are then empty.
    """

    thread_id: str
    checkpoint_id: str
    metadata: Mapping[str, object]
    stamp: Mapping[str, object] | None
    work_left: bool
    error: CheckpointDecodeError | None = None

    @property
    def fingerprint(self) -> str | None:
        """The stored graph fingerprint, if any."""
        found = self.stamp.get("fingerprint") if self.stamp is not None else None
        return found if isinstance(found, str) else None

    @property
    def version(self) -> str | None:
        """The stored ``compile(version=...)`` label, if any."""
        found = self.stamp.get("version") if self.stamp is not None else None
        return found if isinstance(found, str) else None


def peek(type_: str, blob: bytes) -> Mapping[str, object] | None:
    """The JSON tree of a checkpoint stored in pausepoint's format; values stay encoded.

    None for another format (a serde of its own): decode it instead.

    Raises:
        CheckpointDecodeError: The bytes are not the JSON object they claim to be.
    """
    if type_ not in (FORMAT, FRAMED):
        return None
    try:
        text: str | bytes = unframe(blob)[0] if type_ == FRAMED else blob
        tree: object = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointDecodeError(f"the checkpoint is not valid JSON ({exc})") from exc
    if not isinstance(tree, dict):
        raise CheckpointDecodeError("the checkpoint is not a JSON object; the row is corrupt")
    return cast("dict[str, object]", tree)


def work_left(checkpoint: Mapping[str, object]) -> bool:
    """Whether the step after ``checkpoint`` has tasks (see `Head.work_left`).

    Read from the stored triggers, as ``pausepoint threads list`` does without the
    graph: a ``Send`` packet, or an edge trigger (``branch:to:<node>``, a complete
    join, the input) newer than its node has seen. Works on a decoded checkpoint and
    on a peeked one alike; a shape it does not know counts as work left.
    """
    values, versions, seen = (checkpoint.get(k) for k in _FIELDS)
    if not isinstance(values, dict) or not isinstance(versions, dict):
        return True
    values = cast("dict[str, object]", values)
    sends = values.get(TASKS)
    if sends is not None and sends != []:
        return True
    seen_by = cast("dict[str, object]", seen) if isinstance(seen, dict) else {}
    for chan, version in cast("dict[str, object]", versions).items():
        node = trigger_target(chan, values)
        if node is None:
            continue
        node_seen = seen_by.get(node)
        before = cast("dict[str, object]", node_seen).get(chan, 0) if node_seen else 0
        try:
            if version > before:  # type: ignore[operator]
                return True
        except TypeError:
            return True
    return False


_FIELDS = ("channel_values", "channel_versions", "versions_seen")


def trigger_target(chan: str, values: Mapping[str, object]) -> str | None:
    """The node an available trigger channel starts, or None.

    An edge's, a complete join's or the input's, read from the stored channels alone.
    """
    if chan not in values:
        return None
    if chan == START:
        return START
    if chan.startswith(BRANCH_TO):
        return chan[len(BRANCH_TO) :]
    if chan.startswith(JOIN):
        sources, _, node = chan[len(JOIN) :].rpartition(":")
        arrived = values[chan]
        if not isinstance(arrived, list):
            return node  # not as pausepoint stores it: count it as work
        return node if set(sources.split("+")) <= set(cast("list[object]", arrived)) else None
    return None


def head_of(saved: CheckpointTuple) -> Head:
    """The `Head` of a decoded checkpoint tuple (savers without ``thread_heads``)."""
    conf = saved.config.get("configurable") or {}
    checkpoint = cast("Mapping[str, object]", saved.checkpoint)
    stamp = checkpoint.get(_STAMP)
    return Head(
        thread_id=str(conf.get("thread_id")),
        checkpoint_id=str(saved.checkpoint["id"]),
        metadata=dict(saved.metadata),
        stamp=cast("Mapping[str, object]", stamp) if isinstance(stamp, dict) else None,
        work_left=work_left(checkpoint),
    )


def unreadable_head(thread_id: str, checkpoint_id: str, exc: BaseException) -> Head:
    """The `Head` of a checkpoint that cannot be read."""
    error = exc if isinstance(exc, CheckpointDecodeError) else None
    if error is None:
        error = CheckpointDecodeError(
            f"checkpoint {checkpoint_id!r} of thread {thread_id!r} cannot be read "
            f"({type(exc).__name__}: {exc}); the row is corrupt"
        )
    return Head(thread_id, checkpoint_id, {}, None, False, error)
