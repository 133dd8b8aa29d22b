"""What a recall that returns no passage says: an empty scope, or a budget too small for the
best passage that matched — never "nothing is stored" when something matched."""

from __future__ import annotations

from pathlib import Path

import pytest

from smartsearch_mcp.config import Config
from smartsearch_mcp.memory import Memory
from smartsearch_mcp.types import TurnInput

pytestmark = pytest.mark.anyio

LEXICAL = Config.load("lexical")
LONG = "The quarterly planning offsite moved to a guesthouse in Hallstatt, " * 12


async def test_a_budget_too_small_for_the_best_passage_says_so(tmp_path: Path) -> None:
    memory = await Memory.open(LEXICAL, tmp_path / "m.db", "default")
    try:
        await memory.remember([TurnInput(speaker="Tove", text=LONG, timestamp="2026-11-02")])
        result = await memory.recall("Where is the planning offsite?", max_tokens=16)
    finally:
        await memory.close()

    assert result.passages == []
    [warning] = result.warnings
    assert "1 passage matched" in warning and "max_tokens=16" in warning
    assert "no turns are stored" not in warning


async def test_an_empty_scope_says_nothing_is_stored(tmp_path: Path) -> None:
    memory = await Memory.open(LEXICAL, tmp_path / "m.db", "default")
    try:
        result = await memory.recall("Where is the planning offsite?")
    finally:
        await memory.close()

    assert result.passages == []
    assert any("no turns are stored in namespace 'default'" in w for w in result.warnings)
