"""Issue 30: a compiled graph streamed from inside a node (``sub.stream(...)`` in a node).

The caller of ``sub.stream()`` (``astream`` in an async node; ``invoke``/``ainvoke``
with a ``stream_mode``) receives the chunks it asks for, as LangGraph 1.1.6's does: in
its own shape (modes, ``subgraphs=True`` namespaces, which are the full path from
the root, v2 parts). At the same time the parent's stream receives them only when it
streams with ``subgraphs=True`` (in the parent's modes, namespaced, once); a run
streamed without ``subgraphs=True`` hands its own subgraphs' chunks to the parent it
inherits that from. ``custom`` chunks go to the nearest enclosing run that streams
``custom`` (the inner call's own if it does, else up through runs with
``subgraphs=True``), else nowhere.

Each scenario records what every inner call received (chunk by chunk, so what came
before an interrupt counts) and what the parent's stream yielded; with a saver, also
on the resumed run. Sync scenarios run ``stream`` in sync nodes; async ones ``astream``
in async nodes, and a sync node's ``stream`` while the parent runs ``astream``.
"""

from __future__ import annotations

import dataclasses
import importlib
import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import DRIVERS, SAVERS, Scenarios, thread

scenario = Scenarios(savers=SAVERS, mask_task_ids=True)


class S(TypedDict, total=False):
    x: int
    log: Annotated[list[str], operator.add]


def _leaf(lib: Any, *, ask: bool = False, compile_kw: dict[str, Any] | None = None) -> Any:
    """``w`` (writes custom and state), then ``q`` that asks when ``ask``."""

    def w(s: S) -> S:
        lib.get_stream_writer()({"w": s["x"]})
        return {"x": s["x"] + 1, "log": ["w"]}

    b = lib.StateGraph(S)
    b.add_node("w", w)
    b.add_edge(lib.START, "w")
    if ask:
        b.add_node("q", lambda s: {"log": [f"q={lib.interrupt('q?')}"]})
        b.add_edge("w", "q")
    return b.compile(**(compile_kw or {}))


def _caller(
    lib: Any, drive: Any, sub: Any, seen: list[Any], name: str, how: str, kw: dict[str, Any]
) -> Any:
    """A node that runs ``sub`` by ``how`` (``stream`` or ``invoke``) with ``kw``,
    recording what it receives in ``seen`` as it comes; async with an async driver
    unless ``how`` ends in ``-sync``."""
    how, _, colour = how.partition("-")
    is_async = drive.is_async and colour != "sync"

    def sync_node(s: S) -> S:
        got: list[Any] = []
        seen.append((name, got))
        lib.get_stream_writer()(f"{name} starts")
        if how == "stream":
            for chunk in sub.stream(s, **kw):
                got.append(chunk)
        else:
            got.append(sub.invoke(s, **kw))
        lib.get_stream_writer()(f"{name} ends")
        return {"log": [name]}

    async def async_node(s: S) -> S:
        got: list[Any] = []
        seen.append((name, got))
        lib.get_stream_writer()(f"{name} starts")
        if how == "stream":
            async for chunk in sub.astream(s, **kw):
                got.append(chunk)
        else:
            got.append(await sub.ainvoke(s, **kw))
        lib.get_stream_writer()(f"{name} ends")
        return {"log": [name]}

    return async_node if is_async else sync_node


def _ns_key(chunk: Any) -> tuple[str, ...]:
    """A chunk's namespace by node names (task ids differ between the libraries)."""
    if isinstance(chunk, dict) and "ns" in chunk:
        ns: Any = chunk["ns"]
    elif isinstance(chunk, tuple) and len(chunk) in (2, 3) and isinstance(chunk[0], tuple):
        ns = chunk[0]
    else:
        ns = ()
    return tuple(str(part).split(":")[0] for part in ns)


def _by_ns(chunks: list[Any]) -> list[Any]:
    """``chunks`` grouped by namespace, in order within each: how chunks of different
    namespaces interleave depends on thread timing in both libraries."""
    return sorted(chunks, key=lambda c: (len(_ns_key(c)), _ns_key(c)))


def _graph(lib: Any, drive: Any, node: Any, *, saver: bool) -> Any:
    b = lib.StateGraph(S)
    b.add_node("n", node)
    b.add_edge(lib.START, "n")
    return b.compile(checkpointer=drive.saver() if saver else None)


