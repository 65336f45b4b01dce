"""Test helpers for savers, shipped as library code (they are public API).

- [`SaverConformance`][]: the contract tests every saver must pass; subclass it
  in a test module with a ``saver`` fixture (needs pytest and pytest-asyncio). It
  includes the lease and guarded-write tests (``lease_suite``); a saver whose leases
  follow its database's clock sets ``clock_source = "database"``.
- [`FaultySaver`][]: wraps a saver and makes chosen calls fail, for tests of
  failure paths.
"""

from pausepoint.testing.faults import FaultySaver, InjectedFault
from pausepoint.testing.ops import AsyncOps, SaverOps, SyncOps
from pausepoint.testing.saver_suite import SaverConformance, make_checkpoint, make_metadata

__all__ = [
    "AsyncOps",
    "FaultySaver",
    "InjectedFault",
    "SaverConformance",
    "SaverOps",
    "SyncOps",
    "make_checkpoint",
    "make_metadata",
]
