"""Baselines run beside SmartSearch in the same benchmark: SQLite FTS5 BM25 filling the same
token budget, and the full conversation as context."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from smartsearch_mcp.pipeline.render import RenderedCost
from smartsearch_mcp.pipeline.truncate import truncate_to_budget
from smartsearch_mcp.pipeline.words import is_stopword, tokenize_words
from smartsearch_mcp.store import MemoryStore
from smartsearch_mcp.store.queries import fts_any
from smartsearch_mcp.tokens import TokenCounter
from smartsearch_mcp.types import Candidate, Passage, Scope, Scored, Turn

BM25_LIMIT = 1000


@dataclass(frozen=True, slots=True)
class Filled:
    """Turns chosen to fill a budget, in order, and the tokens they use."""

    turn_ids: list[int]
    tokens: int


def bm25_terms(query: str) -> list[str]:
    """The query's words without stopwords (all its words if only stopwords are left)."""
    words = tokenize_words(query)
    content = [w for w in words if not is_stopword(w)]
    return list(dict.fromkeys(content or words))


async def bm25_ranking(
    store: MemoryStore, query: str, scope: Scope, limit: int = BM25_LIMIT
) -> list[int]:
    """Turn ids matching any query word, best BM25 score first."""
    match = fts_any(bm25_terms(query))
    if not match:
        return []
    return [turn_id for turn_id, _ in await store.search_fts(match, scope, limit)]


def fill_budget(ranked: Sequence[int], turn_tokens: Mapping[int, int], max_tokens: int) -> Filled:
    """Take whole turns in ranked order while they fit in `max_tokens`; a turn that does not
    fit is skipped and the next ones are still tried (greedy packing)."""
    chosen: list[int] = []
    used = 0
    for turn_id in ranked:
        cost = turn_tokens.get(turn_id)
        if cost is None or used + cost > max_tokens:
            continue
        chosen.append(turn_id)
        used += cost
    return Filled(chosen, used)


def fill_rendered(
    query: str,
    ranked: Sequence[int],
    turns: Mapping[int, Turn],
    max_tokens: int,
    counter: TokenCounter,
) -> Filled:
    """Whole turns in ranked order, as many as fit when rendered like a recall's text
    (headings, dates, speakers: see pipeline/render.py) in `max_tokens` — the accounting
    SmartSearch's own recall uses, so both fill the same budget of returned text."""
    scored = [
        Scored(candidate=Candidate(Passage(turns[i], 0, len(turns[i].text)), 0.0), score=0.0)
        for i in ranked
        if i in turns
    ]
    cost = RenderedCost(counter, query)
    cut = truncate_to_budget(scored, max_tokens, counter, top_k=0, alpha=0.0, cost=cost)
    return Filled([item.candidate.passage.turn.id for item in cut.kept], cut.tokens_used)
