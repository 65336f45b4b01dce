"""Differential tests: the same scenarios run on LangGraph 1.1.6 and on pausepoint.

Each scenario is one function ``scenario(lib, drive) -> record`` run through the sync and
the async API; ``_harness.normalize`` makes the records comparable. Test ids read
``<scenario>-<sync|async>-<langgraph|pausepoint>``:

- ``...-langgraph`` runs the scenario on LangGraph (the oracle) and checks it observes
  something; ``...-pausepoint`` compares pausepoint's record with LangGraph's.
- ``test_differences.py`` holds DESIGN §4's deliberate differences: there each id checks
  its own library's expected behaviour.

Issue 16's subgraph suite (``test_subgraph_parity_*.py``) also crosses savers: by
default sync × InMemorySaver and async × SQLite run; ``-m stress`` runs the other two
pairs. Scenarios pausepoint fails today are strict xfails on the pausepoint side, their
reason naming the issue family; ``--runxfail`` shows their diffs against LangGraph.

Run: ``.venv/bin/pytest tests/compat -q``; only the oracle side while developing
scenarios: ``PAUSEPOINT_COMPAT_ONLY=langgraph .venv/bin/pytest tests/compat -q``.
The whole package is skipped when LangGraph is not installed (``.[compat]`` extra).
"""
