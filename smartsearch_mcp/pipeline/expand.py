"""Stage 3: expand (multi-hop). Entities named in the first hits, next to the query's own
entities, are searched again; what they find joins the candidates, with the hop recorded."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from smartsearch_mcp.config import ExpansionConfig
from smartsearch_mcp.pipeline.analyze import QueryAnalysis, WeightedTerm
from smartsearch_mcp.pipeline.lexical import compile_terms, find_entity_mentions
from smartsearch_mcp.pipeline.retrieve import Candidates, Corpus, top_indices
from smartsearch_mcp.types import Hop


def expand_entities(
    analysis: QueryAnalysis,
    corpus: Corpus,
    first_hits: Sequence[int],
    base_scores: Sequence[float],
    nlp: Any | None,
    max_entities: int,
    per_entity: int,
    exclude: set[int],
    entity_cache: dict[str, list[tuple[str, str]]] | None = None,
) -> tuple[list[int], list[Hop]]:
    """Passages (corpus indices) found by searching the entities discovered in `first_hits`.

    Each entity adds at most `per_entity` passages not in `exclude`, preferring those that
    also match the query (`base_scores`). `entity_cache` (text → entities) spares NER on
    texts seen before. Returns the added indices and one Hop per entity
    found: the turns its search found (best first, up to `per_entity`), whether or not they
    were candidates already, so a result can say why a passage came back.
    """
    if max_entities <= 0 or per_entity <= 0 or not first_hits:
        return [], []
    mentions = find_entity_mentions(
        analysis, [corpus.texts[i] for i in first_hits], nlp, max_entities, entity_cache
    )
    added: list[int] = []
    hops: list[Hop] = []
    taken = set(exclude)
    base = np.asarray(base_scores, dtype=float) if mentions else np.zeros(0)
    for mention in mentions:
        matcher = compile_terms([WeightedTerm(mention.text.lower(), 1.0, "entity")])
        rows = corpus.term_counts().rows(matcher.patterns())  # none for an over-long name
        hits = np.flatnonzero(rows[0]) if rows else np.zeros(0, dtype=np.int64)
        if not len(hits):
            continue
        # best base score first, then scope order
        found: list[int] = hits[np.lexsort((hits, -base[hits]))].tolist()
        fresh = list(itertools.islice((i for i in found if i not in taken), per_entity))
        taken.update(fresh)
        added.extend(fresh)
        hops.append(
            Hop(
                entity=mention.text,
                found_in=sorted({corpus.passages[first_hits[h]].turn.id for h in mention.hits}),
                turn_ids=_unique(corpus.passages[i].turn.id for i in found[:per_entity]),
            )
        )
    return added, hops


# Texts whose entities are remembered across queries, at most (then the memory starts afresh).
ENTITY_CACHE_TEXTS = 100_000


def expand_candidates(
    analysis: QueryAnalysis,
    candidates: Candidates,
    nlp: Any | None,
    expansion: ExpansionConfig,
    max_candidates: int,
    entity_cache: dict[str, list[tuple[str, str]]] | None = None,
) -> tuple[Candidates, list[Hop]]:
    """Stage 3: the candidates with what the entities of the first hits find added (when the
    question names an entity to anchor on), in the places retrieval kept for them; places
    expansion leaves go to the rest of the selection (`spare`). CPU-bound (NER over the first
    hits, matching over the corpus): run in a worker thread. `entity_cache` may be shared by
    concurrent calls."""
    added: list[int] = []
    hops: list[Hop] = []
    if expansion.enabled and analysis.entities:
        first = top_indices(candidates.scores, expansion.first_hits)
        if entity_cache is not None and len(entity_cache) > ENTITY_CACHE_TEXTS:
            entity_cache.clear()
        added, hops = expand_entities(
            analysis,
            candidates.corpus,
            first,
            candidates.scores,
            nlp,
            expansion.max_entities,
            expansion.per_entity,
            set(candidates.chosen),
            entity_cache,
        )
    chosen = list(candidates.chosen)
    taken = set(chosen)
    for index in itertools.chain(added, candidates.spare):
        if len(chosen) >= max_candidates:
            break
        if index not in taken:
            chosen.append(index)
            taken.add(index)
    return dataclasses.replace(candidates, chosen=chosen, spare=[]), hops


def expansion_room(analysis: QueryAnalysis, expansion: ExpansionConfig) -> int:
    """Candidate places retrieval keeps for what expansion adds (none when the question names
    no entity to anchor on)."""
    if not (expansion.enabled and analysis.entities):
        return 0
    return expansion.max_entities * expansion.per_entity // 2


def _unique(ids: Iterable[int]) -> list[int]:
    return list(dict.fromkeys(ids))