def _record(
    lib: Any,
    drive: Any,
    inner: dict[str, Any],
    outer: dict[str, Any],
    *,
    how: str = "stream",
    saver: bool = False,
    ask: bool = False,
) -> dict[str, Any]:
    seen: list[Any] = []
    leaf = _leaf(lib, ask=ask)
    g = _graph(lib, drive, _caller(lib, drive, leaf, seen, "n", how, inner), saver=saver)
    config = thread() if saver else None
    return _observed(lib, drive, g, config, outer, ask, seen)


def _cases() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Inner call keywords and the parent's ``stream`` keywords, by scenario name."""
    updates: dict[str, Any] = {"stream_mode": "updates"}
    both: dict[str, Any] = {"stream_mode": ["updates", "custom"]}
    return {
        "updates_in_updates": (updates, updates),
        "updates_in_updates_subgraphs": (updates, {**updates, "subgraphs": True}),
        "updates_custom_in_same_subgraphs": (both, {**both, "subgraphs": True}),
        "updates_in_custom_subgraphs": (updates, {"stream_mode": "custom", "subgraphs": True}),
        "values_in_custom": ({"stream_mode": ["values"]}, {"stream_mode": ["custom"]}),
        "subgraphs_updates_in_values": ({**updates, "subgraphs": True}, {"stream_mode": "values"}),
        "custom_in_values_subgraphs": (
            {"stream_mode": "custom"},
            {"stream_mode": ["values", "custom"], "subgraphs": True},
        ),
        "debug_in_tasks_subgraphs": (
            {"stream_mode": "debug"},
            {"stream_mode": "tasks", "subgraphs": True},
        ),
        "tasks_in_debug": ({"stream_mode": "tasks"}, {"stream_mode": "debug"}),
        "v2_in_v2_subgraphs": (
            {**updates, "version": "v2"},
            {**both, "subgraphs": True, "version": "v2"},
        ),
        "values_v2_in_updates": ({"stream_mode": "values", "version": "v2"}, updates),
        "default_mode_in_values_subgraphs": ({}, {"stream_mode": "values", "subgraphs": True}),
    }


def _register(
    name: str, inner: dict[str, Any], outer: dict[str, Any], *, view: Any = None, **kw: Any
) -> None:
    def run(lib: Any, drive: Any) -> Any:
        return _record(lib, drive, inner, outer, **kw)

    _named(run, name, view)


def _named(run: Any, name: str, view: Any = None, drivers: tuple[str, ...] = DRIVERS) -> None:
    run.__name__ = name
    run.__qualname__ = name
    if view is None:
        scenario(run, drivers=drivers)
    else:
        scenario.viewed(view)(run)
        scenario.items[name] = dataclasses.replace(scenario.items[name], drivers=drivers)


def _carries_interrupt(chunk: Any) -> bool:
    """Whether a chunk reports an interrupt (an ``updates``/``values`` chunk with
    ``__interrupt__``, a v2 part with interrupts, a task result with interrupts)."""
    text = repr(chunk)
    return (
        "__interrupt__" in text
        or "'interrupts': (Interrupt(" in text
        or ("'interrupts': [{" in text)
    )


def _drops_paused_step(*callers: str) -> Any:
    """A view for the deliberate difference "the paused step's chunks reach the caller".

    A graph streamed inside a node (by ``callers``, which do not stream live: no
    ``custom``, ``messages`` or ``subgraphs=True``) whose lone task asks: LangGraph
    raises the interrupt out of the inner ``stream`` before yielding what that step
    reported (the interrupt, the paused task's result, the values with it); pausepoint
    yields them first. Takes them out of pausepoint's record.
    """

    def paused_step_chunks(record: Any) -> tuple[Any, int]:
        found = 0
        inner: list[Any] = []
        for name, got in record["inner"]:
            if name in callers:
                kept = [c for c in got if not _carries_interrupt(c)]
                found += len(got) - len(kept)
                inner.append((name, kept))
            else:
                inner.append((name, got))
        return {**record, "inner": inner}, found

    return paused_step_chunks


for _name, (_inner, _outer) in _cases().items():
    _register(_name, _inner, _outer)
_register("updates_in_updates_subgraphs_sync_node", {"stream_mode": "updates"},
          {"stream_mode": "updates", "subgraphs": True}, how="stream-sync")  # fmt: skip
_register("custom_in_custom_sync_node", {"stream_mode": ["custom", "values"]},
          {"stream_mode": "custom", "subgraphs": True}, how="stream-sync")  # fmt: skip
