"""Full-text search on PostgreSQL ranked as SQLite's FTS5 ranks: the SQL (small pure functions,
tested string-for-string) that store/postgres.py runs.

FTS5's `bm25()` (sqlite/ext/fts5/fts5_aux.c), for a query of phrases q1…qn and a turn D:

    score(D) = sum_i idf(qi) * f(qi, D) * (k1 + 1) / (f(qi, D) + k1 * (1 - b + b * |D| / avgdl))
    idf(qi)  = log((N - n(qi) + 0.5) / (n(qi) + 0.5)), or 1e-6 where that is not positive

with k1 = 1.2, b = 0.75, N the turns of the whole table (every namespace), n(qi) the turns
matching phrase qi, f(qi, D) how often the phrase occurs in D (its words at consecutive
positions), |D| the turn's tokens and avgdl the table's tokens per turn. Here the same: the
phrases' lexemes come from the same text search configuration as the turns' `fts`, f is
counted from the tsvector's positions, |D| is `turns.fts_tokens`, and N and the token total
are `store_changes.turns` and `.tokens`, which triggers keep in the writing transaction
(store/postgres_schema.py, migration 2). Every expression is evaluated in FTS5's order, in
float8, so the scores are FTS5's where the tokens are.
"""

from __future__ import annotations

from smartsearch_mcp.store.postgres_schema import TS_CONFIG
from smartsearch_mcp.store.queries import Query, scope_filter
from smartsearch_mcp.types import Scope

# FTS5's bm25() defaults.
BM25_K1 = 1.2
BM25_B = 0.75

_M = "%s"


def query_words(phrases: list[str]) -> list[str]:
    """Phrases of words as the document's text is parsed (`fts_document`: "_" is a space)."""
    return [p.replace("_", " ") for p in phrases if p.replace("_", " ").strip()]


def any_phrase(phrases: int) -> str:
    """A tsquery matching any of `phrases` %s parameters (each a phrase of words)."""
    one = f"phraseto_tsquery('{TS_CONFIG}'::regconfig, {_M})"
    return "(" + " || ".join([one] * phrases) + ")"


def bm25_search(phrases: list[str], scope: Scope, limit: int) -> Query:
    """The best `limit` turns of `scope` for any of `phrases` (each words separated by spaces,
    as `query_words` gives them) with their BM25 scores, best first (ties by id)."""
    where, scope_params = scope_filter(scope, alias="t", mark=_M)
    k1, b = f"{BM25_K1!r}::float8", f"{BM25_B!r}::float8"
    statement = (
        # Each phrase's lexemes with their offsets in it (no stop words: positions are
        # consecutive), as the turns' text is parsed.
        "WITH phrase_term AS (SELECT w.i, u.lexeme, p - 1 AS k, "
        "count(*) OVER (PARTITION BY w.i) AS m "
        f"FROM unnest({_M}::text[]) WITH ORDINALITY AS w(words, i), "
        f"unnest(to_tsvector('{TS_CONFIG}'::regconfig, w.words)) AS u, "
        "unnest(u.positions) AS p), "
        # Every turn matching any phrase (FTS5 counts n(qi) over the whole table), with the
        # query's lexemes alone (setweight marks them, ts_filter keeps them).
        "matched AS MATERIALIZED (SELECT t.id, t.fts_tokens AS tokens, "
        f"({where}) AS inside, "
        "ts_filter(setweight(t.fts, 'A', (SELECT array_agg(DISTINCT lexeme) FROM phrase_term)), "
        "'{a}') AS terms "
        f"FROM turns t WHERE t.fts @@ {any_phrase(len(phrases))}), "
        # f(qi, D): a word's positions; for a phrase of several words, the starts at which
        # every word of it is at its offset.
        "frequency AS (SELECT m.id, q.i, cardinality(u.positions)::float8 AS f "
        "FROM matched m, unnest(m.terms) AS u, phrase_term q "
        "WHERE q.m = 1 AND q.lexeme = u.lexeme "
        "UNION ALL SELECT id, i, count(*)::float8 FROM ("
        "SELECT m.id, q.i, p - q.k AS start FROM matched m, unnest(m.terms) AS u, "
        "unnest(u.positions) AS p, phrase_term q WHERE q.m > 1 AND q.lexeme = u.lexeme "
        "GROUP BY m.id, q.i, start HAVING count(*) = max(q.m)) s GROUP BY id, i), "
        # (Totals that disagree with the table — which `integrity_check` reports — give
        # scores, never an error.)
        "totals AS (SELECT greatest(turns, 1)::float8 AS n, "
        "greatest(tokens, 1)::float8 / greatest(turns, 1)::float8 AS avgdl "
        "FROM store_changes WHERE id = 1), "
        "idf AS (SELECT f.i, CASE WHEN x.v > 0 THEN x.v ELSE 1e-6::float8 END AS v "
        "FROM (SELECT i, count(*) AS hits FROM frequency GROUP BY i) f, totals, "
        "LATERAL (SELECT CASE WHEN totals.n >= f.hits THEN "
        "ln((totals.n - f.hits + 0.5::float8) / (f.hits + 0.5::float8)) END AS v) x) "
        f"SELECT m.id, sum(idf.v * ((f.f * ({k1} + 1.0::float8)) / (f.f + {k1} * "
        f"(1.0::float8 - {b} + {b} * m.tokens / totals.avgdl))) ORDER BY f.i) AS score "
        "FROM frequency f JOIN matched m ON m.id = f.id JOIN idf ON idf.i = f.i, totals "
        "WHERE m.inside GROUP BY m.id ORDER BY score DESC, m.id LIMIT %s"
    )
    return statement, [phrases, *scope_params, *phrases, limit]


def doc_count(words: list[str], at_most: int | None = None) -> Query:
    """How many turns (in every namespace) match any of the phrases `words`, counting no
    further than `at_most + 1` when given."""
    matching = f"SELECT 1 FROM turns WHERE fts @@ {any_phrase(len(words))}"
    if at_most is None:
        return f"SELECT count(*) FROM ({matching}) m", list(words)
    return f"SELECT count(*) FROM ({matching} LIMIT %s) m", [*words, max(0, at_most) + 1]
