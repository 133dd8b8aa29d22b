"""The database file on disk: created private, recognised as ours, and its errors explained.

Memories are personal: a new data directory is 0700, a database and its -wal/-shm files
0600 (an existing group- or world-readable database is tightened, and the log says so).
A file is ours when its SQLite `application_id` says so (or, for databases created before
it was set, when it holds our schema); anything else non-empty is refused untouched.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from pathlib import Path

from smartsearch_mcp.paths import make_private_dir
from smartsearch_mcp.types import SmartSearchError

log = logging.getLogger(__name__)

# PRAGMA application_id of every database this project creates ("SSmc").
APPLICATION_ID = 0x53536D63
# The tables that make an old database (from before application_id was set) ours.
OUR_TABLES = frozenset({"schema_version", "turns", "sessions"})
SIDE_FILES = ("-wal", "-shm")


class DatabaseError(SmartSearchError):
    """The database file cannot be used: missing, unreadable, corrupt, foreign or full.
    The message names the file and what to do."""


class ForeignDatabaseError(DatabaseError):
    """The file is another application's SQLite database; nothing was changed."""


def create_private(file: Path) -> None:
    """Make `file`'s directory (0700 when created here) and the file itself (0600) when they
    are missing. A directory that exists is left as the user made it: the files in it are
    private whatever its mode."""
    make_private_dir(file.parent)
    if not file.exists():
        # Private from the first byte: memories are personal.
        fd = os.open(file, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)


def tighten_modes(file: Path) -> None:
    """Set the database and its -wal/-shm files to 0600 when others may read them."""
    for path in (file, *(Path(f"{file}{suffix}") for suffix in SIDE_FILES)):
        try:
            info = path.stat()
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(info.st_mode) or not info.st_mode & 0o077:
            continue
        try:
            path.chmod(0o600)
        except OSError as exc:
            log.warning(
                "%s is readable by others (mode %o) and could not be made private: %s",
                path,
                stat.S_IMODE(info.st_mode),
                exc,
            )
            continue
        log.warning(
            "%s was readable by other users (mode %o); made it private (0600)",
            path,
            stat.S_IMODE(info.st_mode),
        )


def check_ours(path: str, application_id: int, tables: list[str]) -> None:
    """Raise ForeignDatabaseError unless the database is ours or empty."""
    if application_id == APPLICATION_ID:
        return
    if application_id == 0 and (not tables or set(tables) >= OUR_TABLES):
        return
    shown = ", ".join(sorted(tables)[:8]) + (", …" if len(tables) > 8 else "")
    owner = f"application_id {application_id:#x}" if application_id else f"tables: {shown}"
    raise ForeignDatabaseError(
        f"{path} belongs to another application ({owner}), not smartsearch-mcp: nothing "
        "was changed — point --db at a file of its own (a new name creates a database)"
    )


def describe_error(path: str | Path, exc: BaseException) -> DatabaseError:
    """A DatabaseError naming `path` and the fix for an SQLite or OS error on it."""
    if isinstance(exc, DatabaseError):
        return exc
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc)
    if text.startswith("Could not decode"):  # SQLite quotes the stored text: never shown
        text = "a stored text is not valid UTF-8"
    if primary == sqlite3.SQLITE_NOTADB or (primary is None and "not a database" in text):
        # SQLite reads the header before anything is written: the file is left as it was.
        return DatabaseError(
            f"{path} is not an SQLite database (smartsearch-mcp keeps its memory in one), or "
            "its header is damaged: nothing was changed — point --db at another file (a new "
            f"name creates a database), or run `smartsearch-mcp doctor --db {path}`"
        )
    if primary == sqlite3.SQLITE_CORRUPT or (
        primary is None and any(sign in text for sign in ("malformed", "not valid UTF-8"))
    ):
        return DatabaseError(
            f"the database file {path} is corrupt ({text}): run `smartsearch-mcp doctor "
            f"--db {path}` for details; restore from a backup or an export "
            "(`smartsearch-mcp import FILE --format jsonl`), or point --db at another file"
        )
    if primary == sqlite3.SQLITE_FULL or "disk is full" in text:
        return DatabaseError(
            f"the disk holding {path} is full ({text}): nothing was stored — free some space "
            "and try again"
        )
    if primary in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM) or (
        isinstance(exc, PermissionError)
    ):
        return DatabaseError(
            f"cannot open the database {path} for writing ({text}): check that you may write "
            "the file and its directory (SQLite also creates -wal and -shm files next to it), "
            "or point --db at another file"
        )
    if isinstance(exc, OSError):
        return DatabaseError(
            f"cannot create or open the database {path} ({exc.strerror or exc}): point --db "
            "at a file in a directory you can write"
        )
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return DatabaseError(
            f"the database {path} stayed locked by another process ({text}): try again, or "
            "raise store.busy_timeout_ms"
        )
    if primary == sqlite3.SQLITE_IOERR:
        return DatabaseError(f"reading or writing {path} failed ({text}): check the disk")
    return DatabaseError(f"the database {path} failed: {text}")