_register("checkpoints_in_updates_subgraphs_saved", {"stream_mode": "checkpoints"},
          {"stream_mode": "updates", "subgraphs": True}, saver=True)  # fmt: skip
_register("debug_in_checkpoints_subgraphs_saved", {"stream_mode": "debug"},
          {"stream_mode": "checkpoints", "subgraphs": True}, saver=True)  # fmt: skip
_register("invoke_updates_in_updates_subgraphs", {"stream_mode": "updates"},
          {"stream_mode": "updates", "subgraphs": True}, how="invoke")  # fmt: skip
_register("invoke_in_custom", {}, {"stream_mode": "custom"}, how="invoke")  # fmt: skip
_register("invoke_in_custom_subgraphs", {}, {"stream_mode": "custom", "subgraphs": True},
          how="invoke")  # fmt: skip

# --- an interrupt mid-stream, and resume ------------------------------------------------

_ASKS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "asks_updates_in_updates": ({"stream_mode": "updates"}, {"stream_mode": "updates"}),
    "asks_debug_in_tasks_subgraphs": (
        {"stream_mode": "debug"},
        {"stream_mode": "tasks", "subgraphs": True},
    ),
    "asks_v2_in_custom": (
        {"stream_mode": ["updates", "values"], "version": "v2"},
        {"stream_mode": "custom", "subgraphs": True},
    ),
}
for _name, (_inner, _outer) in _ASKS.items():
    _register(_name, _inner, _outer, saver=True, ask=True, view=_drops_paused_step("n"))
_register("asks_values_in_updates_subgraphs", {"stream_mode": ["values", "custom"]},
          {"stream_mode": ["updates", "values"], "subgraphs": True},
          saver=True, ask=True)  # fmt: skip
_register("asks_invoke_updates_in_updates_subgraphs", {"stream_mode": "updates"},
          {"stream_mode": "updates", "subgraphs": True},
          how="invoke", saver=True, ask=True)  # fmt: skip


# --- a subgraph node's custom chunks -----------------------------------------------------


@scenario
def subgraph_node_custom_without_subgraphs(lib: Any, drive: Any) -> Any:
    """A subgraph *node*'s custom chunks reach the parent only with ``subgraphs=True``."""
    b = lib.StateGraph(S)
    b.add_node("sub", _leaf(lib))
    b.add_edge(lib.START, "sub")
    g = b.compile()
    modes: list[Any] = ["custom", ["custom", "updates"]]
    return [
        drive.stream(g, {"x": 1, "log": []}, stream_mode=m, subgraphs=sg)
        for m in modes
        for sg in (False, True)
    ]


# --- depth 2 ---------------------------------------------------------------------------


def _deep(
    lib: Any,
    drive: Any,
    mid_kw: dict[str, Any],
    leaf_kw: dict[str, Any],
    outer: dict[str, Any],
    *,
    ask: bool = False,
    how: str = "stream",
) -> dict[str, Any]:
    """``n`` streams ``mid`` with ``mid_kw``; ``mid``'s node ``m`` streams the leaf with
    ``leaf_kw``."""
    seen: list[Any] = []
    leaf = _leaf(lib, ask=ask)
    b = lib.StateGraph(S)
    b.add_node("m", _caller(lib, drive, leaf, seen, "m", how, leaf_kw))
    b.add_edge(lib.START, "m")
    mid = b.compile()
    g = _graph(lib, drive, _caller(lib, drive, mid, seen, "n", how, mid_kw), saver=ask)
    config = thread() if ask else None
    return _observed(lib, drive, g, config, outer, ask, seen)


_UPD: dict[str, Any] = {"stream_mode": ["updates", "custom"]}
_UPD_SG: dict[str, Any] = {**_UPD, "subgraphs": True}
_DEEP: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "deep_plain_plain_subgraphs": (_UPD, _UPD, _UPD_SG),
    "deep_subgraphs_plain_subgraphs": (_UPD_SG, _UPD, _UPD_SG),
    "deep_subgraphs_plain_plain": (_UPD_SG, {"stream_mode": "values"}, _UPD),
    "deep_values_custom_subgraphs": (
        {"stream_mode": "values", "subgraphs": True},
        {"stream_mode": "updates"},
        {"stream_mode": ["custom", "tasks"], "subgraphs": True},
    ),
    "deep_plain_subgraphs_subgraphs": (
        {"stream_mode": "updates"},
        {"stream_mode": ["updates", "custom"], "subgraphs": True},
        {"stream_mode": ["updates", "custom"], "subgraphs": True},
    ),
}


