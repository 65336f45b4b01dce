"""Run configuration: the public ``RunnableConfig`` dict and its parsed, frozen form.

Users pass a plain dict (``{"configurable": {"thread_id": "t1"}}``) as in LangGraph;
it is parsed once at the API boundary into `RunConfig`, and nothing deeper
in the engine reads the dict again.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from typing_extensions import TypedDict

from pausepoint.running import TASK, outside_run

if TYPE_CHECKING:
    from pausepoint.types import StreamWriter

__all__ = [
    "MAX_ID_BYTES",
    "SECRET_WORDS",
    "RunnableConfig",
    "get_config",
    "get_stream_writer",
    "looks_secret",
    "merge_configs",
    "normalized",
    "set_secret_words",
    "stored_id",
]


class RunnableConfig(TypedDict, total=False):
    """The config dict accepted by ``invoke``/``stream``/``get_state`` (LangGraph's keys)."""

    configurable: dict[str, Any]
    recursion_limit: int
    tags: list[str]
    metadata: dict[str, Any]
    run_name: str
    run_id: object
    max_concurrency: int | None
    callbacks: object


DEFAULT_RECURSION_LIMIT = 10007

CONFIG_KEYS = frozenset(RunnableConfig.__annotations__)
"""The keys a config dict has at its top level; any other goes into ``configurable``."""


def normalized(config: RunnableConfig | None) -> RunnableConfig:
    """``config`` with its unknown top-level keys moved into ``configurable``.

    As LangGraph's configs: ``{"thread_id": "t1"}`` means
    ``{"configurable": {"thread_id": "t1"}}``. A key given both ways takes the
    top-level value (as LangGraph's); a ``None`` value is dropped.
    """
    if not config:
        return {}
    if config.keys() <= CONFIG_KEYS:  # the usual config: nothing to move
        return config
    extra = {k: v for k, v in config.items() if k not in CONFIG_KEYS and v is not None}
    if not extra:
        return config
    out: dict[str, object] = {k: v for k, v in config.items() if k in CONFIG_KEYS}
    out["configurable"] = {**(config.get("configurable") or {}), **extra}
    return out  # type: ignore[return-value]


def merge_configs(*configs: RunnableConfig | None) -> RunnableConfig:
    """Merge configs left to right (later wins), as LangGraph's ``with_config`` does.

    ``configurable`` and ``metadata`` merge key by key, ``tags`` add up (without
    repeats); any other key is replaced.
    """
    out: dict[str, Any] = {}
    for config in configs:
        given: dict[str, Any] = dict(normalized(config))
        for key, value in given.items():
            if key in ("configurable", "metadata"):
                out[key] = {**(out.get(key) or {}), **(value or {})}
            elif key == "tags":
                out[key] = list(dict.fromkeys([*(out.get(key) or ()), *(value or ())]))
            else:
                out[key] = value
    return out  # type: ignore[return-value]


MAX_ID_BYTES = 1024
"""The longest thread id or checkpoint id a saver stores, in UTF-8 bytes."""


def stored_id(kind: str, value: object) -> str:
    """``value`` as the text a saver stores for a thread or checkpoint id; checked.

    Ids are text: ``123`` and ``"123"`` name one thread. Every saver refuses, before
    anything is written, an id no database can key on: one with a NUL character
    (PostgreSQL's text cannot hold it) or longer than [`MAX_ID_BYTES`][] (beyond
    what an index row holds).
    """
    text = str(value)
    if "\x00" in text:
        raise ValueError(f"a {kind} cannot contain a NUL character ('\\x00'); got {text!r:.80}")
    if len(text) > MAX_ID_BYTES // 4 and len(text.encode()) > MAX_ID_BYTES:
        raise ValueError(
            f"a {kind} is at most {MAX_ID_BYTES} bytes (UTF-8); got {len(text.encode())} "
            f"bytes ({text[:40]!r}...)"
        )
    return text


def default_recursion_limit() -> int:
    """The limit when the config gives none (env ``LANGGRAPH_DEFAULT_RECURSION_LIMIT``)."""
    raw = os.environ.get("LANGGRAPH_DEFAULT_RECURSION_LIMIT")
    return int(raw) if raw else DEFAULT_RECURSION_LIMIT


@dataclasses.dataclass(slots=True)
class RunConfig:
    """A caller's config, parsed: the only form the engine reads (read-only).

    Not ``frozen``: a frozen ``__init__`` sets each field through
    ``object.__setattr__`` (~3x dearer), and every invoke makes one.
    """

    thread_id: str | None
    checkpoint_ns: str
    checkpoint_id: str | None
    recursion_limit: int
    tags: tuple[str, ...]
    metadata: Mapping[str, object]
    configurable: Mapping[str, object]
    max_concurrency: int | None
    raw: RunnableConfig

    @classmethod
    def parse(cls, config: RunnableConfig | None) -> RunConfig:
        """Parse and validate a caller's config dict."""
        cfg: RunnableConfig = dict(normalized(config))  # type: ignore[assignment]
        conf = dict(cfg.get("configurable") or {})
        limit = cfg.get("recursion_limit")
        if limit is None:
            limit = default_recursion_limit()
        if not isinstance(limit, int) or limit < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"recursion_limit must be a positive integer, got {limit!r}")
        thread = conf.get("thread_id")
        checkpoint_id = conf.get("checkpoint_id")
        cfg["configurable"] = conf
        return cls(
            thread_id=None if thread is None else stored_id("thread_id", thread),
            checkpoint_ns=str(conf.get("checkpoint_ns", "")),
            checkpoint_id=(
                None if checkpoint_id is None else stored_id("checkpoint_id", checkpoint_id)
            ),
            recursion_limit=limit,
            tags=tuple(cfg.get("tags") or ()),
            metadata=dict(cfg.get("metadata") or {}),
            configurable=conf,
            max_concurrency=cfg.get("max_concurrency"),
            raw=cfg,
        )

    def run_metadata(self) -> dict[str, object]:
        """What a run adds to its checkpoints' metadata (as LangGraph does).

        The config's ``metadata``, then ``configurable`` keys with plain values
        (str, int, float, bool), leaving out internal keys, the checkpoint's own
        coordinates and anything that looks like a secret.
        """
        # A subgraph runs with its parent task's config: leave the task's own keys out.
        out = {
            k: v
            for k, v in self.metadata.items()
            if not k.startswith("langgraph_") and k not in _COORDINATES
        }
        for key, value in self.configurable.items():
            if key in out or key in _COORDINATES or key.startswith("__"):
                continue
            if not isinstance(value, (str, int, float, bool)):
                continue
            if looks_secret(key):
                continue
            out[key] = value
        return out

    def with_checkpoint(self, checkpoint_id: str | None) -> RunnableConfig:
        """The public config dict pointing at ``checkpoint_id`` in this thread and namespace."""
        conf: dict[str, object] = {"thread_id": self.thread_id, "checkpoint_ns": self.checkpoint_ns}
        if checkpoint_id is not None:
            conf["checkpoint_id"] = checkpoint_id
        return {"configurable": conf}


