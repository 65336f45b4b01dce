"""``CompactingMemorySaver`` against ``InMemorySaver``: the same operations, the same results.

The reference saver stores encodings in plain dicts; the compacting one keeps
immutable values as they are, shares parts of idle threads' checkpoints, encodes
only what a list gained, reuses encodings and keeps an index of waiting questions.
A Hypothesis state machine drives both with the same puts, writes (ordinary and
special, good and refused), batched writes, pairs, commits under a ``CheckpointRef``
(the engine's), long lists that grow (kept as links, see ``_grown``; more of those in
test_memory_grown.py), deletions and bursts of puts to other threads (which make the
compacting saver compact the idle ones); after every
step each read must give equal results, types included: ``get_tuple``, ``list``
(whole, by thread, by namespace, by metadata filter, before, limit) and
``list_pending``. An error must be the same error with the same message, and must
change nothing.

Longer runs: ``pytest -m stress tests/savers/test_memory_differential.py``.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from pausepoint.checkpoint.base import (
    CheckpointPut,
    CheckpointRef,
    StepCommit,
    TaskWrites,
    empty_checkpoint,
)
from pausepoint.checkpoint.compact import CompactingMemorySaver
from pausepoint.checkpoint.ids import new_stamp
from pausepoint.checkpoint.memory import InMemorySaver
from pausepoint.constants import ERROR, INTERRUPT, RESUME, SCHEDULED
from pausepoint.types import Interrupt

THREADS = ("a", "b")
NAMESPACES = ("", "sub:1")
TASKS = ("task-1", "task-2")
CHANNELS = ("x", "items", "out")

_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.binary(max_size=5),
)
values = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=3), inner, max_size=3),
    ),
    max_leaves=8,
)
interrupts = st.lists(st.builds(Interrupt, _leaf, st.just("i" * 32)), min_size=1, max_size=2).map(
    tuple
)
writes = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(CHANNELS), values),
        st.tuples(st.just(INTERRUPT), interrupts),
        st.tuples(st.just(RESUME), st.lists(_leaf, max_size=2)),
        st.tuples(st.sampled_from((ERROR, SCHEDULED)), st.text(max_size=3)),
    ),
    max_size=3,
)
metadata = st.fixed_dictionaries(
    {
        "source": st.sampled_from(("loop", "input")),
        "step": st.integers(-1, 3),
        "parents": st.just({}),
    },
    optional={"graph_id": st.sampled_from(("g1", "g2")), "tags": st.lists(st.text(max_size=2))},
)


def typed(value: Any) -> Any:
    """``value`` with the type of every part spelled out (1, 1.0 and True differ)."""
    if isinstance(value, dict):
        items: dict[Any, Any] = value  # pyright: ignore[reportUnknownVariableType]
        return ("dict", sorted((repr(k), typed(v)) for k, v in items.items()))
    if isinstance(value, list | tuple):
        seq: list[Any] = list(value)  # pyright: ignore[reportUnknownArgumentType]
        return (type(value).__name__, [typed(v) for v in seq])
    if isinstance(value, Interrupt):
        return ("Interrupt", typed(value.value), value.id)
    return (type(value).__name__, repr(value))


class SameResults(RuleBasedStateMachine):
    """Every operation on both savers; every read compared."""

    def __init__(self) -> None:
        super().__init__()
        self.savers = (InMemorySaver(), CompactingMemorySaver())
        self.ids: dict[tuple[str, str], list[str]] = {}
        self.long: dict[tuple[str, str], list[str]] = {}  # (thread, ns) -> its long list
        self.fillers = 0

    def both(self, op: Any) -> Any:
        """Run ``op(saver)`` on each saver; what each returned or raised must be equal.

        Returns the reference's result (None if it raised).
        """
        seen: list[Any] = []
        results: list[Any] = []
        for saver in self.savers:
            try:
                result = op(saver)
            except Exception as exc:  # the same error, with the same message
                seen.append(("error", type(exc).__name__, str(exc)))
                results.append(None)
            else:
                seen.append(("ok", typed(result)))
                results.append(result)
        assert seen[1] == seen[0]
        return results[0]

    def _checkpoint(self, channel_values: dict[str, Any]) -> Any:
        checkpoint = empty_checkpoint(*new_stamp())
        checkpoint["channel_values"] = channel_values
        checkpoint["channel_versions"] = {k: n + 1 for n, k in enumerate(channel_values)}
        checkpoint["versions_seen"] = {"node": dict(checkpoint["channel_versions"])}
        return checkpoint

    def _config(self, thread: str, ns: str, parent: int | None) -> Any:
        known = self.ids.get((thread, ns), [])
        pid = known[parent % len(known)] if parent is not None and known else None
        return {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": pid}}

    def _note(self, thread: str, ns: str, config: Any) -> None:
        """Remember the checkpoint a put stored (None: it was refused)."""
        if config is not None:
            self.ids.setdefault((thread, ns), []).append(config["configurable"]["checkpoint_id"])

    @rule(
        thread=st.sampled_from(THREADS),
        ns=st.sampled_from(NAMESPACES),
        parent=st.none() | st.integers(-2, 1),
        channel_values=st.dictionaries(st.sampled_from(CHANNELS), values, max_size=3),
        meta=metadata,
        bad=st.booleans(),
    )
    def put(
        self, thread: str, ns: str, parent: int | None, channel_values: Any, meta: Any, bad: bool
    ) -> None:
        if bad:
            channel_values = {**channel_values, "x": object()}
        checkpoint = self._checkpoint(channel_values)
        config = self._config(thread, ns, parent)
        result = self.both(lambda s: s.put(config, checkpoint, dict(meta), {}))
        self._note(thread, ns, result)

    @rule(
        thread=st.sampled_from(THREADS),
        ns=st.sampled_from(NAMESPACES),
        parent=st.integers(-2, 1),
        task=st.sampled_from(TASKS),
        batch=writes,
        bad=st.booleans(),
    )
    def put_writes(
        self, thread: str, ns: str, parent: int, task: str, batch: Any, bad: bool
    ) -> None:
        if bad:
            batch = [*batch, ("out", {1, object()})]
        config = self._config(thread, ns, parent)
        self.both(lambda s: s.put_writes(config, batch, task, f"('__pregel_pull', '{task}')"))

    @rule(
        thread=st.sampled_from(THREADS),
        parent=st.integers(-2, 1),
        batch=st.lists(st.tuples(st.sampled_from(TASKS), writes), max_size=2),
        channel_values=st.dictionaries(st.sampled_from(CHANNELS), values, max_size=3),
        pair=st.booleans(),
        bad=st.booleans(),
    )
    def put_batched(
        self, thread: str, parent: int, batch: Any, channel_values: Any, pair: bool, bad: bool
    ) -> None:
        """``put_after_writes`` (a step's end) or ``put_pair`` (a run's start)."""
        if bad:
            channel_values = {**channel_values, "items": [object()]}
        tasks = [TaskWrites(task, w) for task, w in batch]
        second = self._checkpoint(channel_values)
        meta: Any = {"source": "loop", "step": 1, "parents": {}}
        if pair:
            first = CheckpointPut(self._checkpoint({}), {"source": "input", "step": -1}, {})
            config = self._config(thread, "", None)
            result = self.both(
                lambda s: s.put_pair(config, first, tasks, CheckpointPut(second, meta, {}))
            )
        else:
            config = self._config(thread, "", parent)
            result = self.both(lambda s: s.put_after_writes(config, tasks, second, meta, {}))
        self._note(thread, "", result)

    @rule(
        thread=st.sampled_from(THREADS),
        ns=st.sampled_from(NAMESPACES),
        parent=st.none() | st.integers(-2, 1),
        batch=st.lists(st.tuples(st.sampled_from(TASKS), writes), max_size=2),
        channel_values=st.none() | st.dictionaries(st.sampled_from(CHANNELS), values, max_size=3),
        first=st.booleans(),
    )
    def commit_by_ref(
        self, thread: str, ns: str, parent: int | None, batch: Any, channel_values: Any, first: bool
    ) -> None:
        """The engine's write: a commit under a ``CheckpointRef``, answered with a ref."""
        ref = CheckpointRef.of(self._config(thread, ns, parent))
        tasks = tuple(TaskWrites(task, w) for task, w in batch)
        last = head = None
        if channel_values is not None:
            meta: Any = {"source": "loop", "step": 1, "parents": {}}
            last = CheckpointPut(self._checkpoint(channel_values), meta, {})
            if first:
                head = CheckpointPut(self._checkpoint({}), {"source": "input", "step": -1}, {})
        done = self.both(lambda s: s.commit(StepCommit(ref, tasks, last, head)))
        if done is not None and head is not None:
            self._note(thread, ns, ref.at(head.checkpoint["id"]).config())
        if done is not None and last is not None:
            assert type(done) is CheckpointRef
            self._note(thread, ns, done.config())

    @rule(
        thread=st.sampled_from(THREADS),
        ns=st.sampled_from(NAMESPACES),
        parent=st.none() | st.integers(-2, 1),
        added=st.lists(st.integers(0, 2**32), min_size=1, max_size=3),
        again=st.booleans(),
    )
    def put_long_list(
        self, thread: str, ns: str, parent: int | None, added: list[int], again: bool
    ) -> None:
        """A list of 4 KiB and more that grows (the compacting saver keeps links).

        ``again``: the list put before is extended in place and put again, the same
        object at a new version.
        """
        texts = [random.Random(n).randbytes(1500).hex() for n in added]
        old = self.long.get((thread, ns), [])
        log = old if again else list(old)
        log.extend(texts)
        self.long[(thread, ns)] = log
        checkpoint = self._checkpoint({"items": log, "x": len(log)})
        checkpoint["channel_versions"] = {"items": len(log), "x": len(log)}
        config = self._config(thread, ns, parent)
        result = self.both(lambda s: s.put(config, checkpoint, {"source": "loop"}, {}))
        self._note(thread, ns, result)

    @rule(thread=st.sampled_from(THREADS))
    def delete_thread(self, thread: str) -> None:
        self.both(lambda s: s.delete_thread(thread))
        for ns in NAMESPACES:
            self.ids.pop((thread, ns), None)

    @rule()
    def other_threads_put(self) -> None:
        """Enough puts elsewhere that the compacting saver compacts the idle threads."""
        for _ in range(33):  # CompactingMemorySaver remembers 32
            self.fillers += 1
            config = {"configurable": {"thread_id": f"filler-{self.fillers}", "checkpoint_ns": ""}}
            checkpoint = self._checkpoint({"x": self.fillers})
            self.both(lambda s, c=checkpoint, f=config: s.put(f, c, {"source": "loop"}, {}))

    @invariant()
    def reads_agree(self) -> None:
        for thread in THREADS:
            for ns in NAMESPACES:
                head = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
                self.both(lambda s, c=head: s.get_tuple(c))
                self.both(lambda s, c=head: list(s.list(c, limit=2)))
                for cid in self.ids.get((thread, ns), [])[-2:]:
                    one = {"configurable": {**head["configurable"], "checkpoint_id": cid}}
                    self.both(lambda s, c=one: s.get_tuple(c))
                    self.both(lambda s, c=head, b=one: list(s.list(c, before=b)))
        self.both(lambda s: list(s.list({"configurable": {"thread_id": "a"}})))
        self.both(lambda s: list(s.list(None, filter={"graph_id": "g1"})))
        self.both(lambda s: s.list_pending(limit=100).items)


@pytest.mark.parametrize(
    "examples",
    [pytest.param(60), pytest.param(400, marks=pytest.mark.stress)],
    ids=["quick", "long"],
)
def test_compacting_saver_reads_what_the_reference_reads(examples: int) -> None:
    run_state_machine_as_test(
        SameResults,
        settings=settings(
            max_examples=examples,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
