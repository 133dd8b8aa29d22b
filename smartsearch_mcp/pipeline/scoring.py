"""Stage 4, rank: the configured rankers (`smartsearch_mcp.stages.RANKERS`) score the
candidates in parallel worker threads, then fusion and the adjustments of each fusion
(`rank.order_candidates`); with a cascade, the expensive rankers score only the first pass's
best (`rank.first_pass`, `rank.follow_with_rest`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np

from smartsearch_mcp.config import Config
from smartsearch_mcp.models import ModelRegistry
from smartsearch_mcp.pipeline import off_loop
from smartsearch_mcp.pipeline.adjust import Context
from smartsearch_mcp.pipeline.embeddings import Embeddings
from smartsearch_mcp.pipeline.rank import (
    ScoreJob,
    first_pass,
    follow_with_rest,
    order_candidates,
    run_scorers,
)
from smartsearch_mcp.pipeline.retrieve import Candidates
from smartsearch_mcp.pipeline.run import RecallRun, get_model
from smartsearch_mcp.pipeline.sparse import SparseVectors
from smartsearch_mcp.pipeline.token_vectors import CandidateTokens, TokenVectors, stores_tokens
from smartsearch_mcp.stages import EXPENSIVE_RANKERS, LEARNED_RANKERS, PRIOR_RANKERS
from smartsearch_mcp.types import Candidate, Scored

SparseQuery = Callable[[Any, str, RecallRun], Awaitable[Any]]


def learned_rankers(config: Config) -> list[str]:
    """The rankers of `rank.rankers` that are a model's own score of the passage."""
    return [name for name in config.rank.rankers if name in LEARNED_RANKERS]


def similarity_of(
    candidates: Sequence[Candidate], vectors: np.ndarray | None
) -> Callable[[Sequence[Scored]], np.ndarray] | None:
    """The bi-encoder similarities of ranked passages, from the candidates' `vectors` (None:
    the bi-encoder did not rank them)."""
    if vectors is None:
        return None
    row = {c.passage.key: i for i, c in enumerate(candidates)}

    def similarity(passages: Sequence[Scored]) -> np.ndarray:
        picked = vectors[[row[item.candidate.passage.key] for item in passages]]
        return picked @ picked.T

    return similarity


