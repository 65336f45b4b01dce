"""Shaping the driver's chunks for the caller (modes, namespaces, v2 parts)."""

from __future__ import annotations

import dataclasses
import queue
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pausepoint.constants import INTERRUPT
from pausepoint.loop.run import RunOptions, RunResult

if TYPE_CHECKING:
    from pausepoint.drivers.async_ import AsyncSink
    from pausepoint.graph.message_stream import MessageTap
    from pausepoint.task_context import NestInfo

__all__ = [
    "MESSAGES_EXTRA",
    "Chunk",
    "ChunkShape",
    "Sink",
    "async_sink",
    "custom_target",
    "deliver",
    "invoke_output",
    "message_tap",
    "nested_message_tap",
    "print_modes",
    "queue_sink",
]

Chunk = tuple[tuple[str, ...], str, object]
"""One stream chunk as a run reports it: ``(namespace, mode, payload)``."""

Sink = Callable[[tuple[str, ...], str, object], None]
"""What a run reports its chunks to: ``sink(namespace, mode, payload)``."""

_MODES = frozenset({"values", "updates", "checkpoints", "tasks", "debug", "messages", "custom"})


@dataclasses.dataclass(frozen=True, slots=True)
class ChunkShape:
    """How a ``stream`` call wants its chunks."""

    modes: frozenset[str]
    single: bool
    subgraphs: bool
    v2: bool
    single_key: str | None = None
    """``output_keys="x"``: ``values`` chunks are the value of ``x`` alone."""
    printing: frozenset[str] = frozenset()
    """The modes printed as they come (``print_mode=``, ``debug=True``), yielded or not."""

    @property
    def wanted(self) -> frozenset[str]:
        """Every mode the run must report: those yielded and those printed."""
        return self.modes | self.printing

    @classmethod
    def of(
        cls,
        stream_mode: str | Sequence[str] | None,
        subgraphs: bool,
        version: str,
        default: str,
        keys: str | Sequence[str] | None = None,
        printing: frozenset[str] = frozenset(),
    ) -> ChunkShape:
        """Parse ``stream``'s arguments (``printing``: see [`print_modes`][])."""
        if version not in ("v1", "v2"):
            raise ValueError(f"version must be 'v1' or 'v2', got {version!r}")
        given = default if stream_mode is None else stream_mode
        modes = _modes("stream_mode", given)
        single_key = keys if isinstance(keys, str) else None
        v2 = version == "v2"
        return cls(modes, isinstance(given, str), subgraphs, v2, single_key, printing)

    def shape(self, chunk: Chunk, own: tuple[str, ...] = ()) -> object:
        """The caller's form of one chunk, or ``None`` to drop it.

        ``own`` is the namespace of the run the caller runs (a subgraph's, when it
        runs inside a task); a chunk from below it is the caller's only with
        ``subgraphs=True``. A chunk of a printed mode is printed first (whether
        yielded or not).
        """
        ns, mode, payload = chunk
        if mode not in self.wanted:
            return None
        if self.single_key is not None and ns == own:
            if mode == "values":
                payload = _pick(payload, self.single_key)
            elif mode == "updates":
                payload = _bare_updates(payload, self.single_key)
        if len(ns) > len(own) and not self.subgraphs and mode != "custom":
            return None
        if mode in self.printing:
            _print_chunk(ns if self.subgraphs else (), mode, payload)
        if mode not in self.modes:
            return None
        if self.v2:
            part: dict[str, object] = {"type": mode, "ns": ns, "data": payload}
            if mode == "values":
                data, interrupts = _split_interrupts(payload)
                part["data"] = data
                part["interrupts"] = interrupts
            return part
        body = payload if self.single else (mode, payload)
        if self.subgraphs:
            return (ns, body) if self.single else (ns, mode, payload)
        return body


def print_modes(
    print_mode: str | Sequence[str], debug: bool | None, graph_debug: bool
) -> frozenset[str]:
    """The modes a run prints: ``print_mode``'s, or ``updates`` and ``values`` in debug.

    ``debug=True`` (or a graph compiled with ``debug=True``) replaces ``print_mode``,
    as in LangGraph.

    Raises:
        ValueError: A mode that is not a stream mode.
    """
    if debug or graph_debug:
        return _DEBUG_MODES
    return _modes("print_mode", print_mode) if print_mode else _NO_MODES


_DEBUG_MODES = frozenset({"updates", "values"})
_NO_MODES: frozenset[str] = frozenset()


def _modes(name: str, given: str | Sequence[str]) -> frozenset[str]:
    modes = [given] if isinstance(given, str) else list(given)
    unknown = [m for m in modes if m not in _MODES]
    if unknown:
        raise ValueError(f"unknown {name} {unknown!r}; choose from {sorted(_MODES)}")
    return frozenset(modes)


def _print_chunk(ns: tuple[str, ...], mode: str, payload: object) -> None:
    """Print one chunk to stdout as LangGraph's ``print_mode``/``debug`` does.

    ``[mode]`` in bold, then (for a subgraph's chunk, with ``subgraphs=True``) its
    namespace in yellow, then the payload's ``repr``.
    """
    parts = [f"\033[1m[{mode}]\033[0m"]
    if ns:
        parts.append(f"\033[1;30;33m[graph={ns}]\033[0m")
    parts.append(repr(payload))
    print(" ".join(parts))


def _pick(payload: object, key: str) -> object:
    if not isinstance(payload, dict):
        return payload
    values: dict[str, object] = payload  # pyright: ignore[reportUnknownVariableType]
    return values.get(key)


