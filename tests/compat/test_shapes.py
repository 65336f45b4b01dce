"""``PregelTask`` and ``Interrupt`` have LangGraph 1.1.6's shapes exactly.

A user's code that unpacks a task into LangGraph's seven names, reads ``_fields``,
calls ``_asdict``/``dataclasses.asdict``, compares, hashes or prints these values sees
the same on both libraries. pausepoint's extras (``PregelTask.answered`` and
``status``; ``Interrupt.position``, ``response_schema``, ``deadline``, ``on_timeout``,
``question_id``) are attributes outside the fields: still reachable, carried by
``copy``, ``pickle`` and ``_replace``, and stored in checkpoints as before.
"""

import copy
import dataclasses
import datetime
import inspect
import pickle
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langgraph import types as lg_types

from pausepoint import types as pp_types
from pausepoint.serde import Serializer
from pausepoint.types import Answer, Interrupt, PregelTask, TimeoutAnswer

pytestmark = pytest.mark.compat

LIBS = {"langgraph": lg_types, "pausepoint": pp_types}
IID = "a" * 32


def observed_task(mod: Any) -> dict[str, Any]:
    """Everything a user can see of a task's shape, as plain data."""
    intr = mod.Interrupt("ok?", IID)
    task = mod.PregelTask("t1", "node", ("__pregel_pull", "node"), None, (intr,), None, {"x": 1})
    tid, name, path, error, interrupts, state, result = task  # LangGraph's seven names
    return {
        "len": len(task),
        "unpacked": (tid, name, path, error, len(interrupts), state, result),
        "fields": task._fields,
        "field_defaults": task._field_defaults,
        "asdict_keys": list(task._asdict()),
        "repr": repr(task),
        "eq": task == mod.PregelTask(*task),
        "eq_tuple": task == tuple(task),
        "hashable": _hashable(mod.PregelTask("t1", "node", ("__pregel_pull", "node"))),
        "replace": repr(task._replace(result=None)),
        "make": repr(mod.PregelTask._make(tuple(task))),
        "parameters": _parameters(mod.PregelTask),
        "is_tuple": isinstance(task, tuple),
    }


def observed_interrupt(mod: Any) -> dict[str, Any]:
    intr = mod.Interrupt("ok?", IID)
    return {
        "fields": [f.name for f in dataclasses.fields(intr)],
        "asdict": dataclasses.asdict(intr),
        "astuple": dataclasses.astuple(intr),
        "repr": repr(intr),
        "eq": intr == mod.Interrupt("ok?", IID),
        "ne": intr != mod.Interrupt("ok?", "b" * 32),
        "hashable": _hashable(intr),
        "slots": mod.Interrupt.__slots__,
        "has_dict": hasattr(intr, "__dict__"),
        "weakref": hasattr(intr, "__weakref__"),
        "match_args": mod.Interrupt.__match_args__,
        "params": repr(mod.Interrupt.__dataclass_params__),
        "default_id": mod.Interrupt("v").id,
        "ns_id": mod.Interrupt("v", ns=["a:1", "b:2"]).id,
        "from_ns": mod.Interrupt.from_ns("v", "a:1").id,
        "replace": repr(dataclasses.replace(intr, value="other")),
        "copy": repr(copy.copy(intr)),
        "pickle": repr(pickle.loads(pickle.dumps(intr))),
    }


def _parameters(cls: type) -> list[tuple[str, object, object]]:
    return [(p.name, p.default, p.kind) for p in inspect.signature(cls).parameters.values()]


def _hashable(x: object) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def test_pregel_task_has_langgraphs_shape() -> None:
    assert observed_task(pp_types) == observed_task(lg_types)


def test_interrupt_has_langgraphs_shape() -> None:
    assert observed_interrupt(pp_types) == observed_interrupt(lg_types)


def test_interrupt_accepts_langgraphs_deprecated_keywords() -> None:
    # LangGraph's __init__ takes **deprecated_kwargs (ns, and the removed when/resumable/
    # interrupt_id of older releases) and ignores all but ns.
    for mod in LIBS.values():
        intr = mod.Interrupt("v", when="during", resumable=True, interrupt_id="x")
        assert intr.id == "placeholder-id"