_COORDINATES = frozenset({"thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map"})
SECRET_WORDS = ("key", "token", "secret", "password", "auth")
"""The default words of `set_secret_words`: extend them with ``(*SECRET_WORDS, "ssn")``."""
_secret_words: tuple[str, ...] = SECRET_WORDS


def looks_secret(key: str) -> bool:
    """Whether a ``configurable`` key looks secret: it contains a word of `set_secret_words`."""
    return any(word in key.casefold() for word in _secret_words)


def set_secret_words(words: Iterable[str]) -> tuple[str, ...]:
    """Set which ``configurable`` keys are never copied into checkpoint metadata.

    A run copies the plain values of its ``configurable`` into the metadata of the
    checkpoints it writes, except keys containing one of these words (in any case;
    by default ``key``, ``token``, ``secret``, ``password`` and ``auth``). For this
    process; returns the words in force before, so a test can put them back.

    Raises:
        ValueError: A word is empty (it would leave out every key: say so instead).
    """
    global _secret_words
    new = tuple(str(w).casefold() for w in words)
    if any(not w for w in new):
        raise ValueError("set_secret_words: a word is empty; it would match every key")
    old, _secret_words = _secret_words, new
    return old


def get_config() -> RunnableConfig:
    """The config of the running node (call it inside a node).

    Raises:
        RuntimeError: Outside a running node (LangGraph's message, then the fix).
    """
    task = TASK.get()
    if task is None:
        raise outside_run("get_config()")
    return task.config


def get_stream_writer() -> StreamWriter:
    """A function that sends a value to ``stream_mode="custom"`` from the running node.

    When nobody streams ``custom`` it is a no-op.

    Raises:
        RuntimeError: Outside a running node, as LangGraph's does.
    """
    task = TASK.get()
    if task is None:
        raise outside_run("get_stream_writer()")
    return task.stream_writer
