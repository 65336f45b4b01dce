"""``pausepoint serve``: the LangGraph Server API over pausepoint's own database.

Records (assistants, threads, runs) live in the same SQLite file or PostgreSQL
database as the checkpoints; runs are executed by workers in the serving process.
The HTTP layer (``pausepoint.server.app``) calls ``RunService`` only. See
docs/server.md.
"""

from __future__ import annotations
