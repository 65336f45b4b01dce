"""Metadata filters as SQL conditions: what a database can check exactly.

Shared by ``list`` (``_sql.list_flow``) and ``list_pending`` (``_sql_pending``); what
is not pushed down is checked in Python by the caller.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pausepoint.checkpoint._dialect import Dialect
from pausepoint.checkpoint._sealing import CLEAR_METADATA

__all__ = ["filter_sql"]

_SIMPLE_KEY = re.compile(r"[A-Za-z0-9_]+")


def filter_sql(
    dialect: Dialect, filter: Mapping[str, Any], sealed: bool = False
) -> tuple[list[str], list[Any], bool]:
    """Build SQL conditions for the filter items a database can check exactly.

    Only str and int (not bool) values of simple keys are pushed down (``sealed``:
    only keys kept in clear, `CLEAR_METADATA`); the rest is checked in Python.
    Returns ``(conditions, params, everything_pushed)``.
    """
    conds: list[str] = []
    params: list[Any] = []
    pushable = {
        k: v
        for k, v in filter.items()
        if _SIMPLE_KEY.fullmatch(k)
        and (type(v) is str or type(v) is int)
        and (not sealed or k in CLEAR_METADATA)
    }
    if dialect.name == "postgres" and pushable:
        conds.append("metadata @> ?::jsonb")
        params.append(json.dumps(pushable))
    else:
        for k, v in pushable.items():
            conds.append("json_extract(metadata, ?) = ?")
            params.extend((f"$.{k}", v))
    return conds, params, len(pushable) == len(filter)
