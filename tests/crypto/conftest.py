"""Fixtures for the encryption tests: key rings, and PostgreSQL as the saver tests use it."""

from __future__ import annotations

import pytest
from tests.savers.conftest import pg_kwargs, pg_schema, pg_url

from pausepoint.crypto import KeyRing, new_key

__all__ = ["pg_kwargs", "pg_schema", "pg_url"]

KEY1 = bytes(range(32))
KEY2 = bytes(range(32, 64))


@pytest.fixture
def ring() -> KeyRing:
    """A ring of one key, ``k1``."""
    return KeyRing({"k1": KEY1})


@pytest.fixture
def other_ring() -> KeyRing:
    """A ring whose only key is not ``ring``'s."""
    return KeyRing({"k1": new_key()})
