"""Secrets already stored: turns that earlier releases (or a memory with redaction off) kept
with API keys or passwords in them, found and rewritten as [REDACTED:kind] placeholders."""

from __future__ import annotations

from collections import Counter

from smartsearch_mcp.redact import redact
from smartsearch_mcp.store.base import Store
from smartsearch_mcp.types import Turn


async def stored_secrets(
    store: Store, namespace: str | None
) -> tuple[int, list[tuple[Turn, str]], Counter[str]]:
    """(turns scanned, [(turn, its text redacted)] for those holding secrets, kinds found),
    over the turns of `namespace` (None: of every namespace)."""
    found: list[tuple[Turn, str]] = []
    kinds: Counter[str] = Counter()
    scanned = 0
    async for turn in store.iter_turns(namespace):
        scanned += 1
        redacted = redact(turn.text)
        if redacted.count:
            found.append((turn, redacted.text))
            kinds.update(redacted.kinds)
    return scanned, found, kinds


async def redact_stored_secrets(store: Store) -> int:
    """Rewrite the turns holding secrets in the namespaces `store` redacts (as `remember`
    would have stored them), in one transaction; the number of turns rewritten."""
    _, holding, _ = await stored_secrets(store, None)
    holding = [(turn, text) for turn, text in holding if store.redacts(turn.namespace)]
    if not holding:
        return 0
    turns, texts = zip(*holding, strict=True)
    return await store.rewrite_texts(list(turns), list(texts))
