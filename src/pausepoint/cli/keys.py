"""Where the command line finds encryption keys: ``$PAUSEPOINT_KEYS`` or ``--keys MODULE:ATTR``.

``PAUSEPOINT_KEYS`` holds ``id:base64key`` items separated by commas, the sealing key
first (``k2:...,k1:...``). ``--keys app.secrets:ring`` names an attribute of an
importable module: a `pausepoint.crypto.KeyRing` (or another sealer), a mapping of
ids to 32-byte keys, or a function returning either (called once). Every command that
opens ``--db`` uses ``PAUSEPOINT_KEYS`` when it is set; keys are never read from the
database (docs/security.md).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from pausepoint.cli.views import CliError

if TYPE_CHECKING:
    from pausepoint.checkpoint._sealing import Sealer

__all__ = ["ENV", "keys_from_env", "keys_from_spec"]

ENV = "PAUSEPOINT_KEYS"


def _ring(keys: Mapping[str, bytes]) -> Sealer:
    try:
        from pausepoint.crypto import KeyRing
    except ImportError as exc:
        raise CliError(str(exc)) from None
    try:
        return KeyRing(keys)
    except ValueError as exc:
        raise CliError(f"bad keys: {exc}") from None


def keys_from_env() -> Sealer | None:
    """The key ring ``$PAUSEPOINT_KEYS`` describes, or None when it is unset or empty."""
    if not os.environ.get(ENV, "").strip():
        return None
    try:
        from pausepoint.crypto import KeyRing
    except ImportError as exc:
        raise CliError(str(exc)) from None
    try:
        return KeyRing.from_env(ENV)
    except ValueError as exc:
        raise CliError(f"bad keys: {exc}") from None


def keys_from_spec(spec: str) -> Sealer:
    """The sealer ``MODULE:ATTR`` names (see the module's docstring)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CliError(f"--keys wants MODULE:ATTRIBUTE, not {spec!r}")
    if os.getcwd() not in sys.path:  # a module beside the command, as --graph finds it
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise CliError(f"--keys {spec!r}: {exc}") from None
    if callable(found) and not hasattr(found, "seal"):
        found = found()
    if isinstance(found, Mapping):
        return _ring(dict(found))  # pyright: ignore[reportUnknownArgumentType]
    if not hasattr(found, "seal") or not hasattr(found, "open"):
        raise CliError(f"--keys {spec!r} is neither a KeyRing nor a mapping of keys")
    return cast("Sealer", found)
