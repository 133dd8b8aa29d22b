"""Persistence behind one contract (store/base.py): `SQLiteStore`, the embedded default, and
`PostgresStore` (store/postgres.py, the `postgres` extra) for a memory a team shares.
`open_store` picks the backend from the database's name: a `postgresql://` URL or a path."""

from __future__ import annotations

from smartsearch_mcp.store.base import MemoryStore, Store
from smartsearch_mcp.store.sqlite import SQLiteStore
from smartsearch_mcp.store.turns import check_name

__all__ = ["MemoryStore", "SQLiteStore", "Store", "check_name"]
