"""``StoredError``: an exception read back from a checkpoint, as plain data."""

from __future__ import annotations

from pausepoint.errors import PausepointError

__all__ = ["StoredError"]


class StoredError(PausepointError):
    """An exception that was stored in a checkpoint and read back.

    The original class is never imported when reading (that would let a stored
    row choose what code runs); only its name and message are kept.

    Attributes:
        type_name: The original class as ``module.QualName``, e.g. ``builtins.ValueError``.
        message: ``str()`` of the original exception.

    """

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(type_name, message)
        self.type_name = type_name
        self.message = message

    def __str__(self) -> str:
        return f"{self.type_name}: {self.message}" if self.message else self.type_name

    def __repr__(self) -> str:
        return f"StoredError(type_name={self.type_name!r}, message={self.message!r})"
