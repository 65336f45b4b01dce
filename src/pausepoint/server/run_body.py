"""The run-create body (``/runs``, ``/runs/stream``, ``/runs/wait``) read into a `RunRequest`.

Defaults are the API's: ``stream_mode`` ``["values"]``, ``multitask_strategy``
``enqueue``, ``if_not_exists`` ``reject``, ``on_disconnect`` ``cancel``. Keys this
server does not act on (``webhook``, ``feedback_keys``, ``langsmith_tracer``...) are
accepted and ignored, as clients send them freely.
"""

from __future__ import annotations

from typing import get_args

from pausepoint.server.body import Fields
from pausepoint.server.records import MultitaskStrategy, RunRequest

__all__ = ["STREAM_MODES", "run_request"]

STREAM_MODES = (
    "values",
    "updates",
    "messages",
    "messages-tuple",
    "custom",
    "debug",
    "events",
    "tasks",
    "checkpoints",
)
"""The ``stream_mode`` names a run may ask for."""

_STRATEGIES: tuple[str, ...] = get_args(MultitaskStrategy)


def run_request(body: object, *, if_not_exists: str = "reject") -> RunRequest:
    """The body as a `RunRequest`; every problem in one `InvalidRequestError` (422).

    ``if_not_exists`` is the default for that field (``create`` for stateless runs).
    """
    f = Fields(body)
    modes = _stream_modes(f)
    request = RunRequest(
        assistant_id=f.str("assistant_id", "", required=True),
        input=f.any("input"),
        command=f.dict("command"),
        config=f.dict("config"),
        context=f.dict("context"),
        metadata=f.dict("metadata"),
        stream_mode=modes,
        stream_subgraphs=f.bool("stream_subgraphs", False),
        stream_resumable=f.bool("stream_resumable", False),
        interrupt_before=f.str_list("interrupt_before", star=True),
        interrupt_after=f.str_list("interrupt_after", star=True),
        checkpoint=f.dict("checkpoint"),
        checkpoint_id=f.str("checkpoint_id"),
        multitask_strategy=f.choice("multitask_strategy", _STRATEGIES, "enqueue"),
        if_not_exists=f.choice("if_not_exists", ("create", "reject"), if_not_exists),
        on_disconnect=f.choice("on_disconnect", ("cancel", "continue"), "cancel"),
        after_seconds=f.number("after_seconds"),
        durability=f.choice("durability", ("sync", "async", "exit"), None),
    )
    f.choice("on_completion", ("delete", "keep"), None)
    f.check()
    return request


def _stream_modes(f: Fields) -> list[str]:
    modes: list[str] | None = f.str_list("stream_mode", one=True)
    if modes is None:
        return ["values"]
    unknown = [m for m in modes if m not in STREAM_MODES]
    if unknown:
        f.problems.append(f"'stream_mode' {unknown} unknown; the modes are {list(STREAM_MODES)}")
    return list(dict.fromkeys(modes)) or ["values"]
