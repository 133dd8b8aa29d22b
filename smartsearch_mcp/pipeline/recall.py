"""The recall pipeline: analyze → retrieve → expand → rank → adjust → truncate.

The only async orchestration, and only that: each stage is a function from one typed value to
the next (`QueryAnalysis` → `Candidates` → `Candidates` + hops → `Ranking` → `RecallResult`);
stage 2 is `gather.Retrieval`, stage 4 `scoring.Scoring`, the adjustments after it
`pipeline.adjust`, stage 5 `truncate.truncate_ranking`. They fetch what they read from the
store (`corpus.py`) and the model registry, and run their CPU-bound work in worker threads, so
that the event loop, which every client of a server shares, only awaits.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from datetime import datetime

import anyio

from smartsearch_mcp.config import Config
from smartsearch_mcp.models import ModelRegistry
from smartsearch_mcp.pipeline import lap, off_loop
from smartsearch_mcp.pipeline.adjust import Context, adjust
from smartsearch_mcp.pipeline.analyze import QueryAnalysis, analyze_query, names_only_a_time
from smartsearch_mcp.pipeline.corpus import ScopeCorpora
from smartsearch_mcp.pipeline.dated import chosen_inside
from smartsearch_mcp.pipeline.embeddings import Embeddings
from smartsearch_mcp.pipeline.expand import expand_candidates
from smartsearch_mcp.pipeline.explain import Tracer
from smartsearch_mcp.pipeline.gather import Retrieval, nothing_found, nothing_found_yet
from smartsearch_mcp.pipeline.indexing import BackgroundVectors, uses_splade
from smartsearch_mcp.pipeline.run import RecallRun, get_model
from smartsearch_mcp.pipeline.scoring import Scoring, learned_rankers, similarity_of
from smartsearch_mcp.pipeline.sparse import SparseVectors
from smartsearch_mcp.pipeline.spelling import KnownWords
from smartsearch_mcp.pipeline.token_vectors import TokenVectors
from smartsearch_mcp.pipeline.truncate import Ranking, truncate_ranking
from smartsearch_mcp.stages import MODEL_FREE_RANKERS
from smartsearch_mcp.store import MemoryStore
from smartsearch_mcp.tokens import TokenCounter, get_token_counter
from smartsearch_mcp.types import RecallResult, Scope

__all__ = ["Ranking", "RecallPipeline"]


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
        self.retrieval = Retrieval(
            store,
            config,
            models,
            self.corpora,
            self.embeddings,
            self.sparse,
            self._limiter,
            known_words=self._known_words,
            wake=self._wake_background,
            entity_cache={},  # text -> its entities
        )
        self.scoring = Scoring(
            config,
            models,
            self.embeddings,
            self.token_vectors,
            self.sparse,
            self._limiter,
            sparse_query=self.retrieval.sparse_query,
        )
        self.vectors = BackgroundVectors(
            config, models, self.embeddings, self.token_vectors, self.sparse
        )

    # ------------------------------------------------------------------ lifecycle

    def invalidate(self) -> None:
        """Forget cached corpora: the next query reads its scope again."""
        self.corpora.invalidate()

    def changed(self) -> None:
        """This process wrote or deleted turns: cached scopes check theirs at their next
        query (one that only gained turns is extended with them)."""
        self.corpora.changed()

    def model_kinds(self) -> list[str]:
        """The models recall uses: spaCy (when configured), then the learned rankers."""
        kinds = ["spacy"] if self.config.nlp.spacy_models else []
        if self.config.retrieval.dense or "context" in self.config.rank.rankers:
            kinds.append("bi_encoder")
        if uses_splade(self.config):
            kinds.append("splade")
        return list(dict.fromkeys([*kinds, *learned_rankers(self.config)]))

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

    def _known_words(self) -> KnownWords:
        if self._known is None:
            self._known = KnownWords(self.token_counter())
        return self._known

    def _wake_background(self) -> None:
        if self.on_backlog is not None:
            self.on_backlog()

    # ------------------------------------------------------------------ recall

    async def recall(
        self,
        query: str,
        scope: Scope,
        max_tokens: int,
        reference: datetime | None = None,
        explain: bool = False,
    ) -> RecallResult:
        """Stages 1–5; `explain`: the result carries why each passage was recalled
        (`RecallResult.explanation`, see pipeline/explain.py)."""
        ranking = await self.rank(query, scope, reference, explain)
        return await off_loop(self._limiter, self.truncate, ranking, max_tokens)

    def truncate(
        self, ranking: Ranking, max_tokens: int, alpha: float | None = None
    ) -> RecallResult:
        """Stage 5 (`truncate.truncate_ranking`; CPU-bound)."""
        cfg = self.config.truncation
        return truncate_ranking(ranking, max_tokens, cfg, self.token_counter(), alpha)

    async def rank(
        self,
        query: str,
        scope: Scope,
        reference: datetime | None = None,
        explain: bool = False,
    ) -> Ranking:
        """Stages 1–4 and the adjustments: analyze, retrieve, expand, rank, adjust (with
        `explain`, traced as they run)."""
        run = RecallRun.start(self.config.rank.embed_on_recall, self.model_wait_s)
        run.trace = Tracer() if explain else None
        clock = time.perf_counter()
        if self.model_wait_s is None:
            # A cold process (a CLI recall): the rankers load in the background while spaCy
            # loads and analyses the query, instead of after it.
            self.models.start_loading(k for k in self.model_kinds() if k != "spacy")
        nlp = await get_model(self.models, "spacy", run) if self.config.nlp.spacy_models else None
        analysis = await off_loop(self._limiter, analyze_query, query, nlp, reference)
        clock = lap(run.timings, "analyze", clock)
        run.warnings.extend(analysis.warnings)
        if not analysis.has_content:  # nothing to search for: no passages, and a warning
            return Ranking(
                query, analysis, [], [], [], run.warnings, timings_ms=run.timings, trace=run.trace
            )

        found = await self.retrieval.retrieve(analysis, scope, nlp, run)
        analysis = found.analysis
        clock = lap(run.timings, "retrieve", clock)
        candidates = await self.retrieval.select(analysis, found, run)
        clock = lap(run.timings, "dense", clock)

        candidates, hops = await off_loop(
            self._limiter,
            expand_candidates,
            analysis,
            candidates,
            nlp,
            self.config.expansion,
            self.config.retrieval.max_candidates,
            self.retrieval.entity_cache,
        )
        hops = [*found.hops, *hops]
        clock = lap(run.timings, "expand", clock)

        if names_only_a_time(analysis):
            corpus = candidates.corpus
            chosen = chosen_inside(
                corpus.passages, corpus.lowered, candidates.chosen, analysis.time_range
            )
            candidates = dataclasses.replace(candidates, chosen=chosen)
        taken = candidates.take()
        scored, rankers, vectors = await self.scoring.rank(query, candidates, taken, run)
        # The adjustments of the final ranking (rank.adjust), in order: the question's dates
        # first, then current facts first among them, so that a later turn updating a plan
        # inside the range ("moved the January trip to Lillehammer", said in November) trades
        # places with the plan it restates even when it names no date of the range itself.
        final = Context(
            self.config.rank,
            self.config.passages.burst_seconds,
            analysis,
            similarity_of(taken, vectors),
            run.warnings,
            trace=run.trace,
        )
        scored = adjust(scored, "final", final)
        self._notes(analysis, bool(taken), rankers, run)
        lap(run.timings, "rank", clock)
        return Ranking(
            query=query,
            analysis=analysis,
            scored=scored,
            candidates=taken,
            rankers=rankers,
            warnings=list(dict.fromkeys(run.warnings)),
            hops=hops,
            timings_ms=run.timings,
            trace=run.trace,
        )

    def _notes(
        self, analysis: QueryAnalysis, found: bool, rankers: list[str], run: RecallRun
    ) -> None:
        """What the user is told about this recall besides its passages: nothing found (and
        whether models still loading are why), vectors missing, models still loading."""
        if not found and run.loading:
            # Not "nothing matches": a model that could have found it was not loaded yet.
            run.warnings.append(nothing_found_yet(analysis, run.loading))
        elif not found:
            dated = self.config.retrieval.date_candidates > 0
            run.warnings.append(nothing_found(analysis, dated))
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

    # ------------------------------------------------------------------ background vectors

    def embedding_variants(self) -> list[str]:
        """The vector kinds the configured rankers use: "" (the passage) and the context."""
        return self.embeddings.variants()

    def indexes_in_background(self) -> bool:
        return self.vectors.in_use()

    async def embedding_backlog(self) -> int | None:
        return await self.vectors.backlog()

    async def embed_backlog(
        self, batch: int = 256, progress: Callable[[int], None] | None = None
    ) -> int:
        """`indexing.BackgroundVectors.embed_backlog`: runs off the write path; `remember`
        and `recall` never wait for it."""
        return await self.vectors.embed_backlog(batch, progress)


def _loading_warning(loading: set[str], rankers: list[str]) -> str:
    how = (
        "ranked lexically this time"
        if set(rankers) <= MODEL_FREE_RANKERS
        else "ranked with the models already loaded this time"
    )
    return f"models are still loading ({', '.join(sorted(loading))}): {how}"
