"""Small pure functions that build SQL fragments and FTS5 queries (tested string-for-string)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from smartsearch_mcp.dates import comparable
from smartsearch_mcp.types import Scope

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
