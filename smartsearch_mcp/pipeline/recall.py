"""The recall pipeline: analyze → retrieve → expand → rank → truncate.

The only async orchestration, and only that: each stage is a function from one typed value to
the next (`QueryAnalysis` → `Candidates` → `Candidates` + hops → `Ranking` → `RecallResult`);
this module fetches what they read from the store (`corpus.py`) and the model registry, and
runs their CPU-bound work in worker threads, so that the event loop, which every client of a
server shares, only awaits.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anyio
import anyio.to_thread
import numpy as np

from smartsearch_mcp.config import Config
from smartsearch_mcp.models import ModelRegistry
from smartsearch_mcp.pipeline import lap, off_loop
from smartsearch_mcp.pipeline.analyze import QueryAnalysis, analyze_query, light_stem
from smartsearch_mcp.pipeline.corpus import (
    EmbedBudget,
    Embeddings,
    ScopeCorpora,
    StreamedScope,
)
from smartsearch_mcp.pipeline.dated import Dated, inside_window
from smartsearch_mcp.pipeline.expand import expand_candidates, expansion_room
from smartsearch_mcp.pipeline.lexical import EntityMention, find_entity_mentions
from smartsearch_mcp.pipeline.passages import split_into_passages
from smartsearch_mcp.pipeline.rank import (
    EXPENSIVE_RANKERS,
    PRIOR_RANKERS,
    SUPERSEDE_WINDOW,
    ScoreJob,
    first_pass,
    follow_with_rest,
    order_candidates,
    prefer_later_restatements,
    prefer_time_range,
    ranking_confidence,
    run_scorers,
)
from smartsearch_mcp.pipeline.relations import resolve_relations
from smartsearch_mcp.pipeline.render import RenderedCost
from smartsearch_mcp.pipeline.retrieve import (
    Candidates,
    Corpus,
    dense_query,
    retrieve_candidates,
    said_by_named,
    score_lexically,
)
from smartsearch_mcp.pipeline.scan import ScanResult, ScopeIndex, scan_scope
from smartsearch_mcp.pipeline.scope_view import ScopeWordsBuilder, question_view
from smartsearch_mcp.pipeline.sparse import SparseVectors
from smartsearch_mcp.pipeline.spelling import KnownWords, corrected_question, with_misspellings
from smartsearch_mcp.pipeline.token_vectors import (
    CandidateTokens,
    TokenBudget,
    TokenVectors,
    stores_tokens,
)
from smartsearch_mcp.pipeline.truncate import Truncation, truncate_to_budget
from smartsearch_mcp.pipeline.updates import asks_for_a_value
from smartsearch_mcp.store import MemoryStore
from smartsearch_mcp.store.queries import fts_any
from smartsearch_mcp.tokens import TokenCounter, get_token_counter
from smartsearch_mcp.types import Candidate, Hop, Passage, RecallResult, Scope, Scored, Turn

log = logging.getLogger(__name__)

LEARNED = ("cross_encoder", "colbert", "bi_encoder", "splade")
# Dense retrieval over a whole scope is kept for scopes up to this many passages; larger
# scopes are served by the lexical channels and the dense score of the candidates.
DENSE_SCOPE_LIMIT = 200_000
SCAN_PAGE = 2000  # turns per read of a streamed scope
# Rankers that need no model: what recall ranks with while the models load.
MODEL_FREE = frozenset({"lexical", "bm25", "speaker"})
LOAD_POLL_S = 0.05  # how often a recall waiting for a loading model looks again


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


@dataclass(frozen=True)
class _Retrieved:
    """Stage 2's lexical part: the passages looked at and, for each, its lexical and BM25
    scores and whether someone the question names said it; the passages inside the
    question's time range; for a streamed scope, what its scan chose."""

    corpus: Corpus
    scores: list[float]
    bm25: list[float]
    said: list[float]
    scan: ScanResult | None
    dated: Dated | None
    # the question as searched: with the names the memory gives its relations ("my sister"
    # -> Maya), and where they were found
    analysis: QueryAnalysis
    hops: list[Hop]


@dataclass
class _Recall:
    """What one recall carries from stage to stage besides the stage values."""

    budget: EmbedBudget
    tokens: TokenBudget  # ColBERT candidates this recall may still encode itself
    sparse_budget: EmbedBudget
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    loading: set[str] = field(default_factory=set)  # configured models not loaded yet
    models_by: float | None = None  # time.monotonic() after which no model is waited for
    memo: dict[str, Any] = field(default_factory=dict)  # values computed once per recall


