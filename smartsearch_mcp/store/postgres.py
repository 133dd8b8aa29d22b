"""The PostgreSQL store: the store contract (store/base.py) on a database a team shares,
written and read by many server processes on many machines at once. The reads it shares
with SQLite are store/reads.py's (SQL from store/queries.py); here are the connections,
the migrations, the writes and full-text search.

Driver: psycopg 3 (async) with psycopg_pool — see docs/teams.md for why not asyncpg. The URL
goes to libpq unchanged, so `sslmode=…`, `sslrootcert=…`, `options=…`, service files and
PG* environment variables work as with psql.

One writer at a time: every transaction that adds or deletes turns first updates the one row
of `store_changes`, which holds that row's lock until it commits. Writers on every machine
queue there (no deadlock: nothing else is locked first), ids are taken under the lock (so
they commit in increasing order, and a call's ids are in input order), and the row's
`version` is the `data_version` every reader sees change when anyone commits. Re-send
recognition and session positions are then exactly SQLite's.

Full text: `turns.fts`, a tsvector (Porter stems, no stop words, filled by a trigger with the
turn's length) with a GIN index; `search_fts` ranks by FTS5's BM25 (store/postgres_fts.py).
grep's substring prefilter uses a pg_trgm GIN index. Vectors are bytea, scored in Python as
with SQLite; pgvector is detected at open and reported, not used yet.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from smartsearch_mcp.postgres_url import guard_driver_logs, mask_url, scrub
from smartsearch_mcp.store import postgres_fts as fts
from smartsearch_mcp.store import queries as sql
from smartsearch_mcp.store.dedupe import match_resent
from smartsearch_mcp.store.files import DatabaseError
from smartsearch_mcp.store.postgres_schema import MIGRATIONS
from smartsearch_mcp.store.reads import SharedReads
from smartsearch_mcp.store.turns import (
    CONTEXT_SUFFIX,
    DEFAULT_MAX_CALL_CHARS,
    RETRY_WINDOW,
    TRANSFER_TABLES,
    PreparedTurn,
    SharedValues,
    TurnChecks,
    call_digest,
    check_forget_found,
    check_name,
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
    SmartSearchError,
    Turn,
    TurnInput,
)

try:
    import psycopg
    import psycopg.errors
    from psycopg_pool import AsyncConnectionPool, PoolTimeout

    from smartsearch_mcp.store.postgres_open import (
        create_schema,
        drop_schema,
        first_line,
        migrate,
        schema_version,
    )
except ImportError as exc:  # pragma: no cover - the message is tested through open_store
    raise ImportError(
        "a postgresql:// database needs the PostgreSQL driver: pip install -e '.[postgres]' "
        "(or pip install 'smartsearch-mcp[postgres]')"
    ) from exc

# Re-exported: the benchmarks' schema helpers are imported from here (naming the extra when
# the driver is missing).
__all__ = ["PostgresStore", "create_schema", "drop_schema"]

log = logging.getLogger(__name__)

_TURN_COLUMNS = sql.TURN_COLUMNS
_M = "%s"  # psycopg's placeholder
POOL_MAX = 4
CONNECT_TIMEOUT_S = 10.0
FETCH_CHUNK = 512


class PostgresStore(TurnChecks, SharedReads):
    """The memory in a PostgreSQL database. Create with `await PostgresStore.open(url)`."""

    dialect = sql.POSTGRES

    def __init__(
        self,
        url: str,
        pool: AsyncConnectionPool[Any],
        max_turns_per_call: int,
        max_text_chars: int,
        max_call_chars: int,
    ) -> None:
        self.url = url
        self.path = mask_url(url)
        self._pool = pool
        self.max_turns_per_call = max_turns_per_call
        self.max_text_chars = max_text_chars
        self.max_call_chars = max_call_chars
        self.retry_window = RETRY_WINDOW
        self.clock: Callable[[], datetime] = lambda: datetime.now(UTC)
        self.read_only = False
        self.pgvector: str | None = None  # the extension's version when installed

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        max_turns_per_call: int = 10_000,
        max_text_chars: int = 1_000_000,
        read_only: bool = False,
        max_call_chars: int = DEFAULT_MAX_CALL_CHARS,
        pool_size: int = POOL_MAX,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> PostgresStore:
        """Connect to the database at `url` and migrate it (unless `read_only`: then the
        schema must be current, e.g. a read replica of a migrated primary). A database that
        cannot be reached raises DatabaseError naming the URL (password masked)."""
        guard_driver_logs(url)
        kwargs: dict[str, Any] = {"autocommit": True}
        if read_only:
            kwargs["options"] = "-c default_transaction_read_only=on"
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs=kwargs,
            open=False,
            timeout=connect_timeout_s,
            check=AsyncConnectionPool.check_connection,
            name="smartsearch",
        )
        store = cls(url, pool, max_turns_per_call, max_text_chars, max_call_chars)
        store.read_only = read_only
        try:
            # One connection first: a server that is down or refuses us is reported with
            # libpq's own reason at once (the pool would retry until its timeout).
            probe = await psycopg.AsyncConnection.connect(
                url, connect_timeout=max(1, round(connect_timeout_s)), **kwargs
            )
            await probe.close()
            await pool.open(wait=True, timeout=connect_timeout_s)
            if read_only:
                version = await store.schema_version()
                if version == 0:
                    raise DatabaseError(
                        f"no memory in the database {store.path} yet: store something first "
                        "(`smartsearch-mcp remember`), or check --db (or $SMARTSEARCH_DB)"
                    )
                if version != len(MIGRATIONS):
                    raise DatabaseError(
                        f"the database {store.path} has schema version {version}, this "
                        f"smartsearch-mcp uses {len(MIGRATIONS)}: open it writable once (on the "
                        "primary) to migrate it"
                    )
            else:
                async with store._connection() as conn:
                    await migrate(conn, store.path)
            store.pgvector = await store._extension_version("vector")
            if store.pgvector:
                log.info(
                    "pgvector %s is installed; vectors are still kept as bytea and scored "
                    "in this process",
                    store.pgvector,
                )
        except BaseException as exc:
            await pool.close()
            if isinstance(exc, SmartSearchError):
                raise
            if isinstance(exc, psycopg.OperationalError | PoolTimeout):
                raise store._unreachable(exc) from None
            if isinstance(exc, psycopg.Error):  # e.g. no privilege to create the tables
                raise store._failed(exc) from None
            raise
        return store

    async def close(self) -> None:
        await self._pool.close()

    async def schema_version(self) -> int:
        async with self._cursor() as cur:
            return await schema_version(cur)

    # ------------------------------------------------------------------ connections

    def _unreachable(self, exc: BaseException) -> DatabaseError:
        detail = scrub(str(exc).strip().splitlines()[0] if str(exc).strip() else "", self.url)
        return DatabaseError(
            f"the database {self.path} cannot be reached ({detail or type(exc).__name__}): "
            "check that PostgreSQL is running and the URL (host, port, user, sslmode); this "
            "call may not have been completed — send it again once the database is back (a "
            "re-sent remember is recognised and stored once)"
        )

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled connection; a lost or unreachable server becomes one DatabaseError (the
        pool reconnects on the next call)."""
        try:
            async with self._pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, PoolTimeout) as exc:
            if isinstance(exc, psycopg.errors.QueryCanceled | psycopg.errors.DiskFull):
                raise self._failed(exc) from None
            raise self._unreachable(exc) from None
        except psycopg.errors.ReadOnlySqlTransaction as exc:
            raise DatabaseError(
                f"the database {self.path} is read-only (a replica, or opened read-only): "
                "write through the primary"
            ) from exc
        except psycopg.errors.InsufficientPrivilege as exc:
            raise DatabaseError(
                f"the database {self.path} refused this role: {first_line(exc, self.url)} — "
                "grant it what docs/teams.md lists (a least-privilege role)"
            ) from exc

    def _failed(self, exc: BaseException) -> DatabaseError:
        return DatabaseError(f"the database {self.path} failed: {first_line(exc, self.url)}")

    @asynccontextmanager
    async def _cursor(self) -> AsyncIterator[psycopg.AsyncCursor[Any]]:
        async with self._connection() as conn, conn.cursor() as cur:
            yield cur

    @asynccontextmanager
    async def _write_transaction(self) -> AsyncIterator[psycopg.AsyncCursor[Any]]:
        """A cursor inside one transaction holding the store's write lock (module doc):
        committed when the block ends, rolled back if it raises."""
        if self.read_only:
            raise InputError(f"the memory {self.path} was opened read-only; nothing was written")
        async with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            await cur.execute(
                "UPDATE store_changes SET version = version + 1 WHERE id = 1 "
                "RETURNING (SELECT max(version) FROM schema_version)"
            )
            row = await cur.fetchone()
            version = int(row[0]) if row and row[0] is not None else 0
            if version > len(MIGRATIONS):
                raise InputError(
                    f"the database was upgraded to schema version {version} by a newer "
                    f"smartsearch-mcp while this process ({len(MIGRATIONS)}) was running; "
                    "nothing was written — restart the server (or CLI) so it runs the new version"
                )
            yield cur

    async def _extension_version(self, name: str) -> str | None:
        async with self._cursor() as cur:
            await cur.execute("SELECT extversion FROM pg_extension WHERE extname = %s", (name,))
            row = await cur.fetchone()
        return str(row[0]) if row else None

    # ------------------------------------------------------------------ writes

    async def remember(
        self, namespace: str, session_id: str | None, turns: Sequence[TurnInput]
    ) -> RememberResult:
        """Store `turns` in one transaction; ids in input order (as SQLiteStore.remember)."""
        namespace = check_name("namespace", namespace)
        given_session = check_name("session_id", session_id) if session_id else None
        prepared = await anyio.to_thread.run_sync(self.check_turns, turns, namespace)
        redacted = sum(p.secrets_redacted for p in prepared)
        dated_now = sum(p.dated_now for p in prepared)
        _refuse_nul(prepared)
        digest = call_digest(namespace, given_session, prepared)
        created_at = now()
        async with self._write_transaction() as cur:
            session, known_ids = await self._recorded_call(cur, namespace, digest)
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
            await cur.execute(
                "SELECT id, content_hash, position FROM turns "
                "WHERE namespace = %s AND session_id = %s ORDER BY position, id",
                (namespace, session),
            )
            stored = [(int(r[0]), str(r[1]), int(r[2])) for r in await cur.fetchall()]
            matches = match_resent([h for _, h, _ in stored], [t.content_hash for t in prepared])
            position = stored[-1][2] + 1 if stored else 0
            new = sum(1 for m in matches if m is None)
            next_id = 0
            if new:
                # Under the write lock nobody else takes ids: a block of `new` ids in order.
                await cur.execute(
                    "SELECT setval('turns_id_seq', nextval('turns_id_seq') + %s - 1)", (new,)
                )
                row = await cur.fetchone()
                next_id = int(row[0]) - new + 1 if row else 1
            ids, rows = new_turn_rows(
                prepared, matches, stored, next_id, (namespace, session, position, created_at)
            )
            await cur.execute(
                "INSERT INTO sessions (namespace, id, created_at, turn_count) "
                "VALUES (%s, %s, %s, 0) ON CONFLICT (namespace, id) DO NOTHING",
                (namespace, session, created_at),
            )
            if rows:
                async with cur.copy(
                    f"COPY turns ({_TURN_COLUMNS}, content_hash) FROM STDIN"
                ) as copy:
                    for values in rows:
                        await copy.write_row(values)
                await _refresh_sessions(cur, namespace, [session])
            await cur.execute(
                "INSERT INTO remember_calls (namespace, digest, session_id, ids, created_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (namespace, digest) DO UPDATE SET "
                "session_id = EXCLUDED.session_id, ids = EXCLUDED.ids, "
                "created_at = EXCLUDED.created_at",
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
        self, cur: psycopg.AsyncCursor[Any], namespace: str, digest: str
    ) -> tuple[str | None, list[int] | None]:
        """As SQLiteStore._recorded_call."""
        cutoff = iso(self.clock() - self.retry_window)
        # One round trip: the expired records go, and (the query reads the snapshot from
        # before the delete) an expired record is not taken for a retry.
        await cur.execute(
            "WITH expired AS (DELETE FROM remember_calls WHERE created_at < %s) "
            "SELECT session_id, ids FROM remember_calls WHERE namespace = %s AND digest = %s "
            "AND created_at >= %s",
            (cutoff, namespace, digest, cutoff),
        )
        row = await cur.fetchone()
        if row is None:
            return None, None
        session, ids = str(row[0]), [int(i) for i in json.loads(row[1])]
        await cur.execute(
            "SELECT id FROM turns WHERE namespace = %s AND session_id = %s", (namespace, session)
        )
        present = {int(r[0]) for r in await cur.fetchall()}
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
        where, params = "namespace = %s", [namespace]
        if session_id:
            where += " AND session_id = %s"
            params.append(session_id)
        async with self._write_transaction() as cur:
            if wanted is not None:
                where += " AND id = ANY(%s)"
                params.append(wanted)  # type: ignore[arg-type]
            await cur.execute(f"SELECT id, session_id FROM turns WHERE {where} ORDER BY id", params)
            found = [(int(r[0]), str(r[1])) for r in await cur.fetchall()]
            check_forget_found(namespace, wanted, session_id, [i for i, _ in found])
            deleted_ids = [i for i, _ in found]
            touched = sorted({s for _, s in found})
            if deleted_ids:
                # Vectors that embed a deleted turn as context of the next one go with it.
                await cur.execute(
                    "DELETE FROM embeddings WHERE model LIKE %s AND turn_id IN ("
                    "SELECT n.id FROM turns d JOIN turns n ON n.namespace = d.namespace "
                    "AND n.session_id = d.session_id AND n.position = d.position + 1 "
                    "WHERE d.id = ANY(%s))",
                    (f"%{CONTEXT_SUFFIX}", deleted_ids),
                )
                await cur.execute("DELETE FROM turns WHERE id = ANY(%s)", (deleted_ids,))
            emptied: list[str] = []
            if touched:
                await _refresh_sessions(cur, namespace, touched)
                await cur.execute(
                    "DELETE FROM sessions WHERE namespace = %s AND turn_count = 0 "
                    "AND id = ANY(%s) RETURNING id",
                    (namespace, touched),
                )
                emptied = sorted(str(r[0]) for r in await cur.fetchall())
            if whole_namespace:
                await cur.execute("DELETE FROM sessions WHERE namespace = %s", (namespace,))
        return ForgetResult(
            deleted_turn_ids=deleted_ids, deleted_sessions=emptied, namespace=namespace
        )

    # ------------------------------------------------------------------ reads

    async def search_fts(self, match: str, scope: Scope, limit: int) -> list[tuple[int, float]]:
        """(turn id, BM25 score — higher is better), best first, within `scope`, for an
        expression `fts_any` built: its phrases as tsquery phrases, scored as FTS5's bm25()
        scores them (store/postgres_fts.py)."""
        phrases = fts.query_words(sql.fts_phrases(match or ""))
        if not phrases or limit <= 0:
            return []
        async with self._cursor() as cur:
            await cur.execute(*fts.bm25_search(phrases, scope, limit))
            return [(int(r[0]), float(r[1])) for r in await cur.fetchall()]

    async def fts_doc_counts(
        self, phrases: Sequence[str], at_most: int | None = None
    ) -> dict[str, int]:
        """How many turns (in every namespace) the full-text index finds for each phrase;
        with `at_most`, counting stops after `at_most + 1` (a common word's exact count
        reads a third of a million turns at 1M: 0.98 s, stopped at 20,001: 0.15 s)."""
        counts: dict[str, int] = {}
        async with self._cursor() as cur:
            for phrase in dict.fromkeys(phrases):
                words = fts.query_words(sql.fts_phrases(phrase))
                if not words:
                    counts[phrase] = 0
                    continue
                await cur.execute(*fts.doc_count(words, at_most))
                row = await cur.fetchone()
                counts[phrase] = int(row[0]) if row else 0
        return counts

    async def rewrite_texts(self, turns: Sequence[Turn], texts: Sequence[str]) -> int:
        """Give each of `turns` its new text (`redact --apply`), in one transaction: the row
        and its content hash (the full-text document and the BM25 totals follow by trigger),
        its vectors dropped. Then VACUUM the two tables, so that the old row versions are
        marked free (their bytes are overwritten as the tables are written, not at once:
        VACUUM FULL, which locks the tables, frees them now). The number rewritten."""
        rows = [
            (text, stored_identity_hash(turn, text), turn.id)
            for turn, text in zip(turns, texts, strict=True)
        ]
        rewritten = 0
        async with self._write_transaction() as cur:
            for row in rows:
                await cur.execute(
                    "UPDATE turns SET text = %s, content_hash = %s WHERE id = %s", row
                )
                rewritten += cur.rowcount
            await cur.execute(
                "DELETE FROM embeddings WHERE turn_id = ANY(%s)", ([turn.id for turn in turns],)
            )
        async with self._connection() as conn:
            await conn.set_autocommit(True)
            try:
                for table in ("turns", "embeddings"):
                    await conn.execute(f"VACUUM {table}")
            finally:
                await conn.set_autocommit(False)
        return rewritten

    async def data_version(self) -> int:
        """The count of committed writes of turns, by any process on any machine."""
        async with self._cursor() as cur:
            await cur.execute("SELECT version FROM store_changes WHERE id = 1")
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def iter_turns(
        self, namespace: str | None = None, batch: int = 1000
    ) -> AsyncIterator[Turn]:
        """All turns (of one namespace, or all) in id order, as one consistent snapshot (a
        repeatable-read transaction: an export while servers write)."""
        query, params = sql.all_turns(self.dialect, namespace)
        shared = SharedValues()
        async with self._connection() as conn:
            await conn.set_autocommit(False)
            try:
                await conn.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
                async with (
                    conn.transaction(),
                    conn.cursor(name="smartsearch_export") as cur,
                ):
                    await cur.execute(query, params)
                    while rows := await cur.fetchmany(batch):
                        for row in rows:
                            yield row_to_turn(row, shared)
            finally:
                await conn.set_isolation_level(None)
                await conn.set_autocommit(True)

    async def put_embeddings(self, model: str, items: Sequence[tuple[int, int, bytes]]) -> None:
        """Cache vectors; entries whose turn was deleted meanwhile are dropped. Waits for the
        write lock (without counting a change): no deadlock with a concurrent forget."""
        if not items or self.read_only:
            return
        latest = {(t, s): v for t, s, v in items}  # one row per key (ON CONFLICT needs it)
        async with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            await cur.execute("SELECT 1 FROM store_changes WHERE id = 1 FOR NO KEY UPDATE")
            await cur.execute(
                "INSERT INTO embeddings (model, turn_id, start, vector) "
                "SELECT %s, u.t, u.s, u.v FROM unnest(%s::bigint[], %s::int[], %s::bytea[]) "
                "AS u(t, s, v) WHERE EXISTS (SELECT 1 FROM turns WHERE id = u.t) "
                "ON CONFLICT (model, turn_id, start) DO UPDATE SET vector = EXCLUDED.vector",
                (
                    model,
                    [k[0] for k in latest],
                    [k[1] for k in latest],
                    list(latest.values()),
                ),
            )

    async def backup(self, destination: str | Path) -> None:
        raise InputError(
            f"the memory {self.path} is a PostgreSQL database: back it up with pg_dump "
            "(docs/teams.md, Backups), or export it (`smartsearch-mcp export`)"
        )

    async def integrity_check(self) -> list[str]:
        """Sessions whose counts disagree with their turns, and turns missing from the
        full-text index (PostgreSQL checks its own pages: amcheck is for administrators)."""
        problems: list[str] = []
        async with self._cursor() as cur:
            await cur.execute(
                "SELECT s.namespace, s.id, s.turn_count, count(t.id) FROM sessions s "
                "LEFT JOIN turns t ON t.namespace = s.namespace AND t.session_id = s.id "
                "GROUP BY s.namespace, s.id, s.turn_count "
                "HAVING s.turn_count <> count(t.id) LIMIT 20"
            )
            for ns, session, said, real in await cur.fetchall():
                problems.append(
                    f"session {ns}/{session} says {said} turns, holds {real} (a forget or "
                    "remember repairs it)"
                )
            await cur.execute("SELECT count(*) FROM turns WHERE fts IS NULL")
            row = await cur.fetchone()
            if row and int(row[0]):
                problems.append(f"{int(row[0])} turns are missing from the full-text index")
            await cur.execute(
                "SELECT s.turns, s.tokens, t.turns, t.tokens FROM store_changes s, (SELECT "
                "count(*) AS turns, coalesce(sum(fts_tokens), 0) AS tokens FROM turns) t "
                "WHERE s.id = 1"
            )
            row = await cur.fetchone()
            if row and (row[0], row[1]) != (row[2], row[3]):
                problems.append(
                    f"the full-text statistics count {row[0]} turns of {row[1]} tokens, the "
                    f"table holds {row[2]} of {row[3]}: BM25 scores are off until they are "
                    "recounted (UPDATE store_changes SET turns = …, tokens = … as in "
                    "migration 2)"
                )
        return problems

    async def put_table_rows(self, table: str, rows: Sequence[Sequence[Any]]) -> int:
        """As SQLiteStore.put_table_rows; the id sequence is moved past the copied ids."""
        columns, key = TRANSFER_TABLES[table]
        if not rows:
            return 0
        names = ", ".join(columns)
        async with self._write_transaction() as cur:
            if table == "turns":
                _refuse_nul_rows(rows)
                await cur.execute(
                    "SELECT id FROM turns WHERE id = ANY(%s)", ([int(r[0]) for r in rows],)
                )
                present = {int(r[0]) for r in await cur.fetchall()}
                new_rows = [r for r in rows if int(r[0]) not in present]
                async with cur.copy(f"COPY turns ({names}) FROM STDIN") as copy:
                    for values in new_rows:
                        await copy.write_row(values)
                await cur.execute(
                    "SELECT setval('turns_id_seq', greatest((SELECT max(id) FROM turns), "
                    "(SELECT last_value FROM turns_id_seq)))"
                )
                return len(new_rows)
            if table == "sessions":
                update = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c not in key)
                conflict = f"DO UPDATE SET {update}"
            else:
                conflict = "DO NOTHING"
            marks = ", ".join([_M] * len(columns))
            await cur.executemany(
                f"INSERT INTO {table} ({names}) VALUES ({marks}) "
                f"ON CONFLICT ({', '.join(key)}) {conflict}",
                [tuple(r) for r in rows],
            )
            return len(rows) if table == "sessions" else max(0, cur.rowcount)

    # ------------------------------------------------------------------ helpers

    async def _run(self, statements: Sequence[sql.Query]) -> list[list[tuple[Any, ...]]]:
        results: list[list[tuple[Any, ...]]] = []
        async with self._cursor() as cur:
            for statement, params in statements:
                await cur.execute(statement, params)
                results.append(list(await cur.fetchall()))
        return results

    async def _size_bytes(self) -> int:
        rows = await self._rows(
            (
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' "
                "AND c.relname IN ('turns', 'sessions', 'embeddings', 'remember_calls')",
                [],
            )
        )
        return int(rows[0][0]) if rows else 0

    async def _fetch_turns(self, sql_text: str, params: Sequence[Any]) -> list[Turn]:
        async with self._cursor() as cur:
            await cur.execute(sql_text, params)
            rows = await cur.fetchall()
        shared = SharedValues()
        if len(rows) < FETCH_CHUNK:
            return [row_to_turn(row, shared) for row in rows]
        return await anyio.to_thread.run_sync(rows_to_turns, rows, shared)


