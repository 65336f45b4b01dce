"""The differential harness: libraries, drivers, normalisation and scenario registries.

A scenario is one function ``scenario(lib, drive) -> record``: it builds a graph with
``lib``'s names, runs it through ``drive`` (sync or async API) and returns plain data
describing what it observed. The harness runs it on LangGraph 1.1.6 (the oracle) and on
pausepoint, normalises both records (ids, timestamps, library-specific classes) and
compares them. Deliberate differences (DESIGN §4) register a check per library instead.

A registry may also cross its scenarios with checkpoint savers (``savers=SAVERS``):
``drive.saver()`` then hands the scenario a fresh saver of the library under test —
an in-memory one or SQLite on a real file (sync or async class, matching the driver).
Scenarios that fail on pausepoint today carry a strict ``xfail`` on the pausepoint side
only, so a fix shows up as an XPASS.

``PAUSEPOINT_COMPAT_ONLY=langgraph`` skips the pausepoint half (to develop scenarios
against the oracle while the engine is being written).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import difflib
import importlib
import os
import pprint
import re
import tempfile
import types
from collections.abc import Callable, Iterable
from typing import Any

import pytest

LIBS = ("langgraph", "pausepoint")
DRIVERS = ("sync", "async")
SAVERS = ("memory", "sqlite")
PRIMARY = frozenset({("sync", "memory"), ("async", "sqlite")})
"""Driver × saver pairs that always run when a registry crosses both savers: each
driver and each saver once. The other pairs carry the ``stress`` marker (``-m stress``)."""
ONLY = os.environ.get("PAUSEPOINT_COMPAT_ONLY", "")
_SHM = "/dev/shm"
SQLITE_DIR = _SHM if os.path.isdir(_SHM) and os.access(_SHM, os.W_OK) else None
"""Where scenario SQLite files go: RAM-backed when the OS offers it. They stay real
SQLite files; only the fsync per checkpoint on a shared disk is saved (these scenarios
compare behaviour, not durability across power loss)."""


# --- libraries -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Lib:
    """One library's public names, as a user imports them."""

    name: str
    StateGraph: Any
    START: str
    END: str
    interrupt: Any
    Command: Any
    Send: Any
    Interrupt: Any
    RetryPolicy: Any
    Overwrite: Any
    InMemorySaver: Any
    get_stream_writer: Any
    get_config: Any
    errors: types.ModuleType


_LOADED: dict[str, Lib] = {}


def load_lib(name: str) -> Lib:
    """Import ``name``'s modules by the import paths both libraries share."""
    if name not in _LOADED:
        graph = importlib.import_module(f"{name}.graph")
        types_ = importlib.import_module(f"{name}.types")
        memory = importlib.import_module(f"{name}.checkpoint.memory")
        config = importlib.import_module(f"{name}.config")
        _LOADED[name] = Lib(
            name=name,
            StateGraph=graph.StateGraph,
            START=graph.START,
            END=graph.END,
            interrupt=types_.interrupt,
            Command=types_.Command,
            Send=types_.Send,
            Interrupt=types_.Interrupt,
            RetryPolicy=types_.RetryPolicy,
            Overwrite=types_.Overwrite,
            InMemorySaver=memory.InMemorySaver,
            get_stream_writer=config.get_stream_writer,
            get_config=config.get_config,
            errors=importlib.import_module(f"{name}.errors"),
        )
    return _LOADED[name]


# --- drivers ---------------------------------------------------------------------------


