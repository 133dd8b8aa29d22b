"""Opening a PostgreSQL memory: its schema version, the migrations (store/postgres_schema.py)
run under an advisory lock, a driver error's first line with the password masked, and
schemas of their own for benchmarks. Imported through store/postgres.py, which names the
`postgres` extra when the driver is missing."""

from __future__ import annotations

import logging
from typing import Any

import psycopg

from smartsearch_mcp.postgres_url import scrub
from smartsearch_mcp.store.files import DatabaseError
from smartsearch_mcp.store.postgres_schema import EXTENSIONS, MIGRATIONS
from smartsearch_mcp.store.turns import now
from smartsearch_mcp.types import InputError

log = logging.getLogger(__name__)

# Whether this schema (the first of the search path) holds the version table.
HAS_VERSION_TABLE = (
    "SELECT to_regclass(quote_ident(current_schema()) || '.schema_version') IS NOT NULL"
)
# A key for pg_advisory_lock: one migration at a time, whichever process starts.
MIGRATION_LOCK = 0x53536D63


async def schema_version(cur: psycopg.AsyncCursor[Any]) -> int:
    """The schema version of the memory in the current schema (0 for none yet)."""
    await cur.execute(HAS_VERSION_TABLE)
    row = await cur.fetchone()
    if not row or not row[0]:
        return 0
    await cur.execute("SELECT coalesce(max(version), 0) FROM schema_version")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def migrate(conn: psycopg.AsyncConnection[Any], path: str) -> None:
    """Bring the memory's schema to the latest version (nothing to do when it is current)."""
    async with conn.cursor() as cur:
        if await schema_version(cur) == len(MIGRATIONS):
            return  # current: no lock, no DDL (a least-privilege role, a read-only replica)
    # A session lock taken before the transaction: the migration's transaction then starts
    # after the one before it committed, and sees its tables (a transaction that waited for
    # a lock inside itself could still read the catalog as it was).
    await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        async with conn.transaction(), conn.cursor() as cur:
            await _migrate_locked(cur, path)
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))


async def _migrate_locked(cur: psycopg.AsyncCursor[Any], path: str) -> None:
    await cur.execute(HAS_VERSION_TABLE)
    row = await cur.fetchone()
    version = 0
    if row and row[0]:
        await cur.execute("SELECT coalesce(max(version), 0) FROM schema_version")
        row = await cur.fetchone()
        version = int(row[0]) if row else 0
    else:
        await cur.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() "
            "AND tablename IN ('turns', 'sessions')"
        )
        row = await cur.fetchone()
        if row and int(row[0]):
            raise DatabaseError(
                f"the database {path} holds tables named turns or sessions that "
                "are not smartsearch-mcp's: nothing was changed — give the memory a "
                "database (or schema, through options=-csearch_path=…) of its own"
            )
    latest = len(MIGRATIONS)
    if version < latest:
        await _shared_extensions(cur)
    if version > latest:
        raise InputError(
            f"the database has schema version {version}, newer than this "
            f"smartsearch-mcp understands ({latest}); upgrade smartsearch-mcp"
        )
    for number, statements in enumerate(MIGRATIONS[version:], start=version + 1):
        for statement in statements:
            await cur.execute(statement)
        await cur.execute(
            "INSERT INTO schema_version (version, applied_at) VALUES (%s, %s)",
            (number, now()),
        )
        log.info("applied PostgreSQL schema migration %d", number)


async def _shared_extensions(cur: psycopg.AsyncCursor[Any]) -> None:
    """Create the extensions the migrations need in `public` when it is on the search path
    and this role may create there. An extension is one per database: created by a
    migration's plain `CREATE EXTENSION` it would land in the memory's own schema (the first
    of the search path), where a memory in another schema of the database does not find its
    operator class and dictionary, and dropping that schema would drop them under the other
    memory (two `bench locomo --db URL` at once). Present already, anywhere, it is left as
    it is; without the privilege the migration's own statements create it or say why not."""
    await cur.execute(
        "SELECT 'public' = ANY(current_schemas(false)) AND has_schema_privilege('public', 'CREATE')"
    )
    row = await cur.fetchone()
    if not row or not row[0]:
        return
    for name in EXTENSIONS:
        await cur.execute("SELECT 1 FROM pg_extension WHERE extname = %s", (name,))
        if await cur.fetchone() is None:
            await cur.execute(f"CREATE EXTENSION IF NOT EXISTS {name} SCHEMA public")


def first_line(exc: BaseException, url: str) -> str:
    """The driver's message, its first line (PostgreSQL adds the statement after it), with
    the URL's password masked."""
    lines = str(exc).strip().splitlines()
    return scrub(lines[0], url) if lines else type(exc).__name__


async def create_schema(url: str, name: str) -> None:
    """Create the schema `name` in the database at `url` (for a memory of its own there)."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f'CREATE SCHEMA "{_identifier(name)}"')


async def drop_schema(url: str, name: str) -> None:
    """Drop the schema `name` and everything in it."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{_identifier(name)}" CASCADE')


def _identifier(name: str) -> str:
    if not name.replace("_", "").isalnum() or not name.isascii():
        raise InputError(f"schema names are ASCII letters, digits and _, got {name!r}")
    return name
