"""Secrets stored before redaction: found without showing them, and rewritten only in the
namespaces the store redacts (smartsearch_mcp/store/secrets.py)."""

from __future__ import annotations

from pathlib import Path

import anyio

from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.store.secrets import redact_stored_secrets, stored_secrets
from smartsearch_mcp.types import TurnInput

KEY = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8I9j0" * 4


async def _store_with_secrets(db: Path) -> SQLiteStore:
    """Turns stored verbatim (as an earlier release did), then redaction switched on with one
    namespace kept verbatim."""
    store = await SQLiteStore.open(db)
    store.redact_secrets = False
    await store.remember("work", "s1", [TurnInput(f"my key is {KEY}"), TurnInput("no secret")])
    await store.remember("notes", "s2", [TurnInput(f"keep {KEY} here")])
    store.redact_secrets = True
    store.verbatim_namespaces = frozenset({"notes"})
    return store


def test_the_scan_finds_each_turn_holding_a_secret_and_its_kind(tmp_path: Path):
    async def run() -> tuple[int, list[str], list[str]]:
        store = await _store_with_secrets(tmp_path / "m.db")
        try:
            scanned, found, kinds = await stored_secrets(store, "work")
        finally:
            await store.close()
        return scanned, [text for _, text in found], list(kinds)

    scanned, texts, kinds = anyio.run(run)
    assert scanned == 2 and len(texts) == 1 and KEY not in texts[0]
    assert "[REDACTED:" in texts[0] and kinds


def test_redacting_rewrites_only_the_namespaces_the_store_redacts(tmp_path: Path):
    async def run() -> tuple[int, list[str]]:
        store = await _store_with_secrets(tmp_path / "m.db")
        try:
            rewritten = await redact_stored_secrets(store)
            texts = [turn.text async for turn in store.iter_turns(None)]
        finally:
            await store.close()
        return rewritten, texts

    rewritten, texts = anyio.run(run)
    assert rewritten == 1
    assert [KEY in text for text in texts] == [False, False, True]  # "notes" is verbatim


def test_redacting_a_store_without_secrets_rewrites_nothing(tmp_path: Path):
    async def run() -> int:
        store = await SQLiteStore.open(tmp_path / "m.db")
        try:
            await store.remember("work", "s1", [TurnInput("nothing to hide")])
            return await redact_stored_secrets(store)
        finally:
            await store.close()

    assert anyio.run(run) == 0