def _bare_updates(payload: object, key: str) -> object:
    """``updates`` with ``output_keys="x"``: each node's value of ``x`` alone.

    A list of them when it wrote ``x`` several times, as LangGraph shows them.
    """
    if not isinstance(payload, dict):
        return payload
    chunk: dict[str, object] = payload  # pyright: ignore[reportUnknownVariableType]
    return {
        node: upd if node.startswith("__") else _bare_update(upd, key)
        for node, upd in chunk.items()
    }


def _bare_update(update: object, key: str) -> object:
    if isinstance(update, list):
        writes: list[dict[str, object]] = update  # pyright: ignore[reportUnknownVariableType]
        return [w[key] for w in writes]
    return _pick(update, key) if update is not None else None


def _split_interrupts(payload: object) -> tuple[object, tuple[object, ...]]:
    if not isinstance(payload, dict) or INTERRUPT not in payload:
        return payload, ()  # pyright: ignore[reportUnknownVariableType]
    chunk: dict[str, Any] = payload  # pyright: ignore[reportUnknownVariableType]
    data = {k: v for k, v in chunk.items() if k != INTERRUPT}
    found: tuple[object, ...] = tuple(chunk[INTERRUPT])
    return data, found


def invoke_output(
    result: RunResult, output_keys: Sequence[str] | str | None, version: str = "v1"
) -> Any:
    """``invoke``'s return value: the output state, plus ``__interrupt__`` when paused.

    With ``version="v2"`` it is a `GraphOutput` instead.
    """
    values = result.values
    if version == "v2":
        from pausepoint.types import GraphOutput

        output: GraphOutput[object] = GraphOutput(
            value=_select(values, output_keys), interrupts=result.interrupts
        )
        return output
    return _with_interrupts(_select(values, output_keys), result)


def _select(values: Any, output_keys: Sequence[str] | str | None) -> Any:
    if isinstance(output_keys, str):
        return values.get(output_keys)
    if output_keys is not None:
        return {k: v for k, v in values.items() if k in output_keys}
    return values


def _with_interrupts(values: object, result: RunResult) -> object:
    if not result.interrupts:
        return values
    if isinstance(values, dict):
        state: dict[str, object] = dict(values)  # pyright: ignore[reportUnknownArgumentType]
        state[INTERRUPT] = list(result.interrupts)
        return state
    # An entrypoint paused before returning, or a graph whose state is one value (a
    # list, a number): LangGraph returns the interrupts alone then.
    return {INTERRUPT: list(result.interrupts)}


MESSAGES_EXTRA = (
    "stream_mode='messages' streams chat-model tokens through LangChain's callbacks and "
    "needs langchain-core, which is not installed: pip install 'pausepoint[messages]' "
    "(or langchain-core)"
)


def message_tap(
    sink: Sink | None, ns: tuple[str, ...], modes: frozenset[str], *, muted: bool = False
) -> MessageTap | None:
    """What a run streaming ``messages`` reports through; None when it does not.

    Raises:
        ImportError: langchain-core is not installed (the ``messages`` extra).
    """
    if sink is None or "messages" not in modes:
        return None
    try:
        from pausepoint.graph.message_stream import MessageTap
    except ImportError as exc:
        if not (exc.name or "").startswith("langchain_core"):
            raise
        raise ImportError(MESSAGES_EXTRA, name=exc.name) from exc
    return MessageTap(sink, ns, muted=muted)


def custom_target(
    sink: Sink | None, modes: frozenset[str]
) -> Callable[[tuple[str, ...], Any], None] | None:
    """Where a run's ``custom`` chunks go when its own caller streams them."""
    if sink is None or "custom" not in modes:
        return None

    def put(ns: tuple[str, ...], value: object) -> None:
        sink(ns, "custom", value)

    return put


def nested_message_tap(nest: NestInfo, ns: tuple[str, ...]) -> MessageTap | None:
    """A nested run's ``messages`` tap (None: it has none).

    Streamed up with ``subgraphs=True`` above; else muted (its messages are not
    reported as its parent node's either).
    """
    if nest.up is not None and "messages" in nest.up_modes:
        return message_tap(nest.up, ns, nest.up_modes)
    return message_tap(nest.sink, ns, nest.stream_modes & _MESSAGES, muted=True)


_MESSAGES = frozenset({"messages"})


def queue_sink(events: queue.SimpleQueue[tuple[str, Any]]) -> Sink:
    """The sink a sync run streams through: its chunks go to the caller's queue."""

    def put(ns: tuple[str, ...], mode: str, payload: object) -> None:
        events.put(("chunk", (ns, mode, payload)))

    return put


def async_sink(sink: AsyncSink) -> Sink:
    """The sink an async run streams through: its chunks go to the driver's sink."""

    def put(ns: tuple[str, ...], mode: str, payload: object) -> None:
        sink.put(("chunk", (ns, mode, payload)))

    return put


def deliver(opts: RunOptions, shape: ChunkShape | None, chunk: Chunk) -> object:
    """One chunk of a run, shaped for the run's own caller (None: not for it).

    A nested run's chunk is also passed up, as its `NestInfo.up` says.

    ``custom`` chunks are not passed up: they went to the nearest run streaming them
    when written (`pausepoint.loop.prepare.custom_writer`).
    """
    _ns, mode, _payload = chunk
    if opts.up is not None and mode in opts.up_modes and mode != "custom":
        opts.up(*chunk)
    if shape is None or (opts.own_modes is not None and mode not in opts.own_modes):
        return None
    return shape.shape(chunk, opts.ns)
