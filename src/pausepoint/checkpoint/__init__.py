"""Checkpoint savers: the protocol (``base``) and the memory, SQLite and PostgreSQL savers."""
