"""The scope's passages, vectors and caches that the recall stages read.

`ScopeCorpora` gives a recall the passages of its scope: cached per scope while they fit
`retrieval.scope_cache_mb` (a `Corpus`), else a plan to stream them (`StreamedScope`), or in
indexed mode the turns the full-text index found (their vectors: `embeddings.py`).

Threads: CPU-bound work (splitting turns, building a corpus, decoding vectors) runs in worker
threads; the caches shared between concurrent recalls are either only changed on the event
loop (the scope cache, pending vectors) or guarded by a lock (the passage cache).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np

from smartsearch_mcp.config import Config
from smartsearch_mcp.dates import DateRange
from smartsearch_mcp.pipeline import off_loop
from smartsearch_mcp.pipeline.analyze import QueryAnalysis
from smartsearch_mcp.pipeline.bursts import burst_groups_grown
from smartsearch_mcp.pipeline.dated import DateWindow, windows_of
from smartsearch_mcp.pipeline.passages import may_split, split_into_passages
from smartsearch_mcp.pipeline.retrieve import (
    QUERY_STATS_SAMPLE,
    Corpus,
    RankingTexts,
    context_text,
    lowered_texts,
    ranking_text,
    speaker_names,
)
from smartsearch_mcp.pipeline.scope_view import ScopeIndex
from smartsearch_mcp.pipeline.sparse import SparseMatrix
from smartsearch_mcp.pipeline.spelling import memory_words
from smartsearch_mcp.pipeline.word_stats import extended_stats
from smartsearch_mcp.store import MemoryStore
from smartsearch_mcp.store.queries import fts_any, fts_quote
from smartsearch_mcp.types import Passage, Scope, Turn

log = logging.getLogger(__name__)

CACHED_SCOPES = 8
PASSAGE_CACHE_TURNS = 500_000
# Indexed mode, memories of at least PRUNE_FROM_TURNS turns: query terms found in more than
# COMMON_TERM_SHARE of the turns are left out of the index query while rarer ones remain.
PRUNE_FROM_TURNS = 50_000
COMMON_TERM_SHARE = 0.02


@dataclass
class EmbedBudget:
    """How many passages without a cached vector one recall may still embed itself.

    A whole scope's missing vectors are embedded only if they all fit (`partial=False`);
    otherwise the budget is kept for the candidates (`partial=True`). Passages left out are
    scored without dense signals and reported, never waited for.
    """

    remaining: int
    skipped: set[tuple[int, int]] = field(default_factory=set)

    def allow(self, wanted: int, *, partial: bool) -> int:
        granted = wanted if wanted <= self.remaining else (self.remaining if partial else 0)
        self.remaining -= granted
        return granted

    def warning(self) -> str | None:
        if not self.skipped:
            return None
        return (
            f"{len(self.skipped)} passage(s) are not embedded yet, so dense ranking left them "
            "out (lexical ranking still covers them); the server embeds new turns in the "
            "background, `smartsearch-mcp embed` does it now"
        )


@dataclass
class CachedScope:
    """A scope's corpus (or streaming plan) as read at `version` (None: to be checked, this
    process wrote), with the scope's fingerprint then (see `MemoryStore.scope_fingerprint`)
    and its estimated size."""

    version: int | None
    fingerprint: tuple[int, int]
    source: Corpus | StreamedScope
    size_mb: float


@dataclass
class StreamedScope:
    """A scope read from the store on each query instead of cached (see `scan`)."""

    through_id: int  # its last turn when the plan was made: later turns wait for a new plan
    turns: int
    index: ScopeIndex | None = None  # where its passages are, after the first scan


class PassageCache:
    """The passages of turns, split once: turn texts never change, so what is derived from
    one is kept across queries (and across corpora, which the indexed mode builds per query),
    least recently used evicted first. Safe to use from several threads at once."""

    def __init__(self, max_words: int, overlap_words: int, capacity: int = PASSAGE_CACHE_TURNS):
        self.max_words = max_words
        self.overlap_words = overlap_words
        self.capacity = capacity
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[int, str], list[Passage]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._cache)

    def split(self, turns: Sequence[Turn]) -> list[Passage]:
        """The passages of `turns`, in order (CPU-bound: call from a worker thread)."""
        out: list[Passage] = []
        cache = self._cache
        with self._lock:
            for turn in turns:
                if not may_split(turn.text, self.max_words):  # one passage, found cheaply
                    out.extend(split_into_passages(turn, self.max_words, self.overlap_words))
                    continue
                key = (turn.id, turn.text)  # an id freed by `forget` may come back
                passages = cache.get(key)
                if passages is None:
                    passages = split_into_passages(turn, self.max_words, self.overlap_words)
                    cache[key] = passages
                    if len(cache) > self.capacity:
                        cache.popitem(last=False)
                else:
                    cache.move_to_end(key)
                out.extend(passages)
        return out

    def build(self, turns: Sequence[Turn]) -> Corpus:
        """A corpus of the passages of `turns` (CPU-bound: call from a worker thread)."""
        return Corpus.build(self.split(turns))


# What a cached scope costs in memory (its turns, passages and lowered texts), fitted to
# tracemalloc measurements of 100,000 chat-length turns (149 characters: 683 bytes each) and
# 50,000 long ones (1,199 characters: 3,148 bytes each); plus, once the scope is read again,
# its `WordIndex`: 0.58-0.61 bytes per character (100,000 turns of 131 characters, 50,000
# of 3,390), rounded up.
CORPUS_BYTES_PER_TURN = 333
CORPUS_BYTES_PER_CHAR = 2.35 + 0.65


def estimated_corpus_mb(turns: int, chars: int) -> float:
    """Memory (MB) a `Corpus` of a scope of `turns` turns holding `chars` characters takes."""
    return (CORPUS_BYTES_PER_TURN * turns + CORPUS_BYTES_PER_CHAR * chars) / 1e6


def extended(corpus: Corpus, passages: list[Passage], context: list[str] | None) -> Corpus:
    """`corpus` with `passages` (of turns added to its scope after its own) at the end: the
    corpus a new read of the scope gives, built from the old one's passages and lowercased
    texts. Vectors (NaN rows for the new passages, filled as for any corpus), the word
    index, the vocabulary, the speakers, the bursts and the word statistics are extended;
    relations are computed again when asked. `context`: the new
    passages' context texts, when the old corpus had its own. CPU-bound: call from a worker
    thread."""
    every = corpus.passages + passages
    grown = Corpus(every, RankingTexts(every), corpus.lowered + lowered_texts(passages))
    added = grown.lowered[len(corpus.lowered) :]
    grown.reused = True  # a scope read again
    grown.stats_sample = corpus.stats_sample
    if corpus.stats is not None:  # None: counted again when asked
        grown.stats = extended_stats(corpus.stats, added, corpus.stats_sample)
    if corpus.words is not None:
        grown.words = corpus.words | memory_words(added)
    if corpus.speaker_names is not None:
        grown.speaker_names = corpus.speaker_names | speaker_names(
            {p.turn.speaker for p in passages}
        )
    if corpus.vectors is not None:
        grown.vectors = _with_unknown_rows(corpus.vectors, len(passages))
        grown.vector_model = corpus.vector_model
    if corpus.context is not None and context is not None:
        grown.context = corpus.context + context
        if corpus.context_vectors is not None:
            grown.context_vectors = _with_unknown_rows(corpus.context_vectors, len(passages))
    if isinstance(corpus.sparse, SparseMatrix):
        grown.sparse = corpus.sparse.extended(len(passages))
    if corpus.word_index is not None:
        grown.word_index = corpus.word_index.extended(added)
    if corpus.burst_index is not None:
        (seconds, max_words), groups, texts = corpus.burst_index
        grown.burst_index = (
            (seconds, max_words),
            *burst_groups_grown(
                every, grown.lowered, len(corpus.passages), (groups, texts), seconds, max_words
            ),
        )
    return grown


def _with_unknown_rows(matrix: np.ndarray, rows: int) -> np.ndarray:
    return np.vstack([matrix, np.full((rows, matrix.shape[1]), np.nan, dtype=matrix.dtype)])


async def context_texts(
    store: MemoryStore,
    cache: PassageCache,
    limiter: anyio.CapacityLimiter,
    passages: Sequence[Passage],
    texts: Sequence[str],
) -> list[str]:
    """Each passage with the end of the turn said before it in its session (`context_text`):
    what the "context" ranker embeds."""
    previous = await store.previous_turns(
        sorted({p.turn.id for p in passages if p.turn.position > 0})
    )

    def join() -> list[str]:
        prefixes = {
            turn_id: ranking_text(cache.split([turn])[-1]) for turn_id, turn in previous.items()
        }
        return [
            context_text(prefixes.get(p.turn.id), text)
            for p, text in zip(passages, texts, strict=True)
        ]

    return await off_loop(limiter, join)


class ScopeCorpora:
    """The corpus each scope's recall reads, cached per scope (see module doc)."""

    def __init__(self, store: MemoryStore, config: Config, limiter: anyio.CapacityLimiter) -> None:
        self.store = store
        self.config = config
        self.limiter = limiter
        cfg = config.passages
        self.passages = PassageCache(cfg.max_words, cfg.overlap_words)
        # scope key -> its corpus or streaming plan, least recently used first; only ever
        # touched on the event loop
        self._corpora: OrderedDict[tuple[Any, ...], CachedScope] = OrderedDict()
        self._writes = 0  # `changed` calls: a check that awaited across one is not trusted

    def invalidate(self) -> None:
        """Forget cached corpora: the next query reads its scope again."""
        self._corpora.clear()

    def changed(self) -> None:
        """This process wrote or deleted turns (which its own store's `data_version` does
        not show): each cached scope checks its fingerprint at its next query."""
        self._writes += 1
        for cached in self._corpora.values():
            cached.version = None

    async def build(self, turns: Sequence[Turn]) -> Corpus:
        return await off_loop(self.limiter, self.passages.build, turns)

    async def scope_corpus(self, scope: Scope) -> Corpus | StreamedScope:
        """The scope's passages, cached until a turn enters or leaves the scope — or, for a
        scope larger than `retrieval.scope_cache_mb`, the plan to stream it (also cached).
        The cached scopes together stay within `scope_cache_mb`: the least recently used go
        first.

        A commit anywhere (`data_version`) makes the cache check the scope's fingerprint:
        the background embedding, other namespaces and other processes commit often, and
        reading a large scope again takes seconds.
        """
        writes = self._writes
        version = await self.store.data_version()
        key = (scope.namespaces, scope.session_id, scope.since, scope.until)
        cached = self._corpora.get(key)
        if cached is not None and cached.version != version:
            fingerprint = await self.store.scope_fingerprint(scope)
            if self._corpora.get(key) is not cached or self._writes != writes:
                cached = None  # invalidated or evicted meanwhile, or this process wrote
            elif fingerprint == cached.fingerprint:
                cached.version = version
            elif await self._grown(scope, cached, fingerprint):  # extended with what it gained
                if self._corpora.get(key) is not cached or self._writes != writes:
                    cached = None
                else:
                    cached.version = version
        if cached is not None and cached.version == version:
            self._corpora.move_to_end(key)
            if isinstance(cached.source, Corpus):
                cached.source.reused = True
            return cached.source
        self._corpora.pop(key, None)  # stale: free it before reading the scope again
        limit = self.config.retrieval.scope_cache_mb
        source: Corpus | StreamedScope
        turns, chars, last_id = await self.store.scope_size(scope)
        size_mb = estimated_corpus_mb(turns, chars)
        if size_mb > limit:
            source = StreamedScope(through_id=last_id, turns=turns)
            log.info(
                "scope of %d turns (about %.0f MB in memory) is streamed from the database "
                "on each query (retrieval.scope_cache_mb = %d)",
                turns,
                size_mb,
                limit,
            )
            size_mb = 0.0  # what it keeps: a few bytes per passage (`ScopeIndex`)
        else:
            while self._corpora and self._cached_mb() + size_mb > limit:
                self._corpora.popitem(last=False)
            source = await self.build(await self.store.scope_turns(scope))
        # Turns written between the size and the read make the fingerprint differ at the
        # next check, so the scope is read again then: never kept stale. Published here, on
        # the loop, once built.
        self._corpora[key] = CachedScope(version, (turns, last_id), source, size_mb)
        while len(self._corpora) > CACHED_SCOPES:
            self._corpora.popitem(last=False)
        return source

    async def _grown(self, scope: Scope, cached: CachedScope, fingerprint: tuple[int, int]) -> bool:
        """Whether the scope has only gained turns since it was cached, in which case its
        corpus is `extended` with them (`cached` updated): the passages of the turns read
        before are kept, not read, split and lowercased again. False when turns left the
        scope (nothing is changed then: the scope is read again), or when it outgrows the
        cache."""
        corpus = cached.source
        turns, last_id = cached.fingerprint
        if not isinstance(corpus, Corpus) or fingerprint[1] <= last_id:
            return False
        # ids only grow and turns are never edited: the scope lost none of its turns if the
        # turns after its last one, up to the new last, are all that it gained
        added = await self.store.scope_turns_after(scope, last_id, fingerprint[1])
        if turns + len(added) != fingerprint[0]:
            return False
        size_mb = cached.size_mb + estimated_corpus_mb(
            len(added), sum(len(turn.text) for turn in added)
        )
        if self._cached_mb() - cached.size_mb + size_mb > self.config.retrieval.scope_cache_mb:
            return False
        passages = await off_loop(self.limiter, self.passages.split, added)
        context = None
        if corpus.context is not None:
            context = await context_texts(
                self.store, self.passages, self.limiter, passages, RankingTexts(passages)
            )
        cached.source = await off_loop(self.limiter, extended, corpus, passages, context)
        cached.fingerprint = fingerprint
        cached.size_mb = size_mb
        return True

    def _cached_mb(self) -> float:
        return sum(cached.size_mb for cached in self._corpora.values())

    async def indexed_corpus(
        self, analysis: QueryAnalysis, scope: Scope, dated: Sequence[Turn] = ()
    ) -> Corpus:
        """The passages of the turns the full-text index finds for the query (indexed mode),
        and of `dated` (`indexed_dated`: the turns inside the question's time range)."""
        match = await self._selective_match([term.term for term in analysis.terms])
        hits = await self.store.search_fts(match, scope, self.config.retrieval.max_candidates * 3)
        turns = await self.store.get_turns([turn_id for turn_id, _ in hits])
        found = {turn.id for turn in turns}
        turns += [turn for turn in dated if turn.id not in found]
        corpus = await self.build(turns)
        corpus.bm25 = dict(hits)
        corpus.stats_sample = QUERY_STATS_SAMPLE
        return corpus

    async def indexed_dated(
        self, analysis: QueryAnalysis, scope: Scope, date_candidates: int
    ) -> list[Turn]:
        """For the indexed mode, the turns inside the question's time range (`dated_turns`,
        twice `date_candidates` of each kind; none without a range or with the channel off),
        looked up once per question however often the index is asked."""
        if analysis.time_range is None or date_candidates <= 0:
            return []
        return await self.dated_turns(analysis.time_range, scope, 2 * date_candidates)

    async def dated_turns(self, time_range: DateRange, scope: Scope, limit: int) -> list[Turn]:
        """Turns of `scope` inside `time_range` for the indexed mode, in the first window that
        holds any (`dated.windows_of`): up to `limit` said in it, the latest first, and up
        to `limit` the full-text index finds by the window's month names and years whose
        text names a date in it. (Relative dates — "yesterday" — are found this way only in
        turns said inside the range: the grep mode reads every turn.)"""
        for window in windows_of(time_range):
            narrowed = _narrowed(scope, window.span)
            said = await self.store.timeline_turns(narrowed, limit, True) if narrowed else []
            hits = await self.store.search_fts(fts_any(window.words), scope, limit)
            named = await self.store.get_turns([turn_id for turn_id, _ in hits])
            seen = {turn.id for turn in said}
            naming = [t for t in named if t.id not in seen and _names_window(window, t)]
            if said or naming:
                return [*said, *naming]
        return []

    async def _selective_match(self, terms: Sequence[str]) -> str:
        """The FTS5 query of the indexed mode: any of `terms`, leaving out, in a large memory,
        those found in more than `COMMON_TERM_SHARE` of all turns while rarer ones remain.

        Ranking the matches of a word in every tenth turn costs seconds over a million turns
        and hardly changes which turns come first (BM25 weighs such a word near zero); the
        candidates are scored with every term afterwards anyway.
        """
        phrases = list(dict.fromkeys(p for p in map(fts_quote, terms) if p is not None))
        total = await self.store.turn_count_estimate()
        if len(phrases) < 2 or total < PRUNE_FROM_TURNS:
            return " OR ".join(phrases)
        common = int(COMMON_TERM_SHARE * total)
        # Counted only as far as the cut (a backend may stop there: PostgreSQL must read
        # the matching turns to count them), exactly when every phrase is common.
        counts = await self.store.fts_doc_counts(phrases, at_most=common)
        selective = [p for p in phrases if counts[p] <= common]
        if not selective:
            counts = await self.store.fts_doc_counts(phrases)
            selective = sorted(phrases, key=lambda p: counts[p])[:2]
        return " OR ".join(selective)


def _narrowed(scope: Scope, span: DateRange) -> Scope | None:
    """`scope` restricted to `span` (None when they do not overlap)."""
    since = span.start if scope.since is None else max(scope.since, span.start)
    until = span.end if scope.until is None else min(scope.until, span.end)
    return dataclasses.replace(scope, since=since, until=until) if since < until else None


def _names_window(window: DateWindow, turn: Turn) -> bool:
    """Whether a passage of `turn` names a date in `window` (a turn is one passage or
    several; any of them names it when the whole text does)."""
    return window.holds(Passage(turn, 0, len(turn.text)))
