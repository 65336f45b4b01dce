"""The corpus's edited graphs as module attributes, for ``pausepoint check --graph``.

``<corpus>__<edit>`` is the graph of corpus entry ``<corpus>`` after ``<edit>``
(tests/deploy_graphs.py); ``<corpus>__old`` the graph its thread paused on.
"""

from __future__ import annotations

from typing import Any

import deploy_graphs as corpus


def pairs() -> list[tuple[str, str, bool]]:
    """``(corpus, edit, destructive)`` of every pair."""
    return [
        (name, edit, edit not in corpus.HARMLESS)
        for name, (_, destructive) in corpus.CORPUS.items()
        for edit in (*destructive, *corpus.HARMLESS)
    ]


def attribute(name: str, edit: str | None) -> str:
    return f"{name}__{edit or 'old'}"


_made: dict[str, Any] = {}
for _name, (_build, _destructive) in corpus.CORPUS.items():
    for _edit in (None, *_destructive, *corpus.HARMLESS):
        _made[attribute(_name, _edit)] = _build(_edit, None)
globals().update(_made)