class RecallPipeline:
    """Recall over one store with one configuration and one model registry."""

    def __init__(self, store: MemoryStore, config: Config, models: ModelRegistry) -> None:
        self.store = store
        self.config = config
        self.models = models
        self._limiter = anyio.CapacityLimiter(max(1, config.rank.max_parallel))
        self.corpora = ScopeCorpora(store, config, self._limiter)
        self.embeddings = Embeddings(store, config, self.corpora.passages, self._limiter)
        self.token_vectors = TokenVectors(store, self.corpora.passages.split, self._limiter)
        self.sparse = SparseVectors(store, self.corpora.passages, self._limiter)
        self._entity_cache: dict[str, list[tuple[str, str]]] = {}  # text -> its entities
        self._counter: TokenCounter | None = None
        self._known: KnownWords | None = None
        # How long a recall waits for a model still loading: None (a CLI recall) as long as
        # loading takes; in a server `models.load_wait_s`, after which it ranks with what is
        # loaded and says so (the server loads the models in the background).
        self.model_wait_s: float | None = None
        # Called when a recall met passages it could not embed within its budget, or embedded
        # some itself (the server wakes its background embedding, which stores them: turns
        # may come from other processes).
        self.on_backlog: Callable[[], None] | None = None
        self.embeddings.on_pending = self._wake_background
        self.token_vectors.on_pending = self._wake_background
        self.sparse.on_pending = self._wake_background

    # ------------------------------------------------------------------ lifecycle

    def invalidate(self) -> None:
        """Forget cached corpora (after this process wrote or deleted turns)."""
        self.corpora.invalidate()

    def learned_rankers(self) -> list[str]:
        return [s for s in self.config.rank.rankers if s in LEARNED]

    def model_kinds(self) -> list[str]:
        """The models recall uses: spaCy (when configured), then the learned rankers."""
        kinds = ["spacy"] if self.config.nlp.spacy_models else []
        if self.config.retrieval.dense or "context" in self.config.rank.rankers:
            kinds.append("bi_encoder")
        if self.uses_splade():
            kinds.append("splade")
        return list(dict.fromkeys([*kinds, *self.learned_rankers()]))

    def uses_splade(self) -> bool:
        """Whether SPLADE ranks candidates or is a candidate channel."""
        cfg = self.config
        return "splade" in cfg.rank.rankers or cfg.retrieval.splade_candidates > 0

    def warm_up(self) -> None:
        """Load the NLP model, the configured rankers and the tokenizer (blocking; call from
        a worker thread)."""
        self.token_counter()
        for kind in self.model_kinds():  # spaCy only when configured, as recall asks for it
            if kind == "spacy":
                self.models.get_nlp()
            elif kind == "bi_encoder":
                self.models.get_bi_encoder()
            else:
                self.models.get_scorer(kind)  # type: ignore[arg-type]

    def token_counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = get_token_counter(self.config.truncation.tokenizer)
        return self._counter

    @property
    def _known_words(self) -> KnownWords:
        if self._known is None:
            self._known = KnownWords(self.token_counter())
        return self._known

    def _wake_background(self) -> None:
        if self.on_backlog is not None:
            self.on_backlog()

    # ------------------------------------------------------------------ recall

    async def recall(
        self, query: str, scope: Scope, max_tokens: int, reference: datetime | None = None
    ) -> RecallResult:
        ranking = await self.rank(query, scope, reference)
        return await off_loop(self._limiter, self.truncate, ranking, max_tokens)

    def truncate(
        self, ranking: Ranking, max_tokens: int, alpha: float | None = None
    ) -> RecallResult:
        """Stage 5: score-adaptive truncation of a ranking to `max_tokens` (CPU-bound:
        counts the candidates' tokens). `alpha` replaces `truncation.alpha` (benchmarks
        compare thresholds on one ranking; 0: fill the budget)."""
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
        alpha = (cfg.alpha if alpha is None else alpha) if max_tokens <= cfg.max_tokens else 0.0
        warnings = list(ranking.warnings)

        def cut_with(notes: list[str]) -> Truncation:
            cost = RenderedCost(self.token_counter(), ranking.query, ranking.hops, notes)
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
        on_recall = self.config.rank.embed_on_recall
        run = _Recall(EmbedBudget(on_recall), TokenBudget(on_recall), EmbedBudget(on_recall))
        clock = time.perf_counter()
        if self.model_wait_s is not None:
            run.models_by = time.monotonic() + self.model_wait_s
        else:
            # A cold process (a CLI recall): the rankers load in the background while spaCy
            # loads and analyses the query, instead of after it.
            self.models.start_loading(k for k in self.model_kinds() if k != "spacy")
        nlp = await self._model("spacy", run) if self.config.nlp.spacy_models else None
        analysis = await off_loop(self._limiter, analyze_query, query, nlp, reference)
        clock = lap(run.timings, "analyze", clock)
        run.warnings.extend(analysis.warnings)
        if not analysis.has_content:  # nothing to search for: no passages, and a warning
            return Ranking(query, analysis, [], [], [], run.warnings, timings_ms=run.timings)

        found = await self._retrieve(analysis, scope, nlp, run)
        analysis = found.analysis
        clock = lap(run.timings, "retrieve", clock)
        candidates = await self._select(analysis, found, run)
        clock = lap(run.timings, "dense", clock)

        candidates, hops = await off_loop(
            self._limiter,
            expand_candidates,
            analysis,
            candidates,
            nlp,
            self.config.expansion,
            self.config.retrieval.max_candidates,
            self._entity_cache,
        )
        hops = [*found.hops, *hops]
        clock = lap(run.timings, "expand", clock)

        taken = candidates.take()
        scored, rankers, vectors = await self._rank(query, candidates, taken, run)
        # The question's dates first, then current facts first among them: a later turn that
        # updates a plan inside the range ("moved the February trip to Porto", said in
        # November) trades places with the plan it restates even when it names no date of
        # the range itself — the date rule says which plans are asked about, the update
        # which version of them is current. (The other order let the date rule push the
        # update back below the plan it replaced.)
        scored, outside = prefer_time_range(scored, analysis.time_range)
        if outside is not None:
            run.warnings.append(outside)
        scored = self._prefer_current(scored, taken, vectors, analysis)
        if not taken and run.loading:
            # Not "nothing matches": a model that could have found it was not loaded yet.
            run.warnings.append(_nothing_found_yet(analysis, run.loading))
        elif not taken:
            dated = self.config.retrieval.date_candidates > 0
            run.warnings.append(_nothing_found(analysis, dated))
        for message in (run.budget.warning(), run.tokens.warning()):
            if message is not None:
                run.warnings.append(message)
                self._wake_background()
        if run.sparse_budget.skipped:
            run.warnings.append(
                f"{len(run.sparse_budget.skipped)} passage(s) have no SPLADE vector yet, so "
                "SPLADE left them out; the server encodes new turns in the background"
            )
            self._wake_background()
        if run.loading:
            run.warnings.append(_loading_warning(run.loading, rankers))
        lap(run.timings, "rank", clock)
        return Ranking(
            query=query,
            analysis=analysis,
            scored=scored,
            candidates=taken,
            rankers=rankers,
            warnings=_dedupe(run.warnings),
            hops=hops,
            timings_ms=run.timings,
        )

    # ------------------------------------------------------------------ stage 2

    async def _retrieve(
        self, analysis: QueryAnalysis, scope: Scope, nlp: Any, run: _Recall
    ) -> _Retrieved:
        """Stage 2, lexical part: the scope's passages (cached, streamed or found by the
        index) with their lexical and BM25 scores, who said them and which are inside the
        question's time range; for a streamed scope also the candidates, chosen while it
        was read."""
        cfg = self.config.retrieval
        scan: ScanResult | None = None
        hops: list[Hop] = []
        dated_turns: list[Turn] = []  # indexed mode: looked up once, whatever is asked again
        if cfg.mode == "indexed":
            dated_turns = await self.corpora.indexed_dated(analysis, scope, cfg.date_candidates)
            corpus = await self.corpora.indexed_corpus(analysis, scope, dated_turns)
        else:
            source = await self.corpora.scope_corpus(scope)
            if isinstance(source, StreamedScope):
                # the question as the memory says it, as for a cached scope (scope_view)
                view = await question_view(await self._index(scope, source), self.store.get_turns)
                known = self._known_words if cfg.misspellings else None
                analysis, hops = await off_loop(
                    self._limiter, _as_the_memory_says, analysis, view, known
                )
                scan = await self._scan(analysis, scope, source, nlp, cfg.max_candidates)
                corpus = scan.corpus
                run.warnings.append(
                    f"the scope holds {source.turns:,} turns, more than grep mode keeps in "
                    f"memory (retrieval.scope_cache_mb = {cfg.scope_cache_mb}), so they were "
                    "read from the database for this query, which is slow; "
                    'retrieval.mode = "indexed" suits memories this large'
                )
            else:
                corpus = source
        if scan is None:
            known = self._known_words if cfg.misspellings else None
            searched, hops = await off_loop(
                self._limiter, _as_the_memory_says, analysis, corpus, known
            )
            if searched is not analysis and cfg.mode == "indexed":
                # a name, relation or spelling to search: the index again, with it
                corpus = await self.corpora.indexed_corpus(searched, scope, dated_turns)
            analysis = searched
        said = await off_loop(self._limiter, said_by_named, corpus.passages, analysis)
        if scan is not None:
            run.timings.update({f"scan.{k}": v for k, v in scan.timings_ms.items()})
            return _Retrieved(
                corpus, scan.scores, scan.bm25, said, scan, scan.dated, analysis, hops
            )
        scores = await off_loop(
            self._limiter, score_lexically, analysis, corpus, said, cfg, self.config.passages
        )
        bm25 = await self._bm25(analysis, scope, corpus)
        dated = None
        if analysis.time_range is not None and cfg.date_candidates > 0:
            dated = await off_loop(
                self._limiter,
                inside_window,
                corpus.passages,
                corpus.lowered,
                analysis.time_range,
            )
        return _Retrieved(corpus, scores, bm25, said, None, dated, analysis, hops)

    async def _select(self, analysis: QueryAnalysis, found: _Retrieved, run: _Recall) -> Candidates:
        """Stage 2, the dense channels and the choice of candidates among all channels."""
        cfg = self.config.retrieval
        corpus = found.corpus
        # Candidates before expansion: places are kept for what expansion adds.
        total = max(0, cfg.max_candidates - expansion_room(analysis, self.config.expansion))
        query_vector, embedded_query = await self._dense(analysis.query, corpus, run)
        sparse_scores = await self._sparse_channel(analysis.query, corpus, run)
        return await off_loop(
            self._limiter,
            retrieve_candidates,
            corpus,
            found.scores,
            found.bm25,
            found.said,
            cfg,
            total=total,
            rrf_k=self.config.rank.rrf_k,
            query_vector=query_vector,
            embedded_query=embedded_query,
            selected=found.scan.chosen if found.scan is not None else None,
            sparse_scores=sparse_scores,
            dated=found.dated,
        )

    async def _sparse_channel(self, query: str, corpus: Corpus, run: _Recall) -> Any | None:
        """The SPLADE score of every passage of a whole in-memory scope (grep mode), or None
        when the channel is off or SPLADE cannot be loaded."""
        cfg = self.config.retrieval
        if cfg.splade_candidates <= 0 or cfg.mode != "grep" or corpus.partial:
            return None
        if len(corpus.passages) > DENSE_SCOPE_LIMIT:
            return None
        splade = await self._model("splade", run)
        if splade is None:
            return None
        matrix = await self.sparse.fill(corpus, splade, run.sparse_budget)
        vector = await self._sparse_query(splade, query, run)
        return await off_loop(self._limiter, matrix.scores, vector)

    async def _sparse_query(self, splade: Any, query: str, run: _Recall) -> Any:
        key = f"splade:{query}"
        if key not in run.memo:
            run.memo[key] = await off_loop(self._limiter, splade.encode_query, query)
        return run.memo[key]

    async def _dense(
        self, query: str, corpus: Corpus, run: _Recall
    ) -> tuple[np.ndarray | None, str]:
        """The query's vector (None: no dense channel) and the text embedded; in grep mode
        the corpus's vectors are filled for the dense channels over the whole scope."""
        cfg = self.config.retrieval
        known = self._known_words if cfg.misspellings else None
        embedded_query = await off_loop(self._limiter, _embedded_query, query, corpus, known)
        want_bi = "bi_encoder" in self.learned_rankers() or (cfg.dense and cfg.mode == "grep")
        if not (want_bi and cfg.dense and cfg.dense_candidates > 0):
            return None, embedded_query
        bi_encoder = await self._model("bi_encoder", run)
        if bi_encoder is None:
            return None, embedded_query
        query_vector = await off_loop(self._limiter, bi_encoder.embed_query, embedded_query)
        whole = cfg.mode == "grep" and not corpus.partial
        if whole and len(corpus.passages) <= DENSE_SCOPE_LIMIT:
            await self.embeddings.fill(corpus, bi_encoder, run.budget)
            if "context" in self.config.rank.rankers:
                await self.embeddings.fill_context(corpus, bi_encoder, run.budget)
        return query_vector, embedded_query

    async def _bm25(self, analysis: QueryAnalysis, scope: Scope, corpus: Corpus) -> list[float]:
        """FTS5 BM25 score of each corpus passage's turn for the query's terms ([] when BM25
        is neither a ranker nor a candidate source)."""
        if not self._uses_bm25():
            return []
        by_turn = corpus.bm25  # indexed mode: the corpus came from this very search
        if by_turn is None:
            by_turn = await self._bm25_hits(analysis, scope)
        return await off_loop(self._limiter, _by_passage, by_turn, corpus.passages)

    async def _bm25_hits(self, analysis: QueryAnalysis, scope: Scope) -> dict[int, float]:
        """FTS5 BM25 by turn id of the best turns for the query's terms."""
        match = fts_any(t.term for t in analysis.terms if t.kind != "variant")
        limit = max(self.config.retrieval.max_candidates, 200) * 2
        return dict(await self.store.search_fts(match, scope, limit))

    def _uses_bm25(self) -> bool:
        return "bm25" in self.config.rank.rankers or self.config.retrieval.bm25_candidates > 0

    async def _scan(
        self,
        analysis: QueryAnalysis,
        scope: Scope,
        streamed: StreamedScope,
        nlp: Any,
        total: int,
    ) -> ScanResult:
        """Stage 2 over a streamed scope (see `scan.scan_scope`)."""
        exp = self.config.expansion
        pages, split = self._streamed_reader(scope, streamed)

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
            limiter=self._limiter,
        )
        streamed.index = result.index
        return result

    def _streamed_reader(self, scope: Scope, streamed: StreamedScope) -> tuple[Any, Any]:
        """How a streamed scope is read: its pages, and how a turn splits into passages."""
        passages_cfg = self.config.passages

        def pages() -> Any:
            return self.store.scope_pages(scope, SCAN_PAGE, streamed.through_id)

        def split(turn: Turn) -> list[Passage]:  # not cached: the scope does not fit
            return split_into_passages(turn, passages_cfg.max_words, passages_cfg.overlap_words)

        return pages, split

    async def _index(self, scope: Scope, streamed: StreamedScope) -> ScopeIndex:
        """The streamed scope's index with what it says of itself (built on its first read,
        kept until the store changes; see `scope_view`)."""
        if streamed.index is None or streamed.index.words is None:
            pages, split = self._streamed_reader(scope, streamed)
            cfg = self.config.passages
            words = ScopeWordsBuilder(cfg.burst_seconds, cfg.max_words)
            streamed.index = await ScopeIndex.build(
                pages, split, limiter=self._limiter, words=words
            )
        return streamed.index

    # ------------------------------------------------------------------ stage 4

    async def _rank(
        self, query: str, found: Candidates, candidates: list[Candidate], run: _Recall
    ) -> tuple[list[Scored], list[str], np.ndarray | None]:
        """Stage 4: the configured rankers in parallel worker threads, then fusion. With a
        cascade (`rank.expensive_candidates` below the number of candidates), the other
        rankers first rank every candidate, and the expensive ones score only the best of
        that first pass (see `rank.follow_with_rest` for the order of the rest). Also the
        candidates' bi-encoder vectors, when the bi-encoder ranked them."""
        if not candidates:
            return [], [], None
        rank = self.config.rank
        burst = self.config.passages.burst_seconds
        # Passages of the scope that are not candidates (at least: a streamed or indexed
        # corpus holds only some of them) calibrate the confidence as well.
        unseen = len(found.corpus.passages) - len(candidates)
        expensive: dict[str, Any] = {}
        for kind in self.learned_rankers():
            if kind in EXPENSIVE_RANKERS and (scorer := await self._model(kind, run)) is not None:
                expensive[kind] = scorer
        cheap_jobs, passage_vectors, degraded = await self._cheap_jobs(
            query, found, run, bool(expensive)
        )
        run.warnings.extend(self.models.warnings)
        rows = list(range(len(candidates)))
        if expensive and 0 < rank.expensive_candidates < len(candidates):
            cheap = await self._score(cheap_jobs, run)
            first = await off_loop(
                self._limiter, first_pass, candidates, cheap, rank, unseen, burst
            )
            row_of = {c.passage.key: i for i, c in enumerate(candidates)}
            rows = [row_of[s.candidate.passage.key] for s in first[: rank.expensive_candidates]]
            scores = {name: [values[r] for r in rows] for name, values in cheap.items()}
            scores |= await self._score_expensive(query, found, rows, expensive, {}, run)
        else:
            first = []
            scores = await self._score_expensive(query, found, rows, expensive, cheap_jobs, run)
        ranked = [candidates[r] for r in rows]
        # The final fusion is that of rank.scorers (and of the bi-encoder standing in for
        # missing learned rankers): a first pass's other rankers only chose the candidates.
        fused = {*rank.scorers, *EXPENSIVE_RANKERS, *(["bi_encoder"] if degraded else [])}
        scores = {name: values for name, values in scores.items() if name in fused}
        scores = self._lexical_joins(scores, ranked, run)
        used = sorted(scores)
        if first and not EXPENSIVE_RANKERS & set(scores):
            ordered = first  # the expensive rankers failed: the first pass is the ranking
            used = sorted(first[0].ranker_scores)
        else:
            head = await off_loop(
                self._limiter,
                order_candidates,
                ranked,
                scores,
                rank,
                unseen + len(candidates) - len(rows),  # the first pass's rest: unseen too
                burst,
            )
            ordered = follow_with_rest(head, first)
        return ordered, used, passage_vectors

    def _prefer_current(
        self,
        ordered: list[Scored],
        candidates: Sequence[Candidate],
        passage_vectors: np.ndarray | None,
        analysis: QueryAnalysis,
    ) -> list[Scored]:
        """Current facts first (`rank.supersede`, see `rank.prefer_later_restatements`):
        similarity is the bi-encoder's, so nothing moves without its vectors, and the later
        turn must be about what the earlier says (`updates.shares_a_subject`)."""
        rank = self.config.rank
        if rank.supersede <= 0 or passage_vectors is None or not ordered:
            return ordered
        row = {c.passage.key: i for i, c in enumerate(candidates)}
        top = ordered[:SUPERSEDE_WINDOW]
        picked = passage_vectors[[row[s.candidate.passage.key] for s in top]]
        return prefer_later_restatements(
            ordered,
            picked @ picked.T,
            rank.supersede,
            rank.supersede_needs_change,
            rank.supersede_same_speaker,
            rank.supersede_confidence,
            rank.supersede_within_session,
            asked={light_stem(term.term) for term in analysis.terms},
            value_asked=asks_for_a_value(analysis.query),
        )

    async def _score_expensive(
        self,
        query: str,
        found: Candidates,
        rows: list[int],
        scorers: dict[str, Any],
        other_jobs: dict[str, ScoreJob],
        run: _Recall,
    ) -> dict[str, list[float]]:
        """The cross-encoder's and ColBERT's scores of the candidates at `rows`, run in
        parallel with `other_jobs` (ColBERT reads their stored token vectors; it sits out
        when none has any and none may be encoded)."""
        corpus = found.corpus
        indices = [found.chosen[r] for r in rows]
        texts = [corpus.texts[i] for i in indices]
        jobs = dict(other_jobs)
        tokens: CandidateTokens | None = None
        for kind, scorer in scorers.items():
            if kind == "colbert" and stores_tokens(scorer):
                passages = [corpus.passages[i] for i in indices]
                tokens = await self.token_vectors.of_candidates(scorer, passages, texts, run.tokens)
                if not tokens.unscored:
                    jobs[kind] = _bind(tokens.score, scorer, query)
            else:
                jobs[kind] = _bind(scorer.score, query, texts)
        scores = await self._score(jobs, run)
        if tokens is not None:
            self.token_vectors.keep(tokens)
        return scores

    async def _cheap_jobs(
        self, query: str, found: Candidates, run: _Recall, expensive: bool
    ) -> tuple[dict[str, ScoreJob], np.ndarray | None, bool]:
        """The jobs of the rankers that read stored vectors or scores (SPLADE, the
        bi-encoder and its context, BM25, the speaker prior; of `rank.scorers` and of a
        cascade's first pass) over every candidate, the candidates' bi-encoder vectors when
        the bi-encoder ranks, and whether it ranks in place of the configured learned rankers
        (none available: `expensive` False and no SPLADE)."""
        indices = found.chosen
        corpus = found.corpus
        scorers = self.config.rank.rankers
        wanted = self.learned_rankers()
        jobs: dict[str, ScoreJob] = {}
        splade = await self._model("splade", run) if "splade" in wanted else None
        if splade is not None:
            matrix = await self.sparse.fill(corpus, splade, run.sparse_budget, indices)
            vector = await self._sparse_query(splade, query, run)
            splade_scores = await off_loop(self._limiter, matrix.scores_at, indices, vector)
            jobs["splade"] = _constant(splade_scores)
        use_context = "context" in scorers
        passage_vectors: np.ndarray | None = None
        # Every configured learned ranker is missing: degrade to the bi-encoder before
        # falling back to lexical scores alone.
        # (Those of rank.scorers: a first pass's rankers do not stand in for them.)
        fused = [name for name in self.config.rank.scorers if name in LEARNED]
        degrade = (
            bool(fused)
            and not expensive
            and not set(jobs) & set(fused)
            and "bi_encoder" not in fused
            and not run.loading
        )
        use_bi = "bi_encoder" in wanted or degrade
        bi_encoder = await self._model("bi_encoder", run) if use_bi or use_context else None
        if bi_encoder is not None:
            qv = found.query_vector
            if qv is None:
                qv = await off_loop(self._limiter, bi_encoder.embed_query, found.embedded_query)
            if use_bi:
                vectors = await self.embeddings.of_candidates(
                    corpus, indices, bi_encoder, run.budget
                )
                passage_vectors = vectors
                jobs["bi_encoder"] = _constant((vectors @ qv).astype(float).tolist())
                if degrade:
                    run.warnings.append(
                        "configured rankers unavailable; ranked with the bi-encoder"
                    )
            if use_context:
                context = await self.embeddings.context_of_candidates(
                    corpus, indices, bi_encoder, run.budget
                )
                jobs["context"] = _constant((context @ qv).astype(float).tolist())
        if found.bm25 and "bm25" in scorers:
            jobs["bm25"] = _constant([found.bm25[i] for i in indices])
        if "speaker" in scorers:
            jobs["speaker"] = _constant([found.said[i] for i in indices])
        return jobs, passage_vectors, degrade

    async def _score(self, jobs: dict[str, ScoreJob], run: _Recall) -> dict[str, list[float]]:
        """Run the jobs in parallel worker threads; their timings and failures go to `run`."""
        scores, errors, timings = await run_scorers(jobs, self._limiter)
        run.timings.update({f"rank.{k}": v for k, v in timings.items()})
        for name, error in errors.items():
            run.warnings.append(f"ranker {name} failed and was skipped: {error}")
        return scores

    def _lexical_joins(
        self, scores: dict[str, list[float]], candidates: Sequence[Candidate], run: _Recall
    ) -> dict[str, list[float]]:
        """`scores` with the candidates' lexical scores as a ranker when `rank.scorers`
        lists it, or when nothing else could order them (the speaker prior alone cannot);
        said in the warnings then, unless models are still loading."""
        scorers = self.config.rank.scorers
        if "lexical" not in scorers and set(scores) - PRIOR_RANKERS:
            return scores
        if "lexical" not in scorers and not run.loading:
            run.warnings.append("no learned ranker available; ranked by lexical scores only")
        return {**scores, "lexical": [c.lexical_score for c in candidates]}

    # ------------------------------------------------------------------ models

    async def _model(self, kind: str, run: _Recall) -> Any | None:
        """The model of that kind, or None when it cannot be loaded — or, when recall waits
        for models a bounded time (`model_wait_s`), while it is still loading when that time
        is up (it goes on loading in the background; `run.loading` says so)."""
        if run.models_by is not None and not self.models.loaded(kind):
            self.models.start_loading([kind])
            while not self.models.loaded(kind) and time.monotonic() < run.models_by:
                await anyio.sleep(LOAD_POLL_S)
            if not self.models.loaded(kind):
                run.loading.add(kind)
                return None
        if kind == "spacy":
            return await anyio.to_thread.run_sync(self.models.get_nlp)
        if kind == "bi_encoder":
            return await anyio.to_thread.run_sync(self.models.get_bi_encoder)
        return await anyio.to_thread.run_sync(self.models.get_scorer, kind)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ embeddings

    def embedding_variants(self) -> list[str]:
        """The vector kinds the configured rankers use: "" (the passage) and the context."""
        return self.embeddings.variants()

    def indexes_in_background(self) -> bool:
        """Whether new turns get vectors in the background: bi-encoder passage vectors or
        ColBERT token vectors or SPLADE document vectors."""
        return (
            bool(self.embeddings.variants())
            or "colbert" in self.learned_rankers()
            or self.uses_splade()
        )

    async def embedding_backlog(self) -> int | None:
        """Stored turns still to embed, summed over the vector kinds in use: bi-encoder
        passage vectors, ColBERT token vectors and SPLADE document vectors (None: none of
        them is configured and loadable)."""
        bi_encoder = await self._bi_encoder_for_index()
        colbert = await self._colbert_for_index()
        splade = await self._splade_for_index()
        if bi_encoder is None and colbert is None and splade is None:
            return None
        total = await self.embeddings.backlog(bi_encoder) if bi_encoder is not None else 0
        if colbert is not None:
            total += await self.token_vectors.backlog(colbert)
        if splade is not None:
            total += await self.sparse.backlog(splade)
        return total

    async def embed_backlog(
        self, batch: int = 256, progress: Callable[[int], None] | None = None
    ) -> int:
        """Store the vectors recalls computed, then embed stored turns that have no vector
        yet (bi-encoder passage vectors, then ColBERT token vectors, then SPLADE document
        vectors); returns how many passage vectors were stored. Runs off the write path:
        `remember` and `recall` never wait for it. `progress` is told how many turns each
        batch covered."""
        done = 0
        bi_encoder = await self._bi_encoder_for_index()
        if bi_encoder is not None:
            done += await self.embeddings.embed_backlog(bi_encoder, batch, progress)
        colbert = await self._colbert_for_index()
        if colbert is not None:
            done += await self.token_vectors.index_backlog(colbert, progress=progress)
        splade = await self._splade_for_index()
        if splade is not None:
            done += await self.sparse.embed_backlog(splade, batch, progress)
        return done

    async def _bi_encoder_for_index(self) -> Any | None:
        if not self.embeddings.variants():
            return None
        return await anyio.to_thread.run_sync(self.models.get_bi_encoder)

    async def _colbert_for_index(self) -> Any | None:
        if "colbert" not in self.learned_rankers():
            return None
        scorer = await anyio.to_thread.run_sync(self.models.get_scorer, "colbert")
        return scorer if stores_tokens(scorer) else None

    async def _splade_for_index(self) -> Any | None:
        if not self.uses_splade():
            return None
        return await anyio.to_thread.run_sync(self.models.get_splade)


