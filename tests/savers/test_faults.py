"""FaultySaver fails exactly the calls it is told to, in sync and async code."""

from __future__ import annotations

from typing import Any

import pytest

from pausepoint.checkpoint.memory import InMemorySaver
from pausepoint.testing import FaultySaver, InjectedFault, make_checkpoint, make_metadata

CONFIG: Any = {"configurable": {"thread_id": "t"}}


def test_fails_after_n_calls_then_recovers() -> None:
    saver = FaultySaver(InMemorySaver(), fail_on="put_writes", after=1)
    config = saver.put(CONFIG, make_checkpoint(), make_metadata(0), {})
    saver.put_writes(config, [("a", 1)], "task-1")
    with pytest.raises(InjectedFault, match="put_writes"):
        saver.put_writes(config, [("b", 2)], "task-2")
    saver.put_writes(config, [("c", 3)], "task-3")
    got = saver.get_tuple(config)
    assert got is not None
    assert [w.channel for w in got.pending_writes or []] == ["a", "c"]
    assert saver.failures == 1
    assert saver.calls == ["put", "put_writes", "put_writes", "put_writes", "get_tuple"]


@pytest.mark.asyncio
async def test_async_calls_share_the_counter_and_custom_errors() -> None:
    saver = FaultySaver(
        InMemorySaver(), fail_on=["put", "list"], after=1, times=None, exc=lambda: OSError("disk")
    )
    await saver.aput(CONFIG, make_checkpoint(), make_metadata(0), {})
    with pytest.raises(OSError, match="disk"):
        saver.put(CONFIG, make_checkpoint(), make_metadata(1), {})
    with pytest.raises(OSError, match="disk"):
        await saver.aput(CONFIG, make_checkpoint(), make_metadata(2), {})
    assert [t.metadata.get("step") async for t in saver.alist(CONFIG)] == [0]
    with pytest.raises(OSError, match="disk"):
        saver.list(CONFIG)
    assert await saver.aget_tuple(CONFIG) is not None


def test_unknown_method_names_are_refused() -> None:
    with pytest.raises(ValueError, match="put_checkpoint"):
        FaultySaver(InMemorySaver(), fail_on="put_checkpoint")
