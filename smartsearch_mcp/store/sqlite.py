"""The SQLite store, the embedded default: the store contract (store/base.py) on one
database file. Opening, the write lock and migrations are in store/sqlite_open.py; what is
shared with PostgreSQL in store/turns.py (input checks, row conversion) and store/reads.py
(the reads both run, their SQL built for either dialect in store/queries.py). Here: writes,
full-text search (FTS5), and what only SQLite has (backup, PRAGMA data_version).

Turns are stored verbatim. The FTS5 index (`turns_fts`, external content) changes in the
same transaction as the turns: `remember` indexes the turns it inserts itself, with one
`INSERT INTO turns_fts … SELECT` per call (migration 3 dropped the per-row insert trigger, so
FTS5 builds one segment per call), and triggers take deleted turns out of it and re-index a
turn whose text or speaker is updated. Any new code that inserts turns must index them the
same way. Writes go through one connection, one transaction at a
time (`_write_transaction`): tasks of this process queue on a lock, other processes queue on
SQLite's lock with `BEGIN IMMEDIATE` and a busy timeout, so nobody sees "database is locked".
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite
import anyio
import anyio.to_thread

from smartsearch_mcp.store import files
from smartsearch_mcp.store import queries as sql
from smartsearch_mcp.store.dedupe import match_resent
from smartsearch_mcp.store.reads import SharedReads
from smartsearch_mcp.store.schema import MIGRATIONS
from smartsearch_mcp.store.sqlite_open import (
    begin_immediate,
    check_not_upgraded,
    connect,
    current_version,
    is_full,
    migrate,
)
from smartsearch_mcp.store.turns import (
    CONTEXT_SUFFIX,
    DEFAULT_MAX_CALL_CHARS,
    MAX_ID,
    MAX_NAME_CHARS,
    RETRY_WINDOW,
    ROLE_ALIASES,
    TRANSFER_TABLES,
    PreparedTurn,
    SharedValues,
    StorageFullError,
    TurnChecks,
    call_digest,
    check_forget_found,
    check_name,
    chunks,
    forget_request,
    iso,
    new_session_id,
    new_turn_rows,
    now,
    recorded_call_outcome,
    row_to_turn,
    rows_to_turns,
    stored_identity_hash,
)
from smartsearch_mcp.types import (
    ForgetResult,
    InputError,
    RememberResult,
    Scope,
    Turn,
    TurnInput,
)

# Re-exported: callers import these from here.
__all__ = [
    "CONTEXT_SUFFIX",
    "DEFAULT_MAX_CALL_CHARS",
    "MAX_ID",
    "MAX_NAME_CHARS",
    "ROLE_ALIASES",
    "PreparedTurn",
    "SQLiteStore",
    "StorageFullError",
    "check_name",
]

log = logging.getLogger(__name__)
# aiosqlite logs every statement with its parameters at DEBUG, i.e. the memories' text:
# never logged, whatever level the application sets.
logging.getLogger("aiosqlite").setLevel(logging.INFO)

_TURN_COLUMNS = sql.TURN_COLUMNS

# search_fts asks the index for this many times the rows wanted before applying the scope.
FTS_OVERFETCH = 4
# Rows a read hands over from SQLite's thread at a time (aiosqlite's default is 64).
FETCH_CHUNK = 512
FETCH_ROWS = 10_000  # rows read at a time, converted to turns off the event loop


class SQLiteStore(TurnChecks, SharedReads):
    """Async access to one memory database. Create with `await SQLiteStore.open(path)`."""

    dialect = sql.SQLITE

    def __init__(
        self,
        path: str,
        writer: aiosqlite.Connection,
        reader: aiosqlite.Connection,
        max_turns_per_call: int,
        max_text_chars: int,
        max_call_chars: int = DEFAULT_MAX_CALL_CHARS,
    ) -> None:
        self.path = path
        self._writer = writer
        self._reader = reader
        self.max_turns_per_call = max_turns_per_call
        self.max_text_chars = max_text_chars
        self.max_call_chars = max_call_chars
        # The same call sent again within this window is a retry (see remember).
        self.retry_window = RETRY_WINDOW
        self.clock: Callable[[], datetime] = lambda: datetime.now(UTC)
        # One transaction at a time on the writer connection: without it two tasks of this
        # process (two HTTP sessions) would nest BEGINs, and one's rollback would undo the
        # other's acknowledged turns.
        self._write_lock = anyio.Lock()
        self.read_only = False

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        busy_timeout_ms: int = 30_000,
        max_turns_per_call: int = 10_000,
        max_text_chars: int = 1_000_000,
        read_only: bool = False,
        max_call_chars: int = DEFAULT_MAX_CALL_CHARS,
    ) -> SQLiteStore:
        """Open (creating and migrating if needed) the database at `path` (or ":memory:").

        `read_only`: the database must exist and is opened read-only (nothing is created or
        written; a database of an older schema is migrated first). Errors opening the file
        raise DatabaseError naming the file and what to do."""
        target = str(path)
        if target != ":memory:":
            target = str(Path(target).expanduser())
        try:
            if read_only and target != ":memory:":
                store = await cls._open_read_only(target, busy_timeout_ms)
                if store is not None:
                    store.max_turns_per_call = max_turns_per_call
                    store.max_text_chars = max_text_chars
                    store.max_call_chars = max_call_chars
                    return store
            return await cls._open_writable(
                target, busy_timeout_ms, max_turns_per_call, max_text_chars, max_call_chars
            )
        except (sqlite3.Error, OSError) as exc:
            raise files.describe_error(target, exc) from exc

    @classmethod
    async def _open_writable(
        cls,
        target: str,
        busy_timeout_ms: int,
        max_turns_per_call: int,
        max_text_chars: int,
        max_call_chars: int,
    ) -> SQLiteStore:
        created = target != ":memory:" and not Path(target).exists()
        if target != ":memory:":
            # No header check with a file handle of our own: closing any descriptor of the
            # database drops every POSIX lock this process holds on it, those of its open
            # SQLite connections included, and another process could then checkpoint and
            # delete the write-ahead log they still use. SQLite reads the header first and
            # refuses a file that is not a database before writing anything (_check_ours).
            files.create_private(Path(target))
        try:
            writer = await connect(target, busy_timeout_ms)
            try:
                if target != ":memory:":
                    # Only once the file is known to be ours (another's keeps its mode).
                    files.tighten_modes(Path(target))
                await migrate(writer)
                reader = writer if target == ":memory:" else await connect(target, busy_timeout_ms)
            except BaseException:
                await writer.close()
                raise
        except BaseException:
            if created:  # e.g. a full disk: leave no empty file that later reads as a database
                with contextlib.suppress(OSError):
                    if Path(target).stat().st_size == 0:
                        Path(target).unlink()
            raise
        return cls(target, writer, reader, max_turns_per_call, max_text_chars, max_call_chars)

    @classmethod
    async def _open_read_only(cls, target: str, busy_timeout_ms: int) -> SQLiteStore | None:
        """The store on a read-only connection, or None when the database needs migrating
        first (an older schema: the caller opens it writable)."""
        file = Path(target)
        if not file.exists():
            raise missing_database(target)
        reader = await connect(target, busy_timeout_ms, read_only=True)
        try:
            version = await current_version(reader)
        except BaseException:
            await reader.close()
            raise
        if version < len(MIGRATIONS):
            await reader.close()
            return None
        store = cls(target, reader, reader, 0, 0)
        store.read_only = True
        return store

    async def close(self) -> None:
        if self._reader is not self._writer:
            await self._reader.close()
        await self._writer.close()

    async def schema_version(self) -> int:
        return await current_version(self._reader)

    # ------------------------------------------------------------------ writes

    async def remember(
        self, namespace: str, session_id: str | None, turns: Sequence[TurnInput]
    ) -> RememberResult:
        """Store `turns` in one transaction; return ids in input order.

        Turns that re-send stored ones (the same call again, the session again with new
        turns after it: see store/dedupe.py) are not stored twice: their ids are the stored
        turns' ids. A repeated utterance is stored. The same call sent again within
        `retry_window` (a retry after a lost answer) gets the first call's session and ids,
        also when it had no `session_id` (the generated one was in the lost answer).
        """
        namespace = check_name("namespace", namespace)
        given_session = check_name("session_id", session_id) if session_id else None
        # Validating, normalizing and hashing up to max_turns_per_call turns is CPU work the
        # event loop (shared by every client of a server) must not wait on.
        prepared = await anyio.to_thread.run_sync(self.check_turns, turns, namespace)
        redacted = sum(p.secrets_redacted for p in prepared)
        dated_now = sum(p.dated_now for p in prepared)
        digest = call_digest(namespace, given_session, prepared)
        created_at = now()
        async with self._write_transaction() as db:
            session, known_ids = await self._recorded_call(db, namespace, digest)
            if known_ids is not None and session is not None:
                return RememberResult(
                    ids=known_ids,
                    session_id=session,
                    namespace=namespace,
                    stored=0,
                    duplicates_skipped=len(known_ids),
                    secrets_redacted=redacted,
                    dated_now=dated_now,
                )
            session = given_session or session or new_session_id()
            async with db.execute(
                "SELECT id, content_hash, position FROM turns "
                "WHERE namespace = ? AND session_id = ? ORDER BY position, id",
                (namespace, session),
            ) as cursor:
                stored = [(int(r[0]), str(r[1]), int(r[2])) async for r in cursor]
            matches = match_resent([h for _, h, _ in stored], [t.content_hash for t in prepared])
            position = stored[-1][2] + 1 if stored else 0
            async with db.execute("SELECT COALESCE(MAX(id), 0) FROM turns") as cursor:
                row = await cursor.fetchone()
            async with db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'turns'") as cursor:
                seq_row = await cursor.fetchone()
            first_new = max(int(row[0]) if row else 0, int(seq_row[0]) if seq_row else 0) + 1
            ids, rows = new_turn_rows(
                prepared, matches, stored, first_new, (namespace, session, position, created_at)
            )
            await db.execute(
                "INSERT INTO sessions (namespace, id, created_at, turn_count) VALUES (?, ?, ?, 0) "
                "ON CONFLICT (namespace, id) DO NOTHING",
                (namespace, session, created_at),
            )
            if rows:
                await db.executemany(
                    f"INSERT INTO turns ({_TURN_COLUMNS}, content_hash) VALUES ({_marks(12)})",
                    rows,
                )
                # The new turns hold ids first_new .. first_new + len(rows) - 1 (this
                # transaction holds the write lock). One statement lets FTS5 index them in
                # one go.
                await db.execute(
                    "INSERT INTO turns_fts (rowid, text, speaker) SELECT id, text, speaker "
                    "FROM turns WHERE id >= ? AND id < ?",
                    (first_new, first_new + len(rows)),
                )
                await _refresh_sessions(db, namespace, [session])
            await db.execute(
                "INSERT OR REPLACE INTO remember_calls "
                "(namespace, digest, session_id, ids, created_at) VALUES (?, ?, ?, ?, ?)",
                (namespace, digest, session, json.dumps(ids), iso(self.clock())),
            )
        return RememberResult(
            ids=ids,
            session_id=session,
            namespace=namespace,
            stored=len(rows),
            duplicates_skipped=len(prepared) - len(rows),
            secrets_redacted=redacted,
            dated_now=dated_now,
        )

    async def _recorded_call(
        self, db: aiosqlite.Connection, namespace: str, digest: str
    ) -> tuple[str | None, list[int] | None]:
        """(session, ids) the call with this digest was given within the retry window:
        (session, ids) when all its turns are still stored, (session, None)
        when some were forgotten since, (None, None) when there was no such call (or its
        session is gone). Drops the records older than the window."""
        cutoff = iso(self.clock() - self.retry_window)
        await db.execute("DELETE FROM remember_calls WHERE created_at < ?", (cutoff,))
        async with db.execute(
            "SELECT session_id, ids FROM remember_calls WHERE namespace = ? AND digest = ?",
            (namespace, digest),
        ) as cursor:
            row = await cursor.fetchone()
        if row is None:
            return None, None
        session, ids = str(row[0]), [int(i) for i in json.loads(row[1])]
        async with db.execute(
            "SELECT id FROM turns WHERE namespace = ? AND session_id = ?", (namespace, session)
        ) as cursor:
            present = {int(r[0]) async for r in cursor}
        return recorded_call_outcome(session, ids, present)

    async def forget(
        self,
        namespace: str,
        *,
        ids: Sequence[int] | None = None,
        session_id: str | None = None,
        whole_namespace: bool = False,
    ) -> ForgetResult:
        """Delete turns by id, a whole session, or (explicitly) a whole namespace."""
        namespace, session_id, wanted = forget_request(namespace, ids, session_id, whole_namespace)
        clauses = ["namespace = ?"]
        params: list[Any] = [namespace]
        if session_id:
            clauses.append("session_id = ?")
            params.append(session_id)
        where = " AND ".join(clauses)
        # Any number of ids: read in chunks (one IN list of 300,000 ids passes SQLite's limit).
        id_chunks = chunks(wanted, 500) if wanted else [[]]
        async with self._write_transaction() as db:
            found: list[tuple[int, str]] = []
            for chunk in id_chunks:
                in_chunk = f" AND id IN ({_marks(len(chunk))})" if chunk else ""
                async with db.execute(
                    f"SELECT id, session_id FROM turns WHERE {where}{in_chunk} ORDER BY id",
                    [*params, *chunk],
                ) as cursor:
                    found.extend([(int(r[0]), str(r[1])) async for r in cursor])
            check_forget_found(namespace, wanted, session_id, [i for i, _ in found])
            deleted_ids = [i for i, _ in found]
            touched = sorted({s for _, s in found})
            # Vectors that embed a deleted turn as context of the next one go with it.
            for chunk in chunks(deleted_ids, 500):
                await db.execute(
                    "DELETE FROM embeddings WHERE model LIKE ? AND turn_id IN ("
                    "SELECT n.id FROM turns d JOIN turns n ON n.namespace = d.namespace "
                    "AND n.session_id = d.session_id AND n.position = d.position + 1 "
                    f"WHERE d.id IN ({_marks(len(chunk))}))",
                    [f"%{CONTEXT_SUFFIX}", *chunk],
                )
            for chunk in chunks(deleted_ids, 500):
                await db.execute(f"DELETE FROM turns WHERE id IN ({_marks(len(chunk))})", chunk)
            await _refresh_sessions(db, namespace, touched)
            async with db.execute(
                f"SELECT id FROM sessions WHERE namespace = ? AND turn_count = 0 "
                f"AND id IN ({_marks(len(touched))})"
                if touched
                else "SELECT NULL WHERE 0",
                [namespace, *touched] if touched else [],
            ) as cursor:
                emptied = [str(r[0]) async for r in cursor]
            if emptied:
                await db.execute(
                    f"DELETE FROM sessions WHERE namespace = ? AND id IN ({_marks(len(emptied))})",
                    [namespace, *emptied],
                )
            if whole_namespace:
                await db.execute("DELETE FROM sessions WHERE namespace = ?", (namespace,))
        return ForgetResult(
            deleted_turn_ids=deleted_ids, deleted_sessions=emptied, namespace=namespace
        )

    # ------------------------------------------------------------------ reads

    async def search_fts(self, match: str, scope: Scope, limit: int) -> list[tuple[int, float]]:
        """(turn id, BM25 score — higher is better) for an FTS5 MATCH expression, best first,
        within `scope`.

        The index is asked for its best `FTS_OVERFETCH` x `limit` rows alone, and only those are
        joined with the turns to apply the scope: joining every match first costs 2–3x more on
        a large memory. The result is exact: if the scope kept fewer than `limit` of the rows
        while more matched, the full join runs instead.
        """
        if not match or limit <= 0:
            return []
        where, params = sql.scope_filter(scope, alias="t")
        inner = limit * FTS_OVERFETCH
        try:
            async with self._reader.execute(
                "SELECT t.id, f.score FROM (SELECT rowid AS rid, -bm25(turns_fts) AS score "
                "FROM turns_fts WHERE turns_fts MATCH ? ORDER BY score DESC LIMIT ?) f "
                f"JOIN turns t ON t.id = f.rid WHERE {where} ORDER BY f.score DESC, t.id",
                [match, inner, *params],
            ) as cursor:
                rows = [(int(r[0]), float(r[1])) async for r in cursor]
            if len(rows) >= limit:
                return rows[:limit]
            async with self._reader.execute(
                "SELECT count(*) FROM (SELECT rowid FROM turns_fts WHERE turns_fts MATCH ? "
                "LIMIT ?)",
                [match, inner],
            ) as cursor:
                row = await cursor.fetchone()
            if row is None or int(row[0]) < inner:
                return rows  # every match was seen
            async with self._reader.execute(
                "SELECT t.id, -bm25(turns_fts) AS score FROM turns_fts "
                "JOIN turns t ON t.id = turns_fts.rowid "
                f"WHERE turns_fts MATCH ? AND {where} ORDER BY score DESC, t.id LIMIT ?",
                [match, *params, limit],
            ) as cursor:
                return [(int(r[0]), float(r[1])) async for r in cursor]
        except sqlite3.OperationalError as exc:
            raise InputError(f"full-text query could not be run: {exc}") from exc

    async def fts_doc_counts(
        self, phrases: Sequence[str], at_most: int | None = None
    ) -> dict[str, int]:
        """How many turns (in every namespace) the full-text index finds for each FTS5
        phrase: cheap (the index's document lists are counted, no row is read), so always
        exact (a count above `at_most` may be reported as any number above it)."""
        counts: dict[str, int] = {}
        for phrase in dict.fromkeys(phrases):
            try:
                async with self._reader.execute(
                    "SELECT count(*) FROM turns_fts WHERE turns_fts MATCH ?", (phrase,)
                ) as cursor:
                    row = await cursor.fetchone()
            except sqlite3.OperationalError as exc:
                raise InputError(f"full-text query could not be run: {exc}") from exc
            counts[phrase] = int(row[0]) if row else 0
        return counts

    async def data_version(self) -> int:
        """Changes whenever another connection (this process's writer, or another process)
        commits: the key for caches of what is stored."""
        async with self._reader.execute("PRAGMA data_version") as cursor:
            row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def iter_turns(
        self, namespace: str | None = None, batch: int = 1000
    ) -> AsyncIterator[Turn]:
        """All turns (of one namespace, or all) in id order, read in batches."""
        last = 0
        while True:
            query, params = sql.all_turns(self.dialect, namespace, last)
            turns = await self._fetch_turns(f"{query} LIMIT {int(batch)}", params)
            if not turns:
                return
            for turn in turns:
                yield turn
            last = turns[-1].id

    async def rewrite_texts(self, turns: Sequence[Turn], texts: Sequence[str]) -> int:
        """Give each of `turns` its new text (`redact --apply`), in one transaction: the
        row, its content hash and its full-text entry change, its vectors are dropped (the
        backlog recomputes them). Then the full-text index is merged, the WAL truncated and
        the file VACUUMed, so the old text's bytes leave the database's files. The number
        of turns rewritten (one deleted meanwhile is skipped)."""
        if self.read_only:
            raise InputError("the database is open read-only; nothing was rewritten")
        rows = [
            (text, stored_identity_hash(turn, text), turn.id)
            for turn, text in zip(turns, texts, strict=True)
        ]
        async with self._write_transaction() as db:
            updated = await db.executemany(
                "UPDATE turns SET text = ?, content_hash = ? WHERE id = ?", rows
            )
            rewritten = updated.rowcount
            await db.executemany(
                "DELETE FROM embeddings WHERE turn_id = ?", [(turn.id,) for turn in turns]
            )
            await db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('optimize')")
        for statement in (
            "PRAGMA wal_checkpoint(TRUNCATE)",
            "VACUUM",
            "PRAGMA wal_checkpoint(TRUNCATE)",
        ):
            async with self._writer.execute(statement):
                pass
        return rewritten

    async def put_embeddings(self, model: str, items: Sequence[tuple[int, int, bytes]]) -> None:
        """Cache vectors; entries whose turn was deleted meanwhile are dropped."""
        if not items or self.read_only:
            return  # a read-only store recomputes vectors when it needs them
        async with self._write_transaction() as db:
            await db.executemany(
                "INSERT OR REPLACE INTO embeddings (model, turn_id, start, vector) "
                "SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM turns WHERE id = ?)",
                [(model, t, s, v, t) for t, s, v in items],
            )

    async def backup(self, destination: str | Path) -> None:
        """A consistent snapshot of the whole database (SQLite online backup API), private
        (0600, its -wal and -shm too) like the database itself."""
        files.create_private(Path(destination))
        target = await aiosqlite.connect(str(destination))
        try:
            await self._reader.backup(target)
        finally:
            await target.close()

    async def integrity_check(self) -> list[str]:
        """Problems found by SQLite and by comparing the FTS index with the turns. Writes
        nothing: the FTS check (an FTS5 command that writes) runs on a snapshot copy."""
        problems: list[str] = []
        try:
            async with self._reader.execute("PRAGMA integrity_check") as cursor:
                rows = [str(r[0]) async for r in cursor]
        except sqlite3.DatabaseError as exc:
            return [f"integrity check: {exc}"]
        if rows != ["ok"]:
            problems.extend(rows)
        if self.path == ":memory:":
            return problems
        with tempfile.TemporaryDirectory(prefix="smartsearch-check-") as tmp:
            snapshot = Path(tmp) / "snapshot.db"
            try:
                await self.backup(snapshot)
                copy = await aiosqlite.connect(str(snapshot), isolation_level=None)
                try:
                    await copy.execute(
                        "INSERT INTO turns_fts(turns_fts, rank) VALUES ('integrity-check', 1)"
                    )
                finally:
                    await copy.close()
            except sqlite3.DatabaseError as exc:
                problems.append(f"full-text index: {exc}")
        return problems

    async def put_table_rows(self, table: str, rows: Sequence[Sequence[Any]]) -> int:
        """Insert rows read by another store's `table_rows` as they are (ids kept), in one
        transaction; rows whose key is already here are left as they are (sessions are
        updated). Turns are indexed for full text. Returns how many rows were new."""
        columns, key = TRANSFER_TABLES[table]
        if not rows:
            return 0
        names = ", ".join(columns)
        async with self._write_transaction() as db:
            if table == "turns":
                wanted = [int(r[0]) for r in rows]
                present: set[int] = set()
                for chunk in chunks(wanted, 500):
                    async with db.execute(
                        f"SELECT id FROM turns WHERE id IN ({_marks(len(chunk))})", chunk
                    ) as cursor:
                        present.update([int(r[0]) async for r in cursor])
                new_rows = [r for r in rows if int(r[0]) not in present]
                await db.executemany(
                    f"INSERT INTO turns ({names}) VALUES ({_marks(len(columns))})", new_rows
                )
                for chunk in chunks([int(r[0]) for r in new_rows], 500):
                    await db.execute(
                        "INSERT INTO turns_fts (rowid, text, speaker) SELECT id, text, speaker "
                        f"FROM turns WHERE id IN ({_marks(len(chunk))})",
                        chunk,
                    )
                return len(new_rows)
            before = db.total_changes
            if table == "sessions":
                update = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)
                conflict = f"DO UPDATE SET {update}"
            else:
                conflict = "DO NOTHING"
            await db.executemany(
                f"INSERT INTO {table} ({names}) VALUES ({_marks(len(columns))}) "
                f"ON CONFLICT ({', '.join(key)}) {conflict}",
                [tuple(r) for r in rows],
            )
            return db.total_changes - before

    @asynccontextmanager
    async def _write_transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """The writer connection inside one `BEGIN IMMEDIATE` transaction, committed when the
        block ends and rolled back if it raises. Only one runs at a time in this process."""
        async with self._write_lock:
            db = self._writer
            await begin_immediate(db)
            try:
                await check_not_upgraded(db)
                yield db
                await db.commit()
            except BaseException as exc:
                await db.rollback()
                if isinstance(exc, sqlite3.OperationalError) and is_full(exc):
                    raise StorageFullError(
                        f"the disk holding {self.path} is full (SQLite: {exc}); nothing of "
                        "this call was written — free some space and send it again"
                    ) from exc
                raise

    # ------------------------------------------------------------------ helpers

    async def _run(self, statements: Sequence[sql.Query]) -> list[list[tuple[Any, ...]]]:
        results: list[list[tuple[Any, ...]]] = []
        for statement, params in statements:
            async with self._reader.execute(statement, params) as cursor:
                results.append([tuple(row) async for row in cursor])
        return results

    async def _size_bytes(self) -> int:
        if self.path == ":memory:":
            return 0
        files_ = (Path(self.path + suffix) for suffix in ("", "-wal"))
        return sum(file.stat().st_size for file in files_ if file.exists())

    async def _fetch_turns(self, sql_text: str, params: Sequence[Any]) -> list[Turn]:
        """The turns a query selects. Rows become `Turn`s in a worker thread, a chunk at a
        time: for a whole scope that is seconds of CPU the event loop must not wait on."""
        shared = SharedValues()
        turns: list[Turn] = []
        async with self._reader.execute(sql_text, params) as cursor:
            while rows := list(await cursor.fetchmany(FETCH_ROWS)):
                if len(rows) < FETCH_CHUNK:
                    turns.extend(row_to_turn(row, shared) for row in rows)
                else:
                    turns += await anyio.to_thread.run_sync(rows_to_turns, rows, shared)
        return turns


# ---------------------------------------------------------------------- module helpers


async def _refresh_sessions(
    db: aiosqlite.Connection, namespace: str, session_ids: Sequence[str]
) -> None:
    for chunk in chunks(list(session_ids), 500):
        await db.execute(
            "UPDATE sessions SET "
            "turn_count = (SELECT COUNT(*) FROM turns t WHERE t.namespace = sessions.namespace "
            "  AND t.session_id = sessions.id), "
            "first_timestamp = (SELECT MIN(timestamp) FROM turns t WHERE "
            "  t.namespace = sessions.namespace AND t.session_id = sessions.id), "
            "last_timestamp = (SELECT MAX(timestamp) FROM turns t WHERE "
            "  t.namespace = sessions.namespace AND t.session_id = sessions.id) "
            f"WHERE namespace = ? AND id IN ({_marks(len(chunk))})",
            [namespace, *chunk],
        )


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def missing_database(target: str) -> files.DatabaseError:
    """The error of a command that needs a database file that does not exist (and creates
    none: a mistyped --db must not leave an empty memory behind)."""
    return files.DatabaseError(
        f"no database at {target}: nothing has been stored there yet — check --db "
        "(or $SMARTSEARCH_DB), or store something first (`smartsearch-mcp remember`)"
    )
