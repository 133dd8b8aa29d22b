"""The recall pipeline: analyze → retrieve → expand → rank → truncate.

The only async orchestration. Stages are pure functions of what they are given; this module
fetches from the store, runs model work in worker threads, and keeps per-scope caches.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anyio
import anyio.to_thread
import numpy as np

from smartsearch_mcp.config import Config
from smartsearch_mcp.models import ModelRegistry
from smartsearch_mcp.pipeline import lap
from smartsearch_mcp.pipeline.analyze import QueryAnalysis, analyze_query
from smartsearch_mcp.pipeline.expand import expand_entities
from smartsearch_mcp.pipeline.lexical import EntityMention, find_entity_mentions
from smartsearch_mcp.pipeline.passages import may_split, split_into_passages
from smartsearch_mcp.pipeline.rank import (
    SUPERSEDE_WINDOW,
    ScoreJob,
    add_session_support,
    credit_replied_turns,
    fuse,
    prefer_later_restatements,
    prefer_time_range,
    ranking_confidence,
    run_scorers,
    with_confidence,
)
from smartsearch_mcp.pipeline.render import RenderedCost
from smartsearch_mcp.pipeline.retrieve import (
    QUERY_STATS_SAMPLE,
    Corpus,
    add_date_bonus,
    add_prf,
    add_speaker_bonus,
    context_text,
    dense_query,
    estimated_corpus_mb,
    idf_weighted,
    lexical_scores,
    ranking_text,
    said_by_named,
    select_candidates,
    top_indices,
)
from smartsearch_mcp.pipeline.scan import ScanResult, ScopeIndex, scan_scope
from smartsearch_mcp.pipeline.truncate import Truncation, truncate_to_budget
from smartsearch_mcp.store import MemoryStore
from smartsearch_mcp.store.queries import fts_any, fts_quote
from smartsearch_mcp.store.sqlite import CONTEXT_SUFFIX
from smartsearch_mcp.tokens import TokenCounter, get_token_counter
from smartsearch_mcp.types import Candidate, Hop, Passage, RecallResult, Scope, Scored, Turn

log = logging.getLogger(__name__)

LEARNED = ("cross_encoder", "colbert", "bi_encoder")
# Dense retrieval over a whole scope is kept for scopes up to this many passages; larger
# scopes are served by the lexical channels and the dense score of the candidates.
DENSE_SCOPE_LIMIT = 200_000
EMBED_BATCH = 256
CACHED_SCOPES = 8
SCAN_PAGE = 2000  # turns per read of a streamed scope
PASSAGE_CACHE_TURNS = 500_000
ENTITY_CACHE_TEXTS = 100_000
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
    """A scope's corpus (or streaming plan) as read at `version`, with the scope's
    fingerprint then (see `MemoryStore.scope_fingerprint`) and its estimated size."""

    version: int
    fingerprint: tuple[int, int]
    source: Corpus | StreamedScope
    size_mb: float


@dataclass
class StreamedScope:
    """A scope read from the store on each query instead of cached (see `scan`)."""

    through_id: int  # its last turn when the plan was made: later turns wait for a new plan
    turns: int
    index: ScopeIndex | None = None  # where its passages are, after the first scan


@dataclass(frozen=True)
class Ranking:
    """Stages 1–4 for one query: every candidate, scored and sorted best first."""

    query: str
    analysis: QueryAnalysis
    scored: list[Scored]
    candidates: list[Candidate]
    rankers: list[str]
    warnings: list[str]
    hops: list[Hop] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)


class RecallPipeline:
    """Recall over one store with one configuration and one model registry."""

    def __init__(self, store: MemoryStore, config: Config, models: ModelRegistry) -> None:
        self.store = store
        self.config = config
        self.models = models
        self._limiter = anyio.CapacityLimiter(max(1, config.rank.max_parallel))
        # scope key -> its corpus or streaming plan, least recently used first
        self._corpora: OrderedDict[tuple[Any, ...], CachedScope] = OrderedDict()
        self._counter: TokenCounter | None = None
        # Turn texts never change, so what is derived from one text is cached across queries
        # (and across corpora, which the indexed mode builds per query).
        self._passage_cache: OrderedDict[tuple[int, str], list[Passage]] = OrderedDict()
        self._entity_cache: dict[str, list[tuple[str, str]]] = {}
        # Called when a recall met passages it could not embed within its budget (the
        # server wakes its background embedding: turns may come from other processes).
        self.on_backlog: Callable[[], None] | None = None

    # ------------------------------------------------------------------ lifecycle

    def invalidate(self) -> None:
        """Forget cached corpora (after this process wrote or deleted turns)."""
        self._corpora.clear()

    def learned_rankers(self) -> list[str]:
        return [s for s in self.config.rank.scorers if s in LEARNED]

    def warm_up(self) -> None:
        """Load the NLP model, the configured rankers and the tokenizer (blocking; call from
        a worker thread)."""
        self.token_counter()
        self.models.get_nlp()
        for kind in self.learned_rankers():
            self.models.get_scorer(kind)  # type: ignore[arg-type]

    def token_counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = get_token_counter(self.config.truncation.tokenizer)
        return self._counter

    # ------------------------------------------------------------------ recall

    async def recall(
        self, query: str, scope: Scope, max_tokens: int, reference: datetime | None = None
    ) -> RecallResult:
        ranking = await self.rank(query, scope, reference)
        return self.truncate(ranking, max_tokens)

    def truncate(self, ranking: Ranking, max_tokens: int) -> RecallResult:
        """Stage 5: score-adaptive truncation of a ranking to `max_tokens` of returned text."""
        started = time.perf_counter()
        cfg = self.config.truncation
        # top_k is meant for the default budget; a larger budget may keep proportionally more.
        top_k = cfg.top_k
        if top_k > 0 and max_tokens > cfg.max_tokens:
            top_k = math.ceil(top_k * max_tokens / cfg.max_tokens)
        confidence = ranking_confidence(ranking.scored)
        # The threshold is for the default budget: a caller asking for more than that asks
        # for more context, and gets the budget filled (measured: LoCoMo at 6,000 tokens
        # lost 2.4 points with the threshold even scaled down).
        alpha = cfg.alpha if max_tokens <= cfg.max_tokens else 0.0
        warnings = list(ranking.warnings)

        def cut_with(notes: list[str]) -> Truncation:
            cost = RenderedCost(
                self.token_counter(), ranking.query, ranking.rankers, ranking.hops, notes
            )
            return truncate_to_budget(
                ranking.scored,
                max_tokens,
                self.token_counter(),
                top_k=top_k,
                alpha=alpha,
                min_passages=cfg.min_passages,
                confidence=confidence,
                cost=cost,
            )

        cut = cut_with(warnings)
        if cut.clipped:
            warnings.append(
                "the best passage alone exceeds max_tokens and was cut short; raise max_tokens "
                "to see all of it"
            )
            cut = cut_with(warnings)
        timings = dict(ranking.timings_ms)
        timings["truncate"] = (time.perf_counter() - started) * 1000
        by_item = zip(ranking.scored, confidence, strict=True)
        kept_confidence = {id(item): value for item, value in by_item}
        return RecallResult(
            passages=cut.kept,
            tokens_used=cut.tokens_used,
            max_tokens=max_tokens,
            rankers=ranking.rankers,
            warnings=warnings,
            hops=ranking.hops,
            candidates=len(ranking.candidates),
            score_at_cut=cut.score_at_cut,
            timings_ms=timings,
            stop_reason=cut.reason,
            confidence=[kept_confidence.get(id(item), confidence[0]) for item in cut.kept],
        )

    async def rank(self, query: str, scope: Scope, reference: datetime | None = None) -> Ranking:
        """Stages 1–4: analyze, retrieve, expand, rank."""
        timings: dict[str, float] = {}
        warnings: list[str] = []
        clock = time.perf_counter()
        budget = EmbedBudget(self.config.rank.embed_on_recall)

        nlp = None
        if self.config.nlp.spacy_models:
            nlp = await anyio.to_thread.run_sync(self.models.get_nlp)
        analysis = analyze_query(query, nlp, reference)
        clock = lap(timings, "analyze", clock)
        warnings.extend(analysis.warnings)
        if not analysis.has_content:  # nothing to search for: no passages, and a warning
            return Ranking(query, analysis, [], [], [], warnings, timings_ms=timings)

        cfg = self.config.retrieval
        exp = self.config.expansion
        # Places kept for what expansion adds; it needs an entity in the question to anchor on.
        expands = exp.enabled and bool(analysis.entities)
        room = exp.max_entities * exp.per_entity // 2 if expands else 0
        total = max(0, cfg.max_candidates - room)  # candidates before expansion
        scan: ScanResult | None = None
        if cfg.mode == "indexed":
            corpus = await self._indexed_corpus(analysis, scope)
        else:
            source = await self._scope_corpus(scope)
            if isinstance(source, StreamedScope):
                scan = await self._scan(analysis, scope, source, nlp, cfg.max_candidates)
                corpus = scan.corpus
                warnings.append(
                    f"the scope holds {source.turns:,} turns, more than grep mode keeps in "
                    f"memory (retrieval.scope_cache_mb = {cfg.scope_cache_mb}), so they were "
                    "read from the database for this query, which is slow; "
                    'retrieval.mode = "indexed" suits memories this large'
                )
            else:
                corpus = source
        said = said_by_named(corpus.passages, analysis)  # bonus, channel and `speaker` ranker
        if scan is not None:
            scores, bm25 = scan.scores, scan.bm25
            timings.update({f"scan.{k}": v for k, v in scan.timings_ms.items()})
        else:
            terms = idf_weighted(analysis.terms, corpus.lowered)
            scores = lexical_scores(terms, corpus.lowered)
            scores, _ = add_prf(analysis, scores, corpus, cfg.prf_docs, cfg.prf_terms)
            scores = add_date_bonus(scores, corpus.passages, analysis.time_range)
            scores = add_speaker_bonus(scores, said, cfg.speaker_bonus)
            bm25 = await self._bm25(analysis, scope, corpus)
        clock = lap(timings, "retrieve", clock)

        learned = self.learned_rankers()
        want_bi = "bi_encoder" in learned or (cfg.dense and cfg.mode == "grep")
        bi_encoder = await anyio.to_thread.run_sync(self.models.get_bi_encoder) if want_bi else None
        query_vector: np.ndarray | None = None
        embedded_query = dense_query(query, corpus.speakers())
        if bi_encoder is not None and cfg.dense and cfg.dense_candidates > 0:
            query_vector = await anyio.to_thread.run_sync(
                bi_encoder.embed_query, embedded_query, limiter=self._limiter
            )
            whole = cfg.mode == "grep" and not corpus.partial
            if whole and len(corpus.passages) <= DENSE_SCOPE_LIMIT:
                await self._fill_vectors(corpus, bi_encoder, budget)
        channels: dict[str, Any] = {"lexical": scores}
        quotas = {"lexical": cfg.lexical_candidates}
        if bm25:
            channels["bm25"] = bm25
            quotas["bm25"] = cfg.bm25_candidates
        if query_vector is not None and corpus.vectors is not None:
            channels["dense"] = corpus.vectors @ query_vector
            quotas["dense"] = cfg.dense_candidates
            if "context" in self.config.rank.scorers:
                context = await self._fill_context_vectors(corpus, bi_encoder, budget)
                channels["context"] = context @ query_vector
                quotas["context"] = cfg.dense_candidates
            if cfg.speaker_candidates > 0 and any(said):
                dense = channels["dense"]
                best = np.maximum(dense, channels["context"]) if "context" in channels else dense
                channels["speaker_dense"] = np.where(np.asarray(said) > 0, best, 0.0)
                quotas["speaker_dense"] = cfg.speaker_candidates
        # One selection of the full size: its first `total` are what a selection of `total`
        # would choose (quotas, then fusion, fill in the same order); the rest take the places
        # expansion leaves unused.
        if scan is not None:  # chosen over the whole scope while it was read
            ordered = list(scan.chosen)
        else:
            ordered = select_candidates(
                channels, quotas, cfg.max_candidates, self.config.rank.rrf_k
            )
        chosen, spare = ordered[:total], ordered[total:]
        taken = set(chosen)
        clock = lap(timings, "dense", clock)

        added: list[int] = []
        hops: list[Hop] = []
        if expands:
            first = top_indices(scores, exp.first_hits)
            if len(self._entity_cache) > ENTITY_CACHE_TEXTS:
                self._entity_cache.clear()
            added, hops = expand_entities(
                analysis,
                corpus,
                first,
                scores,
                nlp,
                exp.max_entities,
                exp.per_entity,
                taken,
                self._entity_cache,
            )
        # What expansion found takes the places kept for it; what it leaves goes to the rest
        # of the selection.
        for index in itertools.chain(added, spare):
            if len(chosen) >= cfg.max_candidates:
                break
            if index not in taken:
                chosen.append(index)
                taken.add(index)
        clock = lap(timings, "expand", clock)

        candidates = [
            Candidate(
                passage=corpus.passages[i],
                lexical_score=float(scores[i]),
                sources=_sources(channels, i),
            )
            for i in chosen
        ]
        scored, rankers, rank_warnings, rank_timings = await self._rank(
            query,
            candidates,
            [corpus.texts[i] for i in chosen],
            chosen,
            corpus,
            query_vector,
            [bm25[i] for i in chosen] if bm25 else None,
            embedded_query,
            [said[i] for i in chosen],
            budget,
        )
        warnings.extend(rank_warnings)
        scored, outside = prefer_time_range(scored, analysis.time_range)
        if outside is not None:
            warnings.append(outside)
        if (message := budget.warning()) is not None:
            warnings.append(message)
            if self.on_backlog is not None:
                self.on_backlog()
        timings.update({f"rank.{k}": v for k, v in rank_timings.items()})
        lap(timings, "rank", clock)
        return Ranking(
            query=query,
            analysis=analysis,
            scored=scored,
            candidates=candidates,
            rankers=rankers,
            warnings=warnings,
            hops=hops,
            timings_ms=timings,
        )

    # ------------------------------------------------------------------ ranking

    async def _rank(
        self,
        query: str,
        candidates: list[Candidate],
        texts: list[str],
        indices: list[int],
        corpus: Corpus,
        query_vector: np.ndarray | None,
        bm25: list[float] | None,
        embedded_query: str,
        said: list[float],
        budget: EmbedBudget,
    ) -> tuple[list[Scored], list[str], list[str], dict[str, float]]:
        warnings: list[str] = []
        if not candidates:
            return [], [], warnings, {}
        jobs: dict[str, ScoreJob] = {}
        wanted = self.learned_rankers()
        for kind in wanted:
            if kind == "bi_encoder":
                continue
            scorer = await anyio.to_thread.run_sync(self.models.get_scorer, kind)  # type: ignore[arg-type]
            if scorer is not None:
                jobs[kind] = _bind(scorer.score, query, texts)
        use_context = "context" in self.config.rank.scorers
        passage_vectors: np.ndarray | None = None
        # Every configured learned ranker is missing: degrade to the bi-encoder before
        # falling back to lexical scores alone.
        degrade = bool(wanted) and not jobs and "bi_encoder" not in wanted
        use_bi = "bi_encoder" in wanted or degrade
        bi_encoder = None
        if use_bi or use_context:
            bi_encoder = await anyio.to_thread.run_sync(self.models.get_bi_encoder)
        if bi_encoder is not None:
            qv = query_vector
            if qv is None:
                qv = await anyio.to_thread.run_sync(bi_encoder.embed_query, embedded_query)
            if use_bi:
                vectors = await self._candidate_vectors(corpus, indices, bi_encoder, budget)
                passage_vectors = vectors
                jobs["bi_encoder"] = _constant((vectors @ qv).astype(float).tolist())
                if degrade:
                    warnings.append("configured rankers unavailable; ranked with the bi-encoder")
            if use_context:
                context = await self._context_vectors(corpus, indices, bi_encoder, budget)
                jobs["context"] = _constant((context @ qv).astype(float).tolist())
        if bm25 is not None and "bm25" in self.config.rank.scorers:
            jobs["bm25"] = _constant(bm25)
        if "speaker" in self.config.rank.scorers:
            jobs["speaker"] = _constant(said)
        for message in self.models.warnings:
            warnings.append(message)
        scores, errors, timings = await run_scorers(jobs, self._limiter)
        for name, error in errors.items():
            warnings.append(f"ranker {name} failed and was skipped: {error}")
        # The speaker prior alone cannot order passages: lexical scores join it then.
        use_lexical = "lexical" in self.config.rank.scorers or not set(scores) - {"speaker"}
        if use_lexical:
            scores["lexical"] = [c.lexical_score for c in candidates]
            if "lexical" not in self.config.rank.scorers:
                warnings.append("no learned ranker available; ranked by lexical scores only")
        weights = {name: self.config.rank.weights.get(name, 1.0) for name in scores}
        rank_cfg = self.config.rank
        fused = with_confidence(fuse(candidates, scores, rank_cfg.rrf_k, weights))
        fused = add_session_support(
            fused, rank_cfg.session_weight, rank_cfg.session_top, rank_cfg.session_window
        )
        fused = credit_replied_turns(fused, rank_cfg.reply_credit)
        if rank_cfg.supersede > 0 and passage_vectors is not None:
            row = {c.passage.key: i for i, c in enumerate(candidates)}
            top = fused[:SUPERSEDE_WINDOW]
            picked = passage_vectors[[row[s.candidate.passage.key] for s in top]]
            fused = prefer_later_restatements(fused, picked @ picked.T, rank_cfg.supersede)
        return fused, sorted(scores), _dedupe(warnings), timings

    # ------------------------------------------------------------------ corpora

    async def _bm25(self, analysis: QueryAnalysis, scope: Scope, corpus: Corpus) -> list[float]:
        """FTS5 BM25 score of each corpus passage's turn for the query's terms ([] when BM25
        is neither a ranker nor a candidate source)."""
        if not self._uses_bm25():
            return []
        by_turn = corpus.bm25  # indexed mode: the corpus came from this very search
        if by_turn is None:
            by_turn = await self._bm25_hits(analysis, scope)
        return [by_turn.get(p.turn.id, 0.0) for p in corpus.passages]

    async def _bm25_hits(self, analysis: QueryAnalysis, scope: Scope) -> dict[int, float]:
        """FTS5 BM25 by turn id of the best turns for the query's terms."""
        match = fts_any(t.term for t in analysis.terms if t.kind != "variant")
        limit = max(self.config.retrieval.max_candidates, 200) * 2
        return dict(await self.store.search_fts(match, scope, limit))

    def _uses_bm25(self) -> bool:
        return "bm25" in self.config.rank.scorers or self.config.retrieval.bm25_candidates > 0

    async def _scope_corpus(self, scope: Scope) -> Corpus | StreamedScope:
        """The scope's passages, cached until a turn enters or leaves the scope — or, for a
        scope larger than `retrieval.scope_cache_mb`, the plan to stream it (also cached).
        The cached scopes together stay within `scope_cache_mb`: the least recently used go
        first.

        A commit anywhere (`data_version`) makes the cache check the scope's fingerprint:
        the background embedding, other namespaces and other processes commit often, and
        reading a large scope again takes seconds.
        """
        version = await self.store.data_version()
        key = (scope.namespaces, scope.session_id, scope.since, scope.until)
        cached = self._corpora.get(key)
        if cached is not None and cached.version != version:
            fingerprint = await self.store.scope_fingerprint(scope)
            if self._corpora.get(key) is not cached:  # invalidated or evicted meanwhile
                cached = None
            elif fingerprint == cached.fingerprint:
                cached.version = version
        if cached is not None and cached.version == version:
            self._corpora.move_to_end(key)
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
                self.config.retrieval.scope_cache_mb,
            )
            size_mb = 0.0  # what it keeps: a few bytes per passage (`ScopeIndex`)
        else:
            while self._corpora and self._cached_mb() + size_mb > limit:
                self._corpora.popitem(last=False)
            source = Corpus.build(self._passages(await self.store.scope_turns(scope)))
        # Turns written between the size and the read make the fingerprint differ at the
        # next check, so the scope is read again then: never kept stale.
        self._corpora[key] = CachedScope(version, (turns, last_id), source, size_mb)
        while len(self._corpora) > CACHED_SCOPES:
            self._corpora.popitem(last=False)
        return source

    def _cached_mb(self) -> float:
        return sum(cached.size_mb for cached in self._corpora.values())

    async def _scan(
        self,
        analysis: QueryAnalysis,
        scope: Scope,
        streamed: StreamedScope,
        nlp: Any,
        total: int,
    ) -> ScanResult:
        """Stage 2 over a streamed scope (see `scan.scan_scope`)."""
        passages_cfg = self.config.passages
        exp = self.config.expansion

        def pages() -> AsyncIterator[list[Turn]]:
            return self.store.scope_pages(scope, SCAN_PAGE, streamed.through_id)

        def split(turn: Turn) -> list[Passage]:  # not cached: the scope does not fit
            return split_into_passages(turn, passages_cfg.max_words, passages_cfg.overlap_words)

        def mentions(texts: list[str]) -> list[EntityMention]:
            return find_entity_mentions(analysis, texts, nlp, exp.max_entities, self._entity_cache)

        result = await scan_scope(
            pages,
            split,
            analysis,
            self.config.retrieval,
            exp,
            bm25_by_turn=await self._bm25_hits(analysis, scope) if self._uses_bm25() else None,
            total_candidates=total,
            rrf_k=self.config.rank.rrf_k,
            find_mentions=mentions,
            index=streamed.index,
        )
        streamed.index = result.index
        return result

    async def _indexed_corpus(self, analysis: QueryAnalysis, scope: Scope) -> Corpus:
        match = await self._selective_match([term.term for term in analysis.terms])
        hits = await self.store.search_fts(match, scope, self.config.retrieval.max_candidates * 3)
        turns = await self.store.get_turns([turn_id for turn_id, _ in hits])
        corpus = Corpus.build(self._passages(turns))
        corpus.bm25 = dict(hits)
        corpus.stats_sample = QUERY_STATS_SAMPLE
        return corpus

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
        counts = await self.store.fts_doc_counts(phrases)
        selective = [p for p in phrases if counts[p] <= COMMON_TERM_SHARE * total]
        if not selective:
            selective = sorted(phrases, key=lambda p: counts[p])[:2]
        return " OR ".join(selective)

    def _passages(self, turns: Sequence[Turn]) -> list[Passage]:
        cfg = self.config.passages
        cache = self._passage_cache
        out: list[Passage] = []
        for turn in turns:
            if not may_split(turn.text, cfg.max_words):  # one passage, found without counting
                out.extend(split_into_passages(turn, cfg.max_words, cfg.overlap_words))
                continue
            key = (turn.id, turn.text)  # an id freed by `forget` may come back
            passages = cache.get(key)
            if passages is None:
                passages = split_into_passages(turn, cfg.max_words, cfg.overlap_words)
                cache[key] = passages
                if len(cache) > PASSAGE_CACHE_TURNS:
                    cache.popitem(last=False)
            out.extend(passages)
        return out

    # ------------------------------------------------------------------ embeddings

    async def _fill_vectors(self, corpus: Corpus, bi_encoder: Any, budget: EmbedBudget) -> None:
        """Give `corpus` a vector per passage: cached ones from the store, the missing ones
        embedded now if they fit in `budget`, else NaN rows until a later recall (vectors
        the background embedding stored meanwhile are picked up then)."""
        if corpus.vectors is None or corpus.vector_model != bi_encoder.model_id:
            corpus.vectors = _unknown(len(corpus.passages), bi_encoder.dimension)
            corpus.vector_model = bi_encoder.model_id
        await self._complete(corpus.vectors, corpus.passages, corpus.texts, bi_encoder, "", budget)

    async def _candidate_vectors(
        self, corpus: Corpus, indices: list[int], bi_encoder: Any, budget: EmbedBudget
    ) -> np.ndarray:
        if corpus.vectors is not None and corpus.vector_model == bi_encoder.model_id:
            await self._complete(
                corpus.vectors, corpus.passages, corpus.texts, bi_encoder, "", budget, indices
            )
            return corpus.vectors[indices]
        return await self._vectors_for(
            [corpus.passages[i] for i in indices],
            [corpus.texts[i] for i in indices],
            bi_encoder,
            budget=budget,
            partial=True,
        )

    async def _complete(
        self,
        matrix: np.ndarray,
        passages: Sequence[Passage],
        texts: Sequence[str],
        bi_encoder: Any,
        variant: str,
        budget: EmbedBudget,
        among: Sequence[int] | None = None,
    ) -> None:
        """Fill the unknown (NaN) rows of a corpus-wide `matrix` from the store and, within
        `budget`, the model: all of them only if all fit, or as many as fit of those `among`
        the given rows (the candidates)."""
        if among is None:
            rows = np.flatnonzero(np.isnan(matrix[:, 0])).tolist()
        else:
            rows = [i for i in among if np.isnan(matrix[i, 0])]
        if rows:
            matrix[rows] = await self._vectors_for(
                [passages[r] for r in rows],
                [texts[r] for r in rows],
                bi_encoder,
                variant,
                budget=budget,
                partial=among is not None,
            )

    async def _vectors_for(
        self,
        passages: Sequence[Passage],
        texts: Sequence[str],
        bi_encoder: Any,
        variant: str = "",
        *,
        budget: EmbedBudget | None = None,
        partial: bool = True,
    ) -> np.ndarray:
        """One vector per passage: cached ones from the store, the others embedded now (and
        cached) — without a `budget`, all of them; with one, as many as it allows, the rest
        NaN rows."""
        model = bi_encoder.model_id + variant
        keys = [p.key for p in passages]
        cached = await self.store.get_embeddings(model, keys)
        matrix = np.zeros((len(passages), bi_encoder.dimension), dtype=np.float32)
        missing: list[int] = []
        for row, key in enumerate(keys):
            blob = cached.get(key)
            if blob is not None and len(blob) == 4 * bi_encoder.dimension:
                matrix[row] = np.frombuffer(blob, dtype=np.float32)
                if budget is not None:
                    budget.skipped.discard(key)
            else:
                missing.append(row)
        if budget is not None:
            granted = budget.allow(len(missing), partial=partial)
            for row in missing[granted:]:
                matrix[row] = np.nan
                budget.skipped.add(keys[row])
            missing = missing[:granted]
        for start in range(0, len(missing), EMBED_BATCH):
            rows = missing[start : start + EMBED_BATCH]
            vectors = await anyio.to_thread.run_sync(
                bi_encoder.embed, [texts[r] for r in rows], limiter=self._limiter
            )
            matrix[rows] = vectors
            await self.store.put_embeddings(
                model, [(keys[r][0], keys[r][1], vectors[j].tobytes()) for j, r in enumerate(rows)]
            )
            if budget is not None:
                budget.skipped.difference_update(keys[r] for r in rows)
        return matrix

    async def _context_vectors(
        self, corpus: Corpus, indices: list[int], bi_encoder: Any, budget: EmbedBudget
    ) -> np.ndarray:
        """Vectors of the passages with the turn before them (see `context_text`)."""
        if corpus.context is None:
            corpus.context = await self._context_texts(corpus.passages, corpus.texts)
        if self.config.retrieval.mode == "grep" and not corpus.partial:
            await self._fill_context_vectors(corpus, bi_encoder, budget)
        if corpus.context_vectors is not None:
            await self._fill_context_vectors(corpus, bi_encoder, budget, indices)
            return corpus.context_vectors[indices]
        return await self._vectors_for(
            [corpus.passages[i] for i in indices],
            [corpus.context[i] for i in indices],
            bi_encoder,
            CONTEXT_SUFFIX,
            budget=budget,
            partial=True,
        )

    async def _fill_context_vectors(
        self,
        corpus: Corpus,
        bi_encoder: Any,
        budget: EmbedBudget,
        among: Sequence[int] | None = None,
    ) -> np.ndarray:
        """The context vectors of every passage of `corpus` (cached on it), completed for all
        passages or for those `among` the given ones (see `_complete` for the budget)."""
        if corpus.context is None:
            corpus.context = await self._context_texts(corpus.passages, corpus.texts)
        if corpus.context_vectors is None:
            corpus.context_vectors = _unknown(len(corpus.passages), bi_encoder.dimension)
        await self._complete(
            corpus.context_vectors,
            corpus.passages,
            corpus.context,
            bi_encoder,
            CONTEXT_SUFFIX,
            budget,
            among,
        )
        return corpus.context_vectors

    async def _context_texts(self, passages: Sequence[Passage], texts: Sequence[str]) -> list[str]:
        previous = await self.store.previous_turns(
            sorted({p.turn.id for p in passages if p.turn.position > 0})
        )
        prefixes = {
            turn_id: ranking_text(self._passages([turn])[-1]) for turn_id, turn in previous.items()
        }
        return [
            context_text(prefixes.get(p.turn.id), text)
            for p, text in zip(passages, texts, strict=True)
        ]

    def embedding_variants(self) -> list[str]:
        """The vector kinds the configured rankers use: "" (the passage) and the context."""
        scorers = self.config.rank.scorers
        variants = []
        if self.config.retrieval.dense or "bi_encoder" in scorers:
            variants.append("")
        if "context" in scorers:
            variants.append(CONTEXT_SUFFIX)
        return variants

    async def embedding_backlog(self) -> int | None:
        """Stored turns still to embed, summed over the vector kinds in use (None: no
        bi-encoder is configured or it cannot be loaded)."""
        variants = self.embedding_variants()
        if not variants:
            return None
        bi_encoder = await anyio.to_thread.run_sync(self.models.get_bi_encoder)
        if bi_encoder is None:
            return None
        total = 0
        for variant in variants:
            total += await self.store.count_turns_without_embeddings(bi_encoder.model_id + variant)
        return total

    async def embed_backlog(
        self, batch: int = EMBED_BATCH, progress: Callable[[int], None] | None = None
    ) -> int:
        """Embed stored turns that have no cached vector yet; returns how many passages were
        embedded. Runs off the write path: `remember` never waits for it. `progress` is told
        how many turns each batch covered."""
        variants = self.embedding_variants()
        if not variants:
            return 0
        bi_encoder = await anyio.to_thread.run_sync(self.models.get_bi_encoder)
        if bi_encoder is None:
            return 0
        done = 0
        for variant in variants:
            while turns := await self.store.turns_without_embeddings(
                bi_encoder.model_id + variant, batch
            ):
                passages = self._passages(turns)
                texts: Sequence[str] = [ranking_text(p) for p in passages]
                if variant == CONTEXT_SUFFIX:
                    texts = await self._context_texts(passages, texts)
                await self._vectors_for(passages, texts, bi_encoder, variant)
                done += len(passages)
                if progress is not None:
                    progress(len(turns))
        return done


def _unknown(rows: int, dimension: int) -> np.ndarray:
    """A vector matrix whose rows are all unknown (NaN) until filled."""
    return np.full((rows, dimension), np.nan, dtype=np.float32)


def _sources(channels: dict[str, Any], index: int) -> tuple[str, ...]:
    """The retrieval channels in which a passage scored above zero."""
    return tuple(name for name in sorted(channels) if channels[name][index] > 0)


def _bind(fn: Any, query: str, texts: list[str]) -> ScoreJob:
    return lambda: fn(query, texts)


def _constant(values: list[float]) -> ScoreJob:
    return lambda: values


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
