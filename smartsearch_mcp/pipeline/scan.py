"""Stage 2 for a scope too large to keep in memory: grep-mode retrieval, streamed.

The grep mode normally keeps every passage of a scope in memory (`Corpus`), about 3 KB per
long turn. Past `retrieval.scope_cache_mb` the scope is read from the store page by page
instead, a few times per query, and only what the later stages can use is kept: one lexical
score per passage (a float) and the passages that can become candidates, first hits or
expansion results. Scores, candidates and expansion equal the cached path's (tested); what
is lost is the dense channel over the whole scope, which no scope above
`DENSE_SCOPE_LIMIT` passages has anyway.

Passes, each reading the scope once:
1. count — passages, each query term's document frequency, who speaks;
2. score — each passage's idf-weighted grep score, the best hits for pseudo-relevance
   feedback and the sample of texts its word statistics come from;
3. feedback — only when feedback found terms: the final scores with them;
4. expand — only when the first hits name entities to search: the passages naming them.
The passages inside the question's time range (the date channel, see `dated.py`) are marked
in pass 2, and the best of them kept in the last scoring pass.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio
import numpy as np

from smartsearch_mcp.config import ExpansionConfig, RetrievalConfig
from smartsearch_mcp.pipeline import lap, off_loop
from smartsearch_mcp.pipeline.analyze import QueryAnalysis, WeightedTerm
from smartsearch_mcp.pipeline.dated import (
    Dated,
    DateWindow,
    add_date_bonus,
    date_channel,
    date_order_key,
    windows_of,
)
from smartsearch_mcp.pipeline.lexical import (
    EntityMention,
    compile_terms,
    select_prf_terms,
)
from smartsearch_mcp.pipeline.retrieve import (
    STATS_SAMPLE,
    Corpus,
    RankingTexts,
    add_speaker_bonus,
    channel_quotas,
    feedback_texts,
    idf_from_counts,
    lexical_scores,
    lowered_texts,
    ranking_text,
    said_by_named,
    select_candidates,
    speaker_names,
    term_document_counts,
    with_feedback,
)
from smartsearch_mcp.pipeline.scope_view import BurstScores, Pages, ScopeIndex, Split
from smartsearch_mcp.pipeline.word_stats import CorpusStats, sample_positions
from smartsearch_mcp.types import Passage, Turn

FindMentions = Callable[[list[str]], Sequence[EntityMention]]


@dataclass
class ScanResult:
    """What the later stages need of a streamed scope, indexed like `corpus`."""

    corpus: Corpus  # the passages kept, in scope order (`partial`)
    scores: list[float]  # final lexical score of each kept passage
    bm25: list[float]  # BM25 of each kept passage's turn ([] when BM25 is not used)
    chosen: list[int]  # the candidates chosen over the whole scope
    passages: int  # passages in the whole scope
    timings_ms: dict[str, float]  # count, score, feedback, select, expand
    index: ScopeIndex  # for the next scan of the same scope
    dated: Dated | None = None  # the kept passages inside the question's time range


class _Best:
    """The `size` best (score, position) pairs seen, with their passages: higher score
    first, then lower position — the order of `top_indices`."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._heap: list[tuple[float, int, Passage, str]] = []

    def offer(self, score: float, position: int, passage: Passage, lowered: str) -> None:
        if self.size <= 0:
            return
        item = (score, -position, passage, lowered)
        if len(self._heap) < self.size:
            heapq.heappush(self._heap, item)
        elif item[:2] > self._heap[0][:2]:
            heapq.heapreplace(self._heap, item)

    def items(self) -> list[tuple[int, Passage, str]]:
        """(position, passage, lowered), best first."""
        ordered = sorted(self._heap, key=lambda item: (-item[0], -item[1]))
        return [(-negated, passage, lowered) for _, negated, passage, lowered in ordered]


