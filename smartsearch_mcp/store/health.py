"""A database's health as `doctor` reports it: opened read-only (never created or changed),
SQLite's integrity check (or the server's), and whether its turns can be read."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from smartsearch_mcp.types import StoreStats


@dataclass
class DatabaseHealth:
    """The stats when the turns could be read, and the problems found (none: healthy)."""

    stats: StoreStats | None = None
    problems: list[str] = field(default_factory=list)


async def check_database(db: str, busy_timeout_ms: int) -> DatabaseHealth:
    """Open `db` read-only, run its integrity check and read its stats. Errors opening it
    (OSError, sqlite3.Error, SmartSearchError) propagate."""
    from smartsearch_mcp.store import open_store

    store = await open_store(db, busy_timeout_ms=busy_timeout_ms, read_only=True)
    try:
        health = DatabaseHealth(problems=await store.integrity_check())
        try:
            health.stats = await store.stats()
        except sqlite3.DatabaseError as exc:
            health.problems.append(f"reading the turns: {exc}")
        return health
    finally:
        await store.close()
