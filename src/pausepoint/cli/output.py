"""How ``pausepoint threads`` prints: aligned tables, a thread's view, JSON."""

from __future__ import annotations

import dataclasses
import json
import re
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from pausepoint.types import Interrupt

if TYPE_CHECKING:
    from pausepoint.cli.threads import ThreadView

__all__ = [
    "compact",
    "indent",
    "jsonable",
    "pending_cell",
    "print_json",
    "printable",
    "render_table",
    "render_view",
    "shorten",
]

_CELL = 60
"""Widest table cell, in characters; ``--json`` output is never shortened."""


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns separated by two spaces; long cells end in an ellipsis."""
    cells = [list(headers), *([shorten(c) for c in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


def render_view(view: ThreadView, *, exact: bool) -> str:
    """The ``show`` text of a thread: a header, its values and its pending interrupts."""
    head = [
        ["thread", view.thread_id],
        ["status", view.status],
        ["step", str(view.step)],
        ["next", ", ".join(view.next) or "(nothing)"],
        ["checkpoint", view.checkpoint_id],
        ["updated", view.created_at],
    ]
    if view.graph_version is not None:
        head.append(["graph version", view.graph_version])
    parts = [render_table(["", ""], head).split("\n", 1)[1]]
    values = [[k, compact(v)] for k, v in view.values.items()]
    title = "values" if exact else "values (as stored; pass --graph for pending updates)"
    parts.append(f"\n{title}\n" + indent(render_table(["KEY", "VALUE"], values)))
    if view.interrupts:
        rows = [[i.id, compact(i.value)] for i in view.interrupts]
        parts.append("\npending interrupts\n" + indent(render_table(["ID", "VALUE"], rows)))
    if view.answered:
        rows = [
            [a.interrupt.id, str(a.position + 1), compact(a.interrupt.value), compact(a.value)]
            for a in view.answered
        ]
        title = "answered, run pending (`threads retry` continues; `resume --replace` changes)"
        table = render_table(["ID", "#", "QUESTION", "ANSWER"], rows)
        parts.append(f"\n{title}\n" + indent(table))
    if view.errors:
        text = printable("\n".join(view.errors), keep_newlines=True)
        parts.append("\nerrors\n" + indent(text))
    return "\n".join(parts)


def pending_cell(interrupts: Sequence[Interrupt]) -> str:
    """The PENDING cell of ``threads list``: short ids and values."""
    return "; ".join(f"{i.id[:8]}: {compact(i.value)}" for i in interrupts)


def indent(text: str) -> str:
    """Every line of ``text`` indented by two spaces."""
    return "\n".join("  " + line for line in text.splitlines())


def shorten(text: str) -> str:
    """``text`` on one line, escaped, cut to a table cell's width with an ellipsis."""
    text = printable(" ".join(text.split()))
    return text if len(text) <= _CELL else text[: _CELL - 1] + "…"


# Characters a terminal acts on instead of showing (escape sequences, bidi overrides,
# zero-width marks): stored ids and values are data, and never steer the terminal.
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def printable(text: str, *, keep_newlines: bool = False) -> str:
    r"""``text`` with every control or invisible format character escaped (ESC: ``\x1b``)."""
    if text.isprintable():
        return text
    out: list[str] = []
    for ch in text:
        if (keep_newlines and ch == "\n") or unicodedata.category(ch) not in _HIDDEN:
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)


def _json_text(text: str) -> str:
    """JSON text with the control characters ``json`` leaves raw escaped (``u00XX``)."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# json escapes U+0000-U+001F only; these stay raw with ensure_ascii=False.
_JSON_RAW = re.compile("[\x7f-\x9f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]")


def compact(value: object) -> str:
    """A value as compact JSON (records and collections made JSON first)."""
    text = json.dumps(value, default=jsonable, ensure_ascii=False, separators=(", ", ": "))
    return _json_text(text)


def print_json(data: object) -> None:
    """Print ``data`` as indented JSON (every control character escaped)."""
    print(_json_text(json.dumps(data, default=jsonable, ensure_ascii=False, indent=2)))


def jsonable(value: object) -> object:
    """JSON for values ``json`` cannot encode: records as dicts, collections as lists."""
    if isinstance(value, Interrupt):
        return {"id": value.id, "value": value.value}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, (set, frozenset)):
        return sorted(cast("set[object]", value), key=repr)
    return str(value)
