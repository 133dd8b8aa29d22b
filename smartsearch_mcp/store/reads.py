"""The reads of the store contract that both backends share: the SQL comes from
store/queries.py, built for the backend's dialect, and each backend only runs it
(`_fetch_turns`, `_run`). Reads that differ in substance — full-text search, the
data version, a consistent export, integrity checks — stay in store/sqlite.py and
store/postgres.py."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from typing import Any

from smartsearch_mcp.store import queries as sql
from smartsearch_mcp.store.queries import Dialect, Query
from smartsearch_mcp.store.turns import SharedValues, check_id, row_to_turn
from smartsearch_mcp.types import NotFoundError, Scope, SessionInfo, StoreStats, Turn

# `scope_size`: exact up to this many turns, else sampled at SIZE_PROBES places.
SIZE_EXACT_TURNS = 20_000
SIZE_PROBES = 64
SIZE_PROBE_TURNS = 8


class SharedReads(ABC):
    """The shared reads, on a backend that provides `_fetch_turns`, `_run`, `_size_bytes`
    and `schema_version` (a base of both stores)."""

    dialect: Dialect
    path: str

    @abstractmethod
    async def _fetch_turns(self, sql_text: str, params: Sequence[Any]) -> list[Turn]:
        """The turns a query selects (its columns are `queries.TURN_COLUMNS`)."""

    @abstractmethod
    async def _run(self, statements: Sequence[Query]) -> list[list[tuple[Any, ...]]]:
        """The rows of each query, run one after the other on one connection."""

    @abstractmethod
    async def _size_bytes(self) -> int:
        """How much space the memory takes."""

    @abstractmethod
    async def schema_version(self) -> int:
        """The database's schema version (0 for none yet)."""

    async def _rows(self, query: Query) -> list[tuple[Any, ...]]:
        return (await self._run([query]))[0]

    async def _value(self, query: Query) -> Any:
        rows = await self._rows(query)
        return rows[0][0] if rows else None

    async def get_turns(
        self, ids: Sequence[int], namespaces: Sequence[str] | None = None
    ) -> list[Turn]:
        """Turns by id, in the order given; ids not found (or outside `namespaces`) are left out."""
        wanted = [check_id(i) for i in ids]
        by_id: dict[int, Turn] = {}
        for chunk in self.dialect.chunked(wanted):
            for turn in await self._fetch_turns(*sql.turns_by_id(self.dialect, chunk, namespaces)):
                by_id[turn.id] = turn
        return [by_id[i] for i in wanted if i in by_id]

    async def session_turns(self, namespace: str, session_id: str) -> list[Turn]:
        turns = await self._fetch_turns(*sql.session_turns(self.dialect, namespace, session_id))
        if not turns:
            raise NotFoundError(
                f"no session {session_id!r} in namespace {namespace!r} "
                "(read memory://sessions for the list)"
            )
        return turns

    async def session_page(
        self, namespace: str, session_id: str, limit: int, offset: int = 0
    ) -> list[Turn]:
        """Up to `limit` turns of a session in order, from the `offset`-th (none when it
        holds no more)."""
        query = sql.session_page(self.dialect, namespace, session_id, limit, offset)
        return await self._fetch_turns(*query)

    async def session_speakers(
        self, namespace: str, session_ids: Sequence[str]
    ) -> dict[str, list[str]]:
        """Who speaks in each session (the speaker, else the role), most turns first."""
        speakers: dict[str, list[str]] = {}
        for chunk in self.dialect.chunked(list(session_ids)):
            for session_id, who, _ in await self._rows(
                sql.session_speakers(self.dialect, namespace, chunk)
            ):
                speakers.setdefault(str(session_id), []).append(str(who))
        return speakers

    async def list_sessions(
        self, namespace: str | None = None, limit: int = 1000, offset: int = 0
    ) -> list[SessionInfo]:
        rows = await self._rows(sql.list_sessions(self.dialect, namespace, limit, offset))
        return [
            SessionInfo(
                id=r[0], namespace=r[1], first_timestamp=r[2], last_timestamp=r[3], turn_count=r[4]
            )
            for r in rows
        ]

    async def namespaces(self) -> dict[str, int]:
        return {str(r[0]): int(r[1]) for r in await self._rows((sql.NAMESPACE_COUNTS, []))}

    async def stats(self, namespace: str | None = None) -> StoreStats:
        turn_rows, session_rows, namespace_rows = await self._run(
            [
                sql.turn_stats(self.dialect, namespace),
                sql.session_count(self.dialect, namespace),
                (sql.NAMESPACE_COUNTS, []),
            ]
        )
        row = turn_rows[0] if turn_rows else None
        namespaces = {str(r[0]): int(r[1]) for r in namespace_rows}
        if namespace:
            namespaces = {k: v for k, v in namespaces.items() if k == namespace}
        return StoreStats(
            turns=int(row[0]) if row else 0,
            sessions=int(session_rows[0][0]) if session_rows else 0,
            namespaces=namespaces,
            first_timestamp=row[1] if row else None,
            last_timestamp=row[2] if row else None,
            database=self.path,
            schema_version=await self.schema_version(),
            size_bytes=await self._size_bytes(),
        )

    async def scope_turns(self, scope: Scope) -> list[Turn]:
        """Every turn a query may see (the index-free grep mode reads these)."""
        return await self._fetch_turns(*sql.scope_turns(self.dialect, scope))

    async def scope_turns_after(self, scope: Scope, after_id: int, through_id: int) -> list[Turn]:
        """The turns of `scope` with ids after `after_id`, up to `through_id`, in id order
        (what a scope cached at `after_id` has gained)."""
        return await self._fetch_turns(
            *sql.scope_turns_between(self.dialect, scope, after_id, through_id)
        )

    async def scope_fingerprint(self, scope: Scope) -> tuple[int, int]:
        """(turns, highest turn id) of `scope`: it changes whenever a turn enters or leaves
        the scope — ids are never reused and turns are never edited (and in PostgreSQL ids
        are taken and committed in increasing order under the write lock, on any machine) —
        and not when other namespaces or the embeddings change. One index scan (0.25 s at
        a million turns on SQLite), far cheaper than reading the scope again."""
        rows = await self._rows(sql.scope_fingerprint(self.dialect, scope))
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    async def scope_size(self, scope: Scope) -> tuple[int, int, int]:
        """(turns, characters of text, highest turn id) of `scope` — what caching it costs.

        The characters are counted exactly up to `SIZE_EXACT_TURNS` turns, else estimated
        from a sample of turns spread over the scope's ids (summing every length reads every
        text: 23 s for a million long turns).
        """
        rows = await self._rows(sql.scope_id_range(self.dialect, scope))
        turns, first, last = (
            (int(rows[0][0]), int(rows[0][1]), int(rows[0][2])) if rows else (0,) * 3
        )
        if turns <= SIZE_EXACT_TURNS:
            return turns, int(await self._value(sql.scope_chars(self.dialect, scope)) or 0), last
        probes = [
            sql.scope_lengths_from(
                self.dialect, scope, first + (last - first) * probe // SIZE_PROBES, SIZE_PROBE_TURNS
            )
            for probe in range(SIZE_PROBES)
        ]
        lengths = [int(r[0]) for rows in await self._run(probes) for r in rows]
        return turns, round(turns * sum(lengths) / max(1, len(lengths))), last

    async def scope_pages(
        self, scope: Scope, batch: int = 2000, through_id: int | None = None
    ) -> AsyncIterator[list[Turn]]:
        """The turns of `scope` in id order (as `scope_turns`), a page of `batch` at a time,
        up to turn id `through_id`: a scan that reads the scope several times sees the same
        turns each time while other connections add more."""
        filtered, phase = sql.scope_id_scan(self.dialect, scope, through_id)
        async for page in self._keyset_pages(self.dialect.id_scan, filtered, (phase,), batch):
            yield page

    async def timeline_turns(self, scope: Scope, limit: int, latest: bool = False) -> list[Turn]:
        """Up to `limit` turns of `scope` in time order (timestamp, then session position):
        the earliest ones, or with `latest` the most recent ones (still returned oldest
        first)."""
        turns = await self._fetch_turns(*sql.timeline(self.dialect, scope, limit, latest))
        return turns[::-1] if latest else turns

    async def iter_scope_turns(
        self, scope: Scope, batch: int = 1000, contains: str | None = None
    ) -> AsyncIterator[Turn]:
        """Every turn of `scope`, most recent first (turns without a timestamp last, newest
        first), read in batches (for scans like grep). With `contains` (lowercase ASCII),
        only turns whose text holds it ignoring case (see `sql.contains_ignoring_case`).

        Pages are keyed on (timestamp, id), which the `turns_time` index serves: each page
        costs the same however deep the scan (ordering by an expression sorted the whole
        scope for every page — 0.85 s per page at 300,000 turns).
        """
        filtered, phases = sql.scope_recent_scan(self.dialect, scope, contains)
        async for page in self._keyset_pages("turns", filtered, phases, batch):
            for turn in page:
                yield turn

    async def count_turns(self, scope: Scope) -> int:
        """How many turns `scope` holds."""
        return int(await self._value(sql.scope_count(self.dialect, scope)) or 0)

    async def turn_count_estimate(self) -> int:
        """An upper bound of the number of stored turns, in constant time (the largest id)."""
        return int(await self._value((sql.LARGEST_ID, [])) or 0)

    async def get_embeddings(
        self, model: str, keys: Sequence[tuple[int, int]]
    ) -> dict[tuple[int, int], bytes]:
        """Cached vectors for (turn id, passage start) keys; missing keys are left out."""
        wanted = set(keys)
        chunks = self.dialect.chunked(sorted({k[0] for k in wanted}))
        found: dict[tuple[int, int], bytes] = {}
        for rows in await self._run([sql.embeddings_of(self.dialect, model, c) for c in chunks]):
            for turn_id, start, vector in rows:
                if (turn_id, start) in wanted:
                    found[(int(turn_id), int(start))] = bytes(vector)
        return found

    async def turns_without_embeddings(
        self, model: str, limit: int, after_id: int = 0
    ) -> list[Turn]:
        """Turns with no cached vector for `model` (oldest first, ids above `after_id`): the
        embedding backlog."""
        return await self._fetch_turns(
            *sql.turns_without_embeddings(self.dialect, model, limit, after_id)
        )

    async def count_turns_without_embeddings(self, model: str) -> int:
        """How many turns have no cached vector for `model`."""
        return int(await self._value(sql.count_without_embeddings(self.dialect, model)) or 0)

    async def previous_turns(self, ids: Sequence[int]) -> dict[int, Turn]:
        """For each turn id, the turn said just before it in its session (when there is one)."""
        chunks = self.dialect.chunked([check_id(i) for i in ids])
        shared = SharedValues()
        return {
            int(row[0]): row_to_turn(row[1:], shared)
            for rows in await self._run([sql.previous_turns(self.dialect, c) for c in chunks])
            for row in rows
        }

    async def table_rows(
        self, table: str, after: Sequence[Any] | None, limit: int
    ) -> list[tuple[Any, ...]]:
        """Up to `limit` rows of one of `TRANSFER_TABLES` in key order, after key `after`."""
        rows = await self._rows(sql.table_rows(self.dialect, table, after, limit))
        return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in rows]

    async def table_count(self, table: str) -> int:
        return int(await self._value((sql.table_count(table), [])) or 0)

    async def _keyset_pages(
        self, source: str, filtered: Query, phases: Sequence[sql.Phase], batch: int
    ) -> AsyncIterator[list[Turn]]:
        """The turns of `source` matching `filtered`, a page of `batch` at a time, phase after
        phase; each page starts after the last row of the one before (keyset paging: every
        page costs the same however deep the scan)."""
        for phase in phases:
            last: Turn | None = None
            while True:
                turns = await self._fetch_turns(
                    *sql.keyset_page(source, filtered, phase, last, batch)
                )
                if turns:
                    yield turns
                if len(turns) < batch:
                    break
                last = turns[-1]
