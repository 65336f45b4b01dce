"""Large values: a node writes one value of tens of megabytes; reading it back.

``large-SHAPE-Nmb/KIND/write`` times one ``invoke`` of START → put → END whose node
returns ``{"payload": value}`` (the value is built once per process, outside the
timed region), on saver KIND (memory, sqlite, postgres). ``…/read`` times
``get_state`` of a thread that holds such a value (written once, untimed).

The shapes, each about N MB (what a graph handed a large document or file holds):

- ``str``: text, e.g. a document's contents. Mostly ASCII with a few accented
  letters and an emoji per paragraph, as real prose has; JSON writes those as
  ``\\uXXXX`` escapes, so the text is not a best case for pausepoint's format.
- ``bytes``: a file's contents (an image, a PDF): random bytes, so nothing in the
  path (base64, a database's compression) gets them cheaply.
- ``records``: parsed JSON, e.g. rows of a table or an API's answer: a dict holding
  a list of small dicts (str, int, float, bool and a list of str each), ~100 bytes
  of JSON per row. It has many small objects, which is where a serializer that
  walks the value in Python pays most.

Before the timed iterations, ``build`` runs the graph once with a small value, so
one-time costs (a saver's prepared statements, lazy imports) are not timed.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any, TypedDict

from cases import Case, Target, Workload, config, open_saver

__all__ = ["SHAPES", "make_value", "workloads"]

SHAPES = ("str", "bytes", "records")
LARGE = Target(1.5, "issue 18: large values within 1.5x of LangGraph's time")
FULL_MB = 50
QUICK_MB = 1

_PARAGRAPH = (
    "The reviewer wrote: the café's report covers 1,204 incidents over the year; "
    "response times fell by a third after the change 🚀. Next steps are listed below, "
    "each with an owner and a date, and the appendix holds the raw figures.\n"
)


def make_value(shape: str, mb: float) -> Any:
    """A value of about ``mb`` megabytes of the given shape (see the module docstring)."""
    size = int(mb * 1_000_000)
    if shape == "str":
        return (_PARAGRAPH * (size // len(_PARAGRAPH) + 1))[:size]
    if shape == "bytes":
        return random.Random(size).randbytes(size)
    if shape == "records":
        rows = [
            {"id": i, "name": f"item {i}", "score": i / 7, "ok": i % 3 == 0, "tags": ["a", "b"]}
            for i in range(size // 100)
        ]
        return {"source": "export", "rows": rows}
    raise ValueError(f"unknown shape {shape!r}; expected one of {SHAPES}")


class LargeState(TypedDict):
    n: int
    payload: Any


def _graph(lib: SimpleNamespace, saver: Any, holder: list[Any]) -> Any:
    def put(state: LargeState) -> dict[str, Any]:
        return {"payload": holder[0]}

    builder = lib.StateGraph(LargeState)
    builder.add_node("put", put)
    builder.add_edge(lib.START, "put")
    builder.add_edge("put", lib.END)
    return builder.compile(checkpointer=saver)


def _same(got: Any, value: Any) -> str | None:
    if type(got) is type(value) and got == value:
        return None
    return f"wrong result: the value read back differs from the one written ({type(got)})"


def large(shape: str, mb: float, kind: str, op: str) -> Callable[[SimpleNamespace], Case]:
    """The case of ``large-SHAPE-Nmb/KIND/OP`` (OP: write or read) on one library."""

    def build(lib: SimpleNamespace) -> Case:
        saver = open_saver(lib, kind)
        holder: list[Any] = [make_value(shape, 0.001)]
        graph = _graph(lib, saver, holder)
        prefix = f"{lib.name}-{os.getpid()}-"  # a database may outlive the process
        graph.invoke({"n": 0}, config(f"{prefix}warm"))  # one-time costs, untimed
        holder[0] = value = make_value(shape, mb)
        if op == "read":
            stored = config(f"{prefix}stored")
            graph.invoke({"n": 0}, stored)
            return Case(
                run=lambda i: graph.get_state(stored).values["payload"],
                check=lambda got: _same(got, value),
            )

        def cleanup(i: int) -> None:
            saver.delete_thread(f"t{prefix}{i}")

        return Case(
            run=lambda i: graph.invoke({"n": i}, config(f"{prefix}{i}"))["payload"],
            check=lambda got: _same(got, value),
            cleanup=cleanup,
        )

    return build


def workloads(kinds: list[str]) -> list[Workload]:
    """Every shape × saver × (write, read) at ``FULL_MB``, and the ``--quick`` ones."""
    found: list[Workload] = []
    for mb in (FULL_MB, QUICK_MB):
        for shape in SHAPES:
            for kind in ["memory", *kinds]:
                for op in ("write", "read"):
                    what = "invoke: a node writes" if op == "write" else "get_state reads back"
                    found.append(
                        Workload(
                            f"large-{shape}-{mb}mb/{kind}/{op}",
                            f"{what} a {mb} MB {shape} value on each library's {kind} saver",
                            large(shape, mb, kind, op),
                            None,
                            LARGE,
                            rounds=3,
                        )
                    )
    return found


def quick_only(names: Iterable[str]) -> list[str]:
    """The small-size workloads: run by ``--quick``, or by name, never by a full run."""
    return [name for name in names if name.startswith("large-") and f"-{QUICK_MB}mb/" in name]