class Drive:
    """The graph API through one driver: ``invoke/stream/...`` or their ``a*`` twins.

    The async driver runs every call of one scenario on one event loop (an async
    SQLite saver is bound to the loop it was opened on). ``close()`` releases the
    loop and every saver ``saver()`` opened.
    """

    def __init__(self, name: str, saver: str = "memory", lib: str = "langgraph") -> None:
        self.name = name
        self.is_async = name == "async"
        self.saver_kind = saver
        self.lib = lib
        self._runner = asyncio.Runner() if self.is_async else None
        self._stack = contextlib.ExitStack()
        self._astack = contextlib.AsyncExitStack()
        self._dir: str | None = None

    def _run(self, coro: Any) -> Any:
        assert self._runner is not None
        return self._runner.run(coro)

    def saver(self) -> Any:
        """A fresh checkpoint saver of this scenario's kind, for ``compile(checkpointer=)``."""
        if self.saver_kind == "memory":
            return importlib.import_module(f"{self.lib}.checkpoint.memory").InMemorySaver()
        if self._dir is None:
            temp = tempfile.TemporaryDirectory(prefix="pp-compat-", dir=SQLITE_DIR)
            self._dir = self._stack.enter_context(temp)
        path = os.path.join(self._dir, f"saver{len(os.listdir(self._dir))}.sqlite")
        if self.lib == "langgraph":
            module = "langgraph.checkpoint.sqlite" + (".aio" if self.is_async else "")
        else:
            module = "pausepoint.checkpoint.sqlite"
        mod = importlib.import_module(module)
        if self.is_async:
            cm = mod.AsyncSqliteSaver.from_conn_string(path)
            return self._run(self._astack.enter_async_context(cm))
        return self._stack.enter_context(mod.SqliteSaver.from_conn_string(path))

    def list_checkpoints(self, saver: Any, config: Any = None, **kw: Any) -> list[Any]:
        """``saver.list(config)`` (or ``alist``): what the saver holds, every namespace."""

        async def collect() -> list[Any]:
            return [t async for t in saver.alist(config, **kw)]

        if self.is_async:
            return self._run(collect())
        return list(saver.list(config, **kw))

    def close(self) -> None:
        try:
            if self._runner is not None:
                self._run(self._astack.aclose())
                self._runner.close()
        finally:
            self._stack.close()

    def invoke(self, graph: Any, inp: Any, config: Any = None, **kw: Any) -> Any:
        if self.is_async:
            return self._run(graph.ainvoke(inp, config, **kw))
        return graph.invoke(inp, config, **kw)

    def stream(self, graph: Any, inp: Any, config: Any = None, **kw: Any) -> list[Any]:
        """All chunks; if the run raises, the chunks so far plus a ``raised`` record."""
        chunks: list[Any] = []

        async def collect() -> None:
            async for chunk in graph.astream(inp, config, **kw):
                chunks.append(chunk)

        try:
            if self.is_async:
                self._run(collect())
            else:
                chunks.extend(graph.stream(inp, config, **kw))
        except Exception as exc:
            chunks.append(raised(exc))
        return chunks

    def get_state(self, graph: Any, config: Any, *, subgraphs: bool = False) -> Any:
        if self.is_async:
            return self._run(graph.aget_state(config, subgraphs=subgraphs))
        return graph.get_state(config, subgraphs=subgraphs)

    def history(self, graph: Any, config: Any, **kw: Any) -> list[Any]:
        async def collect() -> list[Any]:
            return [s async for s in graph.aget_state_history(config, **kw)]

        if self.is_async:
            return self._run(collect())
        return list(graph.get_state_history(config, **kw))

    def update_state(self, graph: Any, config: Any, values: Any, as_node: Any = None) -> Any:
        if self.is_async:
            return self._run(graph.aupdate_state(config, values, as_node=as_node))
        return graph.update_state(config, values, as_node=as_node)

    def bulk_update_state(self, graph: Any, config: Any, supersteps: Any) -> Any:
        if self.is_async:
            return self._run(graph.abulk_update_state(config, supersteps))
        return graph.bulk_update_state(config, supersteps)


def thread(tid: str = "t", **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": tid, **configurable}}


# --- exceptions ------------------------------------------------------------------------

# Exception classes named the same in both libraries; pausepoint's own subclasses
# (e.g. AmbiguousResumeError(RuntimeError)) compare as the nearest of these.
_SHARED_ERRORS = {
    "GraphRecursionError",
    "InvalidUpdateError",
    "EmptyInputError",
    "EmptyChannelError",
    "GraphBubbleUp",
    "GraphInterrupt",
    "ParentCommand",
}


def shared_type(exc: BaseException) -> str:
    """The name of the first class of ``exc`` that both libraries (or builtins) define."""
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins" or cls.__name__ in _SHARED_ERRORS:
            return cls.__name__
    return type(exc).__name__  # pragma: no cover - every exception ends in builtins


def raised(exc: BaseException, *, message: bool = False) -> tuple[Any, ...]:
    """A record of an exception: its shared type name (and message when it must match)."""
    return ("raised", shared_type(exc), str(exc) if message else None)


def catch(fn: Callable[..., Any], *args: Any, message: bool = False, **kw: Any) -> Any:
    """``fn(*args, **kw)``, or the ``raised`` record of the exception it raises."""
    try:
        return fn(*args, **kw)
    except Exception as exc:
        return raised(exc, message=message)


def exact(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """Like ``catch`` but records the exception's exact class name and message."""
    try:
        return fn(*args, **kw)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):  # pragma: no cover
            raise
        return ("raised", type(exc).__name__, str(exc))


# --- normalisation ---------------------------------------------------------------------

_ID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])"
)
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?")


