"""Stage 2, retrieve: the scope's passages (cached, streamed or found by the index) scored by
every candidate channel (`smartsearch_mcp.stages.CHANNELS`: grep, BM25, dense, context,
speaker-dense, SPLADE, date), and the choice of candidates among them (`retrieve.py` for a
scope in memory, `scan.py` for a streamed one)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np

from smartsearch_mcp.config import Config
from smartsearch_mcp.models import ModelRegistry
from smartsearch_mcp.pipeline import off_loop
from smartsearch_mcp.pipeline.analyze import QueryAnalysis
from smartsearch_mcp.pipeline.corpus import ScopeCorpora, StreamedScope
from smartsearch_mcp.pipeline.dated import Dated, inside_window
from smartsearch_mcp.pipeline.embeddings import Embeddings
from smartsearch_mcp.pipeline.expand import expansion_room
from smartsearch_mcp.pipeline.lexical import EntityMention, find_entity_mentions
from smartsearch_mcp.pipeline.passages import split_into_passages
from smartsearch_mcp.pipeline.relations import resolve_relations
from smartsearch_mcp.pipeline.retrieve import (
    Candidates,
    Corpus,
    dense_query,
    retrieve_candidates,
    said_by_named,
    score_lexically,
)
from smartsearch_mcp.pipeline.run import RecallRun, get_model
from smartsearch_mcp.pipeline.scan import ScanResult, scan_scope
from smartsearch_mcp.pipeline.scope_view import ScopeIndex, ScopeWordsBuilder, question_view
from smartsearch_mcp.pipeline.sparse import SparseVectors
from smartsearch_mcp.pipeline.spelling import KnownWords, corrected_question, with_misspellings
from smartsearch_mcp.store import MemoryStore
from smartsearch_mcp.store.queries import fts_any
from smartsearch_mcp.types import Hop, Passage, Scope, Turn

# Dense retrieval over a whole scope is kept for scopes up to this many passages; larger
# scopes are served by the lexical channels and the dense score of the candidates.
DENSE_SCOPE_LIMIT = 200_000
SCAN_PAGE = 2000  # turns per read of a streamed scope


@dataclass(frozen=True)
class Retrieved:
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
    # -> Tove), and where they were found
    analysis: QueryAnalysis
    hops: list[Hop]


@dataclass
class Retrieval:
    """Stage 2 over one store with one configuration (the pipeline's corpora, vectors and
    models; `known_words()` the tokenizer's whole words, for misspellings; `wake()` tells the
    background embedding that a recall left passages without vectors)."""

    store: MemoryStore
    config: Config
    models: ModelRegistry
    corpora: ScopeCorpora
    embeddings: Embeddings
    sparse: SparseVectors
    limiter: anyio.CapacityLimiter
    known_words: Callable[[], KnownWords]
    wake: Callable[[], None]
    entity_cache: dict[str, list[tuple[str, str]]]

    async def retrieve(
        self, analysis: QueryAnalysis, scope: Scope, nlp: Any, run: RecallRun
    ) -> Retrieved:
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
                known = self.known_words() if cfg.misspellings else None
                analysis, hops = await off_loop(
                    self.limiter, _as_the_memory_says, analysis, view, known
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
            known = self.known_words() if cfg.misspellings else None
            searched, hops = await off_loop(
                self.limiter, _as_the_memory_says, analysis, corpus, known
            )
            if searched is not analysis and cfg.mode == "indexed":
                # a name, relation or spelling to search: the index again, with it
                corpus = await self.corpora.indexed_corpus(searched, scope, dated_turns)
            analysis = searched
        said = await off_loop(self.limiter, said_by_named, corpus.passages, analysis)
        if scan is not None:
            run.timings.update({f"scan.{k}": v for k, v in scan.timings_ms.items()})
            return Retrieved(corpus, scan.scores, scan.bm25, said, scan, scan.dated, analysis, hops)
        scores = await off_loop(
            self.limiter, score_lexically, analysis, corpus, said, cfg, self.config.passages
        )
        bm25 = await self._bm25(analysis, scope, corpus)
        dated = None
        if analysis.time_range is not None and cfg.date_candidates > 0:
            dated = await off_loop(
                self.limiter,
                inside_window,
                corpus.passages,
                corpus.lowered,
                analysis.time_range,
                corpus.indexed_words(),
            )
        return Retrieved(corpus, scores, bm25, said, None, dated, analysis, hops)

    async def select(self, analysis: QueryAnalysis, found: Retrieved, run: RecallRun) -> Candidates:
        """Stage 2, the dense channels and the choice of candidates among all channels."""
        cfg = self.config.retrieval
        corpus = found.corpus
        # Candidates before expansion: places are kept for what expansion adds.
        total = max(0, cfg.max_candidates - expansion_room(analysis, self.config.expansion))
        query_vector, embedded_query = await self._dense(analysis.query, corpus, run)
        sparse_scores = await self._sparse_channel(analysis.query, corpus, run)
        return await off_loop(
            self.limiter,
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

    async def _sparse_channel(self, query: str, corpus: Corpus, run: RecallRun) -> Any | None:
        """The SPLADE score of every passage of a whole in-memory scope (grep mode), or None
        when the channel is off or SPLADE cannot be loaded."""
        cfg = self.config.retrieval
        if cfg.splade_candidates <= 0 or cfg.mode != "grep" or corpus.partial:
            return None
        if len(corpus.passages) > DENSE_SCOPE_LIMIT:
            return None
        splade = await get_model(self.models, "splade", run)
        if splade is None:
            return None
        matrix = await self.sparse.fill(corpus, splade, run.sparse_budget)
        vector = await self.sparse_query(splade, query, run)
        return await off_loop(self.limiter, matrix.scores, vector)

    async def sparse_query(self, splade: Any, query: str, run: RecallRun) -> Any:
        key = f"splade:{query}"
        if key not in run.memo:
            run.memo[key] = await off_loop(self.limiter, splade.encode_query, query)
        return run.memo[key]

    async def _dense(
        self, query: str, corpus: Corpus, run: RecallRun
    ) -> tuple[np.ndarray | None, str]:
        """The query's vector (None: no dense channel) and the text embedded; in grep mode
        the corpus's vectors are filled for the dense channels over the whole scope."""
        cfg = self.config.retrieval
        known = self.known_words() if cfg.misspellings else None
        embedded_query = await off_loop(self.limiter, _embedded_query, query, corpus, known)
        want_bi = "bi_encoder" in self.config.rank.rankers or (cfg.dense and cfg.mode == "grep")
        if not (want_bi and cfg.dense and cfg.dense_candidates > 0):
            return None, embedded_query
        bi_encoder = await get_model(self.models, "bi_encoder", run)
        if bi_encoder is None:
            return None, embedded_query
        query_vector = await off_loop(self.limiter, bi_encoder.embed_query, embedded_query)
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
        return await off_loop(self.limiter, _by_passage, by_turn, corpus.passages)

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
            return find_entity_mentions(analysis, texts, nlp, exp.max_entities, self.entity_cache)

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
            limiter=self.limiter,
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
            streamed.index = await ScopeIndex.build(pages, split, limiter=self.limiter, words=words)
        return streamed.index


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
        analysis,
        corpus.passages,
        corpus.lowered,
        corpus.speakers(),
        corpus.relations,
        corpus.indexed_words(),
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


def nothing_found(analysis: QueryAnalysis, dated: bool) -> str:
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


def nothing_found_yet(analysis: QueryAnalysis, loading: set[str]) -> str:
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
