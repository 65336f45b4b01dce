"""The shortcuts the loop takes past channel methods hold for every channel kind.

``Channel.plain``: ``get()`` and ``checkpoint()`` are ``value`` and ``is_available()`` is
``value is not MISSING``. ``Channel.ephemeral``: ``update(())`` empties the channel and
does nothing else. `pausepoint.loop.writes` and `pausepoint.loop.tasks` read ``value``
or set ``MISSING`` themselves when these say so.
"""

from __future__ import annotations

import operator

import pytest

from pausepoint.channels import (
    MISSING,
    AfterFinish,
    BinaryOperatorAggregate,
    Channel,
    EphemeralValue,
    LastValue,
    NamedBarrierValue,
    Topic,
)

KINDS: list[Channel] = [
    LastValue("k"),
    EphemeralValue("k"),
    EphemeralValue("k", guard=True),
    BinaryOperatorAggregate("k", operator.add, list),
    Topic("k"),
    NamedBarrierValue("k", frozenset({"a"})),
    AfterFinish(EphemeralValue("k")),
]


def test_every_channel_kind_is_listed():
    listed = {type(c) for c in KINDS}
    assert set(Channel.__subclasses__()) <= listed


@pytest.mark.parametrize("proto", KINDS, ids=lambda c: type(c).__name__)
def test_a_plain_channel_reads_as_its_value(proto: Channel):
    if not proto.plain:
        pytest.skip("not plain: read through its methods")
    chan = proto.spawn([1])
    assert chan.is_available()
    assert chan.get() is chan.value
    assert chan.checkpoint() is chan.value
    chan.value = MISSING
    assert not chan.is_available()
    assert chan.checkpoint() is MISSING


@pytest.mark.parametrize("proto", KINDS, ids=lambda c: type(c).__name__)
def test_an_ephemeral_channel_empties_on_a_step_with_no_write(proto: Channel):
    if not proto.ephemeral:
        pytest.skip("not ephemeral")
    chan = proto.spawn("v")
    assert chan.update(()) is True
    assert chan.value is MISSING
    assert not chan.is_available()
    assert chan.update(()) is False  # already empty: nothing changes