class Unordered(list[Any]):
    """A list whose order is not observable (tasks of one step finish in any order)."""


def unordered(items: Iterable[Any]) -> Unordered:
    return Unordered(items)


_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_NAMESPACE = re.compile(rf"[^\s:|]+(?::{_UUID})?(?:\|[^\s:|]+(?::{_UUID})?)*")
_NS_TASK_ID = re.compile(rf"(?<=:){_UUID}(?=\||$)")


def mask_namespace(s: str) -> str | None:
    """``"node:<uuid>|inner:<uuid>"`` with its task ids as ``<task>``; None if ``s`` is
    not a checkpoint namespace naming a task.

    A namespace's task ids are hashes each library computes its own way; what a user
    relies on is the namespace's shape (which nodes, how deep, task-scoped or stable).
    """
    if ":" not in s or not _NAMESPACE.fullmatch(s) or not _NS_TASK_ID.search(s):
        return None
    return _NS_TASK_ID.sub("<task>", s)


class _Normalizer:
    def __init__(self, *, mask_task_ids: bool = False) -> None:
        self.mask_task_ids = mask_task_ids
        self.ids: dict[str, str] = {}
        self.interrupt_ids = 0
        self.frozen = False  # inside Unordered: no new numbering (order is arbitrary)
        self.first_pass = False  # number the ids of ordered parts before unordered ones

    def _id(self, raw: str) -> str:
        if raw in self.ids:
            return self.ids[raw]
        if self.frozen:
            return "<id?>"
        if self.mask_task_ids and "-" not in raw:
            # Interrupt ids (32 hex digits) get their own numbering, so one interrupt
            # listed on one side only does not renumber every checkpoint id after it.
            self.interrupt_ids += 1
            self.ids[raw] = f"<int{self.interrupt_ids}>"
        else:
            self.ids[raw] = f"<id{len(self.ids) + 1 - self.interrupt_ids}>"
        return self.ids[raw]

    def string(self, s: str) -> str:
        if self.mask_task_ids and (ns := mask_namespace(s)) is not None:
            return ns
        return _ID.sub(lambda m: self._id(m.group()), _TIMESTAMP.sub("<ts>", s))

    def __call__(self, obj: Any) -> Any:  # noqa: C901
        if obj is None or isinstance(obj, bool | int | float | bytes):
            return obj
        if isinstance(obj, str):
            return self.string(obj)
        if isinstance(obj, Unordered):
            return None if self.first_pass else self._unordered(obj)
        name = type(obj).__name__
        if name == "Interrupt" and hasattr(obj, "value") and hasattr(obj, "id"):
            return ("Interrupt", self(obj.value), self(obj.id))
        if isinstance(obj, BaseException):
            return ("exc", shared_type(obj), self.string(str(obj)))
        if name == "Send" and hasattr(obj, "node"):
            return ("Send", self(obj.node), self(obj.arg))
        if name == "Command" and hasattr(obj, "resume"):
            fields = ("graph", "update", "resume", "goto")
            return ("Command", {f: self(getattr(obj, f)) for f in fields})
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return (name, {f: self(getattr(obj, f)) for f in obj._fields})
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return (name, {f.name: self(getattr(obj, f.name)) for f in dataclasses.fields(obj)})
        if hasattr(obj, "model_dump") and hasattr(type(obj), "model_fields"):
            return (name, self(obj.model_dump()))
        if isinstance(obj, dict):
            keys = sorted(obj, key=_shape)
            if self.mask_task_ids:
                # LangGraph leaks its internal "__pregel_*" keys into some configs it
                # returns (a subgraph snapshot's config names its checkpointer object).
                keys = [k for k in keys if not (isinstance(k, str) and k.startswith("__pregel_"))]
            return {self(k): self(obj[k]) for k in keys}
        if isinstance(obj, list):
            return [self(x) for x in obj]
        if isinstance(obj, tuple):
            return tuple(self(x) for x in obj)
        if isinstance(obj, set | frozenset):
            return ("set", self._unordered(Unordered(obj)))
        return ("object", name)

    def _unordered(self, items: Unordered) -> list[Any]:
        was, self.frozen = self.frozen, True
        try:
            return sorted((self(x) for x in items), key=repr)
        finally:
            self.frozen = was