def _as_the_memory_says(
    analysis: QueryAnalysis, corpus: Corpus, known: KnownWords | None
) -> tuple[QueryAnalysis, list[Hop]]:
    """The question with the names the corpus gives its relation words and the relations it
    gives its names (`relations.resolve_relations`; looked up once per corpus, which is
    rebuilt when the scope changes), one hop for each (where the memory says it), and with
    its words as the corpus misspells them (`spelling.with_misspellings`, unless `known` is
    None)."""
    if known is not None:
        speakers = {name.lower() for name in corpus.speakers()}
        analysis = with_misspellings(analysis, corpus.vocabulary(), known, speakers)
    analysis, forward, backward = resolve_relations(
        analysis, corpus.passages, corpus.lowered, corpus.speakers(), corpus.relations
    )
    found = [(item.name, item) for item in forward] + [(item.relation, item) for item in backward]
    hops = [
        Hop(
            entity=searched,
            found_in=list(dict.fromkeys(corpus.passages[i].turn.id for i in item.said_in)),
            turn_ids=[],
        )
        for searched, item in found
    ]
    return analysis, hops


def _loading_warning(loading: set[str], rankers: list[str]) -> str:
    how = (
        "ranked lexically this time"
        if set(rankers) <= MODEL_FREE
        else "ranked with the models already loaded this time"
    )
    return f"models are still loading ({', '.join(sorted(loading))}): {how}"


