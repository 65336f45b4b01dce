"""Mermaid flowchart text for a `Graph`.

Plain edges are solid arrows, conditional ones (branches, ``Command`` routes)
dotted; a label rides on its edge. Nodes of an inlined subgraph (ids
``"sub:inner"``) are grouped in a Mermaid ``subgraph`` block per level. A node's
metadata (a static breakpoint, ``defer``) is shown under its name.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from pausepoint.constants import END, START

if TYPE_CHECKING:
    from pausepoint.graph.drawing import Edge, Graph, Node

__all__ = ["draw"]

_STYLES = (
    "\tclassDef default fill:#eef3fb,stroke:#5b7bb2,line-height:1.2",
    "\tclassDef first fill-opacity:0",
    "\tclassDef last fill:#c9d8f0",
)


def draw(
    graph: Graph,
    *,
    with_styles: bool = True,
    curve_style: str = "linear",
    wrap_words: int = 9,
    config: dict[str, Any] | None = None,
) -> str:
    """The Mermaid text of ``graph`` (see `Graph.draw_mermaid`)."""
    front = {"config": {"flowchart": {"curve": curve_style}}}
    if config:
        front = _merged(front, config)
    lines = ["---", *_yaml(front, 0), "---", "graph TD;"]
    groups: defaultdict[str, list[Node]] = defaultdict(list)
    for node in graph.nodes.values():
        groups[_prefix(node.id)].append(node)
    edges: defaultdict[str, list[Edge]] = defaultdict(list)
    for edge in graph.edges:
        edges[_common(_prefix(edge.source), _prefix(edge.target))].append(edge)
    levels = {level for p in (*groups, *edges) for level in _levels(p)}
    lines += _block("", levels, groups, edges, wrap_words, 1)
    if with_styles:
        lines += _STYLES
    return "\n".join(lines) + "\n"


def _block(
    prefix: str,
    levels: set[str],
    groups: dict[str, list[Node]],
    edges: dict[str, list[Edge]],
    wrap_words: int,
    depth: int,
) -> list[str]:
    """The lines of one subgraph level: its nodes, its nested levels, then its edges."""
    pad = "\t" * depth
    lines = [pad + _node_line(n) for n in groups.get(prefix, ())]
    for child in sorted(p for p in levels if p and _parent(p) == prefix):
        title = child.rsplit(":", 1)[-1]
        lines.append(f'{pad}subgraph {_safe(child)}["{_text(title)}"]')
        lines += _block(child, levels, groups, edges, wrap_words, depth + 1)
        lines.append(f"{pad}end")
    lines += [pad + _edge_line(e, wrap_words) for e in edges.get(prefix, ())]
    return lines


def _node_line(node: Node) -> str:
    label = _text(node.name)
    if node.metadata:
        notes = "<br>".join(f"{_text(str(k))} = {_text(str(v))}" for k, v in node.metadata.items())
        label = f"{label}<hr/><small><em>{notes}</em></small>"
    if node.id == START:
        return f'{_safe(node.id)}(["{label}"]):::first'
    if node.id == END:
        return f'{_safe(node.id)}(["{label}"]):::last'
    return f'{_safe(node.id)}("{label}")'


def _edge_line(edge: Edge, wrap_words: int) -> str:
    src, dst = _safe(edge.source), _safe(edge.target)
    if edge.data is None:
        arrow = "-.->" if edge.conditional else "-->"
        return f"{src} {arrow} {dst};"
    label = _wrap(_text(str(edge.data)), wrap_words)
    if edge.conditional:
        return f'{src} -. "{label}" .-> {dst};'
    return f'{src} -- "{label}" --> {dst};'


def _prefix(id: str) -> str:
    return id.rsplit(":", 1)[0] if ":" in id else ""


def _parent(prefix: str) -> str:
    return _prefix(prefix)


def _levels(prefix: str) -> list[str]:
    """``"a:b"`` and every level above it (``"a"``): each is a subgraph block."""
    parts = prefix.split(":") if prefix else []
    return [":".join(parts[: i + 1]) for i in range(len(parts))]


def _common(a: str, b: str) -> str:
    """The deepest subgraph level holding both prefixes."""
    shared: list[str] = []
    for x, y in zip(a.split(":") if a else [], b.split(":") if b else [], strict=False):
        if x != y:
            break
        shared.append(x)
    return ":".join(shared)


def _safe(id: str) -> str:
    """A Mermaid node id: letters, digits and ``_`` kept; anything else as ``_xx_`` hex."""
    return re.sub(r"[^A-Za-z0-9_]", lambda m: f"_{ord(m.group()):x}_", id)


def _text(text: str) -> str:
    return text.replace('"', "#quot;")


def _wrap(label: str, words: int) -> str:
    parts = label.split()
    if len(parts) <= words:
        return label
    return "<br>".join(" ".join(parts[i : i + words]) for i in range(0, len(parts), words))


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = _merged(old, value)  # pyright: ignore[reportUnknownArgumentType]
        else:
            out[key] = value
    return out


def _yaml(data: dict[str, Any], depth: int) -> list[str]:
    """A small YAML emitter for the front matter: nested dicts of plain values."""
    lines: list[str] = []
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"{'  ' * depth}{key}:")
            lines += _yaml(value, depth + 1)  # pyright: ignore[reportUnknownArgumentType]
        else:
            shown = str(value).lower() if isinstance(value, bool) else str(value)
            lines.append(f"{'  ' * depth}{key}: {shown}")
    return lines
