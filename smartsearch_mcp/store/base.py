"""The store contract: what the recall pipeline (`MemoryStore`) and the memory service, the
server, the CLI, the importers and the benchmarks (`Store`) need from a database. SQLite
(store/sqlite.py) and PostgreSQL (store/postgres.py) implement it; tests/store/test_contract.py
runs the same tests against both.

Guarantees every backend keeps:
- turns are stored verbatim and never edited; ids only grow and are never reused, and one
  `remember` call's ids are given in input order, in one transaction;
- `scope_fingerprint` (turns, highest id) changes whenever a turn enters or leaves the scope,
  whoever wrote it (this process, another one, another machine);
- `data_version` changes whenever anyone commits a write of turns: the cheap check that tells
  a cache to compare fingerprints;
- embeddings are opaque bytes keyed by (model, turn id, passage start); any vector kind fits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from smartsearch_mcp.store.turns import PreparedTurn
from smartsearch_mcp.types import (
    ForgetResult,
    RememberResult,
    Scope,
    SessionInfo,
    StoreStats,
    Turn,
    TurnInput,
)


class MemoryStore(Protocol):
    """What the recall pipeline needs from a store."""

    async def scope_turns(self, scope: Scope) -> list[Turn]: ...

    async def scope_size(self, scope: Scope) -> tuple[int, int, int]: ...

    async def scope_turns_after(
        self, scope: Scope, after_id: int, through_id: int
    ) -> list[Turn]: ...

    async def scope_fingerprint(self, scope: Scope) -> tuple[int, int]: ...

    def scope_pages(
        self, scope: Scope, batch: int = 2000, through_id: int | None = None
    ) -> AsyncIterator[list[Turn]]: ...

    async def search_fts(self, match: str, scope: Scope, limit: int) -> list[tuple[int, float]]: ...

    async def timeline_turns(
        self, scope: Scope, limit: int, latest: bool = False
    ) -> list[Turn]: ...

    async def fts_doc_counts(
        self, phrases: Sequence[str], at_most: int | None = None
    ) -> dict[str, int]: ...

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


class Store(MemoryStore, Protocol):
    """Everything the memory service, server, CLI, importers and benchmarks use."""

    # Where the memory is, as shown in messages (a file path, or a URL without its password).
    path: str
    read_only: bool
    max_turns_per_call: int
    max_text_chars: int
    max_call_chars: int

    async def close(self) -> None: ...

    async def schema_version(self) -> int: ...

    # writes
    async def remember(
        self, namespace: str, session_id: str | None, turns: Sequence[TurnInput]
    ) -> RememberResult: ...

    def call_batches(self, turns: Sequence[TurnInput]) -> list[Sequence[TurnInput]]: ...

    redact_secrets: bool
    verbatim_namespaces: frozenset[str]

    def redacts(self, namespace: str | None) -> bool: ...

    def check_turns(
        self, turns: Sequence[TurnInput], namespace: str | None = None
    ) -> list[PreparedTurn]: ...

    async def rewrite_texts(self, turns: Sequence[Turn], texts: Sequence[str]) -> int: ...

    async def forget(
        self,
        namespace: str,
        *,
        ids: Sequence[int] | None = None,
        session_id: str | None = None,
        whole_namespace: bool = False,
    ) -> ForgetResult: ...

    # reads
    async def session_turns(self, namespace: str, session_id: str) -> list[Turn]: ...

    async def session_page(
        self, namespace: str, session_id: str, limit: int, offset: int = 0
    ) -> list[Turn]: ...

    async def session_speakers(
        self, namespace: str, session_ids: Sequence[str]
    ) -> dict[str, list[str]]: ...

    async def list_sessions(
        self, namespace: str | None = None, limit: int = 1000, offset: int = 0
    ) -> list[SessionInfo]: ...

    async def namespaces(self) -> dict[str, int]: ...

    async def stats(self, namespace: str | None = None) -> StoreStats: ...

    def iter_scope_turns(
        self, scope: Scope, batch: int = 1000, contains: str | None = None
    ) -> AsyncIterator[Turn]: ...

    async def count_turns(self, scope: Scope) -> int: ...

    def iter_turns(
        self, namespace: str | None = None, batch: int = 1000
    ) -> AsyncIterator[Turn]: ...

    # maintenance
    async def backup(self, destination: str | Path) -> None: ...

    # copying a memory between databases (store/transfer.py)
    async def table_rows(
        self, table: str, after: Sequence[Any] | None, limit: int
    ) -> list[tuple[Any, ...]]: ...

    async def table_count(self, table: str) -> int: ...

    async def put_table_rows(self, table: str, rows: Sequence[Sequence[Any]]) -> int: ...

    async def integrity_check(self) -> list[str]: ...