@dataclass
class Scoring:
    """Stage 4 over one configuration (the pipeline's vectors and models; `sparse_query`
    encodes a query for SPLADE once per recall)."""

    config: Config
    models: ModelRegistry
    embeddings: Embeddings
    token_vectors: TokenVectors
    sparse: SparseVectors
    limiter: anyio.CapacityLimiter
    sparse_query: SparseQuery

    async def rank(
        self, query: str, found: Candidates, candidates: list[Candidate], run: RecallRun
    ) -> tuple[list[Scored], list[str], np.ndarray | None]:
        """Stage 4: the configured rankers in parallel worker threads, then fusion. With a
        cascade (`rank.expensive_candidates` below the number of candidates), the other
        rankers first rank every candidate, and the expensive ones score only the best of
        that first pass (see `rank.follow_with_rest` for the order of the rest). Also the
        candidates' bi-encoder vectors, when the bi-encoder ranked them."""
        if not candidates:
            return [], [], None
        rank = self.config.rank
        context = Context(rank, self.config.passages.burst_seconds, trace=run.trace, query=query)
        # Passages of the scope that are not candidates (at least: a streamed or indexed
        # corpus holds only some of them) calibrate the confidence as well.
        unseen = len(found.corpus.passages) - len(candidates)
        expensive: dict[str, Any] = {}
        for kind in learned_rankers(self.config):
            if (
                kind in EXPENSIVE_RANKERS
                and (scorer := await get_model(self.models, kind, run)) is not None
            ):
                expensive[kind] = scorer
        cheap_jobs, passage_vectors, degraded = await self._cheap_jobs(
            query, found, run, bool(expensive)
        )
        run.warnings.extend(self.models.warnings)
        rows = list(range(len(candidates)))
        if expensive and 0 < rank.expensive_candidates < len(candidates):
            cheap = await self._score(cheap_jobs, run)
            first = await off_loop(self.limiter, first_pass, candidates, cheap, context, unseen)
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
        if first and not set(EXPENSIVE_RANKERS) & set(scores):
            ordered = first  # the expensive rankers failed: the first pass is the ranking
            used = sorted(first[0].ranker_scores)
        else:
            head = await off_loop(
                self.limiter,
                order_candidates,
                ranked,
                scores,
                context,
                unseen + len(candidates) - len(rows),  # the first pass's rest: unseen too
            )
            ordered = follow_with_rest(head, first)
            if run.trace is not None and first:  # the rest's first-pass scores, shifted down
                run.trace.adjusted("follow_with_rest", "first_pass", first, ordered[len(head) :])
        return ordered, used, passage_vectors

    async def _score_expensive(
        self,
        query: str,
        found: Candidates,
        rows: list[int],
        scorers: dict[str, Any],
        other_jobs: dict[str, ScoreJob],
        run: RecallRun,
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
        self, query: str, found: Candidates, run: RecallRun, expensive: bool
    ) -> tuple[dict[str, ScoreJob], np.ndarray | None, bool]:
        """The jobs of the rankers that read stored vectors or scores (SPLADE, the
        bi-encoder and its context, BM25, the speaker prior; of `rank.scorers` and of a
        cascade's first pass) over every candidate, the candidates' bi-encoder vectors when
        the bi-encoder ranks, and whether it ranks in place of the configured learned rankers
        (none available: `expensive` False and no SPLADE)."""
        indices = found.chosen
        corpus = found.corpus
        scorers = self.config.rank.rankers
        wanted = learned_rankers(self.config)
        jobs: dict[str, ScoreJob] = {}
        splade = await get_model(self.models, "splade", run) if "splade" in wanted else None
        if splade is not None:
            matrix = await self.sparse.fill(corpus, splade, run.sparse_budget, indices)
            vector = await self.sparse_query(splade, query, run)
            splade_scores = await off_loop(self.limiter, matrix.scores_at, indices, vector)
            jobs["splade"] = _constant(splade_scores)
        use_context = "context" in scorers
        passage_vectors: np.ndarray | None = None
        # Every configured learned ranker is missing: degrade to the bi-encoder before
        # falling back to lexical scores alone.
        # (Those of rank.scorers: a first pass's rankers do not stand in for them.)
        fused = [name for name in self.config.rank.scorers if name in LEARNED_RANKERS]
        degrade = (
            bool(fused)
            and not expensive
            and not set(jobs) & set(fused)
            and "bi_encoder" not in fused
            and not run.loading
        )
        use_bi = "bi_encoder" in wanted or degrade
        bi_encoder = (
            await get_model(self.models, "bi_encoder", run) if use_bi or use_context else None
        )
        if bi_encoder is not None:
            qv = found.query_vector
            if qv is None:
                qv = await off_loop(self.limiter, bi_encoder.embed_query, found.embedded_query)
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

    async def _score(self, jobs: dict[str, ScoreJob], run: RecallRun) -> dict[str, list[float]]:
        """Run the jobs in parallel worker threads; their timings and failures go to `run`."""
        scores, errors, timings = await run_scorers(jobs, self.limiter)
        run.timings.update({f"rank.{k}": v for k, v in timings.items()})
        for name, error in errors.items():
            run.warnings.append(f"ranker {name} failed and was skipped: {error}")
        return scores

    def _lexical_joins(
        self, scores: dict[str, list[float]], candidates: Sequence[Candidate], run: RecallRun
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


def _bind(fn: Callable[..., list[float]], *args: Any) -> ScoreJob:
    return lambda: fn(*args)


def _constant(values: list[float]) -> ScoreJob:
    return lambda: values
