"""Schema version 7: ``pausepoint_blobs``, large channel values apart (``_sql_values``).

Kept apart from ``_sql_values`` so that ``_dialect`` (which lists every version) need
not import the flows. docs/format.md describes the table.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["BLOBS_MIGRATION"]

_TABLE = """CREATE TABLE IF NOT EXISTS pausepoint_blobs (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL,
    version TEXT NOT NULL,
    type TEXT NOT NULL,
    value {blob} NOT NULL,
    base TEXT,
    anchor TEXT NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version))"""
# A value's rows are read by the full value its deltas start from (one lookup).
_ANCHOR_INDEX = """CREATE INDEX IF NOT EXISTS pausepoint_blobs_anchor
    ON pausepoint_blobs (thread_id, checkpoint_ns, channel, anchor)"""
_LZ4 = """DO $$ BEGIN
    ALTER TABLE pausepoint_blobs ALTER COLUMN value SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value OR syntax_error THEN
    RAISE NOTICE 'pausepoint: this server has no lz4; values stay compressed with pglz';
END $$"""
BLOBS_MIGRATION: tuple[str | Mapping[str, str], ...] = (_TABLE, _ANCHOR_INDEX, {"postgres": _LZ4})
"""Schema version 7: the table of channel values (docs/format.md)."""
