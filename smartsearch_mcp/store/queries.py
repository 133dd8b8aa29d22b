"""Small pure functions that build SQL fragments and FTS5 queries (tested string-for-string)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from smartsearch_mcp.dates import comparable
from smartsearch_mcp.types import Scope

_FTS_TOKEN = re.compile(r"\w+", re.UNICODE)


def scope_filter(scope: Scope, alias: str = "") -> tuple[str, list[Any]]:
    """A WHERE fragment (and its parameters) restricting turns to `scope`."""
    col = f"{alias}." if alias else ""
    clauses = [f"{col}namespace IN ({', '.join('?' * len(scope.namespaces))})"]
    params: list[Any] = list(scope.namespaces)
    if scope.session_id is not None:
        clauses.append(f"{col}session_id = ?")
        params.append(scope.session_id)
    if scope.since is not None:
        clauses.append(f"substr({col}timestamp, 1, 19) >= ?")
        params.append(comparable(scope.since)[:19])
    if scope.until is not None:
        clauses.append(f"substr({col}timestamp, 1, 19) < ?")
        params.append(comparable(scope.until)[:19])
    return " AND ".join(clauses), params


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
