"""Persistence behind one contract (store/base.py): `SQLiteStore`, the embedded default, and
`PostgresStore` (store/postgres.py, the `postgres` extra) for a memory a team shares.
`open_store` picks the backend from the database's name: a `postgresql://` URL or a path."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from smartsearch_mcp.postgres_url import is_postgres_url, mask_url
from smartsearch_mcp.store.base import MemoryStore, Store
from smartsearch_mcp.store.files import DatabaseError
from smartsearch_mcp.store.sqlite import DEFAULT_MAX_CALL_CHARS, SQLiteStore
from smartsearch_mcp.store.turns import check_name

if TYPE_CHECKING:
    from smartsearch_mcp.config import StoreConfig

__all__ = [
    "DatabaseError",
    "MemoryStore",
    "SQLiteStore",
    "Store",
    "check_name",
    "describe_database",
    "is_postgres_url",
    "open_configured_store",
    "open_store",
]

POSTGRES_EXTRA = "pip install -e '.[postgres]' (or pip install 'smartsearch-mcp[postgres]')"


async def open_store(
    target: str | Path,
    *,
    busy_timeout_ms: int = 30_000,
    max_turns_per_call: int = 10_000,
    max_text_chars: int = 1_000_000,
    read_only: bool = False,
    max_call_chars: int = DEFAULT_MAX_CALL_CHARS,
    redact_secrets: bool = True,
    verbatim_namespaces: Sequence[str] = (),
) -> Store:
    """The store at `target`: PostgreSQL for a `postgresql://` (or `postgres://`) URL, else
    the SQLite file at that path (or ":memory:"). `busy_timeout_ms` is SQLite's; secrets
    are redacted from what it stores unless `redact_secrets` is off (or the namespace is
    one of `verbatim_namespaces`)."""
    store = await _open(
        target, busy_timeout_ms, max_turns_per_call, max_text_chars, read_only, max_call_chars
    )
    store.redact_secrets = redact_secrets
    store.verbatim_namespaces = frozenset(verbatim_namespaces)
    return store


async def open_configured_store(
    target: str | Path, settings: StoreConfig, *, read_only: bool = False
) -> Store:
    """The store at `target` with the limits and redaction of the config's [store] table."""
    return await open_store(
        target,
        busy_timeout_ms=settings.busy_timeout_ms,
        max_turns_per_call=settings.max_turns_per_call,
        max_text_chars=settings.max_text_chars,
        read_only=read_only,
        max_call_chars=settings.max_call_chars,
        redact_secrets=settings.redact_secrets,
        verbatim_namespaces=settings.verbatim_namespaces,
    )


async def _open(
    target: str | Path,
    busy_timeout_ms: int,
    max_turns_per_call: int,
    max_text_chars: int,
    read_only: bool,
    max_call_chars: int,
) -> Store:
    if is_postgres_url(target):
        try:
            from smartsearch_mcp.store.postgres import PostgresStore
        except ImportError as exc:
            raise DatabaseError(
                f"{mask_url(str(target))} is a PostgreSQL database, and the PostgreSQL driver "
                f"is not installed: {POSTGRES_EXTRA}"
            ) from exc
        return await PostgresStore.open(
            str(target).strip(),
            max_turns_per_call=max_turns_per_call,
            max_text_chars=max_text_chars,
            read_only=read_only,
            max_call_chars=max_call_chars,
        )
    return await SQLiteStore.open(
        target,
        busy_timeout_ms=busy_timeout_ms,
        max_turns_per_call=max_turns_per_call,
        max_text_chars=max_text_chars,
        read_only=read_only,
        max_call_chars=max_call_chars,
    )


def describe_database(target: str | Path) -> str:
    """How to name `target` in a message: a URL without its password, a path as given."""
    return mask_url(str(target)) if is_postgres_url(target) else str(target)
