"""One scenario on LangGraph 1.1.6 and on pausepoint with a saver of the test's choice.

tests/compat/_harness.py runs each scenario on both libraries with their
``InMemorySaver``s. Here pausepoint's half takes the saver as a parameter, so one
scenario checks pausepoint on ``InMemorySaver`` *and* on a real SQLite file against
the same LangGraph record (LangGraph runs once per driver, on its ``InMemorySaver``).
The harness's library loading, drivers and normaliser are reused as they are.

A scenario is ``fn(lib, drive, saver) -> record``; it compiles its graphs with
``checkpointer=saver``.
"""

from __future__ import annotations

import contextlib
import difflib
import pprint
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("langgraph")

from compat._harness import Drive, Lib, load_lib, normalize

ScenarioFn = Callable[[Lib, Drive, Any], Any]


class SideBySide:
    """A registry of scenarios; :meth:`check` compares pausepoint's record with LangGraph's."""

    def __init__(self) -> None:
        self.items: dict[str, ScenarioFn] = {}
        self.oracle_driver: dict[str, str] = {}
        self._oracle: dict[tuple[str, str], Any] = {}

    def __call__(self, fn: ScenarioFn) -> ScenarioFn:
        return self.add(fn.__name__, fn)

    def add(self, name: str, fn: ScenarioFn, *, oracle: str | None = None) -> ScenarioFn:
        """Register ``fn`` as scenario ``name`` (for scenarios made by a factory).

        ``oracle="sync"``: both of pausepoint's drivers are compared with LangGraph's
        sync API, where LangGraph's async twin has drifted from it.
        """
        assert name not in self.items, name
        self.items[name] = fn
        if oracle is not None:
            self.oracle_driver[name] = oracle
        return fn

    def names(self) -> list[str]:
        return list(self.items)

    def langgraph(self, name: str, driver: str) -> Any:
        """The normalised LangGraph record of scenario ``name`` (run once per driver)."""
        key = (name, driver)
        if key not in self._oracle:
            lib = load_lib("langgraph")
            with _driving(driver) as drive:
                self._oracle[key] = normalize(self.items[name](lib, drive, lib.InMemorySaver()))
        return self._oracle[key]

    def pausepoint(self, name: str, driver: str, saver: Any) -> Any:
        """The normalised pausepoint record of scenario ``name`` with ``saver``."""
        with _driving(driver) as drive:
            return normalize(self.items[name](load_lib("pausepoint"), drive, saver))

    def check(self, name: str, driver: str, saver: Any) -> None:
        """Fail with a diff unless pausepoint's record equals LangGraph's."""
        expected = self.langgraph(name, self.oracle_driver.get(name, driver))
        assert expected not in (None, {}, [], ()), "the scenario records nothing"
        got = self.pausepoint(name, driver, saver)
        if expected == got:
            return
        left = pprint.pformat(expected, width=96).splitlines()
        right = pprint.pformat(got, width=96).splitlines()
        diff = "\n".join(difflib.unified_diff(left, right, "langgraph", "pausepoint", lineterm=""))
        pytest.fail(f"{name} differs from LangGraph 1.1.6:\n{diff}", pytrace=False)


@contextlib.contextmanager
def _driving(driver: str) -> Iterator[Drive]:
    """A driver, closed afterwards (its event loop, for the async one)."""
    drive = Drive(driver)
    try:
        yield drive
    finally:
        drive.close()
