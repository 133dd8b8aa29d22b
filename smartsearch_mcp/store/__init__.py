"""Persistence. `SQLiteStore` is the one backend today; the pipeline depends only on the
methods it uses (see `MemoryStore`), so a server database can be added beside it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from smartsearch_mcp.store.sqlite import SQLiteStore, check_name
from smartsearch_mcp.types import Scope, Turn

__all__ = ["MemoryStore", "SQLiteStore", "check_name"]


class MemoryStore(Protocol):
    """What the recall pipeline needs from a store: a server database backend implements
    these and the pipeline runs on it unchanged."""

    async def scope_turns(self, scope: Scope) -> list[Turn]: ...

    async def scope_size(self, scope: Scope) -> tuple[int, int, int]: ...
    async def scope_fingerprint(self, scope: Scope) -> tuple[int, int]: ...

    def scope_pages(
        self, scope: Scope, batch: int = 2000, through_id: int | None = None
    ) -> AsyncIterator[list[Turn]]: ...

    async def search_fts(self, match: str, scope: Scope, limit: int) -> list[tuple[int, float]]: ...

    async def fts_doc_counts(self, phrases: Sequence[str]) -> dict[str, int]: ...

    async def turn_count_estimate(self) -> int: ...

    async def get_turns(
        self, ids: Sequence[int], namespaces: Sequence[str] | None = None
    ) -> list[Turn]: ...

    async def data_version(self) -> int: ...

    async def previous_turns(self, ids: Sequence[int]) -> dict[int, Turn]: ...

    async def get_embeddings(
        self, model: str, keys: Sequence[tuple[int, int]]
    ) -> dict[tuple[int, int], bytes]: ...

    async def put_embeddings(self, model: str, items: Sequence[tuple[int, int, bytes]]) -> None: ...

    async def turns_without_embeddings(
        self, model: str, limit: int, after_id: int = 0
    ) -> list[Turn]: ...

    async def count_turns_without_embeddings(self, model: str) -> int: ...
