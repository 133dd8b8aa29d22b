"""Small pure functions that build SQL: fragments, FTS5 queries, and the reads both backends
share, for either dialect (tested string-for-string; store/reads.py runs them)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from smartsearch_mcp.dates import comparable
from smartsearch_mcp.store.turns import TRANSFER_TABLES
from smartsearch_mcp.types import Scope, Turn

_FTS_TOKEN = re.compile(r"\w+", re.UNICODE)
_FTS_PHRASE = re.compile(r'"([^"]*)"')


def scope_filter(scope: Scope, alias: str = "", mark: str = "?") -> tuple[str, list[Any]]:
    """A WHERE fragment (and its parameters) restricting turns to `scope`; `mark` is the
    driver's placeholder (`?` for SQLite, `%s` for psycopg)."""
    col = f"{alias}." if alias else ""
    clauses = [f"{col}namespace IN ({', '.join([mark] * len(scope.namespaces))})"]
    params: list[Any] = list(scope.namespaces)
    if scope.session_id is not None:
        clauses.append(f"{col}session_id = {mark}")
        params.append(scope.session_id)
    if scope.since is not None:
        clauses.append(f"substr({col}timestamp, 1, 19) >= {mark}")
        params.append(comparable(scope.since)[:19])
    if scope.until is not None:
        clauses.append(f"substr({col}timestamp, 1, 19) < {mark}")
        params.append(comparable(scope.until)[:19])
    return " AND ".join(clauses), params


# Under Unicode simple case folding exactly three non-ASCII characters match ASCII letters:
# İ (i), K (the Kelvin sign, k) and ſ (long s). SQLite's lower() folds ASCII only.
_FOLD_TO_ASCII = (("\u0130", "i"), ("\u212a", "k"), ("\u017f", "s"))


def folded(column: str) -> str:
    """`column` lowercased as SQLite's lower() (and PostgreSQL's under the "C" collation)
    does, ASCII only, with the three non-ASCII letters that fold to ASCII folded too."""
    text = f"lower({column})"
    for special, ascii_letter in _FOLD_TO_ASCII:
        text = f"replace({text}, '{special}', '{ascii_letter}')"
    return text


def contains_ignoring_case(column: str) -> str:
    """A condition true when `column` contains the lowercase ASCII text of the following `?`
    parameter, ignoring case as a case-insensitive `regex`/`re` match of that text does: every
    turn such a match finds passes (it may pass a few more, which the match then rejects)."""
    return f"instr({folded(column)}, ?) > 0"


