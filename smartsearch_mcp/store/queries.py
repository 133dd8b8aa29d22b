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


# Under Unicode simple case folding exactly three non-ASCII characters match ASCII letters:
# İ (i), K (the Kelvin sign, k) and ſ (long s). SQLite's lower() folds ASCII only.
_FOLD_TO_ASCII = (("\u0130", "i"), ("\u212a", "k"), ("\u017f", "s"))


def contains_ignoring_case(column: str) -> str:
    """A condition true when `column` contains the lowercase ASCII text of the following `?`
    parameter, ignoring case as a case-insensitive `regex`/`re` match of that text does: every
    turn such a match finds passes (it may pass a few more, which the match then rejects)."""
    folded = f"lower({column})"
    for special, ascii_letter in _FOLD_TO_ASCII:
        folded = f"replace({folded}, '{special}', '{ascii_letter}')"
    return f"instr({folded}, ?) > 0"


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