def _nothing_found(analysis: QueryAnalysis, dated: bool) -> str:
    """The warning of a recall that found no candidate at all for a question with content
    (`dated`: the date channel looked for turns inside its time range)."""
    when = ""
    if analysis.time_range is not None and dated:
        span = analysis.time_range
        when = f" and no turn was said in or names {span.expression or 'its dates'!r}"
    return (
        f"nothing in this memory matches {_quoted(analysis.query)}: no turn shares its "
        f"words{when}; try other words, a wider time range or another namespace"
    )


def _nothing_found_yet(analysis: QueryAnalysis, loading: set[str]) -> str:
    """The warning of a recall that found no candidate while models were still loading."""
    return (
        f"no turn shares the words of {_quoted(analysis.query)}, and the models that find "
        f"turns by meaning are still loading ({', '.join(sorted(loading))}): this is not "
        "an answer that nothing is stored; ask again in a few seconds"
    )


def _quoted(query: str) -> str:
    shown = " ".join(query.split())
    return repr(shown if len(shown) <= 60 else shown[:60] + "…")


def _embedded_query(query: str, corpus: Corpus, known: KnownWords | None) -> str:
    """What the bi-encoder embeds: the question as the memory spells it (unless `known` is
    None), without the speakers' names (`dense_query`)."""
    if known is not None:
        query = corrected_question(query, corpus.vocabulary(), known)
    return dense_query(query, corpus.speakers())


def _by_passage(by_turn: dict[int, float], passages: Sequence[Passage]) -> list[float]:
    return [by_turn.get(p.turn.id, 0.0) for p in passages]


def _bind(fn: Callable[..., list[float]], *args: Any) -> ScoreJob:
    return lambda: fn(*args)


def _constant(values: list[float]) -> ScoreJob:
    return lambda: values


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