def like_contains(text: str) -> str:
    """A LIKE pattern (escape character `\\`) matching any string that contains `text`."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def fts_phrases(match: str) -> list[str]:
    """The phrases of an expression `fts_any` (or `fts_quote`) built, in order: the words of
    each, space-separated (what PostgreSQL's phraseto_tsquery takes)."""
    return [phrase for phrase in _FTS_PHRASE.findall(match) if phrase.strip()]


def fts_quote(term: str) -> str | None:
    """An FTS5 phrase for `term` with all query syntax neutralized, or None if nothing is left.

    Only word characters survive, so operators (AND, NEAR, *, :, quotes) in user text
    can never reach the FTS5 parser as syntax.
    """
    words = _FTS_TOKEN.findall(term)
    if not words:
        return None
    return '"' + " ".join(words) + '"'


def fts_any(terms: Iterable[str]) -> str:
    """An FTS5 expression matching any of `terms` (each quoted as a phrase)."""
    seen: dict[str, None] = {}
    for term in terms:
        phrase = fts_quote(term)
        if phrase is not None:
            seen.setdefault(phrase, None)
    return " OR ".join(seen)


# ---------------------------------------------------------------------- turn queries
#
# The reads both backends share (store/reads.py executes them), built for one dialect: the
# same SQL but for the driver's placeholder and a few differences in what each database
# needs spelled out. Each builder returns the statement and its parameters.

Query = tuple[str, list[Any]]

TURN_COLUMNS = (
    "id, namespace, session_id, position, speaker, role, text, timestamp, timestamp_raw, "
    "created_at, metadata"
)


@dataclass(frozen=True)
class Dialect:
    """What differs between the backends' SQL for the shared reads."""

    name: str
    mark: str  # the driver's placeholder
    # Ids per statement: SQLite binds each in an IN list (its parameter limit), PostgreSQL
    # takes one array (`= ANY(…)`) for any number (None).
    id_chunk: int | None
    # Where an id-order scan reads from: SQLite must be told to follow the rowid (with the
    # namespace index it would collect and sort the whole scope for every page).
    id_scan: str
    # Whether NULLs must be ordered explicitly for SQLite's order (NULL below everything).
    explicit_nulls: bool

    def marks(self, count: int) -> str:
        return ", ".join([self.mark] * count)

    def among(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """A condition true when `column` is one of `values` (one chunk of them, see
        `chunked`), and its parameters."""
        if self.id_chunk is None:
            return f"{column} = ANY({self.mark})", [list(values)]
        return f"{column} IN ({self.marks(len(values))})", list(values)

    def chunked(self, values: list[Any]) -> list[list[Any]]:
        """`values` in the chunks one `among` condition takes (none for no values)."""
        size = self.id_chunk or max(1, len(values))
        return [values[i : i + size] for i in range(0, len(values), size)]

    def nulls(self, descending: bool) -> str:
        """What ORDER BY … ASC/DESC needs to sort NULL below everything, as SQLite does."""
        if not self.explicit_nulls:
            return ""
        return " NULLS LAST" if descending else " NULLS FIRST"

    def contains(self, column: str, text: str) -> tuple[str, list[Any]]:
        """A condition true when `column` holds the lowercase ASCII `text` ignoring case (as
        `contains_ignoring_case`; PostgreSQL's LIKE is served by the trigram index)."""
        if self.id_chunk is None:
            return f"{folded(column)} LIKE {self.mark}", [like_contains(text)]
        return f"instr({folded(column)}, {self.mark}) > 0", [text]


SQLITE = Dialect("sqlite", "?", id_chunk=500, id_scan="turns NOT INDEXED", explicit_nulls=False)
POSTGRES = Dialect("postgres", "%s", id_chunk=None, id_scan="turns", explicit_nulls=True)


def turns_by_id(d: Dialect, ids: Sequence[int], namespaces: Sequence[str] | None) -> Query:
    where, params = d.among("id", ids)
    if namespaces is not None:
        among, more = d.among("namespace", namespaces)
        where, params = f"{where} AND {among}", params + more
    return f"SELECT {TURN_COLUMNS} FROM turns WHERE {where}", params


def session_turns(d: Dialect, namespace: str, session_id: str) -> Query:
    return (
        f"SELECT {TURN_COLUMNS} FROM turns WHERE namespace = {d.mark} AND session_id = {d.mark} "
        "ORDER BY position",
        [namespace, session_id],
    )


def session_page(d: Dialect, namespace: str, session_id: str, limit: int, offset: int) -> Query:
    return (
        f"SELECT {TURN_COLUMNS} FROM turns WHERE namespace = {d.mark} AND session_id = {d.mark} "
        f"ORDER BY position LIMIT {d.mark} OFFSET {d.mark}",
        [namespace, session_id, limit, offset],
    )


def session_speakers(d: Dialect, namespace: str, session_ids: Sequence[str]) -> Query:
    among, params = d.among("session_id", session_ids)
    return (
        "SELECT session_id, coalesce(speaker, role), count(*) FROM turns "
        f"WHERE namespace = {d.mark} AND {among} GROUP BY session_id, coalesce(speaker, role) "
        "ORDER BY session_id, count(*) DESC, coalesce(speaker, role)",
        [namespace, *params],
    )


def _namespace_where(d: Dialect, namespace: str | None) -> Query:
    return (f"WHERE namespace = {d.mark}", [namespace]) if namespace else ("", [])


def list_sessions(d: Dialect, namespace: str | None, limit: int, offset: int) -> Query:
    where, params = _namespace_where(d, namespace)
    return (
        "SELECT id, namespace, first_timestamp, last_timestamp, turn_count FROM sessions "
        f"{where} ORDER BY COALESCE(last_timestamp, created_at) DESC, id "
        f"LIMIT {d.mark} OFFSET {d.mark}",
        [*params, limit, offset],
    )


NAMESPACE_COUNTS = "SELECT namespace, count(*) FROM turns GROUP BY namespace ORDER BY namespace"
LARGEST_ID = "SELECT coalesce(max(id), 0) FROM turns"


def turn_stats(d: Dialect, namespace: str | None) -> Query:
    where, params = _namespace_where(d, namespace)
    return f"SELECT count(*), min(timestamp), max(timestamp) FROM turns {where}", params


def session_count(d: Dialect, namespace: str | None) -> Query:
    where, params = _namespace_where(d, namespace)
    return f"SELECT count(*) FROM sessions {where}", params


def _from_scope(d: Dialect, scope: Scope, columns: str, tail: str = "") -> Query:
    where, params = scope_filter(scope, mark=d.mark)
    return f"SELECT {columns} FROM turns WHERE {where}{tail}", params


def scope_turns(d: Dialect, scope: Scope) -> Query:
    return _from_scope(d, scope, TURN_COLUMNS, " ORDER BY id")


def scope_turns_between(d: Dialect, scope: Scope, after_id: int, through_id: int) -> Query:
    tail = f" AND id > {d.mark} AND id <= {d.mark} ORDER BY id"
    sql_text, params = _from_scope(d, scope, TURN_COLUMNS, tail)
    return sql_text, [*params, after_id, through_id]


def scope_count(d: Dialect, scope: Scope) -> Query:
    return _from_scope(d, scope, "count(*)")


def scope_fingerprint(d: Dialect, scope: Scope) -> Query:
    return _from_scope(d, scope, "count(*), coalesce(max(id), 0)")


def scope_id_range(d: Dialect, scope: Scope) -> Query:
    return _from_scope(d, scope, "count(*), coalesce(min(id), 0), coalesce(max(id), 0)")


def scope_chars(d: Dialect, scope: Scope) -> Query:
    return _from_scope(d, scope, "coalesce(sum(length(text)), 0)")


def scope_lengths_from(d: Dialect, scope: Scope, first_id: int, count: int) -> Query:
    """The text lengths of the first `count` turns of `scope` from id `first_id` on."""
    where, params = scope_filter(scope, mark=d.mark)
    return (
        f"SELECT length(text) FROM {d.id_scan} WHERE {where} AND id >= {d.mark} "
        f"ORDER BY id LIMIT {int(count)}",
        [*params, first_id],
    )


def timeline(d: Dialect, scope: Scope, limit: int, latest: bool) -> Query:
    where, params = scope_filter(scope, mark=d.mark)
    direction = "DESC" if latest else "ASC"
    return (
        f"SELECT {TURN_COLUMNS} FROM turns WHERE {where} "
        f"ORDER BY timestamp {direction}{d.nulls(latest)}, session_id {direction}, "
        f"position {direction}, id {direction} LIMIT {d.mark}",
        [*params, limit],
    )


@dataclass(frozen=True)
class Phase:
    """One phase of a keyset scan (`keyset_page`): the rows it reads, their order, and the
    condition for rows after a page's last turn, whose parameters `after_values` gives."""

    rows: str
    order: str
    after: str
    after_values: Callable[[Turn], list[Any]]


def scope_id_scan(d: Dialect, scope: Scope, through_id: int | None) -> tuple[Query, Phase]:
    """The turns of `scope` (up to `through_id`) in id order, as a keyset scan."""
    where, params = scope_filter(scope, mark=d.mark)
    if through_id is not None:
        where += f" AND id <= {d.mark}"
        params.append(through_id)
    return (where, params), Phase("TRUE", "id", f"id > {d.mark}", lambda turn: [turn.id])


def scope_recent_scan(
    d: Dialect, scope: Scope, contains: str | None
) -> tuple[Query, tuple[Phase, Phase]]:
    """The turns of `scope` most recent first, turns without a timestamp last (newest first),
    as a two-phase keyset scan keyed on (timestamp, id), which the `turns_time` index serves."""
    where, params = scope_filter(scope, mark=d.mark)
    if contains is not None:
        condition, more = d.contains("text", contains)
        where, params = f"{where} AND {condition}", params + more
    return (where, params), (
        Phase(
            "timestamp IS NOT NULL",
            "timestamp DESC, id DESC",
            f"(timestamp, id) < ({d.mark}, {d.mark})",
            lambda turn: [turn.timestamp, turn.id],
        ),
        Phase("timestamp IS NULL", "id DESC", f"id < {d.mark}", lambda turn: [turn.id]),
    )


def keyset_page(source: str, filtered: Query, phase: Phase, last: Turn | None, batch: int) -> Query:
    """The page of a keyset scan of `source` that follows turn `last` (the first for None)."""
    where, params = filtered
    page_where, page_params = f"{where} AND {phase.rows}", list(params)
    if last is not None:
        page_where += f" AND {phase.after}"
        page_params += phase.after_values(last)
    return (
        f"SELECT {TURN_COLUMNS} FROM {source} WHERE {page_where} "
        f"ORDER BY {phase.order} LIMIT {int(batch)}",
        page_params,
    )


def all_turns(d: Dialect, namespace: str | None, after_id: int = 0) -> Query:
    """Every turn (of one namespace, or all) with an id above `after_id`, in id order."""
    where, params = f"id > {d.mark}", list[Any]([after_id])
    if namespace:
        where += f" AND namespace = {d.mark}"
        params.append(namespace)
    return f"SELECT {TURN_COLUMNS} FROM turns WHERE {where} ORDER BY id", params


def embeddings_of(d: Dialect, model: str, turn_ids: Sequence[int]) -> Query:
    among, params = d.among("turn_id", turn_ids)
    return (
        f"SELECT turn_id, start, vector FROM embeddings WHERE model = {d.mark} AND {among}",
        [model, *params],
    )


def turns_without_embeddings(d: Dialect, model: str, limit: int, after_id: int) -> Query:
    return (
        f"SELECT {TURN_COLUMNS} FROM turns t WHERE t.id > {d.mark} AND NOT EXISTS (SELECT 1 "
        f"FROM embeddings e WHERE e.model = {d.mark} AND e.turn_id = t.id) ORDER BY t.id "
        f"LIMIT {d.mark}",
        [after_id, model, limit],
    )


def count_without_embeddings(d: Dialect, model: str) -> Query:
    return (
        "SELECT count(*) FROM turns t WHERE NOT EXISTS (SELECT 1 FROM embeddings e "
        f"WHERE e.model = {d.mark} AND e.turn_id = t.id)",
        [model],
    )


def previous_turns(d: Dialect, ids: Sequence[int]) -> Query:
    """For each of `ids`, that id and the columns of the turn said just before it."""
    among, params = d.among("t.id", ids)
    columns = ", ".join(f"p.{c.strip()}" for c in TURN_COLUMNS.split(","))
    return (
        f"SELECT t.id, {columns} FROM turns t JOIN turns p ON p.namespace = t.namespace "
        "AND p.session_id = t.session_id AND p.position = t.position - 1 "
        f"WHERE {among}",
        params,
    )


def table_rows(d: Dialect, table: str, after: Sequence[Any] | None, limit: int) -> Query:
    """Up to `limit` rows of one of `TRANSFER_TABLES` in key order, after key `after`."""
    columns, key = TRANSFER_TABLES[table]
    where = f"WHERE ({', '.join(key)}) > ({d.marks(len(key))})" if after else ""
    return (
        f"SELECT {', '.join(columns)} FROM {table} {where} ORDER BY {', '.join(key)} "
        f"LIMIT {int(limit)}",
        list(after or ()),
    )


def table_count(table: str) -> str:
    TRANSFER_TABLES[table]  # only these tables
    return f"SELECT count(*) FROM {table}"