_DIFFERS_IN_ASYNC = frozenset({"deep_subgraphs_plain_subgraphs", "deep_values_custom_subgraphs"})


def _register_deep(
    name: str, mid: Any, leaf: Any, outer: Any, *, view: Any = None, **kw: Any
) -> None:
    def run(lib: Any, drive: Any) -> Any:
        return _deep(lib, drive, mid, leaf, outer, **kw)

    _named(run, name, view)


def _register_deep_colours(name: str, mid: Any, leaf: Any, outer: Any, **kw: Any) -> None:
    """Sync compared as is; async with the grandchildren's chunks that LangGraph's async
    stream loses taken out of pausepoint's record (`_below_own_subgraphs`)."""

    def run(lib: Any, drive: Any) -> Any:
        return _deep(lib, drive, mid, leaf, outer, **kw)

    _named(run, name, drivers=("sync",))

    def run_async(lib: Any, drive: Any) -> Any:
        return _deep(lib, drive, mid, leaf, outer, **kw)

    _named(run_async, f"{name}_async", _below_own_subgraphs, drivers=("async",))


def _below_own_subgraphs(record: Any) -> tuple[Any, int]:
    """A view for the deliberate difference "grandchildren's chunks reach the root in
    async too": ``mid.astream(subgraphs=True)`` in a node of a root streaming with
    ``subgraphs=True`` hands the leaf's chunks to both its caller and the root in
    pausepoint, as LangGraph's sync ``stream`` does; LangGraph's ``astream`` hands them
    to its caller only. Takes the leaf's (non-custom) chunks out of pausepoint's root
    stream."""
    found = 0
    out = dict(record)
    for key in ("outer", "resumed"):
        if key in record:
            kept = [c for c in record[key] if len(_ns_key(c)) < 2 or c[1] == "custom"]
            found += len(record[key]) - len(kept)
            out[key] = kept
    return out, found


for _name, (_mid, _leafkw, _outer) in _DEEP.items():
    if _name in _DIFFERS_IN_ASYNC:
        _register_deep_colours(_name, _mid, _leafkw, _outer)
    else:
        _register_deep(_name, _mid, _leafkw, _outer)
_register_deep_colours("deep_asks_subgraphs", _UPD_SG, _UPD, _UPD_SG, ask=True)
_register_deep("deep_asks_plain", _UPD, {"stream_mode": "values"}, {"stream_mode": "updates"},
               ask=True, view=_drops_paused_step("m"))  # fmt: skip
_register_deep("deep_invoke_asks", {"stream_mode": "updates"}, {"stream_mode": "updates"},
               _UPD_SG, ask=True, how="invoke")  # fmt: skip


# --- an entrypoint's task events ---------------------------------------------------------


@scenario
def entrypoint_task_and_debug_events(lib: Any, drive: Any) -> Any:
    """The ``tasks``/``debug`` events of an ``@entrypoint`` run, paused and resumed:
    the entrypoint's task result reads as LangGraph's (``{"__end__": value}``)."""
    f = importlib.import_module(f"{lib.name}.func")

    @f.task
    def double(x: int) -> int:
        return x * 2

    @f.entrypoint(checkpointer=drive.saver())
    def flow(x: int) -> dict[str, Any]:
        return {"y": double(x).result(), "a": lib.interrupt("ok?")}

    record: dict[str, Any] = {}
    for mode in ("tasks", "debug"):
        config = thread(mode)
        record[mode] = [
            drive.stream(flow, 3, config, stream_mode=mode),
            drive.stream(flow, lib.Command(resume="yes"), config, stream_mode=mode),
        ]
    return record


test_subgraph_stream_in_node = scenario.test()


def _observed(
    lib: Any, drive: Any, g: Any, config: Any, outer: dict[str, Any], ask: bool, seen: list[Any]
) -> dict[str, Any]:
    """Run ``g`` streamed as ``outer`` says (then resume it, when a node asks) and record
    what the root's caller got, the state, and what each inner caller got."""
    record: dict[str, Any] = {
        "outer": _by_ns(drive.stream(g, {"x": 1, "log": []}, config, **outer))
    }
    if ask:
        record["resumed"] = _by_ns(drive.stream(g, lib.Command(resume="yes"), config, **outer))
        record["state"] = drive.get_state(g, config).values
    record["inner"] = [(name, _by_ns(got)) for name, got in seen]
    return record
