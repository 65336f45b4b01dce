"""A running task has every slot set: ``ExecTask`` and the pull ``Task`` set them in line."""

from __future__ import annotations

from typing import TypedDict

from pausepoint import END, START, StateGraph
from pausepoint.loop.prepare import ExecTask
from pausepoint.loop.tasks import UNREAD, Task
from pausepoint.running import TASK
from pausepoint.task_context import TaskContext


class S(TypedDict):
    x: int


def _slots(cls: type) -> list[str]:
    return [name for klass in cls.__mro__ for name in getattr(klass, "__slots__", ())]


def test_every_slot_of_a_running_task_is_set(drive):
    seen: dict[str, object] = {}
    fields: dict[str, object] = {}

    def node(state: S) -> dict[str, int]:
        task = TASK.get()
        assert isinstance(task, ExecTask)
        for name in _slots(type(task)):
            seen[name] = getattr(task, name)  # AttributeError if one was never set
        for name in _slots(Task):
            fields[name] = getattr(task.task, name)
        return {"x": state["x"] + 1}

    g = StateGraph(S)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.add_edge("node", END)
    assert drive.invoke(g.compile(), {"x": 0}) == {"x": 1}
    assert set(_slots(TaskContext)) <= set(seen)
    assert seen["name"] == "node"
    assert seen["graph_ns"] == seen["checkpoint_ns"]
    assert str(seen["checkpoint_ns"]).startswith("node:")
    assert seen["open_calls"] is None
    assert set(fields) == set(_slots(Task))
    assert fields["name"] == "node"
    assert fields["path"] == ("__pregel_pull", "node")
    assert fields["input"] is not UNREAD  # read as the task ran
    assert fields["writes"] == ()  # kept once the task finished
