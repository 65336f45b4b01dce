"""Checkpoint savers: the protocol (``base``) and the memory, SQLite and PostgreSQL savers.

Also the values of ``saver.list_pending``: `PendingQuestion` and `PendingPage`.
"""

from pausepoint.checkpoint.questions import PendingPage, PendingQuestion, UnreadableQuestion

__all__ = ["PendingPage", "PendingQuestion", "UnreadableQuestion"]
