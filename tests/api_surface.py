"""What the API reference must cover: the public modules, their names and exceptions.

Shared by tests/test_api_reference.py (checks on the sources and docs/errors.md) and
tests/test_docs_site.py (checks on the built site). Every module of the package is
either public, with a page in docs/api/, or listed in ``NOT_PAGES`` with the reason:
a new module must be classified before the tests pass, so none is left out of the
reference by accident.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import types
from pathlib import Path

import pausepoint

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "pausepoint"

# Public module -> its page under docs/api/ (the page's path without ".md").
PAGES: dict[str, str] = {
    "pausepoint": "index",
    "pausepoint.types": "types",
    "pausepoint.errors": "errors",
    "pausepoint.constants": "constants",
    "pausepoint.config": "config",
    "pausepoint.graph": "graph",
    "pausepoint.graph.message": "graph.message",
    "pausepoint.graph.drawing": "graph.drawing",
    "pausepoint.func": "func",
    "pausepoint.runtime": "runtime",
    "pausepoint.managed": "managed",
    "pausepoint.channels": "channels",
    "pausepoint.checkpoint.base": "checkpoint.base",
    "pausepoint.checkpoint.memory": "checkpoint.memory",
    "pausepoint.checkpoint.compact": "checkpoint.compact",
    "pausepoint.checkpoint.sqlite": "checkpoint.sqlite",
    "pausepoint.checkpoint.postgres": "checkpoint.postgres",
    "pausepoint.checkpoint.questions": "checkpoint.questions",
    "pausepoint.serde": "serde",
    "pausepoint.testing": "testing",
    "pausepoint.questions": "questions",
    "pausepoint.response_schema": "response_schema",
    "pausepoint.inbox": "inbox",
    "pausepoint.deploys": "deploys",
    "pausepoint.migrations": "migrations",
    "pausepoint.crypto": "crypto",
    "pausepoint.observing": "observing",
    "pausepoint.otel": "otel",
}

# Modules without a page, with the reason; "x.*" stands for every submodule of x.
# Their public names, if any, are documented where a public module re-exports them.
NOT_PAGES: dict[str, str] = {
    "pausepoint.checkpoint": "a namespace: its saver modules have pages",
    "pausepoint.checkpoint.ids": "checkpoint id helpers used by the savers",
    "pausepoint.checkpoint.heads": "pausepoint.deploys' reads of thread heads",
    "pausepoint.cli": "the command line, documented in docs/cli.md",
    "pausepoint.cli.*": "the command line, documented in docs/cli.md",
    "pausepoint.drivers": "the engine's sync and async drivers",
    "pausepoint.drivers.*": "the engine's sync and async drivers",
    "pausepoint.loop": "the engine's superstep loop",
    "pausepoint.loop.*": "the engine's superstep loop",
    "pausepoint.graph.state": "StateGraph's home; documented in pausepoint.graph",
    "pausepoint.graph.compiled": "CompiledStateGraph's home; documented in pausepoint.graph",
    "pausepoint.graph.ascii_art": "drawing internals",
    "pausepoint.graph.mermaid": "drawing internals",
    "pausepoint.graph.topology": "drawing internals",
    "pausepoint.graph.build": "compile() internals",
    "pausepoint.graph.entry": "compile() internals for @entrypoint",
    "pausepoint.graph.output": "invoke/stream internals",
    "pausepoint.graph.runnable": "CompiledStateGraph's methods, documented there",
    "pausepoint.graph.message_stream": "stream_mode='messages' internals (docs/streaming.md)",
    "pausepoint.graph.schema": "state schema internals",
    "pausepoint.graph.update": "update_state internals",
    "pausepoint.graph.update_steps": "bulk_update_state internals",
    "pausepoint.graph.validate": "compile() internals",
    "pausepoint.graph.fingerprint": "compile() internals: a graph's fingerprint",
    "pausepoint.graph.rebind": "recompiling with the saver a command opened",
    "pausepoint.graph.addressing": "which graph wrote a checkpoint namespace (get_state internals)",
    "pausepoint.inbox.*": "the inbox's internals; pausepoint.inbox re-exports the public names",
    "pausepoint.server": "`pausepoint serve`, documented in docs/server.md",
    "pausepoint.server.*": "`pausepoint serve`, documented in docs/server.md",
    "pausepoint.workers": "`pausepoint worker`, documented in docs/deploying.md",
    "pausepoint.workers.*": "`pausepoint worker`, documented in docs/deploying.md",
    "pausepoint.otel.*": "pausepoint.otel's internals; pausepoint.otel re-exports the public names",
    "pausepoint.running": "the running task's context variable",
    "pausepoint.scratchpad": "a task's interrupt and call counters",
    "pausepoint.task_context": "the running task's context",
    "pausepoint.serde.*": "serializer internals; pausepoint.serde re-exports the public names",
    "pausepoint.testing.*": "pausepoint.testing re-exports the public names",
    "pausepoint.crypto.*": "pausepoint.crypto re-exports the public names",
}

# Roles of Sphinx (reStructuredText) that Markdown docstrings must not use: the site
# would show them as written.
SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|exc|attr|mod|data|obj|const|ref):`")


def page_reason(module_name: str) -> str | None:
    """Why a module has no page, or ``None`` when ``NOT_PAGES`` does not list it."""
    for key, why in NOT_PAGES.items():
        package = key.removesuffix(".*")
        if module_name == key or (key != package and module_name.startswith(package + ".")):
            return why
    return None


def all_modules() -> list[str]:
    """Every module of the package whose name has no part starting with ``_``."""
    names = ["pausepoint"]
    for info in pkgutil.walk_packages(pausepoint.__path__, "pausepoint."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def public_names(module_name: str) -> list[str]:
    """``__all__`` of a public module, else its public names defined there."""
    module = importlib.import_module(module_name)
    listed = getattr(module, "__all__", None)
    if listed is not None:
        return sorted(listed)
    return sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and getattr(value, "__module__", module_name) == module_name
    )


def public_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class a public module exports, by name."""
    found: dict[str, type[BaseException]] = {}
    for module_name in PAGES:
        module = importlib.import_module(module_name)
        for name in public_names(module_name):
            value = getattr(module, name)
            if inspect.isclass(value) and issubclass(value, BaseException):
                found[name] = value
    return found


def resolve(path: str) -> object:
    """The object a dotted path names: the longest importable module, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            value = getattr(value, attr)
        return value
    raise ImportError(path)
