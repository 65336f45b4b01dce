"""``stream_mode="messages"``: chat-model tokens and the messages nodes return.

Needs ``langchain-core`` (the ``messages`` extra): this module imports it, and is
imported only by a run that streams ``messages`` (`message_tap`).

While a task runs, LangChain's own context variable holds a config whose callbacks
include a `_TokenHandler`, so a chat model called inside the node (with or
without passing the node's config) reports its tokens through LangChain's callback
API; each token chunk is streamed as ``(message_chunk, metadata)``, as LangGraph's
are. A model that does not stream is reported once, with its whole message, when
it ends. When the task finishes, the LangChain messages among its writes that were
not streamed already (by id; the ones in its input count as seen) are streamed too.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, GenerationChunk, LLMResult
from langchain_core.runnables.config import var_child_runnable_config

try:  # what makes a chat model's invoke() stream its tokens to the handler
    from langchain_core.tracers._streaming import (  # pyright: ignore[reportMissingTypeStubs]
        _StreamingCallbackHandler,  # pyright: ignore[reportPrivateUsage]
    )
except ImportError:  # pragma: no cover - older langchain-core: tokens come only at the end
    _StreamingCallbackHandler = object

from pausepoint.loop.effects import Call
from pausepoint.loop.prepare import ExecTask
from pausepoint.loop.tasks import task_input
from pausepoint.running import TASK

if TYPE_CHECKING:
    from pausepoint.graph.output import Sink
    from pausepoint.loop.node import Body

__all__ = ["MessageTap"]

T = TypeVar("T")

NOSTREAM = "nostream"
"""A chat model tagged so is not streamed (``model.with_config(tags=["nostream"])``)."""


class MessageTap:
    """Streams one run's messages: set up per task (`enter`), reported on its end.

    Its handler is called from the threads (or the event loop) the run's tasks and
    their models run in; what it shares is guarded by a lock.
    """

    def __init__(self, sink: Sink, ns: tuple[str, ...], *, muted: bool = False) -> None:
        """Stream through ``sink`` as namespace ``ns``.

        ``muted``: a subgraph's run streamed without ``subgraphs=True``: its models and
        nodes are not streamed (LangGraph's), nor reported as its parent node's.
        """
        self.muted = muted
        # A subgraph's messages count as seen for its parent's too: a message streamed
        # token by token inside is not streamed again when the subgraph node returns it.
        above = var_child_runnable_config.get()
        handlers: Any = (above or {}).get("callbacks") or ()
        outer = next((h for h in handlers if isinstance(h, _TokenHandler)), None)
        self.handler = _TokenHandler(sink, ns, outer)

    def enter(self, task: ExecTask) -> None:
        """Set LangChain's config for the running task (in its own context).

        The ids of the messages in its input count as seen.
        """
        config = task.config
        var_child_runnable_config.set(
            {
                "callbacks": [] if self.muted else [self.handler],
                "metadata": _metadata(task),
                "tags": list(config.get("tags") or ()),
                "configurable": dict(config.get("configurable") or {}),
            }
        )
        frame = task.frame
        given = task_input(frame.spec, task.task, frame.channels)
        self.handler.see(_messages_in(_values(given)))

    def report(self, body: Body, task: ExecTask) -> Body:
        """``body``, which also streams the unseen messages the task writes when it ends.

        A body yields its calls, then its writes (see `pausepoint.loop.node.node_body`):
        each call's outcome goes back into it as the driver sends or throws it.
        """
        try:
            item = next(body)
            while isinstance(item, Call):
                try:
                    sent = yield item
                except GeneratorExit:
                    raise
                except BaseException as exc:  # a subgraph's ParentCommand, thrown back in
                    item = body.throw(exc)
                else:
                    item = body.send(sent)
            if not self.muted:
                found = _returned(task, item)
                self.handler.emit_new(found, _node_metadata(task))
            yield item
        finally:
            body.close()


class _TokenHandler(BaseCallbackHandler, _StreamingCallbackHandler):  # pyright: ignore[reportUntypedBaseClass, reportGeneralTypeIssues]
    """LangChain callbacks that stream a chat model's tokens (see the module docstring)."""

    run_inline = True  # called in the thread the model runs in: chunks keep their order

    def __init__(self, sink: Sink, ns: tuple[str, ...], outer: _TokenHandler | None) -> None:
        self.sink = sink
        self.ns = ns
        self.runs: dict[uuid.UUID, dict[str, object]] = {}
        # One set of seen ids (and its lock) per streamed run, its subgraphs' included.
        self.seen: set[str] = set() if outer is None else outer.seen
        self.lock = threading.Lock() if outer is None else outer.lock

    def see(self, messages: Sequence[BaseMessage]) -> None:
        with self.lock:
            self.seen.update(m.id for m in messages if m.id is not None)

    def emit(self, message: BaseMessage, metadata: dict[str, object], *, new: bool = False) -> None:
        """Stream ``message``; with ``new``, only if no message with its id was streamed."""
        with self.lock:
            if new and message.id in self.seen:
                return
            if message.id is None:
                message.id = str(uuid.uuid4())
            self.seen.add(message.id)
        self.sink(self.ns, "messages", (message, metadata))

    def emit_new(self, messages: Sequence[BaseMessage], metadata: dict[str, object]) -> None:
        for message in messages:
            self.emit(message, metadata, new=True)

    def tap_output_iter(self, run_id: uuid.UUID, output: Iterator[T]) -> Iterator[T]:
        return output

    def tap_output_aiter(self, run_id: uuid.UUID, output: AsyncIterator[T]) -> AsyncIterator[T]:
        return output

    def on_chat_model_start(
        self,
        serialized: dict[str, object],
        messages: list[list[BaseMessage]],
        *,
        run_id: uuid.UUID,
        tags: list[str] | None = None,
        metadata: dict[str, object] | None = None,
        **kwargs: object,
    ) -> None:
        if not metadata or (tags and NOSTREAM in tags) or not isinstance(TASK.get(), ExecTask):
            # Not in a node: a @task call's namespace is its caller's child, and LangGraph
            # streams it only with subgraphs=True (there pausepoint streams none).
            return
        shown = dict(metadata)
        if kept := [t for t in tags or () if not t.startswith("seq:step")]:
            shown["tags"] = kept
        self.runs[run_id] = shown

    def on_llm_new_token(
        self,
        token: object,
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: uuid.UUID,
        **kwargs: object,
    ) -> None:
        if isinstance(chunk, ChatGenerationChunk) and (meta := self.runs.get(run_id)):
            self.emit(chunk.message, meta)

    def on_llm_end(self, response: LLMResult, *, run_id: uuid.UUID, **kwargs: object) -> None:
        meta = self.runs.pop(run_id, None)
        if meta is None or not response.generations or not response.generations[0]:
            return
        first = response.generations[0][0]
        if isinstance(first, ChatGeneration):  # not streamed token by token: whole
            self.emit(first.message, meta, new=True)

    def on_llm_error(self, error: BaseException, *, run_id: uuid.UUID, **kwargs: object) -> None:
        self.runs.pop(run_id, None)


def _metadata(task: ExecTask) -> dict[str, object]:
    """What a task's messages are streamed with (LangGraph's run metadata).

    The node's config metadata, and the caller's configurable keys with plain values,
    but none whose name suggests a secret.
    """
    shown: dict[str, object] = {
        k: v
        for k, v in task.frame.run.cfg.configurable.items()
        if isinstance(v, str | int | float | bool)
        and not k.startswith("__")
        and not any(word in k.casefold() for word in _SECRET)
    }
    shown.update(task.config.get("metadata") or {})
    return shown


def _node_metadata(task: ExecTask) -> dict[str, object]:
    """The metadata of the messages a node returns (LangGraph marks them so)."""
    return {**_metadata(task), "ls_integration": "langgraph"}


_SECRET = ("key", "token", "secret", "password", "auth")


def _returned(task: ExecTask, writes: Sequence[tuple[str, object]]) -> list[BaseMessage]:
    """The messages a node returned: in its state writes, or an entrypoint's value."""
    returns = task.task.node.returns
    if returns is None:
        return _messages_in(v for _, v in writes)
    value = next((v for k, v in writes if k == returns[0]), None)
    if isinstance(value, BaseMessage):
        return [value]
    if isinstance(value, list | tuple):
        returned: list[object] = [value]  # one list of them: the messages in it
        return _messages_in(returned)
    return _messages_in(_values(value))


def _values(given: object) -> list[object]:
    """A node input's top-level values (a dict's, a model's or a dataclass's)."""
    if isinstance(given, dict):
        values: dict[str, object] = given  # pyright: ignore[reportUnknownVariableType]
        return list(values.values())
    kind: object = getattr(given, "__class__", None)
    fields: Any = getattr(kind, "model_fields", None) or getattr(kind, "__dataclass_fields__", None)
    return [getattr(given, k) for k in fields] if fields else []


def _messages_in(values: Iterable[object]) -> list[BaseMessage]:
    """The LangChain messages among ``values``, and in the lists among them."""
    found: list[BaseMessage] = []
    for value in values:
        if isinstance(value, BaseMessage):
            found.append(value)
        elif isinstance(value, list | tuple):
            items = cast("Sequence[object]", value)
            found += [item for item in items if isinstance(item, BaseMessage)]
    return found