def test_an_unknown_keyword_is_refused_where_langgraph_ignores_it() -> None:
    """A deliberate difference (docs/differences.md): a misspelt keyword is an error."""
    assert lg_types.Interrupt("v", positon=1).value == "v"  # pyright: ignore[reportCallIssue]
    with pytest.raises(TypeError, match="positon"):
        Interrupt("v", positon=1)


def test_interrupt_id_is_deprecated_alias() -> None:
    with pytest.warns(DeprecationWarning, match="interrupt_id"):
        assert Interrupt("v", IID).interrupt_id == IID


# --- pausepoint's extras, outside the fields ------------------------------------------

DEADLINE = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


def full_question() -> Interrupt:
    return Interrupt(
        "ok?",
        IID,
        position=2,
        response_schema={"type": "boolean"},
        deadline=DEADLINE,
        on_timeout=TimeoutAnswer(False),
    )


def extras(i: Interrupt) -> tuple[Any, ...]:
    return (i.position, i.response_schema, i.deadline, i.on_timeout, i.question_id)


EXPECTED = (2, {"type": "boolean"}, DEADLINE, TimeoutAnswer(False), f"{IID}:2")


def test_interrupt_extras_are_attributes_not_fields() -> None:
    q = full_question()
    assert extras(q) == EXPECTED
    assert dataclasses.asdict(q) == {"value": "ok?", "id": IID}
    assert repr(q) == "Interrupt(value='ok?', id='aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')"
    assert q == Interrupt("ok?", IID)  # extras are not compared, as before
    assert extras(Interrupt("v", IID)) == (None, None, None, None, IID)


@pytest.mark.parametrize(
    "clone",
    [copy.copy, copy.deepcopy, lambda i: pickle.loads(pickle.dumps(i))],
    ids=["copy", "deepcopy", "pickle"],
)
def test_interrupt_extras_survive_copy_and_pickle(clone: Any) -> None:
    assert extras(clone(full_question())) == EXPECTED


def test_interrupt_extras_are_settable() -> None:
    q = Interrupt("v", IID)
    q.position = 1
    assert q.question_id == f"{IID}:1"


def test_interrupt_terms_are_stored_as_before() -> None:
    """The stored form is unchanged: LangGraph's ``[value, id]`` without terms, and a
    third element with them; both read back with their extras."""
    serde = Serializer()
    plain = serde.dumps_typed(Interrupt("v", IID))
    assert plain == ("ppjson/1", b'{"__pp__":"interrupt","v":["v","' + IID.encode() + b'"]}')
    back = serde.loads_typed(serde.dumps_typed(full_question()))
    assert back == full_question()
    assert extras(back)[1:4] == EXPECTED[1:4]  # the position is not stored (as before)


def answered_task() -> PregelTask:
    task = PregelTask("t1", "node", ("__pregel_pull", "node"))
    task.answered = (Answer(Interrupt("ok?", IID, position=0), 0, True),)
    return task


def test_pregel_task_answered_is_an_attribute_not_a_field() -> None:
    task = answered_task()
    assert len(task) == 7
    assert "answered" not in task._fields
    assert [a.value for a in task.answered] == [True]
    assert task.status == "answered"
    assert task == PregelTask("t1", "node", ("__pregel_pull", "node"))  # as before: not compared
    assert "answered" not in repr(task)


def test_pregel_task_answered_defaults_to_empty() -> None:
    plain = PregelTask("t1", "node", ("__pregel_pull", "node"))
    assert plain.answered == ()
    assert plain.status == "ready"
    assert PregelTask._make(tuple(plain)).answered == ()
    waiting = plain._replace(interrupts=(Interrupt("q", IID),))
    assert waiting.status == "waiting"
    assert plain._replace(error=ValueError("x")).status == "failed"


@pytest.mark.parametrize(
    "clone",
    [
        copy.copy,
        copy.deepcopy,
        lambda t: pickle.loads(pickle.dumps(t)),
        lambda t: t._replace(result=1),
    ],
    ids=["copy", "deepcopy", "pickle", "_replace"],
)
def test_pregel_task_answered_survives_copy_pickle_and_replace(clone: Any) -> None:
    assert [a.value for a in clone(answered_task()).answered] == [True]