class _BestDated:
    """The `size` best passages inside a time range by `dated.date_order_key`."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._heap: list[tuple[tuple[float, float, str, int], Passage, str]] = []

    def offer(self, score: float, position: int, passage: Passage, lowered: str) -> None:
        if self.size <= 0:
            return
        item = (date_order_key(score, 0.0, passage, position), passage, lowered)
        if len(self._heap) < self.size:
            heapq.heappush(self._heap, item)
        elif item[0] > self._heap[0][0]:
            heapq.heapreplace(self._heap, item)

    def items(self) -> list[tuple[int, Passage, str]]:
        """(position, passage, lowered), best first."""
        ordered = sorted(self._heap, key=lambda item: item[0], reverse=True)
        return [(-key[3], passage, lowered) for key, passage, lowered in ordered]


class _DateScan:
    """The passages of a streamed scope inside the question's time range: one flag per
    passage for each window (`dated.windows_of`), and the best of them for the date
    channel, offered their final scores page by page. The first window holding a passage is
    the one used, so once a window holds one, later windows are neither tested nor kept."""

    def __init__(self, windows: list[DateWindow], total: int, quota: int) -> None:
        self.windows = windows
        self.quota = quota
        self.inside = [np.zeros(total, dtype=bool) for _ in windows]
        self.best = [_BestDated(quota) for _ in windows]
        self.holding: int | None = None  # the first window found to hold a passage so far
        self.chosen: int | None = None  # the window used, once every passage was seen

    def mark(self, positions: list[int], passages: list[Passage], lowered: list[str]) -> None:
        for k, (window, flags) in enumerate(zip(self.windows, self.inside, strict=True)):
            held = [window.holds(p, low) for p, low in zip(passages, lowered, strict=True)]
            flags[positions] = held
            if any(held):
                self.holding = k
            if self.holding is not None and k >= self.holding:
                return  # this window will be chosen: later ones need no more tests

    def choose(self) -> None:
        """Use the first window holding any passage."""
        self.chosen = self.holding

    def restart(self) -> None:
        """Forget the best passages (the scores are about to change)."""
        self.best = [_BestDated(self.quota) for _ in self.windows]

    def offer(
        self,
        positions: Sequence[int],
        passages: Sequence[Passage],
        lowered: Sequence[str],
        scores: Sequence[float],
    ) -> None:
        for k, (flags, best) in enumerate(zip(self.inside, self.best, strict=True)):
            if self.chosen is not None and k != self.chosen:
                continue
            for g, passage, low, score in zip(positions, passages, lowered, scores, strict=True):
                if flags[g]:
                    best.offer(float(score), g, passage, low)
            if self.holding is not None and k >= self.holding:
                return  # the first window holding passages is the one chosen


async def scan_scope(
    pages: Pages,
    split: Split,
    analysis: QueryAnalysis,
    retrieval: RetrievalConfig,
    expansion: ExpansionConfig,
    *,
    bm25_by_turn: Mapping[int, float] | None,
    total_candidates: int,
    rrf_k: int,
    find_mentions: FindMentions | None,
    index: ScopeIndex | None = None,
    limiter: anyio.CapacityLimiter | None = None,
) -> ScanResult:
    """Retrieve over a scope read by `pages()` (a fresh iteration per pass, turns in one
    fixed order) as the cached path does over a `Corpus` of all of it (see module doc).

    `bm25_by_turn`: FTS5 BM25 by turn id (None: no BM25 channel). `total_candidates`: how
    many candidates to choose, in selection order (the caller takes the places expansion
    needs from the end). `find_mentions`: the entities to search for in the first hits'
    ranking texts (None: no expansion). `index`: the `ScopeIndex` of an earlier scan of the
    same scope, unchanged since (else it is built; see the result). The work on each page
    runs in a worker thread (at most `limiter` at once): the event loop only reads.
    """
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    terms = list(analysis.terms)
    counts = [0] * len(terms)

    def count(lowered: list[str]) -> None:
        for i, found in enumerate(term_document_counts(terms, lowered)):
            counts[i] += found

    if index is None:
        index = await ScopeIndex.build(
            pages, split, lambda page: count(lowered_texts(page)), limiter
        )
    else:
        async for _, _, lowered in _read(pages, index, limiter):
            await off_loop(limiter, count, lowered)
    total = index.passages
    weighted = idf_from_counts(terms, counts, total)
    clock = lap(timings, "count", clock)

    # Pass 2: the grep score; feedback's best hits and word statistics; the best passages
    # in case feedback adds nothing.
    keep = max(total_candidates, expansion.first_hits if expansion.enabled else 0)
    main = np.zeros(total)
    final = np.zeros(total)
    bm25 = np.zeros(total) if bm25_by_turn is not None else None
    prf_docs = retrieval.prf_docs if retrieval.prf_terms > 0 else 0
    feedback_hits = _Best(prf_docs)
    sampled = iter(sample_positions(total, STATS_SAMPLE))
    next_sample = next(sampled, None)
    sample: list[str] = []
    best = _Best(keep)
    kept: dict[int, tuple[Passage, str]] = {}
    quota = retrieval.date_candidates
    dates = _DateScan(windows_of(analysis.time_range) if quota > 0 else [], total, quota)

    bursts = BurstScores.of(index.words, compile_terms(weighted), total) if index.words else None

    def settled(
        ready: tuple[list[int], list[Passage], list[str], list[float]],
    ) -> None:
        positions, passages, lowered, finished = ready
        final[positions] = finished
        _offer(best, kept, bm25, bm25_by_turn, positions, passages, lowered, finished)
        dates.offer(positions, passages, lowered, finished)

    def score(positions: list[int], passages: list[Passage], lowered: list[str]) -> None:
        nonlocal next_sample
        scores = lexical_scores(weighted, lowered)
        main[positions] = scores
        for g, passage, low, value in zip(positions, passages, lowered, scores, strict=True):
            if value > 0:
                feedback_hits.offer(value, g, passage, low)
            while next_sample is not None and next_sample < g:
                next_sample = next(sampled, None)
            if next_sample == g:
                sample.append(low)
        finished = _finish(scores, passages, analysis, retrieval.speaker_bonus)
        dates.mark(positions, passages, lowered)
        if bursts is None:
            settled((positions, passages, lowered, finished))
        else:  # a burst's passages wait for the rest of it (see scope_view.BurstScores)
            settled(bursts.settle(positions, passages, lowered, scores, finished))

    async for positions, passages, lowered in _read(pages, index, limiter):
        await off_loop(limiter, score, positions, passages, lowered)
    if bursts is not None:
        settled(bursts.flush())
    dates.choose()
    clock = lap(timings, "score", clock)

    feedback_terms: list[WeightedTerm] = []
    top = feedback_hits.items()
    if top:
        stats = await off_loop(limiter, CorpusStats.from_sample, sample, total)
        feedback_terms = await off_loop(
            limiter,
            select_prf_terms,
            analysis,
            feedback_texts(passage for _, passage, _ in top),
            stats,
            retrieval.prf_terms,
        )
    sample.clear()  # free it: only the scores are needed from here on
    if feedback_terms:
        best = _Best(keep)
        kept = {}
        dates.restart()

        def rescore(positions: list[int], passages: list[Passage], lowered: list[str]) -> None:
            extra = lexical_scores(feedback_terms, lowered)
            scores = with_feedback(main[positions].tolist(), extra)
            finished = _finish(scores, passages, analysis, retrieval.speaker_bonus)
            if bursts is not None:  # what each passage's burst added in the first pass
                finished = (np.asarray(finished) + bursts.delta[positions]).tolist()
            settled((positions, passages, lowered, finished))

        async for positions, passages, lowered in _read(pages, index, limiter):
            await off_loop(limiter, rescore, positions, passages, lowered)
        clock = lap(timings, "feedback", clock)
    main = np.zeros(0)
    ranked = best.items()
    for g, passage, low in ranked:
        kept[g] = (passage, low)

    channels: dict[str, np.ndarray] = {"lexical": final}
    if bm25 is not None:
        channels["bm25"] = bm25
    dated_best: list[int] = []
    inside: list[int] = []
    if dates.chosen is not None:
        for g, passage, low in dates.best[dates.chosen].items():
            dated_best.append(g)
            kept[g] = (passage, low)
        inside = np.flatnonzero(dates.inside[dates.chosen]).tolist()
        channels["date"] = date_channel(total, inside, dated_best)
    quotas = channel_quotas(channels, retrieval)
    chosen = await off_loop(limiter, select_candidates, channels, quotas, total_candidates, rrf_k)
    clock = lap(timings, "select", clock)

    if expansion.enabled and find_mentions is not None:
        first = [g for g, _, _ in ranked[: expansion.first_hits]]
        texts = [ranking_text(kept[g][0]) for g in first]
        mentions = await off_loop(limiter, find_mentions, texts) if first else []
        if mentions:
            # Each entity's search must see, in score order, its `per_entity` best passages
            # not taken yet: at most every candidate and every other entity's are taken.
            size = expansion.per_entity * (1 + expansion.max_entities) + len(chosen)
            named = [
                (compile_terms([WeightedTerm(m.text.lower(), 1.0, "entity")]), _Best(size))
                for m in mentions
            ]

            def search(positions: list[int], passages: list[Passage], lowered: list[str]) -> None:
                for g, passage, low in zip(positions, passages, lowered, strict=True):
                    for matcher, found in named:
                        if matcher.score(low) > 0:
                            found.offer(float(final[g]), g, passage, low)

            async for positions, passages, lowered in _read(pages, index, limiter):
                await off_loop(limiter, search, positions, passages, lowered)
            lap(timings, "expand", clock)
            for _, found in named:
                for g, passage, low in found.items():
                    kept[g] = (passage, low)

    order = sorted(kept)
    where = {g: i for i, g in enumerate(order)}
    passages = [kept[g][0] for g in order]
    corpus = Corpus(
        passages=passages,
        texts=RankingTexts(passages),
        lowered=[kept[g][1] for g in order],
        speaker_names=speaker_names(index.speakers),
        partial=True,
    )
    dated = None
    if dates.chosen is not None:
        dated = Dated(
            dates.windows[dates.chosen],
            inside=[where[g] for g in inside if g in where],
            best=[where[g] for g in dated_best],
        )
    return ScanResult(
        corpus=corpus,
        scores=final[order].tolist(),
        bm25=bm25[order].tolist() if bm25 is not None else [],
        chosen=[where[g] for g in chosen if g in where],
        passages=total,
        timings_ms=timings,
        index=index,
        dated=dated,
    )


async def _read(
    pages: Pages, index: ScopeIndex, limiter: anyio.CapacityLimiter | None = None
) -> AsyncIterator[tuple[list[int], list[Passage], list[str]]]:
    """Each page of the scope as the positions, passages and lowered ranking texts of the
    passages `index` knows (placed in a worker thread)."""
    async for turns in pages():
        placed = await off_loop(limiter, _placed, index, turns)
        if placed is not None:
            yield placed


def _placed(
    index: ScopeIndex, turns: Sequence[Turn]
) -> tuple[list[int], list[Passage], list[str]] | None:
    placed = index.place(turns)
    if not placed:
        return None
    passages = [p for _, p in placed]
    return [g for g, _ in placed], passages, lowered_texts(passages)


def _finish(
    scores: list[float], passages: Sequence[Passage], analysis: QueryAnalysis, bonus: float
) -> list[float]:
    """The date and speaker bonuses, applied as the cached path applies them."""
    dated = add_date_bonus(scores, passages, analysis.time_range)
    return add_speaker_bonus(dated, said_by_named(passages, analysis), bonus)


def _offer(
    best: _Best,
    kept: dict[int, tuple[Passage, str]],
    bm25: np.ndarray | None,
    bm25_by_turn: Mapping[int, float] | None,
    positions: Sequence[int],
    passages: Sequence[Passage],
    lowered: Sequence[str],
    scores: Sequence[float],
) -> None:
    """Keep the best-scoring passages and every passage of a turn BM25 found."""
    for g, passage, low, score in zip(positions, passages, lowered, scores, strict=True):
        if score > 0:
            best.offer(score, g, passage, low)
        if bm25_by_turn is not None and bm25 is not None:
            value = bm25_by_turn.get(passage.turn.id)
            if value is not None:
                bm25[g] = value
                kept[g] = (passage, low)
