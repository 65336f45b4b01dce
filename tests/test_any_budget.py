"""The top-level modules' `Any` budget (issue 19): a ratchet, so it only goes down.

`Any` switches the type checker off for whatever flows through it. The modules directly
in src/pausepoint keep it only where a user's own value passes (``interrupt()``'s
answer, ``Interrupt.value``, ``Command``, ``Send``, snapshots: LangGraph has ``Any``
there, and ``object`` would fail users' type checks) and on the hot path, where a
narrowing would cost time. Everything else has a real type: lower the budget when you
remove one, never raise it to add one.
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

import pausepoint

TOP_LEVEL = Path(pausepoint.__file__).parent
BUDGET = 75


def _any_tokens(path: Path) -> int:
    # NAME tokens only: an "Any" in a comment or a docstring is not a type.
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return sum(1 for t in tokens if t.type == tokenize.NAME and t.string == "Any")


def test_top_level_modules_stay_within_their_any_budget():
    counts = {p.name: _any_tokens(p) for p in sorted(TOP_LEVEL.glob("*.py"))}
    total = sum(counts.values())
    worst = ", ".join(
        f"{name} {n}" for name, n in sorted(counts.items(), key=lambda kv: -kv[1])[:5]
    )
    assert total <= BUDGET, (
        f"{total} `Any` in src/pausepoint/*.py, over the budget of {BUDGET} (most: {worst}); "
        "give the new value a real type (object, a Protocol, a TypedDict, a union)"
    )


def test_the_count_reads_names_not_text(tmp_path: Path):
    module = tmp_path / "m.py"
    module.write_text('"""Any docstring."""\nfrom typing import Any  # Any\nx: Any = "Any"\n')
    assert _any_tokens(module) == 2
