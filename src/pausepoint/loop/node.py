"""A task's body: call the node, turn its result into writes, follow its edges.

The body is a generator of `Call` effects (the
node function, then each conditional edge's path function), so one body serves
both drivers: the sync driver calls functions, the async driver awaits them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Mapping
from typing import Any

from pausepoint._updates import update_as_pairs
from pausepoint.channels import Channel
from pausepoint.config import get_stream_writer
from pausepoint.constants import BRANCH_TO, END, PREVIOUS, ROOT, START, TASKS
from pausepoint.errors import InvalidUpdateError, ParentCommand, UnknownBranchError
from pausepoint.loop.effects import NO_KWARGS, Call, Outcome
from pausepoint.loop.spec import Branch, GraphSpec, NodeProc
from pausepoint.loop.tasks import UNREAD, Task, read_input, read_values, task_input
from pausepoint.runtime import get_runtime
from pausepoint.types import Command, Send

__all__ = [
    "Body",
    "command_from_below",
    "input_outcome",
    "input_writes",
    "node_body",
    "result_writes",
]

Writes = list[tuple[str, object]]
Body = Generator["Call | Writes", Any, None]
"""A task's body: yields each `Call` to make, then, last, the task's writes."""


def node_body(
    spec: GraphSpec,
    task: Task,
    config: Callable[[], Any],
    channels: Mapping[str, Channel],
) -> Body:
    """Run ``task``'s node; its last item is its writes (state updates and edge triggers).

    The writes are yielded, not returned: a driver that gets a return value from
    ``send`` catches a ``StopIteration``, a cost paid on every task. ``config`` makes the
    node's config; it is called only when something takes one.
    """
    node = task.node
    if node.name == START:
        writes = input_writes(spec, task, channels)
    else:
        value = task.input
        if value is UNREAD:  # task_input(), without a call on every task
            value = task.input = read_input(spec, node, channels, task.steps_left)
        fn = node.fn
        if fn is not None and node.subgraph is None and not (node.accepts_config or node.inject):
            call = Call(fn, fn if node.is_async else None, (value,), NO_KWARGS)  # the usual node
        else:
            call = _node_call(node, value, config, channels)
        try:
            result = yield call
        except ParentCommand as sent:  # thrown in by the driver
            result = command_from_below(sent, task.ns)
        writes = result_writes(spec, node, result, task.ns)
        writes.extend(node.after_writes)
    for branch in node.branches:
        state = fresh_state(spec, node, channels, writes, task.steps_left)
        kwargs = {"config": config()} if branch.accepts_config else {}
        if branch.accepts_runtime:
            kwargs["runtime"] = get_runtime()
        dest = yield Call(
            branch.path, branch.path if branch.path_is_async else None, (state,), kwargs
        )
        writes.extend(branch_writes(spec, branch, dest))
    yield writes


def input_writes(spec: GraphSpec, task: Task, channels: Mapping[str, Channel]) -> Writes:
    """The writes of the ``__start__`` task: the graph input as state updates, then its edges.

    Pure (no user code), so the loop may apply it without a driver round trip when the
    start node has no conditional edges.
    """
    given = task_input(spec, task, channels)
    if isinstance(given, Command):  # a new thread started with Command(update/goto)
        writes = command_writes(spec, given, "")  # pyright: ignore[reportUnknownArgumentType]
    else:
        writes = spec.input.input_pairs(given)
    writes.extend(task.node.after_writes)
    return writes


def input_outcome(spec: GraphSpec, task: Task, channels: Mapping[str, Channel]) -> Outcome:
    """`input_writes` as the outcome a driver would send (a bad input's error)."""
    try:
        return Outcome(task, input_writes(spec, task, channels))
    except Exception as exc:
        return Outcome(task, error=exc)


def _node_call(
    node: NodeProc, value: object, config: Callable[[], Any], channels: Mapping[str, Channel]
) -> Call:
    if node.subgraph is not None:
        return Call(node.subgraph.invoke, node.subgraph.ainvoke, (value, config()), NO_KWARGS)
    fn = node.fn
    assert fn is not None
    kwargs: dict[str, object] = {}
    if node.accepts_config or "config" in node.inject:
        kwargs["config"] = config()
    if "writer" in node.inject:
        kwargs["writer"] = get_stream_writer()
    if "previous" in node.inject:
        saved = channels.get(PREVIOUS)
        kwargs["previous"] = saved.get() if saved is not None and saved.is_available() else None
    if "runtime" in node.inject:
        kwargs["runtime"] = get_runtime()
    return Call(fn, fn if node.is_async else None, (value,), kwargs)


def result_writes(spec: GraphSpec, node: NodeProc, result: Any, ns: str) -> Writes:
    """The writes of a node's return value: a dict, ``None``, a ``Command`` or an object."""
    if node.returns is None and type(result) is dict and not spec.root:  # the common case
        keys = spec.state_key_set
        # Every key a state key (checked in C): the items as they are, no filtering loop.
        if keys.issuperset(result):  # pyright: ignore[reportUnknownArgumentType]
            return list(result.items())  # pyright: ignore[reportUnknownArgumentType]
        return [(k, v) for k, v in result.items() if k in keys]  # pyright: ignore[reportUnknownVariableType]
    if node.returns is not None or (spec.root and not _has_command(result)):
        return _whole_writes(node, result)
    if isinstance(result, Command):
        return command_writes(spec, result, ns)  # pyright: ignore[reportUnknownArgumentType]
    if _is_command_list(result):
        out: Writes = []
        for r in result:  # pyright: ignore[reportUnknownVariableType]
            out.extend(result_writes(spec, node, r, ns))
        return out
    return _value_writes(spec, node, result)


def _value_writes(spec: GraphSpec, node: NodeProc, result: Any) -> Writes:
    """The writes of a result that is neither a ``Command`` nor an entrypoint's return."""
    if (
        result is not None
        and not isinstance(result, dict)
        and spec.state.kind == "typeddict"
        and not _is_schema_object(result)
    ):
        raise InvalidUpdateError(
            f"Expected dict, got {result}: node {node.name!r} must return a dict "
            "of state updates, None, or a Command"
        )
    return [(k, v) for k, v in update_as_pairs(result) if k in spec.state_key_set]


def _whole_writes(node: NodeProc, result: Any) -> Writes:
    """The result as one value: the state of a one-value graph, an entrypoint's return."""
    returns = node.returns
    if returns is None:  # a one-value state (``StateGraph(list)``): the result is it
        return [] if result is None else [(ROOT, result)]
    output, saved = returns
    if _is_final(node.final, result):  # entrypoint.final(value=..., save=...)
        return [(output, result.value), (saved, result.save)]
    return [(output, result), (saved, result)]


def _has_command(result: Any) -> bool:
    return isinstance(result, Command) or _is_command_list(result)


def _is_final(final: type | None, result: object) -> bool:
    return final is not None and isinstance(result, final)


def _is_command_list(result: Any) -> bool:
    return isinstance(result, (list, tuple)) and any(
        isinstance(r, Command)
        for r in result  # pyright: ignore[reportUnknownVariableType]
    )


def _is_schema_object(value: object) -> bool:
    kind: object = type(value)  # pyright: ignore[reportUnknownVariableType]
    return dataclasses.is_dataclass(value) or hasattr(kind, "model_fields")


def command_writes(spec: GraphSpec, cmd: Command[Any], ns: str) -> Writes:
    """The writes of a ``Command`` returned by a node (or given as graph input)."""
    if cmd.graph == Command.PARENT:
        raise ParentCommand(cmd, ns)
    writes: Writes = [(k, v) for k, v in cmd.update_items() if k in spec.state_key_set]
    for target in cmd.goto_targets():
        if (write := goto_write(spec, target)) is not None:
            writes.append(write)
    return writes


def command_from_below(sent: ParentCommand, ns: str) -> Command[Any]:
    """What a task does with a ``Command(graph=PARENT)`` from a graph it ran (a subgraph).

    The command is this task's result, as if its node had returned it: its update
    and goto apply here, and the node's own edges still fire (as in LangGraph).
    A command the node itself sent goes on up.
    """
    if sent.origin == ns:
        raise sent
    return dataclasses.replace(sent.command, graph=None)


def goto_write(spec: GraphSpec, target: Send | str) -> tuple[str, object] | None:
    """The write that schedules ``target`` (a node name or a ``Send``) next step.

    ``END`` schedules nothing.
    """
    if isinstance(target, Send):
        if target.node not in spec.nodes:
            raise InvalidUpdateError(f"Send to unknown node {target.node!r}")
        return (TASKS, target)
    if target == END:
        return None
    if target not in spec.nodes or target == START:
        raise InvalidUpdateError(
            f"goto to unknown node {target!r}; known nodes: {sorted(spec.nodes)}"
        )
    return (BRANCH_TO + target, None)


def branch_writes(spec: GraphSpec, branch: Branch, dest: object) -> Writes:
    """The writes that a conditional edge's result schedules."""
    results: list[object] = list(dest) if isinstance(dest, (list, tuple, set)) else [dest]  # pyright: ignore[reportUnknownArgumentType]  # pyright: ignore[reportUnknownArgumentType]
    writes: Writes = []
    for r in results:
        if isinstance(r, Send):
            goto_write(spec, r)  # checks the target exists
            writes.append((TASKS, r))
            continue
        name = _map_dest(branch, r)
        if name == END:
            continue
        if name not in spec.nodes:
            raise InvalidUpdateError(
                f"conditional edge returned {r!r}, which is not a node "
                f"(known nodes: {sorted(n for n in spec.nodes if n != START)})"
            )
        writes.append((BRANCH_TO + name, None))
    return writes


def _map_dest(branch: Branch, result: object) -> str:
    if branch.path_map is None:
        return str(result)
    try:
        return branch.path_map[result]
    except (KeyError, TypeError):
        raise UnknownBranchError(
            f"conditional edge returned {result!r}, which is not in its path_map "
            f"{sorted(map(str, branch.path_map))}"
        ) from None


def fresh_state(
    spec: GraphSpec,
    node: NodeProc,
    channels: Mapping[str, Channel],
    writes: Writes,
    steps_left: int | None = None,
) -> object:
    """The state as the node sees it after its own writes (what branch paths receive)."""
    keys = spec.state_keys
    local: dict[str, Channel] = {}
    for k in keys:
        chan = channels.get(k)
        if chan is not None:
            local[k] = chan.spawn(chan.checkpoint())
    grouped: dict[str, list[object]] = {}
    for chan, value in writes:
        if chan in local:
            grouped.setdefault(chan, []).append(value)
    for chan, values in grouped.items():
        local[chan].update(values)
    schema = node.input_schema or spec.state
    return schema.coerce(schema.with_managed(read_values(local, keys), steps_left))
