"""`doctor`'s database check: read-only, the integrity check's problems and the stats
(smartsearch_mcp/store/health.py)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.store.health import check_database
from smartsearch_mcp.types import SmartSearchError, TurnInput


def test_a_healthy_database_has_stats_and_no_problems_and_is_left_unchanged(tmp_path: Path):
    db = tmp_path / "m.db"

    async def run() -> None:
        store = await SQLiteStore.open(db)
        await store.remember("ns", "s1", [TurnInput("one"), TurnInput("two")])
        await store.close()
        before = db.read_bytes()
        health = await check_database(str(db), 1000)
        assert health.problems == []
        assert health.stats is not None and health.stats.turns == 2
        assert db.read_bytes() == before

    anyio.run(run)


def test_a_file_that_is_not_a_database_is_an_error_to_report(tmp_path: Path):
    db = tmp_path / "m.db"
    db.write_bytes(b"not a database at all" * 100)
    with pytest.raises((SmartSearchError, OSError)):
        anyio.run(check_database, str(db), 1000)