def _shape(key: Any) -> str:
    return _ID.sub("<id>", repr(key))


def normalize(record: Any, *, mask_task_ids: bool = False) -> Any:
    """Comparable plain data: ids numbered by first appearance, timestamps masked.

    Ids seen only inside ``Unordered`` parts become ``<id?>`` (their order of first
    appearance is arbitrary); ids also seen elsewhere keep their number there. With
    ``mask_task_ids`` a checkpoint namespace (a ``checkpoint_ns`` value, a
    ``checkpoint_map`` key) compares by shape: its task ids read ``<task>``; and
    LangGraph's internal ``__pregel_*`` dict keys are left out, and interrupt ids are
    numbered apart from checkpoint and task ids (``<int1>``, ...).
    """
    norm = _Normalizer(mask_task_ids=mask_task_ids)
    norm.first_pass = True
    norm(record)
    norm.first_pass = False
    return norm(record)


def drop_forks(record: Any) -> tuple[Any, int]:
    """``record`` with the fork checkpoints (``metadata["source"] == "fork"``) taken out
    of every history (a list of ``StateSnapshot``), and how many there were.

    Wherever else a fork's id appears (a child's ``parent_config``, a subgraph
    checkpoint's ``parents``, a ``checkpoint_map``) it reads as the id of the
    checkpoint the branch was forked from, as LangGraph's record would.
    """
    forks: dict[str, str] = {}

    def collect(obj: Any) -> None:
        if _is_fork(obj):
            forks[_snapshot_id(obj.config)] = _snapshot_id(obj.parent_config)
        elif isinstance(obj, dict | list | tuple):
            for v in obj.values() if isinstance(obj, dict) else obj:  # pyright: ignore
                collect(v)

    def walk(obj: Any) -> Any:
        if isinstance(obj, str):
            return forks.get(obj, obj)
        if isinstance(obj, dict):
            return {walk(k): walk(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return type(obj)(walk(x) for x in obj if not _is_fork(x))
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return obj._replace(**{f: walk(getattr(obj, f)) for f in obj._fields})
        if isinstance(obj, tuple):
            return tuple(walk(x) for x in obj)
        return obj

    collect(record)
    return walk(record), len(forks)


def drop_carried(record: Any) -> tuple[Any, int]:
    """``record`` with the interrupts listed by checkpoints ``update_state`` wrote
    (``metadata["source"] == "update"``) taken out, and how many such checkpoints
    listed one."""
    found = 0

    def walk(obj: Any) -> Any:
        nonlocal found
        if type(obj).__name__ == "StateSnapshot" and (obj.metadata or {}).get("source") == "update":
            found += bool(obj.interrupts)
            tasks = tuple(t._replace(interrupts=()) for t in obj.tasks)
            return obj._replace(interrupts=(), tasks=walk(tasks))
        if isinstance(obj, dict):
            return {k: walk(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return type(obj)(walk(x) for x in obj)
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return obj._replace(**{f: walk(getattr(obj, f)) for f in obj._fields})
        if isinstance(obj, tuple):
            return tuple(walk(x) for x in obj)
        return obj

    return walk(record), found


def refused_resume(key: str, values: Callable[[Any], Any]) -> Callable[[Any], tuple[Any, int]]:
    """A view (``Scenarios.viewed``) for DESIGN §4.4: pausepoint refuses a
    ``Command(resume=...)`` while nothing is pending (``record[key]``, recorded with
    ``catch(..., message=True)``) where LangGraph returns the thread's values, which
    ``values(record)`` reads from the rest of the record."""

    def refused_resume(record: Any) -> tuple[Any, int]:
        got = record[key]
        if not (isinstance(got, tuple) and "no interrupt is pending" in str(got[-1])):
            return record, 0
        return {**record, key: values(record)}, 1

    return refused_resume


def _is_fork(obj: Any) -> bool:
    metadata = getattr(obj, "metadata", None)
    return type(obj).__name__ == "StateSnapshot" and (metadata or {}).get("source") == "fork"


def _snapshot_id(config: Any) -> Any:
    return ((config or {}).get("configurable") or {}).get("checkpoint_id")


# --- registries and tests --------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Xfail:
    """pausepoint is known to differ here (strict: a fix turns the test into an XPASS).

    ``drivers`` / ``savers`` narrow it to the combinations that fail.
    """

    reason: str
    drivers: tuple[str, ...] = DRIVERS
    savers: tuple[str, ...] = SAVERS

    def applies(self, driver: str, saver: str) -> bool:
        return driver in self.drivers and saver in self.savers


@dataclasses.dataclass(frozen=True)
class Scenario:
    fn: Callable[[Lib, Drive], Any]
    drivers: tuple[str, ...]
    expect: dict[str, Callable[[Any], Any] | Any] | None = None
    savers: tuple[str, ...] = ("memory",)
    xfail: Xfail | None = None
    mask_task_ids: bool = False
    view: Callable[[Any], tuple[Any, int]] | None = None
    """How pausepoint's record is read before the comparison, for a deliberate
    difference (``Scenarios.forks``, ``Scenarios.carries``): the record with the
    difference taken out, and how many instances of it there were (at least one)."""

    @property
    def name(self) -> str:
        return self.fn.__name__

    def run(self, lib_name: str, driver: str, saver: str = "memory") -> Any:
        if lib_name == "pausepoint" and ONLY == "langgraph":
            pytest.skip("PAUSEPOINT_COMPAT_ONLY=langgraph")
        drive = Drive(driver, saver, lib_name)
        try:
            record = self.fn(load_lib(lib_name), drive)
        finally:
            drive.close()
        if self.view is not None and lib_name == "pausepoint":
            record, found = self.view(record)
            assert found, f"expected the difference {self.view.__name__} takes out"
        return normalize(record, mask_task_ids=self.mask_task_ids)


_ORACLE: dict[tuple[str, str, str, str], Any] = {}


def _oracle(scenario: Scenario, driver: str, saver: str) -> Any:
    key = (scenario.fn.__module__, scenario.name, driver, saver)
    if key not in _ORACLE:
        _ORACLE[key] = scenario.run("langgraph", driver, saver)
    return _ORACLE[key]


def _assert_same(expected: Any, got: Any, what: str) -> None:
    if expected == got:
        return
    # The normaliser already ordered every dict; re-sorting makes pformat slow.
    left = pprint.pformat(expected, width=96, sort_dicts=False).splitlines()
    right = pprint.pformat(got, width=96, sort_dicts=False).splitlines()
    diff = "\n".join(difflib.unified_diff(left, right, "langgraph", "pausepoint", lineterm=""))
    pytest.fail(f"{what} differs from LangGraph 1.1.6:\n{diff}", pytrace=False)


class Scenarios:
    """A registry of scenarios; ``test()`` makes the parametrised test function.

    Args:
        savers: The saver kinds every scenario runs on (``drive.saver()``); test ids
            name the saver when there is more than one.
        mask_task_ids: Compare checkpoint namespaces by shape (see ``normalize``).
    """

    def __init__(self, *, savers: tuple[str, ...] = ("memory",), mask_task_ids: bool = False):
        self.items: dict[str, Scenario] = {}
        self.savers = savers
        self.mask_task_ids = mask_task_ids

    def _add(self, f: Callable[[Lib, Drive], Any], **kw: Any) -> Callable[[Lib, Drive], Any]:
        assert f.__name__ not in self.items, f.__name__
        xfail = kw.pop("xfail", None)
        if isinstance(xfail, str):
            xfail = Xfail(xfail)
        kw.setdefault("savers", self.savers)
        self.items[f.__name__] = Scenario(f, xfail=xfail, mask_task_ids=self.mask_task_ids, **kw)
        return f

    def __call__(
        self,
        fn: Callable[[Lib, Drive], Any] | None = None,
        *,
        drivers: tuple[str, ...] = DRIVERS,
        savers: tuple[str, ...] | None = None,
        xfail: str | Xfail | None = None,
    ) -> Any:
        def register(f: Callable[[Lib, Drive], Any]) -> Callable[[Lib, Drive], Any]:
            return self._add(f, drivers=drivers, savers=savers or self.savers, xfail=xfail)

        return register(fn) if fn is not None else register

    def differs(
        self,
        *,
        langgraph: Any,
        pausepoint: Any,
        savers: tuple[str, ...] | None = None,
        xfail: str | Xfail | None = None,
    ) -> Any:
        """Register a deliberate difference: each library is checked against its own
        expectation (plain data to compare with the normalised record, or a callable
        asserting on it)."""

        def register(f: Callable[[Lib, Drive], Any]) -> Callable[[Lib, Drive], Any]:
            expect = {"langgraph": langgraph, "pausepoint": pausepoint}
            return self._add(
                f, drivers=DRIVERS, expect=expect, savers=savers or self.savers, xfail=xfail
            )

        return register

    def forks(self, *, xfail: str | Xfail | None = None) -> Any:
        """Register a scenario where pausepoint forks (DESIGN §4.2: a new answer to an
        old checkpoint is stored on a new branch, which starts with a copy of that
        checkpoint, ``source="fork"``) and LangGraph writes to the old checkpoint.

        pausepoint's record must hold at least one fork checkpoint in its histories
        and, with them taken out (``drop_forks``), equal LangGraph's.
        """

        return self.viewed(drop_forks, xfail=xfail)

    def carries(self, *, xfail: str | Xfail | None = None) -> Any:
        """Register a scenario where ``update_state`` edits a paused (sub)graph: pausepoint
        lists the question still waiting on the new checkpoint (docs/differences.md,
        "update_state leaves the checkpoint it updates as it was"), LangGraph lists none.

        pausepoint's record must list such an interrupt and, with those taken out
        (``drop_carried``), equal LangGraph's.
        """
        return self.viewed(drop_carried, xfail=xfail)

    def viewed(
        self, view: Callable[[Any], tuple[Any, int]], *, xfail: str | Xfail | None = None
    ) -> Any:
        """Register a deliberate difference that ``view`` takes out of pausepoint's record
        (returning the record without it, and how often it was found: at least once);
        the rest must equal LangGraph's."""

        def register(f: Callable[[Lib, Drive], Any]) -> Callable[[Lib, Drive], Any]:
            self._add(f, drivers=DRIVERS, savers=self.savers, xfail=xfail)
            self.items[f.__name__] = dataclasses.replace(self.items[f.__name__], view=view)
            return f

        return register

    def _params(self) -> list[Any]:
        params: list[Any] = []
        for s in self.items.values():
            for drv in s.drivers:
                for saver in s.savers:
                    for lib in LIBS:
                        middle = f"{drv}-{saver}" if len(self.savers) > 1 else drv
                        marks: list[Any] = []
                        if len(s.savers) > 1 and (drv, saver) not in PRIMARY:
                            marks.append(pytest.mark.stress)
                        if lib == "pausepoint" and s.xfail and s.xfail.applies(drv, saver):
                            marks.append(pytest.mark.xfail(strict=True, reason=s.xfail.reason))
                        pid = f"{s.name}-{middle}-{lib}"
                        params.append(pytest.param(s.name, drv, saver, lib, id=pid, marks=marks))
        return params

    def test(self) -> Callable[[str, str, str, str], None]:
        @pytest.mark.compat
        @pytest.mark.parametrize(("scenario", "driver", "saver", "lib"), self._params())
        def test_scenario(scenario: str, driver: str, saver: str, lib: str) -> None:
            sc = self.items[scenario]
            if sc.expect is not None:
                _check_expectation(sc, lib, driver, saver)
            elif lib == "langgraph":
                assert _oracle(sc, driver, saver) not in (None, {}, [], ()), "records nothing"
            else:
                got = sc.run("pausepoint", driver, saver)
                _assert_same(_oracle(sc, driver, saver), got, sc.name)

        return test_scenario


def _check_expectation(sc: Scenario, lib: str, driver: str, saver: str) -> None:
    assert sc.expect is not None
    expected = sc.expect[lib]
    got = sc.run(lib, driver, saver)
    if callable(expected):
        expected(got)
        return
    if expected != got:
        text = pprint.pformat(got, width=96)
        pytest.fail(f"{sc.name} on {lib}: expected\n{pprint.pformat(expected)}\ngot\n{text}")
