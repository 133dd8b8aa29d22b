"""Opening an SQLite memory database: the connection's settings (WAL, FULL sync, foreign
keys, busy timeout), the check that the file is ours, the write lock, and the migrations with
their version table (store/schema.py)."""

from __future__ import annotations

import logging
import sqlite3
from urllib.parse import quote

import aiosqlite
import anyio

from smartsearch_mcp.store import files
from smartsearch_mcp.store.schema import MIGRATIONS
from smartsearch_mcp.store.turns import now
from smartsearch_mcp.types import InputError

log = logging.getLogger(__name__)


async def connect(
    target: str, busy_timeout_ms: int, read_only: bool = False
) -> aiosqlite.Connection:
    """A connection to `target` (checked to be ours before anything is written to it);
    closed again, its thread with it, when any step fails."""
    if read_only:
        uri = f"file:{quote(target)}?mode=ro"
        db = await aiosqlite.connect(
            uri, uri=True, isolation_level=None, timeout=busy_timeout_ms / 1000
        )
    else:
        db = await aiosqlite.connect(target, isolation_level=None, timeout=busy_timeout_ms / 1000)
    try:
        await db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        await check_ours_on(db, target)
        if target != ":memory:" and not read_only:
            await db.execute("PRAGMA journal_mode = WAL")
        # FULL: a turn acknowledged by remember survives power loss, not only a process crash.
        await db.execute("PRAGMA synchronous = FULL")
        await db.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        await db.close()
        raise
    return db


async def check_ours_on(db: aiosqlite.Connection, target: str) -> None:
    """Refuse another application's database before anything (WAL mode, tables) changes it."""
    async with db.execute("PRAGMA application_id") as cursor:
        row = await cursor.fetchone()
    async with db.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
        "AND name NOT LIKE 'sqlite_%'"
    ) as cursor:
        tables = [str(r[0]) async for r in cursor]
    files.check_ours(target, int(row[0]) if row else 0, tables)


async def current_version(db: aiosqlite.Connection) -> int:
    async with db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ) as cursor:
        if await cursor.fetchone() is None:
            return 0
    async with db.execute("SELECT MAX(version) FROM schema_version") as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row and row[0] is not None else 0


async def check_not_upgraded(db: aiosqlite.Connection) -> None:
    """Refuse to write into a database a newer smartsearch-mcp migrated while this process
    was running (an upgrade with a server still open): its writes could miss what the new
    schema expects, e.g. indexing done by the writer rather than by a trigger."""
    version = await current_version(db)
    if version > len(MIGRATIONS):
        raise InputError(
            f"the database was upgraded to schema version {version} by a newer smartsearch-mcp "
            f"while this process ({len(MIGRATIONS)}) was running; nothing was written — "
            "restart the server (or CLI) so it runs the new version"
        )


async def begin_immediate(db: aiosqlite.Connection, attempts: int = 5) -> None:
    """Take the database write lock. SQLite waits up to the busy timeout itself; the few
    cases where it gives up at once (e.g. WAL recovery by another process) are retried."""
    for attempt in range(1, attempts + 1):
        try:
            await db.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or attempt == attempts:
                raise
            log.info("database busy at BEGIN (attempt %d of %d): %s", attempt, attempts, exc)
            await anyio.sleep(0.05 * 2**attempt)


def is_full(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) == sqlite3.SQLITE_FULL
    return "disk is full" in str(exc)


def is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


async def migrate(db: aiosqlite.Connection) -> None:
    await begin_immediate(db)
    try:
        version = await current_version(db)
        latest = len(MIGRATIONS)
        if version > latest:
            raise InputError(
                f"the database has schema version {version}, newer than this smartsearch-mcp "
                f"understands ({latest}); upgrade smartsearch-mcp"
            )
        async with db.execute("PRAGMA application_id") as cursor:
            row = await cursor.fetchone()
        if not row or int(row[0]) != files.APPLICATION_ID:
            # Marks the file as ours (new databases, and ours from before it was set).
            await db.execute(f"PRAGMA application_id = {files.APPLICATION_ID}")
        for number, statements in enumerate(MIGRATIONS[version:], start=version + 1):
            for statement in statements:
                await db.execute(statement)
            await db.execute(
                "INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (number, now())
            )
            log.info("applied schema migration %d", number)
        await db.commit()
    except BaseException:
        await db.rollback()
        raise
