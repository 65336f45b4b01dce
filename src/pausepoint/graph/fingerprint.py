"""A compiled graph's structural fingerprint (issue 31, docs/deploys.md).

What a stored thread depends on, hashed once at compile time: the nodes and what
triggers them, where their edges and branches lead (a branch's ``path_map`` targets
when given), the channels with their kinds, reducers and declared types, the static
breakpoints, and the fingerprints of subgraphs. A node's code is not part of it:
changing a node's body changes nothing a paused thread holds. Functions and types
are named by module and qualified name, never by ``repr`` (which holds addresses),
so two processes compiling the same code agree.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable
from typing import cast

import typing_extensions
from xxhash import xxh3_128_hexdigest

from pausepoint.channels import AfterFinish, BinaryOperatorAggregate, Channel
from pausepoint.graph.schema import declared_types
from pausepoint.loop.compat_check import GraphShape
from pausepoint.loop.spec import GraphSpec, NodeProc

__all__ = ["describe", "shape_of", "stamped"]

_WRAPPERS: tuple[object, ...] = (
    typing.Annotated,
    typing.Required,
    typing.NotRequired,
    typing_extensions.Required,
    typing_extensions.NotRequired,
    typing_extensions.ReadOnly,
)
_MODULES = {"_operator": "operator", "builtins": ""}
"""Modules named otherwise: C accelerators by their public module, builtins bare."""


def stamped(
    spec: GraphSpec,
    interrupt_before: tuple[str, ...] | str,
    interrupt_after: tuple[str, ...] | str,
    version: str | None = None,
) -> GraphSpec:
    """``spec`` with its `GraphShape`: fingerprint, stamp and stored-value checks."""
    return dataclasses.replace(
        spec, shape=shape_of(spec, interrupt_before, interrupt_after, version)
    )


def shape_of(
    spec: GraphSpec,
    interrupt_before: tuple[str, ...] | str,
    interrupt_after: tuple[str, ...] | str,
    version: str | None = None,
) -> GraphShape:
    """The `GraphShape` of a compiled graph (see the module docstring)."""
    hints = {**declared_types(spec.input), **declared_types(spec.state)}
    channels = {name: _channel(chan, hints.get(name)) for name, chan in spec.channels.items()}
    parts = {
        "state": spec.state.kind,
        "output": spec.output_channel,
        "channels": channels,
        "nodes": {name: _node(node) for name, node in spec.nodes.items()},
        "interrupt_before": _names(interrupt_before),
        "interrupt_after": _names(interrupt_after),
    }
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    fingerprint = xxh3_128_hexdigest(text.encode())
    reducers = {k: c[1] for k, c in channels.items() if k in spec.state_key_set and c[1]}
    accepts: dict[str, tuple[str, Callable[[object], bool]]] = {}
    for key in spec.state_keys:
        if key in hints and (check := checker(hints[key])) is not None:
            accepts[key] = (describe(_unwrapped(hints[key])), check)
    stamp: dict[str, object] = {"fingerprint": fingerprint, "reducers": reducers}
    if version is not None:
        stamp["version"] = version
    return GraphShape(fingerprint, version, reducers, accepts, stamp)


def _names(nodes: tuple[str, ...] | str) -> list[str] | str:
    return nodes if isinstance(nodes, str) else sorted(nodes)


def _channel(chan: Channel, hint: object) -> list[str]:
    """``[kind, reducer, declared type]`` of a channel."""
    inner = chan.inner if isinstance(chan, AfterFinish) else chan
    kind = type(inner).__name__ + ("+deferred" if inner is not chan else "")
    reducer = _name(inner.reducer) if isinstance(inner, BinaryOperatorAggregate) else ""
    return [kind, reducer, "" if hint is None else describe(hint)]


def _node(node: NodeProc) -> dict[str, object]:
    branches = [
        sorted(str(t) for t in b.path_map.values()) if b.path_map is not None else "?"
        for b in node.branches
    ]
    return {
        "triggers": sorted(node.triggers),
        "edges": sorted(node.edges),
        "joins": sorted(node.joins),
        "branches": branches,
        "input": node.input_channel,
        "returns": list(node.returns) if node.returns else None,
        "subgraph": _graph_fingerprint(node.subgraph),
        "calls": _graph_fingerprint(node.calls_graph),
    }


def _graph_fingerprint(graph: object) -> str | None:
    spec = getattr(graph, "spec", None)
    return spec.fingerprint if isinstance(spec, GraphSpec) else None


# --- types ------------------------------------------------------------------------------


def describe(tp: object) -> str:
    """A type as stable text: classes and functions by module and qualified name."""
    origin = typing.get_origin(tp)
    if origin is None:
        return _name(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        meta = ", ".join(_name(m) for m in tp.__metadata__)  # type: ignore[attr-defined]
        return f"Annotated[{describe(args[0])}, {meta}]"
    return f"{_name(origin)}[{', '.join(describe(a) for a in args)}]"


def _name(obj: object) -> str:
    if obj is None or isinstance(obj, str | int | float | bool):
        return repr(obj)
    if isinstance(obj, list | tuple):
        items = cast("list[object] | tuple[object, ...]", obj)
        return "[" + ", ".join(describe(o) for o in items) + "]"
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(qualname, str):
        return type(obj).__qualname__
    module = getattr(obj, "__module__", None)
    module = _MODULES.get(module, module) if isinstance(module, str) else ""
    return f"{module}.{qualname}" if module else qualname


def _unwrapped(tp: object) -> object:
    while typing.get_origin(tp) in _WRAPPERS:
        tp = typing.get_args(tp)[0]
    return tp


def checker(tp: object) -> Callable[[object], bool] | None:
    """Whether a stored value fits ``tp``, looked at one level deep; None: anything fits.

    Unions, ``Literal``, ``None`` and classes are checked (``float`` takes ``int``,
    a TypedDict a dict); ``Any``, type variables, forward references and other forms
    accept everything rather than refuse a thread on a guess.
    """
    tp = _unwrapped(tp)
    origin = typing.get_origin(tp) or tp
    if origin is typing.Union or origin is types.UnionType:
        arms = [checker(a) for a in typing.get_args(tp)]
        checks = [a for a in arms if a is not None]
        if len(checks) < len(arms):
            return None
        return lambda v: any(c(v) for c in checks)
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        return lambda v: any(v == a and type(v) is type(a) for a in allowed)
    kinds = _kinds(tp, origin)
    return None if kinds is None else (lambda v: _isinstance(v, kinds))


def _kinds(tp: object, origin: object) -> tuple[type, ...] | None:
    """The classes a value of ``tp`` is an instance of; None: no opinion."""
    if tp is None or tp is type(None):
        return (type(None),)
    if typing_extensions.is_typeddict(origin):
        return (dict,)
    if not isinstance(origin, type) or origin is object:
        return None
    return (int, float) if origin is float else (origin,)


def _isinstance(value: object, kinds: tuple[type, ...]) -> bool:
    try:
        return isinstance(value, kinds)
    except TypeError:  # a Protocol that is not runtime-checkable: no opinion
        return True