def _refuse_nul(turns: Sequence[PreparedTurn]) -> None:
    """PostgreSQL text cannot hold U+0000 (SQLite's can): refused, naming the turn."""
    for index, turn in enumerate(turns):
        for field, value in (("text", turn.text), ("speaker", turn.speaker)):
            if value is not None and "\x00" in value:
                raise InputError(
                    f"turns[{index}].{field} holds a NUL character (U+0000), which PostgreSQL "
                    "cannot store; remove it (nothing of this call was stored)"
                )
        if turn.timestamp_raw is not None and "\x00" in turn.timestamp_raw:
            raise InputError(f"turns[{index}].timestamp holds a NUL character (U+0000)")


def _refuse_nul_rows(rows: Sequence[Sequence[Any]]) -> None:
    for row in rows:
        if any(isinstance(value, str) and "\x00" in value for value in row):
            raise InputError(
                f"turn {row[0]} holds a NUL character (U+0000), which PostgreSQL cannot store; "
                "nothing of this batch was copied"
            )


async def _refresh_sessions(
    cur: psycopg.AsyncCursor[Any], namespace: str, session_ids: Sequence[str]
) -> None:
    # One pass over each session's turns (a session left without turns gets 0 and NULLs).
    await cur.execute(
        "UPDATE sessions s SET turn_count = c.n, first_timestamp = c.first, "
        "last_timestamp = c.last FROM unnest(%s::text[]) AS u(sid) CROSS JOIN LATERAL ("
        "SELECT count(*) AS n, min(timestamp) AS first, max(timestamp) AS last FROM turns t "
        "WHERE t.namespace = %s AND t.session_id = u.sid) c "
        "WHERE s.namespace = %s AND s.id = u.sid",
        (list(session_ids), namespace, namespace),
    )
